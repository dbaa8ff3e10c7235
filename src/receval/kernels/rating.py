"""Numba kernels of the rating metrics (:mod:`receval.arrays.rating`): per-group and per-chunk
exact sums of |error|, error² and the truth (:mod:`receval.kernels.exact` expansions), a sum
that overflows float64 giving inf."""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from receval.kernels.exact import CAP, grow, round_expansion
from receval.kernels.toolbox import frozen

__all__ = ["chunk_parts", "group_sums"]

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
    return max(1, min(n // 8192, numba.get_num_threads() * 4))


def group_sums(offsets: np.ndarray, order: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per group (rows ``order[offsets[g]:offsets[g + 1]]``): [rows, sum |e|, sum e², SS_tot],
    each sum exactly rounded (inf when it overflows)."""
    kernel: Any = _group_sums
    return kernel(frozen(offsets), frozen(order), frozen(y), frozen(p))  # type: ignore[no-any-return]


def chunk_parts(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Expansions of sum |e|, sum e² and sum y over contiguous chunks of the rows: ``buf[j, c,
    :lens[j, c]]`` for sum ``j`` and chunk ``c`` (length -1: the chunk's sum overflows), and the
    number of chunks (chunk ``c``: rows ``n * c // n_chunks`` to ``n * (c + 1) // n_chunks``)."""
    n_chunks = _chunks(y.shape[0])
    kernel: Any = _chunk_parts
    buf, lens = kernel(frozen(y), frozen(p), n_chunks)
    return buf, lens, n_chunks
