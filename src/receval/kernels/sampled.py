"""Numba kernels of the sampled protocol (docs/sampled.md): draw each query's negatives from a
counter-based random stream, then count the negatives that score above the query's test item
and tied with it.

A query is one test (user, item) row. Its negatives come from its own stream, seeded by
``(seed, query id)`` through SplitMix64, so that the draws do not depend on blocks, threads or
the order in which queries are processed: the same seed draws the same negatives.

The user's allowed items are given in one of two forms:

* ``complement``: every scored column except the user's sorted *forbidden* columns (excluded
  and truth items); the i-th allowed column is found by a binary search on
  ``forbidden[j] - j``.
* ``list``: the user's sorted allowed columns (per-user candidates minus truth items).

Without replacement, m distinct indices are drawn by Floyd's algorithm (m draws, no
rejection); with replacement, m independent draws. With popularity weights, a column is drawn
from the catalog's cumulative weights and rejected while it is not allowed (or, without
replacement, already drawn); a query that fails ``50 m + 10,000`` times is flagged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

__all__ = ["draw_negatives", "rank_factors", "rank_scores"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_UNIT = 1.0 / 9007199254740992.0  # 2^-53


@njit(cache=True, inline="always")
def _mix(z: Any) -> Any:
    """SplitMix64's finaliser: a bijection of 64-bit words that mixes every bit."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def _below(base: Any, counter: int, n: int) -> int:
    """The ``counter``-th draw of a stream, an integer in ``[0, n)`` (53-bit uniform times n;
    the bias is below n / 2^53)."""
    x = _mix(base + np.uint64(counter + 1) * _GOLDEN)
    u = np.float64(x >> _S11) * _UNIT
    v = int(u * n)
    return v if v < n else n - 1


@njit(cache=True, inline="always")
def _uniform(base: Any, counter: int) -> float:
    x = _mix(base + np.uint64(counter + 1) * _GOLDEN)
    return np.float64(x >> _S11) * _UNIT


@njit(cache=True)
def _search(a: np.ndarray, lo: int, hi: int, value: int) -> int:
    """The first position in the sorted ``a[lo:hi]`` whose value is >= ``value``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _column(i: int, lo: int, hi: int, cols: np.ndarray, complement: bool) -> int:
    """The i-th allowed column of a user (``cols[lo:hi]``: forbidden or allowed columns)."""
    if not complement:
        listed: int = cols[lo + i]
        return listed
    # number of forbidden f_j (j = 0..) with f_j - j <= i: f_j - j is non-decreasing
    a, b = 0, hi - lo
    while a < b:
        mid = (a + b) >> 1
        if cols[lo + mid] - mid <= i:
            a = mid + 1
        else:
            b = mid
    return i + a


@njit(cache=True)
def _allowed(col: int, lo: int, hi: int, cols: np.ndarray, complement: bool) -> bool:
    p = _search(cols, lo, hi, col)
    found = p < hi and cols[p] == col
    return not found if complement else found


@njit(cache=True)
def _draw_one(
    base: Any,
    n_allowed: int,
    lo: int,
    hi: int,
    cols: np.ndarray,
    complement: bool,
    m: int,
    replace: bool,
    cdf: np.ndarray,
    out: np.ndarray,
    chosen: np.ndarray,
) -> bool:
    """One query's m negatives into ``out`` (False: the popularity draw gave up)."""
    if cdf.shape[0] == 0:
        if replace:
            for c in range(m):
                out[c] = _column(_below(base, c, n_allowed), lo, hi, cols, complement)
            return True
        # Floyd: after step `count`, chosen[:count + 1] are sorted distinct indices
        for count, j in enumerate(range(n_allowed - m, n_allowed)):
            t = _below(base, count, j + 1)
            p = _search(chosen, 0, count, t)
            if p < count and chosen[p] == t:
                t = j  # j exceeds every index chosen so far: it goes last
                p = count
            for s in range(count, p, -1):
                chosen[s] = chosen[s - 1]
            chosen[p] = t
        for c in range(m):
            out[c] = _column(chosen[c], lo, hi, cols, complement)
        return True
    total = cdf[cdf.shape[0] - 1]
    count = 0
    attempt = 0
    limit = 50 * m + 10_000
    while count < m:
        if attempt >= limit:
            return False
        u = _uniform(base, attempt) * total
        attempt += 1
        col = _search_float(cdf, u)
        if not _allowed(col, lo, hi, cols, complement):
            continue
        if replace:
            out[count] = col
            count += 1
            continue
        p = _search(chosen, 0, count, col)
        if p < count and chosen[p] == col:
            continue
        for s in range(count, p, -1):
            chosen[s] = chosen[s - 1]
        chosen[p] = col
        count += 1
    if not replace:
        for c in range(m):
            out[c] = chosen[c]
    return True


