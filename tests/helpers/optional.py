"""torch for the tests of the torch paths, or a skip that says why."""

from __future__ import annotations

import os
from typing import Any

import pytest


def import_torch() -> Any:
    """torch, or a skip that says why (a failure when RECEVAL_REQUIRE_TORCH is set, as in
    .ci/run, which installs the CPU build)."""
    if os.environ.get("RECEVAL_REQUIRE_TORCH"):
        import torch

        return torch
    return pytest.importorskip(
        "torch", reason="torch is not installed: the torch scoring path is not tested"
    )
