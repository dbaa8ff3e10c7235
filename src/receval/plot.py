"""``receval.plot``: plots of evaluations and comparisons (public home of
:mod:`receval.comparison.plots`, where the functions are defined)."""

from receval.comparison.plots import (
    INTERVALS_PER_ROW,
    MAX_KS,
    intervals,
    metric_at_k,
    per_user,
    pr,
    roc,
    segments,
)

__all__ = [
    "INTERVALS_PER_ROW",
    "MAX_KS",
    "intervals",
    "metric_at_k",
    "per_user",
    "pr",
    "roc",
    "segments",
]
