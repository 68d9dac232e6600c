"""One module per part of ``nodeweave.yaml``, each turning its YAML nodes into typed values.

The loader (``nodeweave.spec.loader``) calls them in file order and then
checks what spans sections; a section checks only its own fields, with the
readers of ``nodeweave.spec.fields``.
"""
