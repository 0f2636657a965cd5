"""``python -m rwtool``: the same command line as the ``rwtool`` entry point (rwtool.cli)."""

import sys

from .cli import main

sys.exit(main())
