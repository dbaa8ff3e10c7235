"""Numba kernels of the beyond-accuracy metrics.

Layering: one ``@njit`` function per user (``_top_one``, ``_ils_vectors_one``,
``_ils_jaccard_one``, ``_pairs_one``), a driver over users, and a documented Python wrapper.
The drivers that every beyond metric calls (the top-K selection ``_select_small_chunk`` /
``_select_top_chunk``, and ``_mark_chunk`` / ``_lookup_chunk``, passes over item ids in chunks
of rows) are ``nogil`` kernels over one chunk, run on Python threads by
:func:`receval.kernels.pools.run_chunks`: a first run compiles them much faster than
``prange`` loops (benchmarks/README.md, "Cold start"). The others (``_ils_vectors``,
``_ils_jaccard``, ``_list_pairs``) are ``prange`` drivers. Everything accumulates in float64.

Input layout: the recs rows grouped by user (``offsets``), per row a ``score`` (higher first;
``sign = -1`` reads ranks that way without a copy) and a ``tie`` key (lower first) that decides
equal scores. Within a user the tie keys are distinct (row index, or a key of the item id, and
items are unique per user), so the top K is one well-defined set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from receval.kernels.pools import run_chunks
from receval.kernels.toolbox import frozen

__all__ = [
    "awrf",
    "exposure_rows",
    "group_pairs",
    "ils_jaccard",
    "ils_vectors",
    "list_pairs",
    "lookup",
    "mark",
    "miscalibration",
    "sampled_lists",
    "select_top",
    "unexpectedness_jaccard",
    "unexpectedness_vectors",
]

_SMALL = 32
"""Tops up to this long are kept by insertion into a sorted scratch list."""
_CHUNK = 1024
"""Users per chunk (each chunk owns its scratch buffer)."""
_ROWS = 1 << 16
"""Rows per chunk of the item-id passes (``_mark_chunk``, ``_lookup_chunk``)."""


@njit(cache=True, nogil=True)
def _top_one(
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    start: int,
    stop: int,
    k: int,
    out: np.ndarray,
    pos: int,
    heap_s: np.ndarray,
    heap_t: np.ndarray,
    heap_r: np.ndarray,
) -> None:
    """Write the rows of the user's top ``k`` (by ``sign * score`` descending, then tie key
    ascending), in that order, to ``out[pos:pos + min(k, stop - start)]``.

    One pass keeps the best rows seen so far in a binary heap whose root is the one that ranks
    last (a row that ranks after it is skipped at the cost of one comparison); the heap is then
    emptied from the back of the output. O(n log k), with the kernel's own loops only (no NumPy
    sort or partition to compile on a first run). Lists whose top holds at most ``_SMALL`` rows
    go to ``_top_insert`` instead.
    """
    m = min(k, stop - start)
    size = 0  # the heap: heap_s, heap_t, heap_r[:size] (score, tie key, row; scratch >= m)
    for r in range(start, stop):
        s = sign * score[r]
        t = tie[r]
        if size < m:  # sift up: entries that rank before r move down
            i = size
            size += 1
            while i > 0:
                parent = (i - 1) >> 1
                ps = heap_s[parent]
                if ps > s or (ps == s and heap_t[parent] < t):
                    heap_s[i] = ps
                    heap_t[i] = heap_t[parent]
                    heap_r[i] = heap_r[parent]
                    i = parent
                else:
                    break
            heap_s[i] = s
            heap_t[i] = t
            heap_r[i] = r
        elif s > heap_s[0] or (s == heap_s[0] and t < heap_t[0]):  # r ranks before the root
            _sift_down(heap_s, heap_t, heap_r, size, s, t, r)
    for q in range(m - 1, -1, -1):  # the root ranks last: fill the output from the back
        out[pos + q] = heap_r[0]
        size -= 1
        if size > 0:
            _sift_down(heap_s, heap_t, heap_r, size, heap_s[size], heap_t[size], heap_r[size])


@njit(cache=True, nogil=True)
def _sift_down(
    heap_s: np.ndarray,
    heap_t: np.ndarray,
    heap_r: np.ndarray,
    size: int,
    s: float,
    t: int,
    r: int,
) -> None:
    """Put the entry ``(s, t, r)`` at the root of the heap of ``size`` entries (root: the entry
    that ranks last) and sift it down: a child that ranks after it moves up."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and (
            heap_s[c + 1] < heap_s[c] or (heap_s[c + 1] == heap_s[c] and heap_t[c + 1] > heap_t[c])
        ):
            c += 1  # the child that ranks later
        if heap_s[c] < s or (heap_s[c] == s and heap_t[c] > t):
            heap_s[i] = heap_s[c]
            heap_t[i] = heap_t[c]
            heap_r[i] = heap_r[c]
            i = c
        else:
            break
    heap_s[i] = s
    heap_t[i] = t
    heap_r[i] = r


