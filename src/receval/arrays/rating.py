"""Rating-prediction metrics on arrays: MAE, MSE, RMSE, R² and NMAE (scikit-learn style).

Every metric is computed from per-group sums (rows, sum of |error|, sum of error², sum of
squared deviations of the truth from its mean) made by one ``prange`` kernel over groups
(:func:`_group_sums`, one group per user, or one group for all rows); means over users are
exactly rounded sums (:func:`math.fsum`), so no result depends on the order of the rows or the
users. All sums are float64.

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
from numba import njit, prange

from receval._errors import InputError, UndefinedMetricWarning
from receval.arrays.classification import (
    _counting_order,
    _positions,
    as_scores,
    group_codes,
    same_length,
)
from receval.kernels.exact import CAP, grow, parts, round_expansion, total

__all__ = ["mae", "mse", "nmae", "r2", "rmse"]


# the mean of true ratings whose sum overflows is taken over the ratings scaled by 2**-64
_SCALE = 2.0**-64


@njit(cache=True, nogil=True)
def _add(partials: np.ndarray, n: int, x: float) -> int:
    """:func:`~receval.kernels.exact.grow`, or -1 once the running sum overflows float64 (then -1
    stays: the sum is out of range)."""
    if n < 0:
        return n
    n = grow(partials, n, x)
    return n if math.isfinite(partials[n - 1]) else -1


@njit(cache=True, nogil=True)
def _value(partials: np.ndarray, n: int) -> float:
    """The rounded sum of a non-negative expansion built by :func:`_add`: inf if it overflowed."""
    return round_expansion(partials, n) if n >= 0 else math.inf


@njit(cache=True, nogil=True)
def _one_group(y: np.ndarray, p: np.ndarray, order: np.ndarray, lo: int, hi: int) -> tuple:  # type: ignore[type-arg]
    """Exactly rounded sums of one group (rows ``order[lo:hi]``): |e|, e², and SS_tot (two
    passes), so no value depends on the order of the rows; a sum that overflows is inf."""
    buf = np.zeros((3, CAP), dtype=np.float64)
    na = 0
    nb = 0
    ny = 0
    for r in range(lo, hi):
        i = order[r]
        e = y[i] - p[i]  # inf when y - y_hat overflows; then |e| and e² are inf too
        na = _add(buf[0], na, abs(e))
        nb = _add(buf[1], nb, e * e)
        ny = _add(buf[2], ny, y[i])
    if ny < 0:  # the ratings' sum overflows: sum them scaled (exact, cannot overflow)
        ny = 0
        for r in range(lo, hi):
            ny = grow(buf[2], ny, y[order[r]] * _SCALE)
        mean = round_expansion(buf[2], ny) / (hi - lo) / _SCALE
    else:
        mean = round_expansion(buf[2], ny) / (hi - lo) if hi > lo else 0.0
    nt = 0
    for r in range(lo, hi):
        d = y[order[r]] - mean
        nt = _add(buf[2], nt, d * d)
    return _value(buf[0], na), _value(buf[1], nb), _value(buf[2], nt)


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
def _chunk_parts(y: np.ndarray, p: np.ndarray, n_chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """Expansions of sum |e|, sum e² and sum y over contiguous chunks (length -1: the chunk's
    sum overflows float64)."""
    n = y.shape[0]
    buf = np.zeros((3, n_chunks, CAP), dtype=np.float64)
    lens = np.zeros((3, n_chunks), dtype=np.int64)
    for c in prange(n_chunks):
        na = 0
        nb = 0
        ny = 0
        for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
            e = y[i] - p[i]
            na = _add(buf[0, c], na, abs(e))
            nb = _add(buf[1, c], nb, e * e)
            ny = _add(buf[2, c], ny, y[i])
        lens[0, c] = na
        lens[1, c] = nb
        lens[2, c] = ny
    return buf, lens


def _chunks(n: int) -> int:
    import numba

    return max(1, min(n // 8192, numba.get_num_threads() * 4))


def row_parts(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expansions (:mod:`receval.kernels.exact`) of sum |e|, sum e² and sum y over the rows: exact,
    so they merge across shards. A chunk whose sum of |e| or e² overflows float64 gives
    ``[inf]`` (the exact sum is out of range: inf, whatever else is added); one whose sum of
    ratings overflows gives its ratings themselves (exact; :func:`~receval.kernels.exact.total`
    sums them without overflow)."""
    n = y.shape[0]
    n_chunks = _chunks(n)
    buf, lens = _chunk_parts(y, p, n_chunks)

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


def group_sums(offsets: np.ndarray, order: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per-group sums, see :func:`_group_sums`."""
    return _group_sums(offsets, order, y, p)


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
        offsets, order = _counting_order(codes, keys.len())
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
