"""Pointwise classification metrics on arrays: AUC, GAUC, ROC/PR curves, log loss and the
confusion matrix at a decision threshold (scikit-learn style: truth first, options keyword-only,
Python floats back).

AUC is exact: ``AUC = (sum of the positives' average ranks - M(M+1)/2) / (M N)`` with ``M``
positives and ``N`` negatives, which is the share of (positive, negative) pairs the scores order
correctly, ties counting one half (docs/metrics.md). The counting (the sorts of both classes'
scores, the merge walks, GAUC's pairs group by group) is done by the kernels of
:mod:`receval.kernels.classification`, in exact integers; this module checks the inputs and
turns the counts into values.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import polars as pl

from receval._errors import InputError, UndefinedMetricWarning, check_choice
from receval.data.layout import FLOAT_EXACT, inexact_integers_message, user_codes
from receval.kernels.classification import (
    auc_twice_wins,
    class_histogram,
    group_pair_counts,
    log_loss_chunks,
    sorted_class_keys,
)
from receval.kernels.exact import parts, total
from receval.kernels.pools import check_pools
from receval.kernels.sort import float_of_keys

__all__ = [
    "ConfusionMatrix",
    "GaucWeight",
    "accuracy",
    "auc",
    "average_precision",
    "confusion_matrix",
    "fbeta",
    "gauc",
    "group_auc",
    "log_loss",
    "pr_curve",
    "precision",
    "recall",
    "roc_curve",
]

GaucWeight = Literal["impressions", "clicks", "uniform"]
"""Weight of a user's AUC in GAUC: their rows, their positives, or 1."""

_SHOW = 5
_EPS = float(np.finfo(np.float64).eps)


# --------------------------------------------------------------------------- input checks


def _positions(mask: np.ndarray) -> str:
    """The first few positions where ``mask`` holds, for error messages."""
    where = np.flatnonzero(mask)
    shown = ", ".join(str(int(i)) for i in where[:_SHOW])
    return f"[{shown}{', ...' if where.size > _SHOW else ''}]"


def as_vector(values: Any, name: str) -> np.ndarray:
    """A 1-D NumPy view (or copy) of ``values`` with no nulls; the input is never modified.

    Accepts NumPy arrays, lists and tuples, pandas and Polars Series, and PyArrow arrays
    (chunked or not).
    """
    check_pools()  # every array enters here: refuse a forked child before a kernel could hang
    module = type(values).__module__.split(".")[0]
    found = type(values).__name__
    if module == "polars" and isinstance(values, pl.Series):
        nulls = values.is_null().to_numpy()
        if nulls.any():
            msg = (
                f"`{name}` has {int(nulls.sum())} null value(s); expected none. "
                f"Positions: {_positions(nulls)}."
            )
            raise InputError(msg)
        arr = values.to_numpy()
    elif module == "pandas" and hasattr(values, "isna") and getattr(values, "ndim", 0) == 1:
        nulls = np.asarray(values.isna())
        if nulls.any() and values.dtype.kind != "f":
            msg = (
                f"`{name}` has {int(nulls.sum())} null value(s); expected none. "
                f"Positions: {_positions(nulls)}."
            )
            raise InputError(msg)
        arr = values.to_numpy()
    elif module == "pyarrow":
        import pyarrow as pa

        if not isinstance(values, pa.Array | pa.ChunkedArray):
            msg = f"`{name}` must be a 1-D array; got a PyArrow {found}."
            raise InputError(msg)
        if values.null_count:
            nulls = values.is_null().to_numpy(zero_copy_only=False)
            msg = (
                f"`{name}` has {values.null_count} null value(s); expected none. "
                f"Positions: {_positions(nulls)}."
            )
            raise InputError(msg)
        arr = (
            values.to_numpy(zero_copy_only=False)
            if isinstance(values, pa.Array)
            else (values.to_numpy())
        )
    elif isinstance(values, np.ndarray | list | tuple):
        arr = np.asarray(values)
    else:
        msg = (
            f"`{name}` must be a NumPy array, a list, a pandas or Polars Series or a PyArrow "
            f"array; got {found}."
        )
        raise InputError(msg)
    if arr.ndim != 1:
        msg = f"`{name}` must be 1-D; got an array of shape {arr.shape}."
        raise InputError(msg)
    if arr.size == 0:
        msg = f"`{name}` is empty; expected at least one value."
        raise InputError(msg)
    if arr.dtype == object:
        nulls = np.array([v is None for v in arr], dtype=np.bool_)
        if nulls.any():
            msg = (
                f"`{name}` has {int(nulls.sum())} null value(s); expected none. "
                f"Positions: {_positions(nulls)}."
            )
            raise InputError(msg)
    return arr