@njit(cache=True, nogil=True)
def _top_insert(
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    start: int,
    stop: int,
    m: int,
    out: np.ndarray,
    pos: int,
    buf_s: np.ndarray,
    buf_t: np.ndarray,
    buf_r: np.ndarray,
) -> None:
    """The best ``m`` rows of ``start .. stop - 1`` in rank order to ``out[pos:pos + m]``:
    each row is inserted into a sorted scratch list (score, tie key, row), or skipped when the
    list is full and the row ranks after its last (short lists; one pass, few insertions)."""
    if m == 0:
        return
    for r in range(start, start + m):  # the first m rows, sorted
        _insert_row(sign * score[r], tie[r], r, r - start, buf_s, buf_t, buf_r)
    for r in range(start + m, stop):  # the rest: most rank after the last kept row
        s = sign * score[r]
        if s < buf_s[m - 1] or (s == buf_s[m - 1] and tie[r] >= buf_t[m - 1]):
            continue
        _insert_row(s, tie[r], r, m - 1, buf_s, buf_t, buf_r)  # the last row drops out
    for q in range(m):
        out[pos + q] = buf_r[q]


@njit(cache=True, nogil=True, inline="always")
def _insert_row(
    s: float,
    t: int,
    r: int,
    p: int,
    buf_s: np.ndarray,
    buf_t: np.ndarray,
    buf_r: np.ndarray,
) -> None:
    """Insert row ``r`` (score ``s``, tie key ``t``) into the sorted ``buf[:p]`` (one step of
    insertion sort; ``buf[p]`` is overwritten)."""
    while p > 0 and (s > buf_s[p - 1] or (s == buf_s[p - 1] and t < buf_t[p - 1])):
        buf_s[p] = buf_s[p - 1]
        buf_t[p] = buf_t[p - 1]
        buf_r[p] = buf_r[p - 1]
        p -= 1
    buf_s[p] = s
    buf_t[p] = t
    buf_r[p] = r


@njit(cache=True, nogil=True)
def _select_top_chunk(
    c: int,
    offsets: np.ndarray,
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    k: int,
    out_off: np.ndarray,
    out: np.ndarray,
) -> None:
    """The tops of chunk ``c``'s users (``_CHUNK`` users) to ``out``."""
    n_users = offsets.shape[0] - 1
    first = c * _CHUNK
    last = min(n_users, first + _CHUNK)
    size = _SMALL
    for u in range(first, last):
        size = max(size, out_off[u + 1] - out_off[u])
    buf_s = np.empty(size, dtype=np.float64)
    buf_t = np.empty(size, dtype=np.int64)
    buf_r = np.empty(size, dtype=np.int64)
    for u in range(first, last):
        start, stop, pos = offsets[u], offsets[u + 1], out_off[u]
        m = min(k, stop - start)
        if m <= _SMALL:
            _top_insert(score, sign, tie, start, stop, m, out, pos, buf_s, buf_t, buf_r)
        else:
            _top_one(score, sign, tie, start, stop, k, out, pos, buf_s, buf_t, buf_r)


@njit(cache=True, nogil=True)
def _select_small_chunk(
    c: int,
    offsets: np.ndarray,
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    k: int,
    out_off: np.ndarray,
    out: np.ndarray,
) -> None:
    """:func:`_select_top_chunk` for ``k <= _SMALL``: every top by ``_top_insert``, so that the
    common small K does not compile the heap of ``_top_one`` on a first run."""
    n_users = offsets.shape[0] - 1
    buf_s = np.empty(_SMALL, dtype=np.float64)
    buf_t = np.empty(_SMALL, dtype=np.int64)
    buf_r = np.empty(_SMALL, dtype=np.int64)
    for u in range(c * _CHUNK, min(n_users, (c + 1) * _CHUNK)):
        start, stop, pos = offsets[u], offsets[u + 1], out_off[u]
        m = min(k, stop - start)
        _top_insert(score, sign, tie, start, stop, m, out, pos, buf_s, buf_t, buf_r)


@njit(cache=True, nogil=True)
def _mark_chunk(c: int, values: np.ndarray, low: int, present: np.ndarray) -> None:
    n = values.shape[0]
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        j = values[i] - low
        if not present[j]:  # read first: marked cache lines stay shared between threads
            present[j] = True  # every writer stores the same value


@njit(cache=True, nogil=True)
def _lookup_chunk(c: int, values: np.ndarray, low: int, table: np.ndarray, out: np.ndarray) -> None:
    n = values.shape[0]
    high = low + (table.shape[0] - 1)
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        v = values[i]
        out[i] = table[v - low] if low <= v <= high else -1  # no overflow in v - low


