"""Rating-prediction metrics on arrays: MAE, MSE, RMSE, R² and NMAE (scikit-learn style).

Every metric is computed from per-group sums (rows, sum of |error|, sum of error², sum of
squared deviations of the truth from its mean) made by one ``prange`` kernel over groups
(:func:`_group_sums`, one group per user, or one group for all rows); means over users are
exactly rounded sums (:func:`math.fsum`), so no result depends on the order of the rows or the
users. All sums are float64.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numba import njit, prange

from ._classification import as_scores, group_codes, same_length
from ._errors import InputError, UndefinedMetricWarning

__all__ = ["mae", "mse", "nmae", "r2", "rmse"]


@njit(cache=True, nogil=True)
def _one_group(y: np.ndarray, p: np.ndarray, order: np.ndarray, lo: int, hi: int) -> tuple:  # type: ignore[type-arg]
    """Sums of one group (rows ``order[lo:hi]``): |e|, e², and SS_tot (two passes)."""
    s_abs = 0.0
    s_sq = 0.0
    s_y = 0.0
    for r in range(lo, hi):
        i = order[r]
        e = y[i] - p[i]
        s_abs += abs(e)
        s_sq += e * e
        s_y += y[i]
    mean = s_y / (hi - lo) if hi > lo else 0.0
    s_tot = 0.0
    for r in range(lo, hi):
        d = y[order[r]] - mean
        s_tot += d * d
    return s_abs, s_sq, s_tot


@njit(cache=True, parallel=True)
def _group_sums(offsets: np.ndarray, order: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per group: [rows, sum |e|, sum e², SS_tot], in parallel over groups."""
    n_groups = offsets.shape[0] - 1
    out = np.zeros((n_groups, 4), dtype=np.float64)
    for g in prange(n_groups):
        lo = offsets[g]
        hi = offsets[g + 1]
        a, b, c = _one_group(y, p, order, lo, hi)
        out[g, 0] = hi - lo
        out[g, 1] = a
        out[g, 2] = b
        out[g, 3] = c
    return out


@njit(cache=True, parallel=True)
def _chunk_sums(y: np.ndarray, p: np.ndarray, n_chunks: int) -> np.ndarray:
    """Sums of |e|, e² and y over contiguous chunks (then SS_tot in a second pass)."""
    n = y.shape[0]
    out = np.zeros((n_chunks, 3), dtype=np.float64)
    for c in prange(n_chunks):
        a = 0.0
        b = 0.0
        s = 0.0
        for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
            e = y[i] - p[i]
            a += abs(e)
            b += e * e
            s += y[i]
        out[c, 0] = a
        out[c, 1] = b
        out[c, 2] = s
    return out


@njit(cache=True, parallel=True)
def _chunk_sstot(y: np.ndarray, mean: float, n_chunks: int) -> np.ndarray:
    n = y.shape[0]
    out = np.zeros(n_chunks, dtype=np.float64)
    for c in prange(n_chunks):
        acc = 0.0
        for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
            d = y[i] - mean
            acc += d * d
        out[c] = acc
    return out


