"""The folder the entrypoint puts first on its ranks' ``PYTHONPATH`` (its ``sitecustomize`` starts the probe).

Nothing here is imported by the entrypoint at start-up except the record
layout (``nodeweave_rankprobe.LAYOUT``), which the node side reads with, and the
flight recorder files' names (``nodeweave_flight.ask_path``, ``dump_path``).
"""