@njit(cache=True, nogil=True)
def _ils_vectors_one(
    codes: np.ndarray, start: int, stop: int, unit: np.ndarray, acc: np.ndarray
) -> float:
    """Mean pairwise cosine of one list from unit vectors, in O(K d):
    ``sum_{i<j} cos(i, j) = (||sum_i v_i||^2 - K') / 2``. ``acc`` is scratch of length d."""
    kp = stop - start
    if kp < 2:
        return np.nan
    d = unit.shape[1]
    acc[:] = 0.0
    for r in range(start, stop):
        row = unit[codes[r]]
        for t in range(d):
            acc[t] += row[t]
    sq = 0.0
    for t in range(d):
        sq += acc[t] * acc[t]
    return (sq - kp) / (kp * (kp - 1.0))


@njit(cache=True, parallel=True)
def _ils_vectors(offsets: np.ndarray, codes: np.ndarray, unit: np.ndarray) -> np.ndarray:
    n_users = offsets.shape[0] - 1
    out = np.empty(n_users, dtype=np.float64)
    n_chunks = (n_users + _CHUNK - 1) // _CHUNK
    for c in prange(n_chunks):
        acc = np.empty(unit.shape[1], dtype=np.float64)
        for u in range(c * _CHUNK, min(n_users, (c + 1) * _CHUNK)):
            out[u] = _ils_vectors_one(codes, offsets[u], offsets[u + 1], unit, acc)
    return out


@njit(cache=True, nogil=True)
def _jaccard(a: int, b: int, f_off: np.ndarray, feats: np.ndarray) -> float:
    """Jaccard index of two items' sorted, distinct feature codes."""
    i, i_end = f_off[a], f_off[a + 1]
    j, j_end = f_off[b], f_off[b + 1]
    inter = 0
    while i < i_end and j < j_end:
        if feats[i] == feats[j]:
            inter += 1
            i += 1
            j += 1
        elif feats[i] < feats[j]:
            i += 1
        else:
            j += 1
    union = (f_off[a + 1] - f_off[a]) + (f_off[b + 1] - f_off[b]) - inter
    return float(inter) / float(union)


@njit(cache=True, nogil=True)
def _ils_jaccard_one(
    codes: np.ndarray, start: int, stop: int, f_off: np.ndarray, feats: np.ndarray
) -> float:
    """Mean pairwise Jaccard index of one list."""
    kp = stop - start
    if kp < 2:
        return np.nan
    total = 0.0
    for p in range(start, stop):
        for q in range(p + 1, stop):
            total += _jaccard(codes[p], codes[q], f_off, feats)
    return 2.0 * total / (kp * (kp - 1.0))


@njit(cache=True, parallel=True)
def _ils_jaccard(
    offsets: np.ndarray, codes: np.ndarray, f_off: np.ndarray, feats: np.ndarray
) -> np.ndarray:
    n_users = offsets.shape[0] - 1
    out = np.empty(n_users, dtype=np.float64)
    for u in prange(n_users):
        out[u] = _ils_jaccard_one(codes, offsets[u], offsets[u + 1], f_off, feats)
    return out


@njit(cache=True, nogil=True)
def _pairs_one(
    codes: np.ndarray, start: int, stop: int, n_items: int, out: np.ndarray, pos: int
) -> None:
    """The unordered pairs of one list as keys ``min * n_items + max``."""
    for p in range(start, stop):
        for q in range(p + 1, stop):
            a, b = codes[p], codes[q]
            if a > b:
                a, b = b, a
            out[pos] = a * n_items + b
            pos += 1


@njit(cache=True, parallel=True)
def _list_pairs(
    offsets: np.ndarray, codes: np.ndarray, n_items: int, pair_off: np.ndarray
) -> np.ndarray:
    n_users = offsets.shape[0] - 1
    out = np.empty(pair_off[n_users], dtype=np.int64)
    for u in prange(n_users):
        _pairs_one(codes, offsets[u], offsets[u + 1], n_items, out, pair_off[u])
    return out


def _n_chunks(n: int, size: int) -> int:
    return (n + size - 1) // size


