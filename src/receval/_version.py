"""The package version (read by pyproject.toml's hatch and by reports)."""

__version__ = "0.3.0"
