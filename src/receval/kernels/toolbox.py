"""The kernels' shared toolbox: hash tables of int64 keys, the descending sorts, chunk sizes
and the read-only views every wrapper hands its kernel.

Every kernel module takes these from here (not from another kernel module), under these public
names. The table functions work on three caller-owned arrays, ``tab_key``, ``tab_val`` and
``tab_stamp``, of ``2 ** table_bits(n)`` slots: a slot is live when its stamp equals the
caller's current stamp, so a table is reused from one user to the next without being cleared.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "fill_table",
    "frozen",
    "hash_slot",
    "longest_range",
    "sort_desc",
    "sort_group",
    "table_bits",
    "table_find",
    "table_put",
]


@njit(cache=True, nogil=True, inline="always")
def table_bits(n: int) -> int:
    """log2 of a power-of-two table size with load factor <= 1/2."""
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    return bits


@njit(cache=True, nogil=True)
def longest_range(offsets: np.ndarray, lo: int, hi: int) -> int:
    """The most rows of ranges ``lo .. hi - 1``, at least 1: a chunk's scratch size.

    Range ``r`` holds rows ``offsets[r]:offsets[r + 1]``.
    """
    longest = 1
    for r in range(lo, hi):
        longest = max(longest, offsets[r + 1] - offsets[r])
    return longest


@njit(cache=True, nogil=True, inline="always")
def hash_slot(key: int, bits: int) -> int:
    """Fibonacci hashing of an int64 key into ``bits`` bits."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(64 - bits))  # type: ignore[return-value]


@njit(cache=True, nogil=True)
def fill_table(
    items: np.ndarray,
    lo: int,
    hi: int,
    tab_key: np.ndarray,
    tab_val: np.ndarray,
    tab_stamp: np.ndarray,
    stamp: int,
) -> bool:
    """Put ``items[lo:hi]`` (value: the row) in an open-addressing table; True on a duplicate.

    Slots whose stamp differs from ``stamp`` are empty, so the table is never cleared; it is
    probed with :func:`hash_slot` on ``table_bits(hi - lo)`` bits.
    """
    bits = table_bits(hi - lo)
    for a in range(lo, hi):
        slot = table_put(items[a], bits, tab_key, tab_stamp, stamp)
        if slot < 0:
            return True
        tab_val[slot] = a
    return False


@njit(cache=True, nogil=True, inline="always")
def table_put(key: int, bits: int, tab_key: np.ndarray, tab_stamp: np.ndarray, stamp: int) -> int:
    """Put ``key`` in the table under ``stamp`` and return its slot, or -1 when it is there
    already (nothing put)."""
    mask = (1 << bits) - 1
    slot = hash_slot(key, bits)
    while tab_stamp[slot] == stamp:
        if tab_key[slot] == key:
            return -1
        slot = (slot + 1) & mask
    tab_stamp[slot] = stamp
    tab_key[slot] = key
    return slot


@njit(cache=True, nogil=True, inline="always")
def table_find(
    key: int, bits: int, tab_key: np.ndarray, tab_val: np.ndarray, tab_stamp: np.ndarray, stamp: int
) -> int:
    """The value stored for ``key`` by :func:`fill_table` under ``stamp``, or -1."""
    mask = (1 << bits) - 1
    slot = hash_slot(key, bits)
    while tab_stamp[slot] == stamp:
        if tab_key[slot] == key:
            return tab_val[slot]  # type: ignore[no-any-return]
        slot = (slot + 1) & mask
    return -1


@njit(cache=True, nogil=True)
def sort_desc(
    keys: np.ndarray, perm: np.ndarray, tmp: np.ndarray, lo: int | np.int64, hi: int
) -> None:
    """Stable sort of perm[lo:hi] by descending ``keys[perm[a]]`` (equal keys keep their order).

    Insertion sort of runs of 16, then bottom-up merges through ``tmp[lo:hi]``. The one sort of
    the ranking kernels: hand-written so that a first run compiles one small function instead
    of NumPy's sorts for every kind, dtype and layout. Callers pass ``lo`` as an int64
    (``np.int64(0)``, not ``0``): Numba compiles a function once more for each literal
    argument, and also for the literal first value of a loop variable.
    """
    run = 16
    for s in range(lo, hi, run):
        e = min(s + run, hi)
        for a in range(s + 1, e):
            p = perm[a]
            k = keys[p]
            b = a - 1
            while b >= s and keys[perm[b]] < k:
                perm[b + 1] = perm[b]
                b -= 1
            perm[b + 1] = p
    src = perm
    dst = tmp
    in_tmp = False
    width = run
    while lo + width < hi:
        for s in range(lo, hi, 2 * width):
            m = min(s + width, hi)
            e = min(s + 2 * width, hi)
            i = s
            j = m
            o = s
            while i < m and j < e:
                if keys[src[j]] > keys[src[i]]:  # ties take the left run first: stable
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < m:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < e:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for a in range(lo, hi):
            perm[a] = tmp[a]


@njit(cache=True, nogil=True, inline="always")
def sort_group(
    key: np.ndarray,
    order: np.ndarray,
    prow: np.ndarray,
    prel: np.ndarray,
    perm: np.ndarray,
    itmp: np.ndarray,
    ftmp: np.ndarray,
    lo: int | np.int64,
    hi: int,
) -> None:
    """Stable sort of positions lo..hi-1 by descending ``key``, carrying ``order``, ``prow`` and
    ``prel``: insertion sort in place for a short group, else :func:`sort_desc` of a
    permutation (``perm``, ``itmp``, ``ftmp``: scratch; ``key`` is then left as is)."""
    if hi - lo <= 32:
        for a in range(lo + 1, hi):
            k = key[a]
            o = order[a]
            r = prow[a]
            v = prel[a]
            b = a - 1
            while b >= lo and key[b] < k:
                key[b + 1] = key[b]
                order[b + 1] = order[b]
                prow[b + 1] = prow[b]
                prel[b + 1] = prel[b]
                b -= 1
            key[b + 1] = k
            order[b + 1] = o
            prow[b + 1] = r
            prel[b + 1] = v
        return
    for a in range(lo, hi):
        perm[a] = a
    sort_desc(key, perm, itmp, lo, hi)
    for a in range(lo, hi):
        itmp[a] = order[perm[a]]
    for a in range(lo, hi):
        order[a] = itmp[a]
    for a in range(lo, hi):
        itmp[a] = prow[perm[a]]
    for a in range(lo, hi):
        prow[a] = itmp[a]
    for a in range(lo, hi):
        ftmp[a] = prel[perm[a]]
    for a in range(lo, hi):
        prel[a] = ftmp[a]


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (one compiled signature per kernel)."""
    view = array.view()
    view.flags.writeable = False
    return view
