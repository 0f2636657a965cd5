"""rwtool's version, in one place: the package, model files, the CLI and pyproject.toml read it."""

__version__ = "0.1.0"
