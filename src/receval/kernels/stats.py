"""Numba kernels of the comparison statistics (:mod:`receval.comparison.stats`): the sums of
the randomization test's random sign vectors."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from receval.kernels.toolbox import frozen

__all__ = ["flipped_sums"]


@njit(cache=True)
def _flipped_sum(bits: np.ndarray, d: np.ndarray) -> float:
    """Sum of ``d`` over the positions whose bit is set (bits packed 8 to a byte, most
    significant first, as ``numpy.packbits``)."""
    total = 0.0
    for j in range(d.size):  # branch-free: the bits are random
        total += d[j] * ((bits[j >> 3] >> (7 - (j & 7))) & 1)
    return total


@njit(cache=True, parallel=True)
def _flipped_sums(bits: np.ndarray, d: np.ndarray) -> np.ndarray:
    """One :func:`_flipped_sum` per row of ``bits`` (one sign vector per row), in parallel."""
    out = np.empty(bits.shape[0], dtype=np.float64)
    for r in prange(bits.shape[0]):
        out[r] = _flipped_sum(bits[r], d)
    return out


def flipped_sums(bits: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Per row of ``bits`` (uint8, one sign vector per row, packed 8 to a byte, most
    significant first, as ``numpy.packbits``), the sum of ``d`` over the positions whose bit is
    set."""
    kernel: Any = _flipped_sums
    return kernel(frozen(bits), frozen(d))  # type: ignore[no-any-return]
