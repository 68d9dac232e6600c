"""``python -m nodeweave`` runs the ``nodeweave`` command itself (as ``python -m torch.distributed.run`` does
torchrun): the console script's own start (nodeweave.start: Ctrl-C while loading exits 130), the same program name
in usage and errors (walk12 A25: it failed with "No module named nodeweave.__main__")."""

import sys

from nodeweave.start import main

sys.exit(main())
