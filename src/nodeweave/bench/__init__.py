"""``nodeweave bench``: collective bandwidth measured through the training launch path.

- ``options``: sizes, sweeps and the nccl-tests bus-bandwidth formulas (stdlib only).
- ``worker``: the torch program each torchrun process runs (timing and correctness).
- ``runner``: one entrypoint launch per sweep point, and the ranking.
- ``report``: rich tables, the JSON record, the optional matplotlib plot.
"""
