"""The ``compare``, ``report`` and ``plot`` commands of the command line. Work in progress
(issue 5)."""

from __future__ import annotations

import typer

__all__ = ["register_compare_commands"]


def register_compare_commands(app: typer.Typer) -> None:
    """Add the model-comparison commands to ``app``."""
