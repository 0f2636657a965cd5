"""``python -m rwtool``: the same command line as the ``rwtool`` entry point (rwtool.cli.run)."""

from .cli import run

run()