@njit(cache=True)
def _search_float(cdf: np.ndarray, u: float) -> int:
    """The first column whose cumulative weight exceeds ``u``."""
    lo, hi = 0, cdf.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] <= u:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < cdf.shape[0] else cdf.shape[0] - 1


@njit(cache=True, parallel=True)
def draw_negatives(
    q_id: np.ndarray,
    q_user: np.ndarray,
    n_allowed: np.ndarray,
    off: np.ndarray,
    cols: np.ndarray,
    complement: bool,
    m: int,
    replace: bool,
    seed: int | np.uint64,  # receval.Sampling's, 0 to 2^64 - 1: passed as uint64
    cdf: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The negatives of each query (a ``queries x m`` array of columns) and a flag per query
    whose popularity draw gave up.

    ``q_id``: each query's id (its stream); ``q_user``: its user's row of ``off``/``cols``
    (the user's forbidden columns with ``complement``, else the allowed ones);
    ``n_allowed``: each query's number of allowed columns (>= m without replacement);
    ``cdf``: cumulative popularity weights per column (empty: uniform)."""
    n_q = q_id.shape[0]
    out = np.empty((n_q, m), dtype=np.int64)
    failed = np.zeros(n_q, dtype=np.bool_)
    key = _mix(np.uint64(seed) ^ _GOLDEN)
    for q in prange(n_q):
        chosen = np.empty(m, dtype=np.int64)
        base = _mix(key ^ _mix(np.uint64(q_id[q]) + _GOLDEN))
        u = q_user[q]
        ok = _draw_one(base, n_allowed[q], off[u], off[u + 1], cols, complement, m, replace,
                       cdf, out[q], chosen)  # fmt: skip
        failed[q] = not ok
    return out, failed


@njit(cache=True, inline="always")
def _count(
    s_t: float, scores: np.ndarray, negs: np.ndarray, t_key: int, key: np.ndarray
) -> tuple[int, int, int]:
    above = 0
    tied = 0
    before = 0
    use_key = key.shape[0] > 0
    for c in range(negs.shape[0]):
        s = scores[c]
        if s > s_t:
            above += 1
        elif s == s_t:
            tied += 1
            if use_key and key[negs[c]] < t_key:
                before += 1
    return above, tied, before


@njit(cache=True, parallel=True)
def rank_factors(
    users: np.ndarray,
    items: np.ndarray,
    q_row: np.ndarray,
    q_col: np.ndarray,
    negs: np.ndarray,
    key: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each query (model row ``q_row``, test column ``q_col``, negatives ``negs``): the
    negatives scoring above the test item, tied with it, and tied and ordered before it by
    ``key`` (smaller first; empty: not counted). Scores are dot products of the factors,
    summed in float64."""
    n_q, m = negs.shape
    d = users.shape[1]
    above = np.zeros(n_q, dtype=np.int64)
    tied = np.zeros(n_q, dtype=np.int64)
    before = np.zeros(n_q, dtype=np.int64)
    for q in prange(n_q):
        u = q_row[q]
        t = q_col[q]
        s_t = 0.0
        for f in range(d):
            s_t += np.float64(users[u, f]) * np.float64(items[t, f])
        scores = np.empty(m, dtype=np.float64)
        for c in range(m):
            j = negs[q, c]
            s = 0.0
            for f in range(d):
                s += np.float64(users[u, f]) * np.float64(items[j, f])
            scores[c] = s
        t_key = key[t] if key.shape[0] > 0 else 0
        above[q], tied[q], before[q] = _count(s_t, scores, negs[q], t_key, key)
    return above, tied, before


@njit(cache=True, parallel=True)
def rank_scores(
    block: np.ndarray,
    q_row: np.ndarray,
    q_col: np.ndarray,
    negs: np.ndarray,
    key: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`rank_factors`, the scores read from a block of scores (``q_row``: each
    query's row in the block)."""
    n_q, m = negs.shape
    above = np.zeros(n_q, dtype=np.int64)
    tied = np.zeros(n_q, dtype=np.int64)
    before = np.zeros(n_q, dtype=np.int64)
    for q in prange(n_q):
        r = q_row[q]
        t = q_col[q]
        scores = np.empty(m, dtype=np.float64)
        for c in range(m):
            scores[c] = block[r, negs[q, c]]
        t_key = key[t] if key.shape[0] > 0 else 0
        above[q], tied[q], before[q] = _count(np.float64(block[r, t]), scores, negs[q], t_key, key)
    return above, tied, before
