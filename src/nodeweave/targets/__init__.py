"""The render targets: one pure renderer per folder, and the one registry of them (``registry.py``).

Each folder renders one kind of file from the spec: ``images`` (Dockerfiles,
bake file), ``compose``, ``kubernetes`` (the kustomize tree), ``slurm``
(sbatch), ``openshift_build``, ``trainjob`` (Kubeflow) and ``jobset``; and
``zipapp`` makes the entrypoint itself one file (bytes, from its own sources,
not the spec). Each exposes ``render_files(spec) -> {path: text}`` (a binary:
bytes): no I/O beyond nodeweave's own package files, byte-stable. Derive
once: ``render_files`` resolves the spec (``r = resolve(spec)``) and every
helper below it takes that ``Resolved`` and reads ``r.spec``, ``r.image``,
``r.vendor``, ... from it; only an overlay of another variant (the ROCm
overlay, the local simulation) resolves that variant itself. A
renderer may import ``nodeweave.spec``, ``nodeweave.resolve``, the leaves
(``catalogue``, ``errors``, ``quantities``, ``yamltext``) and
``nodeweave.entrypoint.planning.contract`` (``zipapp`` imports nothing of the
entrypoint: it reads its files); a target never imports another
target, except ``openshift_build``, ``trainjob`` and ``jobset``, which reuse
``kubernetes``' pod. ``nodeweave.rendering`` (plan and write) and the CLI
read ``registry.RENDERERS``; adding a target is one folder, one ``Target``
row there and its test.
"""
