"""Peers that cannot share the test environment (their pins clash with ours) run in a virtual
environment of their own, built from the package registry once per test session; a case goes
to a script there as a JSON file and the script prints its results as JSON."""

from __future__ import annotations

import json
import subprocess
import venv
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def build(home: Path, installs: Sequence[Sequence[str]]) -> Path:
    """A virtual environment in ``home`` with each of ``installs`` (pip arguments) installed
    in turn; its Python."""
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    for packages in installs:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *packages],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"could not install {packages}: {done.stderr[-2000:]}"
    return python


def run(python: Path, script: str, case: Any, folder: Path) -> Any:
    """``script`` run by ``python`` on ``case`` (written to ``folder`` as JSON, its path the
    script's first argument); what it printed, read as JSON."""
    data = folder / "case.json"
    data.write_text(json.dumps(case), encoding="utf-8")
    done = subprocess.run(
        [str(python), "-c", script, str(data)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)
