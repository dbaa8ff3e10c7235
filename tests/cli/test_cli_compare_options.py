"""compare and report take one declared option set (ComparisonFlags), in the same order, each
with its own options placed where --help has always listed them."""

from __future__ import annotations

import dataclasses

import typer.main

from receval.cli import app
from receval.cli.compare import ComparisonFlags

SHARED = [f.name for f in dataclasses.fields(ComparisonFlags)]


def _params(command: str) -> list[str]:
    group = typer.main.get_command(app)
    return [p.name for p in group.commands[command].params]  # type: ignore[attr-defined]


def test_compare_and_report_share_every_flag_in_order() -> None:
    for command in ("compare", "report"):
        params = _params(command)
        assert [p for p in params if p in SHARED] == SHARED


def _after(params: list[str], name: str, n: int) -> list[str]:
    at = params.index(name) + 1
    return params[at : at + n]


def test_each_command_places_its_own_options() -> None:
    compare, report = _params("compare"), _params("report")
    assert _after(compare, "seed", 3) == ["fmt", "output", "progress"]
    assert _after(report, "truth", 2) == ["output", "run"]
    assert _after(report, "seed", 3) == ["title", "curves", "progress"]
