"""nodeweave: multi-node GPU training in containers from one cluster spec.

Importing the package is cheap and pulls in no third-party module, because the
in-container entrypoint (``nodeweave.entrypoint``) is installed with the same
distribution and must stay stdlib-only.
"""

__version__ = "0.1.0"
