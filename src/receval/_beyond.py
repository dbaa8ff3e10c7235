"""Beyond-accuracy metrics: coverage, intra-list similarity and diversity, novelty,
popularity bias. Work in progress (issue 4)."""

from __future__ import annotations

from ._errors import MetricError
from ._evaluate import Part, Prepared
from ._registry import Metric

__all__ = ["beyond_part"]


def beyond_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means and per-user values of the beyond-accuracy metrics."""
    msg = f"not implemented yet: {', '.join(m.canonical for m in plan)}"
    raise MetricError(msg)