def _numeric(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.dtype.kind not in "biuf":
        try:
            return np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError):
            msg = f"`{name}` must hold numbers; got values of type {arr.dtype}."
            raise InputError(msg) from None
    return arr


def as_labels(values: Any, name: str = "y_true") -> np.ndarray:
    """Binary labels as int8 (0/1); anything else is an :class:`InputError`."""
    arr = _numeric(as_vector(values, name), name)
    if arr.dtype.kind == "b":
        return arr.astype(np.int8)
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        shown = ", ".join(repr(v) for v in np.unique(arr[bad])[:_SHOW].tolist())
        msg = (
            f"`{name}` must hold binary labels 0/1 (or booleans); found {shown} at "
            f"{int(bad.sum())} position(s): {_positions(bad)}."
        )
        raise InputError(msg)
    return arr.astype(np.int8)


def as_scores(values: Any, name: str = "y_score", *, finite: bool = False) -> np.ndarray:
    """Numbers as float64 (a copy only when the dtype differs); NaN is an :class:`InputError`,
    and so is an infinity when ``finite``."""
    raw = as_vector(values, name)
    check_exact_scores(raw, name)
    arr = np.asarray(_numeric(raw, name), dtype=np.float64)
    bad = ~np.isfinite(arr) if finite else np.isnan(arr)
    if bad.any():
        what = "non-finite" if finite else "NaN"
        msg = (
            f"`{name}` has {int(bad.sum())} {what} value(s); expected "
            f"{'finite numbers' if finite else 'numbers'}. Positions: {_positions(bad)}."
        )
        raise InputError(msg)
    return arr


def check_exact_scores(raw: np.ndarray, name: str) -> None:
    """Refuse scores that change when they become float64, the one rule of every path that
    reads scores: integers beyond 2^53 that float64 cannot hold exactly and extended-precision
    floats (``np.longdouble``) finer than float64 (distinct scores would silently tie). Wider
    integers and long doubles whose values float64 holds exactly pass."""
    if raw.dtype.kind in "iu":
        limit = np.array(FLOAT_EXACT).astype(raw.dtype) if raw.dtype.itemsize >= 8 else None
        if limit is None:
            return
        wide = raw[(raw > limit) | (raw < -limit)] if raw.dtype.kind == "i" else raw[raw > limit]
        inexact = [int(v) for v in wide.tolist() if float(v) != int(v)]
    elif raw.dtype == object:
        inexact = [
            v for v in raw.tolist()
            if type(v) is int and abs(v) > FLOAT_EXACT and (abs(v) >= 2**1024 or float(v) != v)
        ]  # fmt: skip
    elif raw.dtype.kind == "f" and raw.dtype.itemsize > 8:
        with np.errstate(over="ignore", invalid="ignore"):
            narrowed = raw.astype(np.float64)
            changed = (narrowed.astype(raw.dtype) != raw) & ~np.isnan(raw)
        if changed.any():
            msg = (
                f"`{name}` has {int(changed.sum())} {raw.dtype} value(s) that float64 cannot "
                "hold exactly (receval scores in float64, so distinct scores would silently "
                "tie or overflow); expected float64 or narrower numbers: convert them with "
                f".astype(np.float64) if that is what you mean. Positions: {_positions(changed)}."
            )
            raise InputError(msg)
        return
    else:
        return
    if inexact:
        bad = np.isin(raw, np.array(inexact, dtype=raw.dtype))
        fix = f"rescale them (subtract the smallest value) first. Positions: {_positions(bad)}."
        raise InputError(inexact_integers_message(f"`{name}`", len(inexact), fix))


