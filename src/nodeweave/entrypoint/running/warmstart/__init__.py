"""The folder a held launcher puts first on its ``sys.path`` (``running/warm.py``), and takes off again.

It holds ``nodeweave_warmstart``, the held process's own side: the launcher's imports, the wait for the
entrypoint's request, then the launcher run as ``__main__``. Stdlib only; the entrypoint never imports it.
"""