def _chunks(n: int) -> int:
    import numba

    return max(1, min(n // 8192, numba.get_num_threads() * 4))


def global_sums(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """[rows, sum |e|, sum e², SS_tot] over all rows (exactly rounded sums of chunk sums)."""
    k = _chunks(y.shape[0])
    parts = _chunk_sums(y, p, k)
    n = float(y.shape[0])
    mean = math.fsum(parts[:, 2]) / n
    return np.array(
        [
            n,
            math.fsum(parts[:, 0]),
            math.fsum(parts[:, 1]),
            math.fsum(_chunk_sstot(y, mean, k)),
        ]
    )


def group_sums(offsets: np.ndarray, order: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per-group sums, see :func:`_group_sums`."""
    return _group_sums(offsets, order, y, p)


def values_from_sums(
    name: str, sums: np.ndarray, width: float = math.nan
) -> tuple[np.ndarray, int]:
    """Each group's value of metric ``name`` (NaN where undefined) and how many are undefined.

    ``sums`` has rows ``[n, sum |e|, sum e², SS_tot]``; ``width`` is r_max - r_min for nmae.
    """
    n, s_abs, s_sq, s_tot = sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "mae":
            out = s_abs / n
        elif name == "mse":
            out = s_sq / n
        elif name == "rmse":
            out = np.sqrt(s_sq / n)
        elif name == "nmae":
            out = s_abs / n / width
        elif name == "r2":
            out = np.where(s_tot > 0, 1.0 - s_sq / np.where(s_tot > 0, s_tot, 1.0), np.nan)
        else:
            msg = f"unknown rating metric {name!r}"
            raise ValueError(msg)
    out = np.where(n > 0, out, np.nan)
    return out, int(np.count_nonzero(np.isnan(out) & (n > 0)))


def rating_width(lo: float, hi: float) -> float:
    """``hi - lo`` of a rating scale; NaN with a warning when the scale has no width."""
    width = float(hi) - float(lo)
    if width <= 0:
        warnings.warn(
            f"nmae is undefined on a rating scale of zero width ({lo!r}, {hi!r}); returning NaN.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return math.nan
    return width


def check_range(rating_range: Any) -> tuple[float, float]:
    """``rating_range`` as two finite floats ``lo < hi``, or an :class:`InputError`."""
    ok = (
        isinstance(rating_range, tuple | list)
        and len(rating_range) == 2
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in rating_range
        )
    )
    if not ok or not rating_range[0] < rating_range[1]:
        msg = (
            "`rating_range` must be a pair (r_min, r_max) of finite numbers with r_min < r_max; "
            f"got {rating_range!r}."
        )
        raise InputError(msg)
    return float(rating_range[0]), float(rating_range[1])


def _metric(
    name: str,
    y_true: Any,
    y_pred: Any,
    groups: Any,
    rating_range: tuple[float, float] | None = None,
) -> float:
    y = as_scores(y_true, "y_true", finite=True)
    p = as_scores(y_pred, "y_pred", finite=True)
    same_length(y, p, ("y_true", "y_pred"))
    width = math.nan
    if name == "nmae":
        lo, hi = check_range(rating_range) if rating_range is not None else (y.min(), y.max())
        width = rating_width(lo, hi)
    if groups is None:
        sums = global_sums(y, p)[None, :]
    else:
        from ._classification import _counting_order

        codes, keys = group_codes(groups, y.shape[0])
        offsets, order = _counting_order(codes, keys.len())
        sums = group_sums(offsets, order, y, p)
    values, undefined = values_from_sums(name, sums, width)
    if name == "r2" and undefined:
        where = (
            "y_true is constant"
            if groups is None
            else (
                f"y_true is constant within {undefined} of {values.shape[0]} group(s), left out "
                "of the mean"
            )
        )
        warnings.warn(
            f"r2 is undefined (SS_tot = 0): {where}; NaN for those.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return math.nan
    return math.fsum(defined) / int(defined.size)


def mae(y_true: Any, y_pred: Any, *, groups: Any = None) -> float:
    """Mean absolute error: ``mean |y - y_hat|`` (scikit-learn ``mean_absolute_error``).

    Parameters
    ----------
    y_true, y_pred:
        True and predicted ratings (finite numbers): NumPy arrays, lists, pandas/Polars Series
        or Arrow arrays.
    groups:
        Optional group (user) id of each row: the metric is then computed per group and
        averaged over groups (``average=user`` in metric strings).

    Examples
    --------
    >>> import receval
    >>> receval.mae([5, 3, 4, 1], [4.5, 3, 2, 1])
    0.625
    >>> receval.mae([5, 3, 4, 1], [4.5, 3, 2, 1], groups=["a", "a", "a", "b"])
    0.4166666666666667
    """
    return _metric("mae", y_true, y_pred, groups)


def mse(y_true: Any, y_pred: Any, *, groups: Any = None) -> float:
    """Mean squared error: ``mean (y - y_hat)²`` (scikit-learn ``mean_squared_error``).

    Examples
    --------
    >>> import receval
    >>> receval.mse([5, 3, 4, 1], [4.5, 3, 2, 1])
    1.0625
    """
    return _metric("mse", y_true, y_pred, groups)


def rmse(y_true: Any, y_pred: Any, *, groups: Any = None) -> float:
    """Root mean squared error: ``sqrt(mean (y - y_hat)²)`` (scikit-learn
    ``root_mean_squared_error``); with ``groups``, the mean over groups of each group's RMSE.

    Examples
    --------
    >>> import receval
    >>> receval.rmse([5, 3, 4, 1], [4.5, 3, 2, 1])
    1.0307764064044151
    """
    return _metric("rmse", y_true, y_pred, groups)


def r2(y_true: Any, y_pred: Any, *, groups: Any = None) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` (scikit-learn ``r2_score``).

    Undefined when the true ratings are constant (``SS_tot = 0``): NaN with an
    :class:`~receval.UndefinedMetricWarning` (scikit-learn's ``force_finite`` would return 1.0
    or 0.0 there); with ``groups``, such groups are left out of the mean.

    Examples
    --------
    >>> import receval
    >>> round(receval.r2([5, 3, 4, 1], [4.5, 3, 2, 1]), 6)
    0.514286
    """
    return _metric("r2", y_true, y_pred, groups)


def nmae(
    y_true: Any,
    y_pred: Any,
    *,
    rating_range: tuple[float, float] | None = None,
    groups: Any = None,
) -> float:
    """Normalised MAE: ``MAE / (r_max - r_min)`` (Goldberg et al., Eigentaste, 2001).

    Parameters
    ----------
    rating_range:
        ``(r_min, r_max)`` of the rating scale; read from ``y_true`` (its min and max) when not
        given. A scale of zero width gives NaN with a warning.
    groups:
        As for :func:`mae`; the scale is the same for every group.

    Examples
    --------
    >>> import receval
    >>> receval.nmae([5, 3, 4, 1], [4.5, 3, 2, 1], rating_range=(1, 5))
    0.15625
    """
    return _metric("nmae", y_true, y_pred, groups, rating_range)
