"""``receval.plot``: plots of evaluations and comparisons (public home of
:mod:`receval.compare.plots`, where the functions are defined)."""

from receval.compare.plots import MAX_KS, intervals, metric_at_k, per_user, pr, roc

__all__ = ["MAX_KS", "intervals", "metric_at_k", "per_user", "pr", "roc"]
