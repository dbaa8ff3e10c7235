"""Numba kernels of the beyond-accuracy metrics.

Layering (STYLE.md 5): one ``@njit`` function per user (``_top_one``, ``_ils_vectors_one``,
``_ils_jaccard_one``, ``_pairs_one``), a ``prange`` driver over users, and a documented Python
wrapper. Everything accumulates in float64.

Input layout: the recs rows grouped by user (``offsets``), per row a ``score`` (higher first;
the negated rank when recs are ranked) and a ``tie`` key (lower first) that decides equal
scores. Within a user the tie keys are distinct (row index, or a key of the item id, and items
are unique per user), so the top K is one well-defined set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

__all__ = ["ils_jaccard", "ils_vectors", "list_pairs", "select_top"]

_SMALL = 32
"""Lists up to this long are ordered by insertion sort."""
_CHUNK = 1024
"""Users per parallel chunk (each chunk owns its scratch buffer)."""


@njit(cache=True, nogil=True)
def _top_one(
    score: np.ndarray, tie: np.ndarray, start: int, stop: int, k: int, out: np.ndarray, pos: int
) -> None:
    """Write the rows of the user's top ``k`` (by score descending, then tie key ascending),
    in that order, to ``out[pos:pos + min(k, stop - start)]``.

    Selection is linear on average (two partitions: the k-th score, then the tie keys of the
    rows at that score); only the selected rows are sorted.
    """
    n = stop - start
    m = min(k, n)
    if n == m and m <= _SMALL:  # the whole short list, sorted in place
        _insertion_sort(score, tie, start, stop, out, pos)
        return
    chosen = np.empty(m, dtype=np.int64)
    if n > m:
        neg = np.empty(n, dtype=np.float64)
        for r in range(n):
            neg[r] = -score[start + r]
        cut = -np.partition(neg, m - 1)[m - 1]  # the m-th largest score
        j = 0
        n_eq = 0
        for r in range(start, stop):
            if score[r] > cut:
                chosen[j] = r
                j += 1
            elif score[r] == cut:
                n_eq += 1
        need = m - j
        eq_rows = np.empty(n_eq, dtype=np.int64)
        eq_tie = np.empty(n_eq, dtype=np.int64)
        q = 0
        for r in range(start, stop):
            if score[r] == cut:
                eq_rows[q] = r
                eq_tie[q] = tie[r]
                q += 1
        if need == n_eq:
            for q in range(n_eq):
                chosen[j] = eq_rows[q]
                j += 1
        else:
            bar = np.partition(eq_tie.copy(), need - 1)[need - 1]  # distinct keys
            for q in range(n_eq):
                if eq_tie[q] <= bar:
                    chosen[j] = eq_rows[q]
                    j += 1
    else:
        for r in range(n):
            chosen[r] = start + r
    if m <= _SMALL:
        for q in range(m):
            _insert(score, tie, chosen[q], out, pos, pos + q)
        return
    keys = np.empty(m, dtype=np.int64)
    for q in range(m):
        keys[q] = tie[chosen[q]]
    chosen = chosen[np.argsort(keys, kind="mergesort")]
    neg_sel = np.empty(m, dtype=np.float64)
    for q in range(m):
        neg_sel[q] = -score[chosen[q]]
    chosen = chosen[np.argsort(neg_sel, kind="mergesort")]
    for q in range(m):
        out[pos + q] = chosen[q]


@njit(cache=True, nogil=True)
def _insertion_sort(
    score: np.ndarray, tie: np.ndarray, start: int, stop: int, out: np.ndarray, pos: int
) -> None:
    """Rows ``start .. stop - 1`` in rank order to ``out[pos:]`` (short lists)."""
    for r in range(start, stop):
        _insert(score, tie, r, out, pos, pos + r - start)


@njit(cache=True, nogil=True, inline="always")
def _insert(score: np.ndarray, tie: np.ndarray, r: int, out: np.ndarray, lo: int, p: int) -> None:
    """Insert row ``r`` into the sorted ``out[lo:p]`` (one step of insertion sort)."""
    while p > lo and _before(score, tie, r, out[p - 1]):
        out[p] = out[p - 1]
        p -= 1
    out[p] = r


@njit(cache=True, nogil=True, inline="always")
def _before(score: np.ndarray, tie: np.ndarray, a: int, b: int) -> bool:
    """Whether row ``a`` ranks before row ``b``: higher score, then lower tie key."""
    return bool(score[a] > score[b] or (score[a] == score[b] and tie[a] < tie[b]))


@njit(cache=True, parallel=True)
def _select_top(
    offsets: np.ndarray, score: np.ndarray, tie: np.ndarray, k: int, out_off: np.ndarray
) -> np.ndarray:
    n_users = offsets.shape[0] - 1
    out = np.empty(out_off[n_users], dtype=np.int64)
    for u in prange(n_users):
        _top_one(score, tie, offsets[u], offsets[u + 1], k, out, out_off[u])
    return out


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


def _frozen(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def select_top(
    offsets: np.ndarray, score: np.ndarray, tie: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each user's top ``k`` rows: ``(out_offsets, rows)``.

    ``rows[out_offsets[u]:out_offsets[u + 1]]`` are user ``u``'s ``min(k, n_u)`` best rows by
    ``score`` descending, equal scores by ``tie`` ascending, in that order.
    """
    lengths = np.minimum(np.diff(offsets), k)
    out_off = np.zeros(offsets.shape[0], dtype=np.int64)
    np.cumsum(lengths, out=out_off[1:])
    kernel: Any = _select_top
    rows = kernel(_frozen(offsets), _frozen(score), _frozen(tie), int(k), _frozen(out_off))
    return out_off, rows


def ils_vectors(offsets: np.ndarray, codes: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Per user, the mean pairwise cosine similarity of the items ``codes[offsets[u]:...]``
    (rows of ``unit``, unit vectors); NaN for lists shorter than 2."""
    kernel: Any = _ils_vectors
    return kernel(_frozen(offsets), _frozen(codes), _frozen(unit))  # type: ignore[no-any-return]


def ils_jaccard(
    offsets: np.ndarray, codes: np.ndarray, f_off: np.ndarray, feats: np.ndarray
) -> np.ndarray:
    """Per user, the mean pairwise Jaccard index of the items' feature sets
    (``feats[f_off[c]:f_off[c + 1]]``: sorted distinct feature codes of item ``c``)."""
    kernel: Any = _ils_jaccard
    args = (_frozen(offsets), _frozen(codes), _frozen(f_off), _frozen(feats))
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
    keys = kernel(_frozen(offsets), _frozen(codes), int(n_items), _frozen(pair_off))
    return pair_off, keys
