"""What every verb shares, so the command line keeps one set of habits (docs/design.md,
"Command-line conventions"): the command classes and ``--spec`` lookup (``base``), plain option
conversion (``coercion``), ``-o`` output (``output``), old spellings (``spellings``), a command
after ``--`` (``dashes``), the cluster verbs' shared options (``clusteropts``), ``--node``, the one
node selector (``nodes``), the root group that imports a verb only when it runs (``lazy``) and
``run --detach`` (``detach``). The verbs live beside this package, one module per group.
"""
