"""How many examples a property test draws, by Hypothesis profile (registered in
tests/conftest.py).

The README's test command runs the ``quick`` profile: each test draws a quarter of its number
(at least 10, or its whole number when that is smaller). ``.ci/run`` runs every property test
again under ``full`` (``--hypothesis-profile=full``), where each draws the number written in
its settings.
"""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # max_examples of the full profile: a test's number is its count under it


def examples(n: int) -> int:
    """The number of examples for a test that draws ``n`` under the full profile."""
    return max(min(n, 10), n * settings().max_examples // FULL)
