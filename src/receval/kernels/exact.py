"""Exact float64 summation that merges across chunks, shards and machines.

A sum is kept as an *expansion*: a short array of non-overlapping float64 partials whose
exact (real-number) sum is the exact sum of the inputs (Shewchuk's algorithm, as in
``math.fsum``). Expansions of disjoint parts concatenate; :func:`total` rounds once, so the
result is the exactly rounded sum of every input, whatever the order of the inputs or how
they were split. This is what lets the Spark engine's means equal the local engine's to the
last bit: each shard sends the expansion of its part, the driver rounds their union.

>>> import numpy as np
>>> from receval.kernels.exact import parts, total
>>> x = np.array([1.0, 1e100, 1.0, -1e100])
>>> sum(x.tolist()), total(parts(x))
(0.0, 2.0)
>>> total(np.concatenate([parts(x[:2]), parts(x[2:])]))
2.0
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import njit, prange

__all__ = [
    "CAP",
    "grow",
    "parts",
    "parts_weighted",
    "round_expansion",
    "segment_parts",
    "segment_totals",
    "total",
    "total_of",
]

# buffer length of one expansion: non-overlapping float64 partials span at most ~2100 bits,
# so no more than ~40 are ever needed
CAP = 96
_MIN_CHUNK = 1 << 16


@njit(cache=True, nogil=True)
def grow(partials: np.ndarray, n: int, x: float) -> int:
    """Add ``x`` to the expansion ``partials[:n]``; return its new length (Shewchuk)."""
    i = 0
    for j in range(n):
        y = partials[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            partials[i] = lo
            i += 1
        x = hi
    partials[i] = x
    return i + 1


@njit(cache=True, nogil=True)
def round_expansion(partials: np.ndarray, n: int) -> float:
    """The exactly rounded value of the expansion ``partials[:n]`` as :func:`grow` leaves it
    (``math.fsum``'s final step, half-even on exact halfway cases), for use inside kernels."""
    if n == 0:
        return 0.0
    n -= 1
    hi = partials[n]
    lo = 0.0
    while n > 0:
        x = hi
        n -= 1
        y = partials[n]
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            break
    if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return float(hi)


@njit(cache=True, nogil=True)
def _chunk_parts(values: np.ndarray, lo: int, hi: int, out: np.ndarray) -> int:
    n = 0
    for r in range(lo, hi):
        v = values[r]
        if v != 0.0:
            n = grow(out, n, v)
    return n


@njit(cache=True, parallel=True)
def _parts(values: np.ndarray, n_chunks: int) -> tuple[np.ndarray, np.ndarray]:
    m = values.shape[0]
    buf = np.zeros((n_chunks, CAP), dtype=np.float64)
    lens = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        lens[c] = _chunk_parts(values, m * c // n_chunks, m * (c + 1) // n_chunks, buf[c])
    return buf, lens


@njit(cache=True, parallel=True)
def _parts_weighted(
    values: np.ndarray, weights: np.ndarray, n_chunks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Expansions of sum(w * v) for non-negative integer weights: w * v is added bit by bit
    (v * 2^b is exact), so no product is ever rounded."""
    m = values.shape[0]
    buf = np.zeros((n_chunks, CAP), dtype=np.float64)
    lens = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        n = 0
        for r in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            w = weights[r]
            v = values[r]
            b = 0
            while w > 0:
                if w & 1 and v != 0.0:
                    n = grow(buf[c], n, v * 2.0**b)
                w >>= 1
                b += 1
        lens[c] = n
    return buf, lens


def _chunks(n: int) -> int:
    return max(1, min(n // _MIN_CHUNK, numba.get_num_threads() * 4))


def _collect(buf: np.ndarray, lens: np.ndarray) -> np.ndarray:
    return np.concatenate([buf[c, : lens[c]] for c in range(lens.shape[0])])


def parts(values: np.ndarray) -> np.ndarray:
    """The expansion of ``sum(values)``: float64 partials whose exact sum is the exact sum.

    Non-finite values have no exact sum: the expansion is then ``[float sum]`` (inf or NaN).
    When a running sum overflows float64, the expansion is the non-zero values themselves
    (exact too; :func:`total` sums them).
    """
    v = np.ascontiguousarray(values, dtype=np.float64)
    if v.size == 0:
        return np.zeros(0, dtype=np.float64)
    if not np.isfinite(v).all():
        return np.array([float(v.sum())])
    n_chunks = _chunks(v.size)
    if n_chunks == 1:  # no thread launch for small inputs (a shard's few users)
        buf = np.zeros(CAP, dtype=np.float64)
        out = buf[: _chunk_parts(v, 0, v.size, buf)].copy()
    else:
        out = _collect(*_parts(v, n_chunks))
    return out if np.isfinite(out).all() else v[v != 0.0]


def parts_weighted(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The expansion of ``sum(weights * values)``, exact, for integer ``weights`` >= 0."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    w = np.ascontiguousarray(weights, dtype=np.int64)
    if v.size == 0:
        return np.zeros(0, dtype=np.float64)
    if not np.isfinite(v).all():
        return np.array([float((v * w).sum())])
    out = _collect(*_parts_weighted(v, w, _chunks(v.size)))
    if not np.isfinite(out).all():  # a running sum overflowed: inf for non-negative terms
        with np.errstate(over="ignore"):
            return np.array([float((v * w).sum())])
    return out


def total(expansion: np.ndarray) -> float:
    """The exactly rounded value of an expansion (or of several, concatenated).

    A sum whose value (or a running sum) exceeds float64 is summed scaled by 2**-64, then
    scaled back: ±inf when the sum itself overflows, never :class:`OverflowError`.
    """
    values = np.asarray(expansion, dtype=np.float64)
    try:
        return math.fsum(values.tolist())
    except OverflowError:
        return math.fsum((values * 2.0**-64).tolist()) * 2.0**64


def total_of(values: np.ndarray) -> float:
    """The exactly rounded sum of ``values`` (``math.fsum``, at kernel speed)."""
    return total(parts(values))


@njit(cache=True, nogil=True)
def _segment_parts(
    values: np.ndarray, seg: np.ndarray, n_seg: int
) -> tuple[np.ndarray, np.ndarray]:
    counts = np.zeros(n_seg + 1, dtype=np.int64)
    for r in range(values.shape[0]):
        if values[r] != 0.0:
            counts[seg[r] + 1] += 1
    starts = np.cumsum(counts)  # segment s: starts[s]..starts[s + 1] (a counting sort)
    grouped = np.empty(starts[-1], dtype=np.float64)
    fill = starts[:-1].copy()
    for r in range(values.shape[0]):
        if values[r] != 0.0:
            grouped[fill[seg[r]]] = values[r]
            fill[seg[r]] += 1
    room = np.zeros(n_seg + 1, dtype=np.int64)  # an expansion never outgrows its inputs
    for s in range(n_seg):
        room[s + 1] = room[s] + min(starts[s + 1] - starts[s], CAP)
    buf = np.empty(room[-1], dtype=np.float64)
    off = np.zeros(n_seg + 1, dtype=np.int64)
    for s in range(n_seg):
        partials = buf[room[s] : room[s + 1]]
        n = 0
        for r in range(starts[s], starts[s + 1]):
            n = grow(partials, n, grouped[r])
        off[s + 1] = off[s] + n
    flat = np.empty(off[-1], dtype=np.float64)
    for s in range(n_seg):
        flat[off[s] : off[s + 1]] = buf[room[s] : room[s] + off[s + 1] - off[s]]
    return flat, off


def segment_parts(values: np.ndarray, seg: np.ndarray, n_seg: int) -> tuple[np.ndarray, np.ndarray]:
    """The expansion of each segment's sum: ``values[r]`` belongs to segment ``seg[r]`` (in
    ``0..n_seg - 1``); returns ``(flat, off)``, segment ``s``'s partials at
    ``flat[off[s]:off[s + 1]]`` (as :func:`grow` leaves them). Finite values only. A linear
    pass (a counting sort by segment): the per-group sums of a global state, merged exactly by
    calling it again on the concatenated partials of two states."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    s = np.ascontiguousarray(seg, dtype=np.int64)
    kernel: Any = _segment_parts
    return kernel(v, s, int(n_seg))  # type: ignore[no-any-return]


@njit(cache=True, nogil=True)
def _segment_totals(flat: np.ndarray, off: np.ndarray) -> np.ndarray:
    n_seg = off.shape[0] - 1
    out = np.empty(n_seg, dtype=np.float64)
    for s in range(n_seg):
        out[s] = round_expansion(flat[off[s] : off[s + 1]], off[s + 1] - off[s])
    return out


def segment_totals(flat: np.ndarray, off: np.ndarray) -> np.ndarray:
    """The exactly rounded sum of each segment of :func:`segment_parts`."""
    kernel: Any = _segment_totals
    return kernel(  # type: ignore[no-any-return]
        np.ascontiguousarray(flat, dtype=np.float64), np.ascontiguousarray(off, dtype=np.int64)
    )
