"""Pointwise metrics: classification (AUC, GAUC, log loss, confusion matrix) and rating
prediction (MAE, MSE, RMSE, NMAE, R²). Work in progress (issue 3)."""

from __future__ import annotations

from ._errors import MetricError
from ._evaluate import Part, Prepared
from ._registry import Metric

__all__ = ["classification_part", "rating_part"]


def classification_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means (and per-user values where defined) of the classification metrics."""
    msg = f"not implemented yet: {', '.join(m.canonical for m in plan)}"
    raise MetricError(msg)


def rating_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means (and per-user values for ``average=user``) of the rating metrics."""
    msg = f"not implemented yet: {', '.join(m.canonical for m in plan)}"
    raise MetricError(msg)