def same_length(a: np.ndarray, b: np.ndarray, names: tuple[str, str]) -> None:
    """Raise unless ``a`` and ``b`` have the same length."""
    if a.shape[0] != b.shape[0]:
        msg = (
            f"`{names[0]}` and `{names[1]}` must have the same length; got {a.shape[0]} and "
            f"{b.shape[0]}."
        )
        raise InputError(msg)


def _binary(y_true: Any, y_score: Any, score_name: str = "y_score") -> tuple[np.ndarray, ...]:
    y = as_labels(y_true)
    s = as_scores(y_score, score_name)
    same_length(y, s, ("y_true", score_name))
    return y, s


def _two_classes(y: np.ndarray, what: str) -> tuple[int, int]:
    pos = int(np.count_nonzero(y))
    neg = int(y.shape[0] - pos)
    if pos == 0 or neg == 0:
        only = "positive (1)" if neg == 0 else "negative (0)"
        msg = (
            f"{what} is undefined when `y_true` has one class only: all {y.shape[0]} labels are "
            f"{only}; expected both 0 and 1."
        )
        raise InputError(msg)
    return pos, neg


# ------------------------------------------------------------------------- shared helpers


def auc_from_sorted(pos: np.ndarray, neg: np.ndarray) -> float:
    """Exact AUC of positives and negatives whose scores (or their keys) are sorted ascending
    (both non-empty)."""
    return auc_value(auc_twice_wins(pos, neg), int(pos.shape[0]), int(neg.shape[0]))


def auc_value(twice_wins: int, n_pos: int, n_neg: int) -> float:
    """AUC from the exact pair count of :func:`auc_twice_wins` and the class sizes."""
    return twice_wins / (2.0 * n_pos * n_neg)


def gauc_from_groups(
    auc_g: np.ndarray, rows: np.ndarray, positives: np.ndarray, weight: str
) -> tuple[float, int, int]:
    """GAUC from per-group AUCs (NaN = one class): the value, groups used, groups skipped."""
    used = ~np.isnan(auc_g)
    n_used = int(used.sum())
    w = gauc_weights(rows[used], positives[used], weight)
    total = math.fsum(w)
    value = math.fsum(w * auc_g[used]) / total if n_used else math.nan
    return value, n_used, int(auc_g.shape[0] - n_used)


def gauc_weights(rows: np.ndarray, positives: np.ndarray, weight: str) -> np.ndarray:
    """Each group's GAUC weight (float64): its rows, its positives, or 1."""
    if weight == "impressions":
        return rows.astype(np.float64)
    if weight == "clicks":
        return positives.astype(np.float64)
    return np.ones(rows.shape[0], dtype=np.float64)


def check_weight(weight: str) -> None:
    """Raise unless ``weight`` is a GAUC weight."""
    check_choice("`weight`", weight, get_args(GaucWeight))


