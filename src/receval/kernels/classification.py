"""Numba kernels of the pointwise classification metrics (:mod:`receval.arrays.classification`):
AUC, average precision, the curves and GAUC as exact pair counts, and log loss as an exact sum.

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

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit, prange

from receval.kernels.exact import CAP, grow
from receval.kernels.grouping import (
    RADIX_MAX_BITS,
    count_positions,
    counting_sort,
    radix_low_bits,
)
from receval.kernels.memory import uninitialised
from receval.kernels.pools import run_chunks
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
    "auc_twice_wins",
    "bit_histogram",
    "class_histogram",
    "group_pair_counts",
    "grouped_pair_counts",
    "log_loss_chunks",
    "sorted_class_keys",
    "sorted_classes",
]

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


# ----------------------------------------------------------------------------- Python wrappers


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


def auc_twice_wins(pos: np.ndarray, neg: np.ndarray) -> int:
    """Twice the (positive, negative) pairs the positive wins, a tie counting one: an exact
    integer (sorted inputs), which sums over disjoint score ranges."""
    if pos.shape[0] == 0 or neg.shape[0] == 0:
        return 0
    return int(_pair_counts(pos, neg, _n_chunks(pos.shape[0])))


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
        offsets, order = counting_sort(codes, n_groups)
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


def log_loss_chunks(
    labels: np.ndarray, probs: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """Expansions of the rows' cross-entropy (probabilities clipped to ``[eps, 1 - eps]``) over
    contiguous chunks: chunk ``c``'s is ``buf[c, :lens[c]]``."""
    return _log_loss_parts(labels, probs, eps, _n_chunks(int(labels.shape[0])))
