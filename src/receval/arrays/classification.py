"""Pointwise classification metrics on arrays: AUC, GAUC, ROC/PR curves, log loss and the
confusion matrix at a decision threshold (scikit-learn style: truth first, options keyword-only,
Python floats back).

AUC is exact: ``AUC = (sum of the positives' average ranks - M(M+1)/2) / (M N)`` with ``M``
positives and ``N`` negatives, which is the share of (positive, negative) pairs the scores order
correctly, ties counting one half (docs/metrics.md). It is computed without ranking all rows:
the positives' scores and the negatives' scores are sorted apart and one merge walk counts, for
each distinct positive score, the negatives below it and tied with it (:func:`_pair_counts`, a
``prange`` driver over chunks of positives). From :data:`_RADIX_MIN` rows on, the sorts are a
parallel radix sort of the scores' order-preserving uint64 keys (:mod:`receval.kernels.sort`:
equal scores, ``-0.0`` and ``0.0`` included, have equal keys); below, NumPy's sort of the
float64 scores (both sorts in parallel threads). Counts are integers (exact); the AUC is one
division, so both paths give the same bits. Average precision and the curves read the same
sorted classes: per distinct score, its positives and negatives (:func:`_merge_runs`).

GAUC with many small groups (at most :data:`_SPLIT_MAX_ROWS` rows a group on average, the
common case of users' impressions) splits the rows by (group, label) in two counting passes,
the second in cache, and counts each group's pairs there, comparing every pair of a small group
and sorting both classes' keys of a larger one by their bytes (:func:`_split_pair_counts`,
:func:`_twice_wins_between`); rows grouped by user already are split group by group
(:func:`grouped_pair_counts`). With fewer, larger
groups it sorts the rows by (group, score key) with the same radix sort (a stable counting
sort by group after the score's digits) and counts each group's pairs over its tie groups in
one walk (:func:`_sorted_groups_chunk`, chunks of groups on threads); below
:data:`_RADIX_MIN` rows, a counting sort by group and a sort per group
(:func:`_group_pair_counts`, ``prange`` over groups). Every way counts the same integers.

Layering: ``_count_chunk`` (one chunk / one user), ``_pair_counts`` / ``_group_pair_counts``
(``prange`` drivers), the chunk kernels run by :func:`receval.kernels.pools.run_chunks`, and
the documented Python functions.
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numba
import numpy as np
import polars as pl
from numba import njit, prange

from receval._errors import InputError, UndefinedMetricWarning, check_choice
from receval.data.layout import FLOAT_EXACT, inexact_integers_message, user_codes
from receval.kernels.exact import CAP, grow, parts, total
from receval.kernels.grouping import (
    RADIX_MAX_BITS,
    count_positions,
    counting_sort,
    radix_low_bits,
)
from receval.kernels.memory import uninitialised
from receval.kernels.pools import check_pools, run_chunks
from receval.kernels.sort import (
    class_keys,
    float_keys,
    float_of_keys,
    group_keys,
    n_chunks_for,
    order_key,
    sort_keys,
    sort_pairs,
)
from receval.kernels.toolbox import frozen, longest_range

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
_PARALLEL_SORT_MIN = 1 << 16  # below this, the two sorts run one after the other
_RADIX_MIN = 1 << 15
"""From this many rows on, scores are sorted by the radix sort of their keys
(:mod:`receval.kernels.sort`); below, by NumPy's sort (the results are the same)."""
_GROUPS_PER_CHUNK = 1024
_SPLIT_MAX_ROWS = 192
"""GAUC splits the rows by group and label (:func:`_split_pair_counts`) when the groups
average at most this many rows; fewer, larger groups are radix-sorted by (group, score key).
10^7 rows, best of 3 (s) in two runs, split / radix sort: 10 rows a group 0.13-0.17 /
0.37-0.39, 100 rows 0.18-0.21 / 0.26-0.29, 200 rows 0.22-0.29 / 0.28-0.31, 500 rows
0.25-0.28 / 0.29-0.33, 1000 rows 0.28-0.30 / 0.26-0.31, 10^4 rows 0.23-0.26 / 0.25-0.28; but
10^8 rows with 1000 a group, 3.37 / 2.83 s (the second pass's buckets, at most 512, no longer
fit in cache)."""
_GROUPS_PER_THREAD = 4
"""Rows grouped already are counted group by group (:func:`grouped_pair_counts`) when there
are at least this many groups per thread; fewer groups are radix-sorted, on every thread."""
_PAIRS_PER_ROW_BIT = 8
"""A group's pairs are compared one by one while there are at most this many per row and bit
of its size (about where that costs what sorting both classes does), else its classes are
sorted."""
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