def select_top(
    offsets: np.ndarray, score: np.ndarray, tie: np.ndarray, k: int, *, negate: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Each user's top ``k`` rows: ``(out_offsets, rows)``.

    ``rows[out_offsets[u]:out_offsets[u + 1]]`` are user ``u``'s ``min(k, n_u)`` best rows by
    ``score`` descending (ascending with ``negate``: ranks), equal scores by ``tie`` ascending,
    in that order.
    """
    lengths = np.minimum(np.diff(offsets), k)
    out_off = np.zeros(offsets.shape[0], dtype=np.int64)
    np.cumsum(lengths, out=out_off[1:])
    out = np.empty(out_off[-1], dtype=np.int64)
    kernel = _select_small_chunk if k <= _SMALL else _select_top_chunk
    sign = -1.0 if negate else 1.0
    args = (frozen(offsets), frozen(score), sign, frozen(tie), int(k), frozen(out_off), out)
    run_chunks(kernel, _n_chunks(offsets.shape[0] - 1, _CHUNK), *args)
    return out_off, out


def mark(values: np.ndarray, low: int, present: np.ndarray) -> None:
    """Set ``present[v - low]`` for every value ``v`` (all must lie in range)."""
    run_chunks(_mark_chunk, _n_chunks(values.shape[0], _ROWS), frozen(values), int(low), present)


def lookup(values: np.ndarray, low: int, table: np.ndarray) -> np.ndarray:
    """``table[v - low]`` for each value ``v``, -1 where ``v - low`` is outside the table."""
    out = np.empty(values.shape[0], dtype=np.int64)
    args = (frozen(values), int(low), frozen(table), out)
    run_chunks(_lookup_chunk, _n_chunks(values.shape[0], _ROWS), *args)
    return out


def ils_vectors(offsets: np.ndarray, codes: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Per user, the mean pairwise cosine similarity of the items ``codes[offsets[u]:...]``
    (rows of ``unit``, unit vectors); NaN for lists shorter than 2."""
    kernel: Any = _ils_vectors
    return kernel(frozen(offsets), frozen(codes), frozen(unit))  # type: ignore[no-any-return]


def ils_jaccard(
    offsets: np.ndarray, codes: np.ndarray, f_off: np.ndarray, feats: np.ndarray
) -> np.ndarray:
    """Per user, the mean pairwise Jaccard index of the items' feature sets
    (``feats[f_off[c]:f_off[c + 1]]``: sorted distinct feature codes of item ``c``)."""
    kernel: Any = _ils_jaccard
    args = (frozen(offsets), frozen(codes), frozen(f_off), frozen(feats))
    return kernel(*args)  # type: ignore[no-any-return]


def list_pairs(
    offsets: np.ndarray, codes: np.ndarray, n_items: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair within each list: ``(pair_offsets, keys)`` with keys
    ``min(a, b) * n_items + max(a, b)``, user ``u``'s at ``pair_offsets[u]:...``."""
    kp = np.diff(offsets)
    pair_off = np.zeros(offsets.shape[0], dtype=np.int64)
    np.cumsum(kp * (kp - 1) // 2, out=pair_off[1:])
    kernel: Any = _list_pairs
    keys = kernel(frozen(offsets), frozen(codes), int(n_items), frozen(pair_off))
    return pair_off, keys


# ------------------------------------------- exposure, calibration, unexpectedness (per list)


@njit(cache=True, nogil=True)
def _attention(j: int, geometric: bool, patience: float) -> float:
    """Attention of position ``j`` (1-based): ``patience^(j-1)`` or ``1 / log2(j + 1)``."""
    if geometric:
        return float(patience ** (j - 1))
    return float(1.0 / np.log2(j + 1.0))


@njit(cache=True, nogil=True)
def _extra_one(
    offsets: np.ndarray,
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    top_off: np.ndarray,
    top_rows: np.ndarray,
    u: int,
) -> int:
    """How many rows of user ``u`` outside the top tie with its last row."""
    stop = top_off[u + 1]
    if stop == top_off[u] or stop - top_off[u] == offsets[u + 1] - offsets[u]:
        return 0
    last = top_rows[stop - 1]
    s, t = sign * score[last], tie[last]
    n = 0
    for r in range(offsets[u], offsets[u + 1]):
        if sign * score[r] == s and tie[r] > t:
            n += 1
    return n


@njit(cache=True, parallel=True)
def _exposure_counts(
    offsets: np.ndarray,
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    top_off: np.ndarray,
    top_rows: np.ndarray,
) -> np.ndarray:
    n_users = offsets.shape[0] - 1
    out = np.empty(n_users, dtype=np.int64)
    for u in prange(n_users):
        out[u] = _extra_one(offsets, score, sign, tie, top_off, top_rows, u)
    return out


@njit(cache=True, parallel=True)
def _exposure_fill(
    offsets: np.ndarray,
    score: np.ndarray,
    sign: float,
    tie: np.ndarray,
    top_off: np.ndarray,
    top_rows: np.ndarray,
    e_off: np.ndarray,
    expected: bool,
    geometric: bool,
    patience: float,
    rows: np.ndarray,
    att: np.ndarray,
) -> None:
    n_users = offsets.shape[0] - 1
    for u in prange(n_users):
        start, stop, pos = top_off[u], top_off[u + 1], e_off[u]
        extra = (e_off[u + 1] - e_off[u]) - (stop - start)
        p = start
        while p < stop:  # runs of equal score (one run per position unless expected)
            q = p + 1
            if expected:
                while q < stop and sign * score[top_rows[q]] == sign * score[top_rows[p]]:
                    q += 1
            total = 0.0
            for j in range(p, q):
                total += _attention(j - start + 1, geometric, patience)
            size = q - p + (extra if q == stop else 0)
            share = total / size
            for j in range(p, q):
                rows[pos + j - start] = top_rows[j]
                att[pos + j - start] = share
            if q == stop and extra > 0:  # tied rows past the cutoff share the run's attention
                last = top_rows[stop - 1]
                s, t = sign * score[last], tie[last]
                w = pos + stop - start
                for r in range(offsets[u], offsets[u + 1]):
                    if sign * score[r] == s and tie[r] > t:
                        rows[w] = r
                        att[w] = share
                        w += 1
            p = q


def exposure_rows(
    offsets: np.ndarray,
    score: np.ndarray,
    tie: np.ndarray,
    top_off: np.ndarray,
    top_rows: np.ndarray,
    *,
    negate: bool,
    expected: bool,
    geometric: bool,
    patience: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's exposed rows and their attention: ``(e_off, rows, attention)``.

    The top rows (:func:`select_top`, best first) get the attention of their position
    (``patience^(j-1)``, or ``1 / log2(j + 1)`` unless ``geometric``). With ``expected``, a run
    of equal scores shares its positions' attention equally (the expectation over the orders
    of tied items); a run at the cutoff shares it with the user's tied rows past the cutoff,
    which are then exposed too (listed after the top).
    """
    sign = -1.0 if negate else 1.0
    n_users = offsets.shape[0] - 1
    lengths = np.diff(top_off)
    if expected:
        kernel: Any = _exposure_counts
        args = (frozen(offsets), frozen(score), sign, frozen(tie), frozen(top_off))
        lengths = lengths + kernel(*args, frozen(top_rows))
    e_off = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(lengths, out=e_off[1:])
    rows = np.empty(e_off[-1], dtype=np.int64)
    att = np.empty(e_off[-1], dtype=np.float64)
    fill: Any = _exposure_fill
    fill(
        frozen(offsets), frozen(score), sign, frozen(tie), frozen(top_off),
        frozen(top_rows), e_off, bool(expected), bool(geometric), float(patience), rows, att,
    )  # fmt: skip
    return e_off, rows, att


@njit(cache=True, nogil=True)
def _group_pairs(
    codes: np.ndarray,
    att: np.ndarray,
    g_off: np.ndarray,
    groups: np.ndarray,
    weights: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    n = 0
    for r in range(codes.shape[0]):
        n += max(1, g_off[codes[r] + 1] - g_off[codes[r]])
    values = np.empty(n, dtype=np.float64)
    seg = np.empty(n, dtype=np.int64)
    j = 0
    for r in range(codes.shape[0]):
        c = codes[r]
        if g_off[c] == g_off[c + 1]:  # an item without a group: segment 0
            values[j] = att[r]
            seg[j] = 0
            j += 1
        for x in range(g_off[c], g_off[c + 1]):
            values[j] = att[r] * weights[x]
            seg[j] = groups[x]
            j += 1
    return values, seg


def group_pairs(
    codes: np.ndarray, att: np.ndarray, g_off: np.ndarray, groups: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each exposed row's attention ``att`` given to its item's groups: ``(values, seg)``, one
    entry per (row, group) with the attention times the group's weight (item ``c``'s groups
    ``groups[g_off[c]:g_off[c + 1]]``, numbered from 1, weights alongside), or one entry in
    segment 0 with the whole attention for an item without a group."""
    kernel: Any = _group_pairs
    args = (frozen(codes), frozen(att), frozen(g_off), frozen(groups), frozen(weights))
    return kernel(*args)  # type: ignore[no-any-return]


@njit(cache=True, nogil=True)
def _jsd_one(
    start: int,
    stop: int,
    codes: np.ndarray,
    att: np.ndarray,
    g_off: np.ndarray,
    groups: np.ndarray,
    weights: np.ndarray,
    target: np.ndarray,
    acc: np.ndarray,
    touched: np.ndarray,
) -> float:
    """Jensen-Shannon divergence (bits) between one list's attention-weighted group
    distribution and ``target``; ``acc`` (zeros) and ``touched`` are scratch."""
    total = 0.0
    n = 0
    for r in range(start, stop):
        total += att[r]
        c = codes[r]
        for x in range(g_off[c], g_off[c + 1]):
            g = groups[x]
            if acc[g] == 0.0:
                touched[n] = g
                n += 1
            acc[g] += att[r] * weights[x]
    if total == 0.0:
        for t in range(n):
            acc[touched[t]] = 0.0
        return np.nan
    inside = 0.0
    s = 0.0
    for t in range(n):
        g = touched[t]
        e = acc[g] / total
        p = target[g]
        acc[g] = 0.0
        if e > 0.0:
            s += e * np.log2(2.0 * e / (e + p))
        if p > 0.0:
            s += p * np.log2(2.0 * p / (e + p))
            inside += p
    s += max(0.0, 1.0 - inside)  # groups the list never shows: p log2(2p / p) = p each
    return 0.5 * s


@njit(cache=True, parallel=True)
def _awrf(
    e_off: np.ndarray,
    codes: np.ndarray,
    att: np.ndarray,
    g_off: np.ndarray,
    groups: np.ndarray,
    weights: np.ndarray,
    target: np.ndarray,
) -> np.ndarray:
    n_users = e_off.shape[0] - 1
    out = np.empty(n_users, dtype=np.float64)
    n_chunks = (n_users + _CHUNK - 1) // _CHUNK
    for c in prange(n_chunks):
        acc = np.zeros(target.shape[0], dtype=np.float64)
        touched = np.empty(target.shape[0], dtype=np.int64)
        for u in range(c * _CHUNK, min(n_users, (c + 1) * _CHUNK)):
            out[u] = _jsd_one(
                e_off[u], e_off[u + 1], codes, att, g_off, groups, weights, target, acc, touched
            )
    return out


def awrf(
    e_off: np.ndarray,
    codes: np.ndarray,
    att: np.ndarray,
    g_off: np.ndarray,
    groups: np.ndarray,
    weights: np.ndarray,
    target: np.ndarray,
) -> np.ndarray:
    """Per user, the Jensen-Shannon divergence (bits) between the attention-weighted group
    distribution of its exposed items (``codes``, attention ``att``, user ``u``'s at
    ``e_off[u]:e_off[u + 1]``) and ``target``. Item ``c``'s groups are
    ``groups[g_off[c]:g_off[c + 1]]`` with weights (summing to 1) alongside."""
    kernel: Any = _awrf
    args = (frozen(e_off), frozen(codes), frozen(att), frozen(g_off), frozen(groups))
    return kernel(*args, frozen(weights), frozen(target))  # type: ignore[no-any-return]


@njit(cache=True, nogil=True)
def _kl_one(
    h_start: int,
    h_stop: int,
    h_codes: np.ndarray,
    l_start: int,
    l_stop: int,
    l_codes: np.ndarray,
    f_off: np.ndarray,
    feats: np.ndarray,
    alpha: float,
    p: np.ndarray,
    q: np.ndarray,
    touched: np.ndarray,
) -> float:
    """Steck's KL(p || (1 - alpha) q + alpha p) of one user (natural log); NaN when no
    history item has a category. ``p``, ``q`` (zeros) and ``touched`` are scratch."""
    n = 0
    n_hist = 0
    for r in range(h_start, h_stop):
        c = h_codes[r]
        if c < 0 or f_off[c + 1] == f_off[c]:
            continue
        n_hist += 1
        w = 1.0 / (f_off[c + 1] - f_off[c])
        for x in range(f_off[c], f_off[c + 1]):
            g = feats[x]
            if p[g] == 0.0 and q[g] == 0.0:
                touched[n] = g
                n += 1
            p[g] += w
    n_list = l_stop - l_start
    for r in range(l_start, l_stop):
        c = l_codes[r]
        w = 1.0 / (f_off[c + 1] - f_off[c])
        for x in range(f_off[c], f_off[c + 1]):
            g = feats[x]
            if p[g] == 0.0 and q[g] == 0.0:
                touched[n] = g
                n += 1
            q[g] += w
    kl = 0.0
    for t in range(n):
        g = touched[t]
        if n_hist > 0 and p[g] > 0.0:
            pg = p[g] / n_hist
            qg = (1.0 - alpha) * (q[g] / n_list) + alpha * pg
            kl += pg * np.log(pg / qg)
        p[g] = 0.0
        q[g] = 0.0
    return kl if n_hist > 0 else np.nan


@njit(cache=True, parallel=True)
def _miscalibration(
    h_off: np.ndarray,
    h_codes: np.ndarray,
    l_off: np.ndarray,
    l_codes: np.ndarray,
    f_off: np.ndarray,
    feats: np.ndarray,
    n_feats: int,
    alpha: float,
) -> np.ndarray:
    n_users = l_off.shape[0] - 1
    out = np.empty(n_users, dtype=np.float64)
    n_chunks = (n_users + _CHUNK - 1) // _CHUNK
    for c in prange(n_chunks):
        p = np.zeros(n_feats, dtype=np.float64)
        q = np.zeros(n_feats, dtype=np.float64)
        touched = np.empty(n_feats, dtype=np.int64)
        for u in range(c * _CHUNK, min(n_users, (c + 1) * _CHUNK)):
            out[u] = _kl_one(
                h_off[u], h_off[u + 1], h_codes, l_off[u], l_off[u + 1], l_codes, f_off, feats,
                alpha, p, q, touched,
            )  # fmt: skip
    return out


def miscalibration(
    h_off: np.ndarray,
    h_codes: np.ndarray,
    l_off: np.ndarray,
    l_codes: np.ndarray,
    f_off: np.ndarray,
    feats: np.ndarray,
    alpha: float,
) -> np.ndarray:
    """Per user, Steck's miscalibration of the list ``l_codes[l_off[u]:...]`` against the
    history ``h_codes[h_off[u]:...]`` (catalog codes, -1 or an item without category: left
    out); item ``c``'s categories are ``feats[f_off[c]:f_off[c + 1]]``. NaN without history."""
    n_feats = int(feats.max(initial=-1)) + 1
    kernel: Any = _miscalibration
    args = (frozen(h_off), frozen(h_codes), frozen(l_off), frozen(l_codes))
    return kernel(*args, frozen(f_off), frozen(feats), n_feats, float(alpha))  # type: ignore[no-any-return]


@njit(cache=True, parallel=True)
def _unexpected_vectors(
    l_off: np.ndarray,
    l_codes: np.ndarray,
    rel: np.ndarray,
    h_off: np.ndarray,
    h_codes: np.ndarray,
    unit: np.ndarray,
    has: np.ndarray,
    out_u: np.ndarray,
    out_s: np.ndarray,
) -> None:
    n_users = l_off.shape[0] - 1
    n_chunks = (n_users + _CHUNK - 1) // _CHUNK
    d = unit.shape[1]
    for c in prange(n_chunks):
        acc = np.empty(d, dtype=np.float64)
        for u in range(c * _CHUNK, min(n_users, (c + 1) * _CHUNK)):
            acc[:] = 0.0
            n_hist = 0
            for r in range(h_off[u], h_off[u + 1]):
                h = h_codes[r]
                if h >= 0 and has[h]:
                    n_hist += 1
                    for t in range(d):
                        acc[t] += unit[h, t]
            if n_hist == 0 or l_off[u + 1] == l_off[u]:
                out_u[u] = np.nan
                out_s[u] = np.nan
                continue
            su = 0.0
            ss = 0.0
            for r in range(l_off[u], l_off[u + 1]):
                dot = 0.0
                for t in range(d):
                    dot += unit[l_codes[r], t] * acc[t]
                value = 1.0 - dot / n_hist
                su += value
                ss += rel[r] * value
            n = l_off[u + 1] - l_off[u]
            out_u[u] = su / n
            out_s[u] = ss / n


@njit(cache=True, parallel=True)
def _unexpected_jaccard(
    l_off: np.ndarray,
    l_codes: np.ndarray,
    rel: np.ndarray,
    h_off: np.ndarray,
    h_codes: np.ndarray,
    f_off: np.ndarray,
    feats: np.ndarray,
    out_u: np.ndarray,
    out_s: np.ndarray,
) -> None:
    n_users = l_off.shape[0] - 1
    for u in prange(n_users):
        n_hist = 0
        for r in range(h_off[u], h_off[u + 1]):
            h = h_codes[r]
            if h >= 0 and f_off[h + 1] > f_off[h]:
                n_hist += 1
        if n_hist == 0 or l_off[u + 1] == l_off[u]:
            out_u[u] = np.nan
            out_s[u] = np.nan
            continue
        su = 0.0
        ss = 0.0
        for r in range(l_off[u], l_off[u + 1]):
            total = 0.0
            for x in range(h_off[u], h_off[u + 1]):
                h = h_codes[x]
                if h >= 0 and f_off[h + 1] > f_off[h]:
                    total += _jaccard(l_codes[r], h, f_off, feats)
            value = 1.0 - total / n_hist
            su += value
            ss += rel[r] * value
        n = l_off[u + 1] - l_off[u]
        out_u[u] = su / n
        out_s[u] = ss / n


def unexpectedness_vectors(
    l_off: np.ndarray,
    l_codes: np.ndarray,
    rel: np.ndarray,
    h_off: np.ndarray,
    h_codes: np.ndarray,
    unit: np.ndarray,
    has: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per user, the mean over its list of ``1 - mean cosine to the history`` and the mean of
    ``rel`` times that (``unit``: unit vectors by catalog code; history items with code -1 or
    ``has`` false are left out; NaN without history): ``(unexpectedness, serendipity)``.
    The mean cosine to the history is one dot product with the sum of its vectors."""
    n_users = l_off.shape[0] - 1
    out_u = np.empty(n_users, dtype=np.float64)
    out_s = np.empty(n_users, dtype=np.float64)
    kernel: Any = _unexpected_vectors
    args = (frozen(l_off), frozen(l_codes), frozen(rel), frozen(h_off), frozen(h_codes))
    kernel(*args, frozen(unit), frozen(has), out_u, out_s)
    return out_u, out_s


def unexpectedness_jaccard(
    l_off: np.ndarray,
    l_codes: np.ndarray,
    rel: np.ndarray,
    h_off: np.ndarray,
    h_codes: np.ndarray,
    f_off: np.ndarray,
    feats: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unexpectedness_vectors` with the Jaccard index of feature sets (history items
    without features are left out)."""
    n_users = l_off.shape[0] - 1
    out_u = np.empty(n_users, dtype=np.float64)
    out_s = np.empty(n_users, dtype=np.float64)
    kernel: Any = _unexpected_jaccard
    args = (frozen(l_off), frozen(l_codes), frozen(rel), frozen(h_off), frozen(h_codes))
    kernel(*args, frozen(f_off), frozen(feats), out_u, out_s)
    return out_u, out_s


@njit(cache=True, nogil=True)
def _probe(keys_a: np.ndarray, keys_b: np.ndarray, used: np.ndarray, a: int, b: int) -> int:
    """The slot of key ``(a, b)`` in an open-addressing table (linear probing; its size a
    power of 2, at least twice the keys): the slot holding it, or the free slot to take."""
    mask = used.shape[0] - 1
    h = (a * np.int64(-7046029254386353131) + b * np.int64(-4658895280553007687)) >> 17
    slot = h & mask
    while used[slot] and (keys_a[slot] != a or keys_b[slot] != b):
        slot = (slot + 1) & mask
    return slot  # type: ignore[no-any-return]


@njit(cache=True, nogil=True)
def _samples_chunk(
    c: int,
    offsets: np.ndarray,
    item: np.ndarray,
    sample: np.ndarray,
    cap: int,
    code: np.ndarray,
    rep: np.ndarray,
    pos: np.ndarray,
    dup: np.ndarray,
    shortest: np.ndarray,
    longest: np.ndarray,
) -> None:
    n_users = offsets.shape[0] - 1
    k1 = np.empty(cap, dtype=np.int64)  # sample table: label -> index
    v1 = np.empty(cap, dtype=np.int64)
    u1 = np.empty(cap, dtype=np.bool_)
    k2a = np.empty(cap, dtype=np.int64)  # (sample index, item) -> first row
    k2b = np.empty(cap, dtype=np.int64)
    v2 = np.empty(cap, dtype=np.int64)
    u2 = np.empty(cap, dtype=np.bool_)
    k3 = np.empty(cap, dtype=np.int64)  # item -> first row of the user
    v3 = np.empty(cap, dtype=np.int64)
    u3 = np.empty(cap, dtype=np.bool_)
    length = np.empty(cap, dtype=np.int64)
    seen = np.empty(cap, dtype=np.int64)
    for u in range(c * _CHUNK, min(n_users, (c + 1) * _CHUNK)):
        lo = offsets[u]
        hi = offsets[u + 1]
        size = 2
        while size < 2 * (hi - lo):
            size *= 2
        for s in range(size):
            u1[s] = False
            u2[s] = False
            u3[s] = False
        n_samples = 0
        for r in range(lo, hi):  # samples in order of first appearance
            s = _probe(k1[:size], k1[:size], u1[:size], sample[r], sample[r])
            if not u1[s]:
                u1[s] = True
                k1[s] = sample[r]
                v1[s] = n_samples
                length[n_samples] = 0
                n_samples += 1
            code[r] = v1[s]
            length[v1[s]] += 1
        low = hi - lo
        high = 0
        for j in range(n_samples):
            low = min(low, length[j])
            high = max(high, length[j])
            seen[j] = 0
        shortest[u] = low
        longest[u] = high
        for r in range(lo, hi):
            s = _probe(k2a[:size], k2b[:size], u2[:size], code[r], item[r])
            if u2[s]:  # the item again in the same sample
                dup[r] = True
                dup[v2[s]] = True
            else:
                u2[s] = True
                k2a[s] = code[r]
                k2b[s] = item[r]
                v2[s] = r
            s = _probe(k3[:size], k3[:size], u3[:size], item[r], item[r])
            if not u3[s]:
                u3[s] = True
                k3[s] = item[r]
                v3[s] = r
            rep[r] = v3[s]
            if low == high:  # rows by sample, then input order
                pos[r] = lo + code[r] * low + seen[code[r]]
                seen[code[r]] += 1


def sampled_lists(
    offsets: np.ndarray, item: np.ndarray, sample: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Sampled rankings grouped by user (``item``, ``sample``: int64 keys, equal keys equal
    ids): per row its sample's index in the user (order of first appearance), the row of the
    user's first row of the same item, its place when the user's rows are ordered by sample
    then input order (when every sample of the user has the same length), and whether its
    item is twice in its sample; per user the shortest and longest sample:
    ``(code, rep, pos, dup, shortest, longest)``. One hash table per user: linear time."""
    n = item.shape[0]
    n_users = offsets.shape[0] - 1
    code = np.empty(n, dtype=np.int64)
    rep = np.empty(n, dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    dup = np.zeros(n, dtype=np.bool_)
    shortest = np.zeros(n_users, dtype=np.int64)
    longest = np.zeros(n_users, dtype=np.int64)
    most = int(np.diff(offsets).max(initial=0))
    cap = 2
    while cap < 2 * most:
        cap *= 2
    args = (frozen(offsets), frozen(item), frozen(sample), cap)
    run_chunks(
        _samples_chunk, _n_chunks(n_users, _CHUNK), *args, code, rep, pos, dup, shortest, longest
    )
    return code, rep, pos, dup, shortest, longest
