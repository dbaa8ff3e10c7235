"""The rating array functions by name, and scikit-learn's versions of those it has (shared by
tests/metrics/test_rating.py and tests/metrics/test_rating_robust.py)."""

from __future__ import annotations

from collections.abc import Callable

from sklearn import metrics as skm

import receval

SKLEARN = {
    "mae": skm.mean_absolute_error,
    "mse": skm.mean_squared_error,
    "rmse": skm.root_mean_squared_error,
    "r2": skm.r2_score,
}
FUNCS: dict[str, Callable[..., float]] = {
    "mae": receval.mae,
    "mse": receval.mse,
    "rmse": receval.rmse,
    "r2": receval.r2,
    "nmae": receval.nmae,
}
