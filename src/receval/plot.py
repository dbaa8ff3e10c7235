"""``receval.plot``: plots of evaluations and comparisons (public home of the functions of
:mod:`receval.comparison.curves`, which compute curves from truth and runs and draw them, and
of :mod:`receval.comparison.plots`, which draw a comparison or results)."""

from receval.comparison.curves import MAX_KS, metric_at_k, pr, roc
from receval.comparison.plots import INTERVALS_PER_ROW, intervals, per_user, segments

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