# --------------------------------------------------------------------------------- kernels


@njit(cache=True, nogil=True)
def _count_chunk(pos: np.ndarray, lo: int, hi: int, neg: np.ndarray) -> int:
    """Twice the pairs that ``pos[lo:hi]`` win against ``neg``, ties counting one (half of 2).

    Both arrays are sorted ascending; one merge walk over a tie group of positives at a time.
    """
    n = neg.shape[0]
    if lo >= hi:
        return 0
    j = np.searchsorted(neg, pos[lo])  # first negative >= the chunk's smallest positive
    total = 0
    i = lo
    while i < hi:
        v = pos[i]
        while j < n and neg[j] < v:
            j += 1
        k = j
        while k < n and neg[k] == v:
            k += 1
        e = i + 1
        while e < hi and pos[e] == v:
            e += 1
        total += (e - i) * (2 * j + (k - j))
        i = e
    return total


@njit(cache=True, parallel=True)
def _pair_counts(pos: np.ndarray, neg: np.ndarray, n_chunks: int) -> int:
    """:func:`_count_chunk` over ``n_chunks`` chunks of the sorted positives, in parallel.

    A tie group of positives may straddle two chunks: each chunk counts its own rows of it
    against the same negatives, so the sum is unchanged.
    """
    m = pos.shape[0]
    out = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        out[c] = _count_chunk(pos, m * c // n_chunks, m * (c + 1) // n_chunks, neg)
    return out.sum()  # type: ignore[no-any-return]


@njit(cache=True, parallel=True)
def _group_pair_counts(
    offsets: np.ndarray, labels: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group: rows, positives and the AUC (NaN for one class), in parallel over groups.

    Group ``g`` holds rows ``offsets[g]:offsets[g + 1]`` (rows grouped already).
    """
    n_groups = offsets.shape[0] - 1
    rows = np.zeros(n_groups, dtype=np.int64)
    positives = np.zeros(n_groups, dtype=np.int64)
    auc = np.full(n_groups, np.nan)
    for g in prange(n_groups):
        lo = offsets[g]
        hi = offsets[g + 1]
        p = 0
        for r in range(lo, hi):
            p += labels[r]
        q = hi - lo - p
        rows[g] = hi - lo
        positives[g] = p
        if p == 0 or q == 0:
            continue
        ps = np.empty(p, dtype=np.float64)
        ns = np.empty(q, dtype=np.float64)
        a = 0
        b = 0
        for r in range(lo, hi):
            if labels[r]:
                ps[a] = scores[r]
                a += 1
            else:
                ns[b] = scores[r]
                b += 1
        ps.sort()
        ns.sort()
        auc[g] = _count_chunk(ps, 0, p, ns) / (2.0 * p * q)
    return rows, positives, auc


@njit(cache=True, parallel=True)
def _log_loss_parts(
    labels: np.ndarray, probs: np.ndarray, eps: float, n_chunks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Expansions (:mod:`receval.kernels.exact`) of the rows' cross-entropy, p clipped to
    [eps, 1 - eps], over contiguous chunks: the sum is exact, whatever the split."""
    n = labels.shape[0]
    buf = np.zeros((n_chunks, CAP), dtype=np.float64)
    lens = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        k = 0
        for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
            p = min(max(probs[i], eps), 1.0 - eps)
            k = grow(buf[c], k, -np.log(p) if labels[i] else -np.log(1.0 - p))
        lens[c] = k
    return buf, lens


@njit(cache=True, nogil=True)
def _split_histogram_chunk(
    chunk: int, n_chunks: int, codes: np.ndarray, labels: np.ndarray, shift: int, counts: np.ndarray
) -> None:
    """Rows ``lo:hi`` counted by the high bits (``>> shift``) of ``code * 2 + label``."""
    n = codes.shape[0]
    row = counts[chunk]
    for i in range(n * chunk // n_chunks, n * (chunk + 1) // n_chunks):
        row[(2 * codes[i] + (labels[i] != 0)) >> shift] += 1


@njit(cache=True, nogil=True)
def _split_scatter_chunk(
    chunk: int,
    n_chunks: int,
    codes: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    shift: int,
    starts: np.ndarray,
    moved: np.ndarray,
    low: np.ndarray,
) -> None:
    """Rows ``lo:hi`` placed by the high bits of ``code * 2 + label`` (``starts[chunk]``: the
    chunk's next place for each): the score, and the low bits in ``low``."""
    n = codes.shape[0]
    mask = (1 << shift) - 1
    row = starts[chunk]
    for i in range(n * chunk // n_chunks, n * (chunk + 1) // n_chunks):
        key = 2 * codes[i] + (labels[i] != 0)
        d = key >> shift
        p = row[d]
        moved[p] = scores[i]
        low[p] = key & mask
        row[d] = p + 1


@njit(cache=True, nogil=True)
def _twice_wins_between(
    buf: np.ndarray,
    a: int,
    b: int,
    c: int,
    keys: np.ndarray,
    tmp: np.ndarray,
    cnt: np.ndarray,
    per_row_bit: int,
) -> int:
    """Twice the pairs that the positives ``buf[b:c]`` win against the negatives ``buf[a:b]``,
    ties counting one: by comparing every pair while there are at most ``per_row_bit`` per row
    and bit of the group's size (:data:`_PAIRS_PER_ROW_BIT`), else from
    both classes' order-preserving keys (``keys[a:c]``, :func:`receval.kernels.sort.order_key`)
    sorted (:func:`_sort_small_keys`, with ``tmp`` and ``cnt``) and one merge walk
    (:func:`_count_chunk`)."""
    p = c - b
    m = c - a
    if p * (b - a) <= per_row_bit * m * _bits(m):
        twice = 0
        for i in range(b, c):
            x = buf[i]
            below = 0
            tied = 0
            for j in range(a, b):
                v = buf[j]
                below += v < x
                tied += v == x
            twice += 2 * below + tied
        return twice
    return _sorted_twice_wins(buf, a, b, c, keys, tmp, cnt)


@njit(cache=True, nogil=True)
def _sorted_twice_wins(
    buf: np.ndarray, a: int, b: int, c: int, keys: np.ndarray, tmp: np.ndarray, cnt: np.ndarray
) -> int:
    """:func:`_twice_wins_between` by sorting: both classes' keys sorted, one merge walk."""
    bits = buf.view(np.uint64)
    for i in range(a, c):
        keys[i] = order_key(bits[i])
    _sort_small_keys(keys, tmp, cnt, a, b)
    _sort_small_keys(keys, tmp, cnt, b, c)
    return _count_chunk(keys[b:c], 0, c - b, keys[a:b])


@njit(cache=True, nogil=True)
def _sort_small_keys(keys: np.ndarray, tmp: np.ndarray, cnt: np.ndarray, lo: int, hi: int) -> None:
    """``keys[lo:hi]`` sorted ascending in place: least significant byte first, one counting
    pass per byte that varies between them (``tmp[lo:hi]``: scratch; ``cnt``: 256 counters).
    For a group's rows, in cache: no comparisons, so no mispredicted branches."""
    if hi - lo < 2:
        return
    o = np.uint64(0)
    n = ~np.uint64(0)
    for i in range(lo, hi):
        o |= keys[i]
        n &= keys[i]
    varying = o ^ n
    src = keys
    dst = tmp
    moved = False
    for byte in range(8):
        shift = np.uint64(8 * byte)
        if (varying >> shift) & np.uint64(0xFF) == 0:
            continue
        for d in range(256):
            cnt[d] = 0
        for i in range(lo, hi):
            cnt[(src[i] >> shift) & np.uint64(0xFF)] += 1
        at = lo
        for d in range(256):
            k = cnt[d]
            cnt[d] = at
            at += k
        for i in range(lo, hi):
            d = (src[i] >> shift) & np.uint64(0xFF)
            dst[cnt[d]] = src[i]
            cnt[d] += 1
        src, dst = dst, src
        moved = not moved
    if moved:
        for i in range(lo, hi):
            keys[i] = tmp[i]


@njit(cache=True, nogil=True)
def _bits(m: int) -> int:
    """How many bits ``m`` (> 0) takes."""
    k = 0
    while m:
        m >>= 1
        k += 1
    return k


@njit(cache=True, nogil=True)
def _pair_scratch(
    offsets: np.ndarray, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scratch for :func:`_twice_wins_between` over ranges ``lo .. hi - 1`` of ``offsets``:
    the scores' buffer, keys and the byte sort's buffer, each as long as the longest range,
    and 256 counters."""
    longest = longest_range(offsets, lo, hi)
    buf = np.empty(longest, dtype=np.float64)
    keys = np.empty(longest, dtype=np.uint64)
    tmp = np.empty(longest, dtype=np.uint64)
    return buf, keys, tmp, np.empty(256, dtype=np.int64)


@njit(cache=True, nogil=True)
def _split_groups_chunk(
    chunk: int,
    n_chunks: int,
    shift: int,
    bucket_off: np.ndarray,
    moved: np.ndarray,
    low: np.ndarray,
    rows: np.ndarray,
    positives: np.ndarray,
    auc: np.ndarray,
    per_row_bit: int,
) -> None:
    """Rows, positives and AUC (NaN for one class) of the groups in the first pass's buckets
    of one chunk: each bucket's scores placed by the low bits of ``code * 2 + label`` into a
    buffer (in cache), where each group's negatives precede its positives, then each group's
    pairs counted (:func:`_twice_wins_between`)."""
    n_buckets = bucket_off.shape[0] - 1
    n_groups = rows.shape[0]
    width = 1 << shift
    b_lo = n_buckets * chunk // n_chunks
    b_hi = n_buckets * (chunk + 1) // n_chunks
    buf, keys, tmp, cnt = _pair_scratch(bucket_off, b_lo, b_hi)
    start = np.empty(width + 1, dtype=np.int64)
    cursor = np.empty(width, dtype=np.int64)
    for b in range(b_lo, b_hi):
        lo = bucket_off[b]
        hi = bucket_off[b + 1]
        for j in range(width + 1):
            start[j] = 0
        for r in range(lo, hi):
            start[low[r] + 1] += 1
        for j in range(width):
            start[j + 1] += start[j]
            cursor[j] = start[j]
        for r in range(lo, hi):
            j = low[r]
            buf[cursor[j]] = moved[r]
            cursor[j] += 1
        first = (b << shift) >> 1
        for j in range(0, width, 2):
            g = first + (j >> 1)
            if g >= n_groups:
                break
            a = start[j]
            m = start[j + 1]
            c = start[j + 2]
            p = c - m
            q = m - a
            rows[g] = p + q
            positives[g] = p
            twice = _twice_wins_between(buf, a, m, c, keys, tmp, cnt, per_row_bit) if p and q else 0
            auc[g] = twice / (2.0 * p * q) if p and q else np.nan


@njit(cache=True, nogil=True)
def _grouped_split_chunk(
    chunk: int,
    cuts: np.ndarray,
    offsets: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    rows: np.ndarray,
    positives: np.ndarray,
    auc: np.ndarray,
    per_row_bit: int,
) -> None:
    """Rows, positives and AUC (NaN for one class) of groups ``cuts[chunk]:cuts[chunk + 1]``
    of rows grouped already: each group's negatives, then its positives, copied into a buffer
    and its pairs counted there (:func:`_twice_wins_between`)."""
    g_lo = cuts[chunk]
    g_hi = cuts[chunk + 1]
    buf, keys, tmp, cnt = _pair_scratch(offsets, g_lo, g_hi)
    for g in range(g_lo, g_hi):
        lo = offsets[g]
        hi = offsets[g + 1]
        p = 0
        for r in range(lo, hi):
            p += labels[r] != 0
        q = hi - lo - p
        a = 0
        b = q
        for r in range(lo, hi):
            if labels[r] != 0:
                buf[b] = scores[r]
                b += 1
            else:
                buf[a] = scores[r]
                a += 1
        rows[g] = hi - lo
        positives[g] = p
        twice = _twice_wins_between(buf, 0, q, q + p, keys, tmp, cnt, per_row_bit) if p and q else 0
        auc[g] = twice / (2.0 * p * q) if p and q else np.nan


def _split_pair_counts(
    codes: np.ndarray, n_groups: int, labels: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`group_pair_counts` for many small groups: two counting passes by ``code * 2 +
    label`` (its high bits across the rows, then its low bits within each high bucket, in
    cache, as :func:`receval.kernels.grouping.radix_group`) split each group's scores into
    negatives and positives, and each group's pairs are counted there."""
    n = scores.shape[0]
    size = 2 * n_groups
    shift = max(1, radix_low_bits(n, size))
    n_buckets = max(1, (size + (1 << shift) - 1) >> shift)
    chunks = n_chunks_for(n)
    c = frozen(np.ascontiguousarray(codes, dtype=np.int64))
    y = frozen(np.ascontiguousarray(labels))
    s = frozen(np.ascontiguousarray(scores, dtype=np.float64))
    counts = np.zeros((chunks, n_buckets), dtype=np.int64)
    run_chunks(_split_histogram_chunk, chunks, chunks, c, y, shift, counts)
    bucket_off = np.empty(n_buckets + 1, dtype=np.int64)
    count_positions(counts, bucket_off)
    moved = uninitialised(n).view(np.float64)
    low = uninitialised((n + 3) // 4).view(np.uint16)[:n]
    run_chunks(_split_scatter_chunk, chunks, chunks, c, y, s, shift, counts, moved, low)
    rows = np.empty(n_groups, dtype=np.int64)
    positives = np.empty(n_groups, dtype=np.int64)
    auc_g = np.empty(n_groups, dtype=np.float64)
    work = min(n_buckets, 4 * numba.get_num_threads())
    placed = (frozen(bucket_off), frozen(moved), frozen(low))
    counted = (rows, positives, auc_g)
    run_chunks(_split_groups_chunk, work, work, shift, *placed, *counted, _PAIRS_PER_ROW_BIT)
    return rows, positives, auc_g


def _counting_order(codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and a stable row order that groups rows by their dense code (counting sort)."""
    return counting_sort(codes, n_groups)


@njit(cache=True, nogil=True)
def _merge_runs(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct keys of two sorted key arrays (ascending) and, per distinct key, how many
    times it occurs in ``pos`` and in ``neg``."""
    m = pos.shape[0]
    n = neg.shape[0]
    keys = np.empty(m + n, dtype=np.uint64)
    n_pos = np.empty(m + n, dtype=np.int64)
    n_neg = np.empty(m + n, dtype=np.int64)
    i = 0
    j = 0
    u = 0
    while i < m or j < n:
        k = pos[i] if j >= n or (i < m and pos[i] <= neg[j]) else neg[j]
        a = i
        while i < m and pos[i] == k:
            i += 1
        b = j
        while j < n and neg[j] == k:
            j += 1
        keys[u] = k
        n_pos[u] = i - a
        n_neg[u] = j - b
        u += 1
    return keys[:u], n_pos[:u], n_neg[:u]


@njit(cache=True, nogil=True)
def _bit_runs(
    keys: np.ndarray, bits: np.ndarray, n_bits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct keys of sorted ``keys`` and, per distinct key and bit ``j``, how many of
    its rows have bit ``j`` of ``bits`` set (``pos[j]``) and clear (``neg[j]``)."""
    n = keys.shape[0]
    u = 0
    for i in range(n):
        if i == 0 or keys[i] != keys[i - 1]:
            u += 1
    distinct = np.empty(u, dtype=np.uint64)
    pos = np.zeros((n_bits, u), dtype=np.int64)
    neg = np.zeros((n_bits, u), dtype=np.int64)
    r = -1
    for i in range(n):
        if i == 0 or keys[i] != keys[i - 1]:
            r += 1
            distinct[r] = keys[i]
        b = np.uint64(bits[i])
        for j in range(n_bits):
            if (b >> np.uint64(j)) & np.uint64(1):
                pos[j, r] += 1
            else:
                neg[j, r] += 1
    return distinct, pos, neg


@njit(cache=True, nogil=True)
def _sorted_groups_chunk(
    chunk: int,
    n_chunks: int,
    offsets: np.ndarray,
    keys: np.ndarray,
    payload: np.ndarray,
    rows: np.ndarray,
    positives: np.ndarray,
    auc: np.ndarray,
) -> None:
    """Rows, positives and AUC (NaN for one class) of the groups of one chunk, from rows
    sorted by group, then by key; a row's label is bit 0 of its payload."""
    n_groups = offsets.shape[0] - 1
    for g in range(n_groups * chunk // n_chunks, n_groups * (chunk + 1) // n_chunks):
        lo = offsets[g]
        hi = offsets[g + 1]
        twice = 0
        neg_below = 0
        p = 0
        r = lo
        while r < hi:
            k = keys[r]
            e = r
            pr = 0
            while e < hi and keys[e] == k:
                pr += int(payload[e] & 1)
                e += 1
            qr = e - r - pr
            twice += pr * (2 * neg_below + qr)
            neg_below += qr
            p += pr
            r = e
        q = hi - lo - p
        rows[g] = hi - lo
        positives[g] = p
        auc[g] = twice / (2.0 * p * q) if p and q else np.nan


def _n_chunks(n: int) -> int:
    return max(1, min(n // 4096, numba.get_num_threads() * 4))


# ------------------------------------------------------------------------- shared helpers


def sorted_classes(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positives' and the negatives' scores, each sorted ascending (two parallel sorts)."""
    is_pos = labels.astype(np.bool_)
    pos = scores[is_pos]
    neg = scores[~is_pos]
    del is_pos
    if scores.shape[0] >= _PARALLEL_SORT_MIN and numba.get_num_threads() > 1:
        with ThreadPoolExecutor(2) as pool:  # NumPy releases the GIL while sorting
            list(pool.map(np.ndarray.sort, (pos, neg)))
    else:
        pos.sort()
        neg.sort()
    return pos, neg


def sorted_class_keys(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order-preserving uint64 keys (:func:`receval.kernels.sort.float_keys`) of the
    positives' and of the negatives' scores, each sorted ascending: by the parallel radix sort
    from :data:`_RADIX_MIN` rows on, by NumPy's sort below (the same arrays)."""
    if scores.shape[0] < _RADIX_MIN:
        pos, neg = sorted_classes(labels, scores)
        return float_keys(pos)[0], float_keys(neg)[0]
    pos, neg, pos_bits, neg_bits = class_keys(labels, scores)
    return sort_keys(pos, pos_bits), sort_keys(neg, neg_bits)


def class_histogram(
    labels: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct scores' keys, ascending, and how many positives and negatives have each."""
    pos, neg = sorted_class_keys(labels, scores)
    return _merge_runs(pos, neg)


def bit_histogram(
    scores: np.ndarray, bits: np.ndarray, n_bits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``scores`` (float64, ascending; ``-0.0`` counts as ``0.0``) and, per bit
    ``j`` of ``bits`` (``j < n_bits``), how many rows of each score have it set (``pos[j]``)
    and clear (``neg[j]``)."""
    keys, varying = float_keys(scores)
    payload = np.ascontiguousarray(bits).astype(np.uint32 if n_bits <= 32 else np.uint64)
    if keys.shape[0] < _RADIX_MIN:
        order = np.argsort(keys, kind="stable")
        keys, payload = keys[order], payload[order]
    else:
        keys, payload = sort_pairs(keys, payload, varying)
    distinct, pos, neg = _bit_runs(keys, payload, n_bits)
    return float_of_keys(distinct), pos, neg


def auc_from_sorted(pos: np.ndarray, neg: np.ndarray) -> float:
    """Exact AUC of positives and negatives whose scores (or their keys) are sorted ascending
    (both non-empty)."""
    return auc_value(auc_twice_wins(pos, neg), int(pos.shape[0]), int(neg.shape[0]))


def auc_twice_wins(pos: np.ndarray, neg: np.ndarray) -> int:
    """Twice the (positive, negative) pairs the positive wins, a tie counting one: an exact
    integer (sorted inputs), which sums over disjoint score ranges."""
    if pos.shape[0] == 0 or neg.shape[0] == 0:
        return 0
    return int(_pair_counts(pos, neg, _n_chunks(pos.shape[0])))


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


def group_pair_counts(
    codes: np.ndarray, n_groups: int, labels: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group (dense ``codes`` ``0 .. n_groups - 1``): rows, positives and the AUC (NaN for
    one class).

    From :data:`_RADIX_MIN` rows on: for groups of at most :data:`_SPLIT_MAX_ROWS` rows on
    average, the rows split by (group, label) and each group's pairs counted in cache
    (:func:`_split_pair_counts`); for larger groups, one radix sort of (group, score key)
    puts each group's rows in score order (the score digits first, then the group's: a stable
    counting sort by group), and one walk per group counts the pairs over its tie groups.
    Below, a counting sort by group, then each group's scores sorted apart
    (:func:`_group_pair_counts`). The counts are exact integers every way: the AUCs are the
    same.
    """
    n = scores.shape[0]
    if n < _RADIX_MIN:
        offsets, order = _counting_order(codes, n_groups)
        return _group_pair_counts(offsets, labels[order], scores[order])
    if n <= _SPLIT_MAX_ROWS * n_groups and 2 * n_groups <= 1 << RADIX_MAX_BITS:
        return _split_pair_counts(codes, n_groups, labels, scores)
    keys, payload, key_bits, pay_bits = group_keys(labels, scores, codes, n_groups)
    keys, payload = sort_pairs(keys, payload, key_bits, pay_bits & ~1)  # bit 0: the label
    bounds = np.arange(n_groups + 1, dtype=payload.dtype) * payload.dtype.type(2)
    offsets = np.searchsorted(payload, bounds).astype(np.int64)
    rows = np.empty(n_groups, dtype=np.int64)
    positives = np.empty(n_groups, dtype=np.int64)
    auc_g = np.empty(n_groups, dtype=np.float64)
    chunks = max(1, min(n_groups // _GROUPS_PER_CHUNK, 4 * numba.get_num_threads()))
    args = (frozen(offsets), frozen(keys), frozen(payload), rows, positives, auc_g)
    run_chunks(_sorted_groups_chunk, chunks, chunks, *args)
    return rows, positives, auc_g


def grouped_pair_counts(
    offsets: np.ndarray, labels: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`group_pair_counts` of rows grouped already: group ``g`` holds rows
    ``offsets[g]:offsets[g + 1]``."""
    n = scores.shape[0]
    if n < _RADIX_MIN:
        return _group_pair_counts(offsets, labels, scores)
    n_groups = offsets.shape[0] - 1
    threads = numba.get_num_threads()
    if n_groups >= _GROUPS_PER_THREAD * threads:
        rows = np.empty(n_groups, dtype=np.int64)
        positives = np.empty(n_groups, dtype=np.int64)
        auc_g = np.empty(n_groups, dtype=np.float64)
        chunks = min(n_groups, 4 * threads)
        cuts = np.searchsorted(offsets, np.arange(chunks + 1, dtype=np.int64) * n // chunks)
        cuts[-1] = n_groups
        y = frozen(np.ascontiguousarray(labels))
        s = frozen(np.ascontiguousarray(scores, dtype=np.float64))
        args = (frozen(cuts), frozen(offsets), y, s, rows, positives, auc_g, _PAIRS_PER_ROW_BIT)
        run_chunks(_grouped_split_chunk, chunks, *args)
        return rows, positives, auc_g
    codes = np.repeat(np.arange(n_groups, dtype=np.int64), np.diff(offsets))
    return group_pair_counts(codes, n_groups, labels, scores)


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
    buf, lens = _log_loss_parts(labels, probs, _EPS, _n_chunks(int(labels.shape[0])))
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
