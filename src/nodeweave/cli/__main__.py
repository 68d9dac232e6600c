"""``python -m nodeweave.cli`` runs the same command as ``nodeweave``."""

import sys

from nodeweave.cli import main

sys.exit(main())