def ratio(num: float, den: float, what: str) -> float:
    """``num / den``, or NaN with an :class:`UndefinedMetricWarning` when ``den`` is 0."""
    if den == 0:
        warnings.warn(
            f"{what} is undefined (0/0 on these rows); returning NaN.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return math.nan
    return float(num) / float(den)


def fbeta_counts(tp: int, fp: int, fn: int, beta: float) -> float:
    """F-beta from counts: ``(1 + b²) TP / ((1 + b²) TP + b² FN + FP)`` (NaN when 0/0)."""
    b2 = beta * beta
    return ratio((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, f"F-beta (beta={beta:g})")


def _check_beta(beta: float) -> float:
    if isinstance(beta, bool) or not isinstance(beta, int | float):
        msg = f"`beta` must be a number > 0; got {beta!r}."
        raise InputError(msg)
    if not math.isfinite(beta) or beta <= 0:
        msg = f"`beta` must be a finite number > 0; got {beta!r}."
        raise InputError(msg)
    return float(beta)


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        msg = f"`threshold` must be a number; got {threshold!r}."
        raise InputError(msg)
    if math.isnan(threshold):
        msg = "`threshold` must be a number; got nan."
        raise InputError(msg)
    return float(threshold)


# ------------------------------------------------------------------------------ AUC, GAUC


def auc(y_true: Any, y_score: Any) -> float:
    """Area under the ROC curve, exact, with ties counting one half.

    ``AUC = (sum of the positives' average ranks - M(M+1)/2) / (M N)`` for ``M`` positives
    and ``N`` negatives: the probability that a random positive outscores a random negative.
    Equals scikit-learn's ``roc_auc_score``. O(n log n): the two classes' scores are sorted
    apart and counted in one merge walk.

    Parameters
    ----------
    y_true:
        Binary labels (0/1 or booleans): NumPy array, list, pandas/Polars Series or Arrow array.
    y_score:
        Scores (higher means more likely positive); any real numbers, infinities included.

    Returns
    -------
    float

    Raises
    ------
    InputError
        On empty or mismatched inputs, NaN or null values, labels other than 0/1, and when
        ``y_true`` has one class only (AUC is then undefined).

    Examples
    --------
    >>> import receval
    >>> receval.auc([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5])
    0.75

    The positive at 0.4 ties with a negative (one half) and loses to 0.5: (3 + 1.5) / 6.

    >>> receval.auc([1, 1], [0.3, 0.9])
    Traceback (most recent call last):
    ...
    receval._errors.InputError: AUC is undefined when `y_true` has one class only: all 2 ...
    """
    y, s = _binary(y_true, y_score)
    _two_classes(y, "AUC")
    pos, neg = sorted_class_keys(y, s)
    return auc_from_sorted(pos, neg)


def group_codes(groups: Any, n: int) -> tuple[np.ndarray, pl.Series]:
    """Dense int64 codes of ``groups`` (in sorted order of the ids) and the distinct ids."""
    arr = as_vector(groups, "groups")
    if arr.shape[0] != n:
        msg = f"`y_true` and `groups` must have the same length; got {n} and {arr.shape[0]}."
        raise InputError(msg)
    series = pl.Series("group", arr) if arr.dtype != object else pl.Series("group", arr.tolist())
    if series.dtype.is_float() and series.is_nan().any():
        bad = series.is_nan().to_numpy()
        msg = f"`groups` has {int(bad.sum())} NaN value(s); expected ids. Positions: " + (
            f"{_positions(bad)}."
        )
        raise InputError(msg)
    if (series.dtype.is_integer() or series.dtype == pl.String) and not series.has_nulls():
        return user_codes(series)  # a table over a small id range, else hashing: no sort
    frame = pl.DataFrame({"group": series}).with_columns(
        (pl.col("group").rank("dense") - 1).cast(pl.Int64).alias("code")
    )
    codes = np.ascontiguousarray(frame["code"].to_numpy(), dtype=np.int64)
    keys = frame.select(pl.col("group").unique(maintain_order=False).sort())["group"]
    return codes, keys


def _group_stats(
    y_true: Any, y_score: Any, groups: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, pl.Series]:
    y, s = _binary(y_true, y_score)
    codes, keys = group_codes(groups, y.shape[0])
    rows, positives, auc_g = group_pair_counts(codes, keys.len(), y, s)
    return rows, positives, auc_g, keys


def gauc(y_true: Any, y_score: Any, groups: Any, *, weight: GaucWeight = "impressions") -> float:
    """Group AUC: each group's (user's) AUC over its own rows, averaged with weights.

    ``GAUC = sum_u w_u AUC_u / sum_u w_u`` over the groups that have both classes; groups with
    one class only are skipped (:func:`group_auc` lists them). ``w_u`` is the group's rows
    (``"impressions"``, the default, as in Zhou et al. 2018), its positives (``"clicks"``) or 1
    (``"uniform"``).

    Parameters
    ----------
    y_true, y_score:
        Binary labels and scores, as for :func:`auc`.
    groups:
        The group (user) id of each row: integers or strings.
    weight:
        ``"impressions"``, ``"clicks"`` or ``"uniform"``.

    Returns
    -------
    float
        NaN (with an :class:`~receval.UndefinedMetricWarning`) when no group has both classes.

    Examples
    --------
    Two models that order every user's items perfectly have GAUC 1.0, while their global AUCs
    differ, because global AUC also compares rows of different users:

    >>> import receval
    >>> users = ["a", "a", "b", "b", "c", "c"]
    >>> y = [1, 0, 1, 0, 1, 0]
    >>> m1 = [0.9, 0.8, 0.8, 0.3, 0.6, 0.5]
    >>> m2 = [0.9, 0.8, 0.7, 0.6, 0.5, 0.1]
    >>> receval.gauc(y, m1, users), receval.gauc(y, m2, users)
    (1.0, 1.0)
    >>> round(receval.auc(y, m1), 3), round(receval.auc(y, m2), 3)
    (0.833, 0.667)
    """
    check_weight(weight)
    rows, positives, auc_g, _ = _group_stats(y_true, y_score, groups)
    value, used, _ = gauc_from_groups(auc_g, rows, positives, weight)
    if not used:
        warnings.warn(
            "GAUC is undefined: no group has both classes; returning NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    return value


def group_auc(y_true: Any, y_score: Any, groups: Any) -> pl.DataFrame:
    """Each group's rows, positives and AUC (null for a group with one class only).

    Returns
    -------
    polars.DataFrame
        Columns ``group``, ``rows``, ``positives``, ``auc``; one row per group, sorted by id.

    Examples
    --------
    >>> import receval
    >>> receval.group_auc([1, 0, 1, 1], [0.2, 0.1, 0.5, 0.7], ["u1", "u1", "u2", "u2"])
    shape: (2, 4)
    ┌───────┬──────┬───────────┬──────┐
    │ group ┆ rows ┆ positives ┆ auc  │
    │ ---   ┆ ---  ┆ ---       ┆ ---  │
    │ str   ┆ i64  ┆ i64       ┆ f64  │
    ╞═══════╪══════╪═══════════╪══════╡
    │ u1    ┆ 2    ┆ 1         ┆ 1.0  │
    │ u2    ┆ 2    ┆ 2         ┆ null │
    └───────┴──────┴───────────┴──────┘
    """
    rows, positives, auc_g, keys = _group_stats(y_true, y_score, groups)
    return pl.DataFrame(
        [
            keys.alias("group"),
            pl.Series("rows", rows),
            pl.Series("positives", positives),
            pl.Series("auc", auc_g, dtype=pl.Float64, nan_to_null=True),
        ]
    )


# ---------------------------------------------------------------------------------- curves


def _threshold_counts(
    y: np.ndarray, s: np.ndarray, *, thresholds: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Distinct scores descending and the TP / FP counts of ``score >= threshold`` at each
    (the thresholds are left empty unless ``thresholds``)."""
    keys, n_pos, n_neg = class_histogram(y, s)
    tps = np.cumsum(n_pos[::-1])
    fps = np.cumsum(n_neg[::-1])
    if not thresholds:
        values = np.zeros(0, dtype=np.float64)
    elif np.any(np.signbit(s) & (s == 0)):  # -0.0: the zero that np.unique gives, as before
        values = np.unique(s)[::-1]
    else:
        values = float_of_keys(keys[::-1])
    return values, tps, fps, int(n_pos.sum()), int(n_neg.sum())


def roc_curve(y_true: Any, y_score: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ROC curve: (FPR, TPR) at every distinct score, from (0, 0) to (1, 1).

    Equals scikit-learn's ``roc_curve(y_true, y_score, drop_intermediate=False)``: the first
    threshold is ``inf`` (nothing predicted positive), then every distinct score, descending;
    a row is predicted positive when its score >= the threshold.

    Returns
    -------
    fpr, tpr, thresholds : numpy.ndarray
        float64 arrays of length (distinct scores + 1).

    Raises
    ------
    InputError
        As :func:`auc`, one class included (FPR or TPR would be 0/0).

    Examples
    --------
    >>> import receval
    >>> fpr, tpr, thr = receval.roc_curve([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5])
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.3333333333333333, 0.6666666666666666, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    >>> thr.tolist()
    [inf, 0.8, 0.5, 0.4, 0.2]
    """
    y, s = _binary(y_true, y_score)
    _two_classes(y, "the ROC curve")
    thresholds, tps, fps, n_pos, n_neg = _threshold_counts(y, s)
    fpr = np.concatenate([[0.0], fps / float(n_neg)])
    tpr = np.concatenate([[0.0], tps / float(n_pos)])
    return fpr, tpr, np.concatenate([[np.inf], thresholds])


def pr_curve(y_true: Any, y_score: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The precision-recall curve, as scikit-learn's ``precision_recall_curve``.

    ``precision[i]`` and ``recall[i]`` are those of ``score >= thresholds[i]``; thresholds
    are the distinct scores, increasing; the last point is (recall 0, precision 1), with no
    threshold.

    Returns
    -------
    precision, recall, thresholds : numpy.ndarray
        float64 arrays; ``thresholds`` is one shorter.

    Raises
    ------
    InputError
        As :func:`auc`; ``y_true`` needs a positive (recall is 0/0 otherwise), negatives are
        optional.

    Examples
    --------
    >>> import receval
    >>> p, r, t = receval.pr_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> p.tolist()
    [0.5, 0.6666666666666666, 0.5, 1.0, 1.0]
    >>> r.tolist(), t.tolist()
    ([1.0, 1.0, 0.5, 0.5, 0.0], [0.1, 0.35, 0.4, 0.8])
    """
    y, s = _binary(y_true, y_score)
    _need_positive(y, "the precision-recall curve")
    thresholds, tps, fps, n_pos, _ = _threshold_counts(y, s)
    precision_ = tps / (tps + fps).astype(np.float64)
    recall_ = tps / float(n_pos)
    return (
        np.concatenate([precision_[::-1], [1.0]]),
        np.concatenate([recall_[::-1], [0.0]]),
        np.ascontiguousarray(thresholds[::-1]),
    )


def _need_positive(y: np.ndarray, what: str) -> None:
    if not y.any():
        msg = (
            f"{what} is undefined when `y_true` has no positive (1); all {y.shape[0]} labels are 0."
        )
        raise InputError(msg)


def average_precision(y_true: Any, y_score: Any) -> float:
    """Average precision: the precision-recall curve as a step function, no interpolation.

    ``AP = sum_n (R_n - R_{n-1}) P_n`` over the distinct score thresholds, highest first.
    Equals scikit-learn's ``average_precision_score``. Tied rows enter together (one step).

    Examples
    --------
    >>> import receval
    >>> round(receval.average_precision([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 4)
    0.8333
    """
    y, s = _binary(y_true, y_score)
    _need_positive(y, "average precision")
    _, tps, fps, n_pos, _ = _threshold_counts(y, s, thresholds=False)
    return total(ap_terms(tps, fps, 0, 0)) / n_pos


def ap_terms(tps: np.ndarray, fps: np.ndarray, tp_before: int, fp_before: int) -> np.ndarray:
    """The expansion of ``sum (TP_n - TP_{n-1}) * precision_n`` over thresholds, highest first.

    ``tps`` / ``fps`` count rows with score >= each threshold among the rows given;
    ``tp_before`` / ``fp_before`` count the rows of higher scores outside them (another
    partition of a distributed sort), so partitions' expansions concatenate to the whole's.
    """
    tp = tps.astype(np.int64) + tp_before
    fp = fps.astype(np.int64) + fp_before
    gained = np.diff(tp, prepend=tp_before)
    precision_ = tp / (tp + fp).astype(np.float64)
    return parts(gained * precision_)


# -------------------------------------------------------------------------------- log loss


def check_probabilities(p: np.ndarray, name: str) -> None:
    """Raise unless every value of ``p`` is in [0, 1]."""
    bad = (p < 0) | (p > 1)
    if bad.any():
        shown = ", ".join(repr(v) for v in p[bad][:_SHOW].tolist())
        msg = (
            f"`{name}` must hold probabilities in [0, 1]; found {int(bad.sum())} value(s) "
            f"outside, e.g. {shown} at positions {_positions(bad)}. Log loss never clips "
            "scores silently: map them to probabilities first (e.g. a sigmoid)."
        )
        raise InputError(msg)


def log_loss_of(labels: np.ndarray, probs: np.ndarray) -> float:
    """Mean binary cross-entropy of checked labels and probabilities."""
    return total(log_loss_parts(labels, probs)) / int(labels.shape[0])


def log_loss_parts(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """The expansion of the rows' summed cross-entropy (exact; merges across shards)."""
    buf, lens = log_loss_chunks(labels, probs, _EPS)
    return np.concatenate([buf[c, : lens[c]] for c in range(lens.shape[0])])


def log_loss(y_true: Any, y_prob: Any) -> float:
    """Mean binary cross-entropy (log loss) of predicted probabilities.

    ``-mean(y log p + (1 - y) log(1 - p))`` with ``p`` clipped to ``[eps, 1 - eps]``
    (``eps`` = float64 machine epsilon, as scikit-learn's ``log_loss``). Defined with one class
    too (scikit-learn then needs ``labels=``).

    Raises
    ------
    InputError
        On labels other than 0/1 and on probabilities outside [0, 1] (never clipped silently).

    Examples
    --------
    >>> import receval
    >>> round(receval.log_loss([1, 0, 1], [0.9, 0.2, 0.6]), 6)
    0.279777
    >>> receval.log_loss([1, 0], [1.2, 0.1])
    Traceback (most recent call last):
    ...
    receval._errors.InputError: `y_prob` must hold probabilities in [0, 1]; found 1 value(s) ...
    """
    y, p = _binary(y_true, y_prob, "y_prob")
    check_probabilities(p, "y_prob")
    return log_loss_of(y, p)


# ------------------------------------------------------------------------ confusion matrix


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of a binary decision ``score >= threshold`` against 0/1 labels, and the rates
    derived from them. A rate whose denominator is 0 is NaN with an
    :class:`~receval.UndefinedMetricWarning`, never a silent 0.

    Examples
    --------
    >>> import receval
    >>> cm = receval.confusion_matrix([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5])
    >>> cm
    ConfusionMatrix(tp=1, fp=1, fn=1, tn=2, threshold=0.5)
    >>> cm.tpr, cm.fpr, cm.accuracy
    (0.5, 0.3333333333333333, 0.6)
    >>> cm = receval.confusion_matrix([1, 0], [0.4, 0.2], threshold=0.9)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cm.precision
    nan
    >>> str(caught[0].message)
    'precision is undefined (0/0 on these rows); returning NaN.'
    """

    tp: int
    fp: int
    fn: int
    tn: int
    threshold: float = 0.5

    @property
    def precision(self) -> float:
        """``TP / (TP + FP)`` (positive predictive value)."""
        return ratio(self.tp, self.tp + self.fp, "precision")

    @property
    def recall(self) -> float:
        """``TP / (TP + FN)`` (sensitivity, TPR)."""
        return ratio(self.tp, self.tp + self.fn, "recall")

    @property
    def tpr(self) -> float:
        """True-positive rate: ``TP / (TP + FN)``, the same as :attr:`recall`."""
        return ratio(self.tp, self.tp + self.fn, "TPR")

    @property
    def fpr(self) -> float:
        """False-positive rate: ``FP / (FP + TN)``."""
        return ratio(self.fp, self.fp + self.tn, "FPR")

    @property
    def tnr(self) -> float:
        """True-negative rate (specificity): ``TN / (FP + TN)``."""
        return ratio(self.tn, self.fp + self.tn, "TNR")

    @property
    def accuracy(self) -> float:
        """``(TP + TN) / (TP + FP + FN + TN)``."""
        return ratio(self.tp + self.tn, self.tp + self.fp + self.fn + self.tn, "accuracy")

    @property
    def f1(self) -> float:
        """F1: :meth:`fbeta` with ``beta=1``."""
        return fbeta_counts(self.tp, self.fp, self.fn, 1.0)

    def fbeta(self, beta: float = 1.0) -> float:
        """``(1 + b²) TP / ((1 + b²) TP + b² FN + FP)``, the harmonic form of
        ``(1 + b²) P R / (b² P + R)`` (0 when TP = 0 and the denominator is not)."""
        return fbeta_counts(self.tp, self.fp, self.fn, _check_beta(beta))


def confusion_counts(labels: np.ndarray, scores: np.ndarray, threshold: float) -> ConfusionMatrix:
    """The :class:`ConfusionMatrix` of checked labels and scores."""
    pred = scores >= threshold
    truth = labels.astype(np.bool_)
    tp = int(np.count_nonzero(pred & truth))
    n_pred = int(np.count_nonzero(pred))
    n_pos = int(np.count_nonzero(truth))
    n = int(labels.shape[0])
    return ConfusionMatrix(tp, n_pred - tp, n_pos - tp, n - n_pred - n_pos + tp, threshold)


def confusion_matrix(y_true: Any, y_score: Any, *, threshold: float = 0.5) -> ConfusionMatrix:
    """TP, FP, FN, TN of the decision ``score >= threshold``, with the derived rates.

    Parameters
    ----------
    y_true, y_score:
        Binary labels and scores, as for :func:`auc`.
    threshold:
        Rows with ``score >= threshold`` are predicted positive.

    Returns
    -------
    ConfusionMatrix
        ``tp``, ``fp``, ``fn``, ``tn`` and ``precision``, ``recall``, ``tpr``, ``fpr``,
        ``tnr``, ``accuracy``, ``f1``, ``fbeta(beta)``.

    Examples
    --------
    >>> import receval
    >>> cm = receval.confusion_matrix([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5], threshold=0.4)
    >>> cm.tp, cm.fp, cm.fn, cm.tn
    (2, 2, 0, 1)
    >>> cm.precision, cm.recall, round(cm.f1, 4)
    (0.5, 1.0, 0.6667)
    """
    y, s = _binary(y_true, y_score)
    return confusion_counts(y, s, _check_threshold(threshold))


def precision(y_true: Any, y_score: Any, *, threshold: float = 0.5) -> float:
    """Precision of ``score >= threshold``: ``TP / (TP + FP)`` (NaN with a warning when no row
    is predicted positive). Metric string: ``ppv(threshold=...)``.

    Examples
    --------
    >>> import receval
    >>> receval.precision([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5], threshold=0.4)
    0.5
    """
    return confusion_matrix(y_true, y_score, threshold=threshold).precision


def recall(y_true: Any, y_score: Any, *, threshold: float = 0.5) -> float:
    """Recall (TPR) of ``score >= threshold``: ``TP / (TP + FN)`` (NaN with a warning when
    there is no positive). Metric string: ``tpr(threshold=...)``.

    Examples
    --------
    >>> import receval
    >>> receval.recall([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5])
    0.5
    """
    return confusion_matrix(y_true, y_score, threshold=threshold).recall


def fbeta(y_true: Any, y_score: Any, *, beta: float = 1.0, threshold: float = 0.5) -> float:
    """F-beta of ``score >= threshold``: ``(1 + b²) P R / (b² P + R)``, computed from counts
    as ``(1 + b²) TP / ((1 + b²) TP + b² FN + FP)`` (equals scikit-learn's ``fbeta_score``;
    NaN with a warning when there is no positive and none is predicted). Metric string:
    ``fbeta_score(beta=..., threshold=...)``.

    Examples
    --------
    >>> import receval
    >>> y, s = [1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5]
    >>> round(receval.fbeta(y, s, beta=2, threshold=0.4), 4)  # P = 0.5, R = 1
    0.8333
    """
    return confusion_matrix(y_true, y_score, threshold=threshold).fbeta(beta)


def accuracy(y_true: Any, y_score: Any, *, threshold: float = 0.5) -> float:
    """Share of rows whose decision ``score >= threshold`` equals their label.

    Examples
    --------
    >>> import receval
    >>> receval.accuracy([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5])
    0.6
    """
    return confusion_matrix(y_true, y_score, threshold=threshold).accuracy
