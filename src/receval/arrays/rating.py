"""Rating-prediction metrics on arrays: MAE, MSE, RMSE, R² and NMAE (scikit-learn style).

Every metric is computed from per-group sums (rows, sum of |error|, sum of error², sum of
squared deviations of the truth from its mean) made by one ``prange`` kernel over groups
(:func:`receval.kernels.rating.group_sums`, one group per user, or one group for all rows);
means over users are exactly rounded sums (:func:`math.fsum`), so no result depends on the
order of the rows or the users. All sums are float64.

Overflow: a sum of non-negative terms (|e|, e², squared deviations) that exceeds float64 is
``inf``, as in scikit-learn (whose NumPy sums overflow to ``inf``), never NaN and never a row
or user left out: MAE, MSE, RMSE and NMAE are then ``inf`` and R² is ``-inf`` (SS_res = inf
over a finite SS_tot > 0). R² is NaN with a warning when SS_tot itself overflows (true ratings
of magnitude ~1e154 or more), since ``1 - SS_res / inf`` would not be the R² of the data.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from receval._errors import InputError, UndefinedMetricWarning
from receval.arrays.classification import _positions, as_scores, group_codes, same_length
from receval.kernels.exact import parts, total
from receval.kernels.grouping import counting_sort
from receval.kernels.rating import chunk_parts, group_sums

__all__ = ["mae", "mse", "nmae", "r2", "rmse"]


def row_parts(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expansions (:mod:`receval.kernels.exact`) of sum |e|, sum e² and sum y over the rows: exact,
    so they merge across shards. A chunk whose sum of |e| or e² overflows float64 gives
    ``[inf]`` (the exact sum is out of range: inf, whatever else is added); one whose sum of
    ratings overflows gives its ratings themselves (exact; :func:`~receval.kernels.exact.total`
    sums them without overflow)."""
    n = y.shape[0]
    buf, lens, n_chunks = chunk_parts(y, p)

    def chunk(j: int, c: int) -> np.ndarray:
        if lens[j, c] >= 0:
            return buf[j, c, : lens[j, c]]
        if j < 2:
            return np.array([math.inf])
        return y[n * c // n_chunks : n * (c + 1) // n_chunks]

    return tuple(  # type: ignore[return-value]
        np.concatenate([chunk(j, c) for c in range(n_chunks)]) for j in range(3)
    )


def sums_from_parts(n: int, s_abs: np.ndarray, s_sq: np.ndarray, s_tot: np.ndarray) -> np.ndarray:
    """``[rows, sum |e|, sum e², SS_tot]`` from row count and expansions, each rounded once
    (inf when it exceeds float64)."""
    return np.array([float(n), total(s_abs), total(s_sq), total(s_tot)])


def global_sums(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """[rows, sum |e|, sum e², SS_tot] over all rows, each sum exactly rounded (SS_tot around
    the mean ``fsum(y) / n``), so no value depends on the order or the split of the rows."""
    s_abs, s_sq, s_y = row_parts(y, p)
    mean = total(s_y) / y.shape[0]
    with np.errstate(over="ignore"):  # a squared deviation beyond float64 is inf: SS_tot = inf
        d = y - mean
        return sums_from_parts(y.shape[0], s_abs, s_sq, parts(d * d))


def values_from_sums(
    name: str, sums: np.ndarray, width: float = math.nan
) -> tuple[np.ndarray, int]:
    """Each group's value of metric ``name`` (NaN where undefined) and how many are undefined.

    ``sums`` has rows ``[n, sum |e|, sum e², SS_tot]``; ``width`` is r_max - r_min for nmae.
    A sum that overflowed is inf, and so is the value (``-inf`` for r2); r2 is undefined where
    SS_tot is 0 or itself overflowed (:func:`sstot_overflows` counts the latter).
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
            ok = (s_tot > 0) & np.isfinite(s_tot)
            out = np.where(ok, 1.0 - s_sq / np.where(ok, s_tot, 1.0), np.nan)
        else:
            msg = f"unknown rating metric {name!r}"
            raise ValueError(msg)
    out = np.where(n > 0, out, np.nan)
    return out, int(np.count_nonzero(np.isnan(out) & (n > 0)))


def sstot_overflows(sums: np.ndarray) -> int:
    """How many groups of ``sums`` (see :func:`values_from_sums`) have an SS_tot beyond float64:
    their r2 is NaN for that reason, not for constant true ratings."""
    return int(np.count_nonzero((sums[:, 0] > 0) & ~np.isfinite(sums[:, 3])))


def r2_reason(constant: int, overflow: int) -> str:
    """Why r2 is undefined for ``constant`` + ``overflow`` groups (users, or all rows)."""
    reasons = []
    if constant:
        reasons.append("the true ratings are constant: SS_tot = 0")
    if overflow:
        reasons.append("SS_tot overflows float64: true ratings too large")
    return "; ".join(reasons)


def mean_of(values: np.ndarray) -> float:
    """The mean of per-group values: their exactly rounded sum (inf beyond float64) over their
    count, as the distributed engine merges it; NaN when there is none."""
    return total(values) / int(values.size) if values.size else math.nan


def rating_width(lo: float, hi: float) -> float:
    """``hi - lo`` of a rating scale; NaN with a warning when the scale has no width, an
    :class:`InputError` when the width exceeds float64."""
    width = float(hi) - float(lo)
    if math.isinf(width):
        msg = (
            f"nmae's rating scale ({float(lo)!r}, {float(hi)!r}) is wider than float64 can hold "
            "(r_max - r_min overflows); rescale the ratings."
        )
        raise InputError(msg)
    if width <= 0:
        warnings.warn(
            f"nmae is undefined on a rating scale of zero width ({float(lo)!r}, {float(hi)!r}); "
            "returning NaN.",
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
        if rating_range is not None:
            lo, hi = check_range(rating_range)
            outside = (y < lo) | (y > hi)
            if outside.any():
                msg = (
                    f"`y_true` has {int(outside.sum())} value(s) outside `rating_range` "
                    f"{rating_range!r}; expected true ratings on the scale [r_min, r_max] "
                    f"(predictions may lie outside it). Positions: {_positions(outside)}."
                )
                raise InputError(msg)
        else:
            lo, hi = y.min(), y.max()
        width = rating_width(lo, hi)
    if groups is None:
        sums = global_sums(y, p)[None, :]
    else:
        codes, keys = group_codes(groups, y.shape[0])
        offsets, order = counting_sort(codes, keys.len())
        sums = group_sums(offsets, order, y, p)
    values, undefined = values_from_sums(name, sums, width)
    overflow = sstot_overflows(sums) if name == "r2" else 0
    if name == "r2" and undefined > overflow:
        where = (
            "y_true is constant"
            if groups is None
            else (
                f"y_true is constant within {undefined - overflow} of {values.shape[0]} "
                "group(s), left out of the mean"
            )
        )
        warnings.warn(
            f"r2 is undefined (SS_tot = 0): {where}; NaN for those.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    if overflow:
        where = "" if groups is None else f" within {overflow} of {values.shape[0]} group(s)"
        warnings.warn(
            f"r2 cannot be computed in float64: SS_tot overflows{where} (true ratings too "
            "large); NaN for those.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    return mean_of(values[~np.isnan(values)])


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
        given. Every true rating must lie in it (an :class:`InputError` names those that do
        not); predictions may lie outside it. A scale of zero width gives NaN with a warning.
    groups:
        As for :func:`mae`; the scale is the same for every group.

    Examples
    --------
    >>> import receval
    >>> receval.nmae([5, 3, 4, 1], [4.5, 3, 2, 1], rating_range=(1, 5))
    0.15625
    """
    return _metric("nmae", y_true, y_pred, groups, rating_range)
