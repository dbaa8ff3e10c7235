"""Numba kernels that group rows by user in linear time.

Users are first given dense integer codes (:mod:`receval.data.layout`: a table over the id
range for integer ids in a small range, else a hash table of the distinct ids); the rows are
then grouped by a counting sort of those codes, two linear passes over the rows instead of a
comparison sort:

1. each chunk of rows counts its rows per code (one histogram per chunk);
2. a prefix sum over (code, chunk), codes first, gives each chunk its first position per code;
3. each chunk writes its rows' indices to those positions, in row order.

Integer ids in a range of at most 2^24 skip the codes; other ids are grouped by their codes
the same way (:func:`radix_group`, :func:`counting_sort` only past 2^24 users): the rows are
placed by the high bits of ``id - low`` (the same three steps, at most 512 buckets), then each
bucket by its low bits (6 to 15, buckets of about 2^15 rows), whose per-bucket counts give
every id's offset. Both passes keep their counters and write streams in cache, where one
counting sort over 10^6 users scatters to 10^6 places. The columns the caller needs in
grouped order move with the rows, read where they lie (a Parquet column's chunks, no copy).

The sort is stable: within a code, rows keep their input order (chunks are in row order, and
a chunk writes its rows in order), which ``ties="first"`` reads. The passes over rows are
``nogil`` kernels over one chunk, run on Python threads by
:func:`receval.kernels.pools.run_chunks` (as :mod:`receval.kernels.beyond`'s item-id passes).

Kernels here read 8-byte integer arrays (ids viewed as int64, float64 columns viewed as
int64), so each kernel compiles once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise

import numba
import numpy as np
from numba import njit

from receval.kernels.memory import uninitialised
from receval.kernels.pools import run_chunks
from receval.kernels.toolbox import frozen, hash_slot, longest_range, table_bits

__all__ = [
    "RADIX_MAX_BITS",
    "Pieces",
    "count_positions",
    "count_runs",
    "counting_sort",
    "cut",
    "distinct_within",
    "gather",
    "join_pieces",
    "joined",
    "positions_in",
    "radix_group",
    "radix_low_bits",
    "range_codes",
    "run_offsets",
    "sort_within",
    "table_codes",
]

_ROWS = 1 << 16
"""Rows per chunk of the passes that need no per-chunk state (marks, lookups, gathers)."""
_GROUPS = 1024
"""Groups per chunk of :func:`sort_within`."""
_INSERTION = 32
"""Groups up to this long are sorted by insertion, longer ones by merges."""
_LOW_BITS = (6, 15)
"""Fewest and most bits of the key that :func:`radix_group`'s second pass sorts on."""
_BUCKET_ROWS = 1 << 15
"""Rows per bucket of :func:`radix_group`'s first pass that its choice of low bits aims at:
a bucket's three arrays then stay in this machine's 1 MiB of L2 cache per core while the
second pass moves them (10^7 rows, 10^5 users, arrays already touched: 150 ms with 11 low
bits, 80 ms with 9)."""
_MAX_BUCKETS = 1 << 9
"""Most buckets of :func:`radix_group`'s first pass: each is three write streams, and more
streams than the TLB holds cost more in the first pass than larger buckets cost in the
second (10^8 rows, 10^6 users: 3,907 buckets 2.1-2.4 s, 489 buckets 1.7 s)."""
RADIX_MAX_BITS = 24
"""Keys of at most this many bits are grouped by :func:`radix_group`."""


def radix_low_bits(n: int, size: int) -> int:
    """The low bits for :func:`radix_group` of ``n`` rows with keys in ``[0, size)``: buckets
    of about ``_BUCKET_ROWS`` rows when the keys are spread evenly, at most ``_MAX_BUCKETS``
    of them."""
    per_key = max(1.0, n / max(1, size))
    bits = round(math.log2(_BUCKET_ROWS / per_key))
    fewest = max(_LOW_BITS[0], (size - 1).bit_length() - _MAX_BUCKETS.bit_length() + 1)
    assert fewest <= _LOW_BITS[1]  # RADIX_MAX_BITS keys fit in _MAX_BUCKETS buckets
    return min(_LOW_BITS[1], max(fewest, bits))


def _n_chunks(n: int, size: int) -> int:
    return (n + size - 1) // size


# --------------------------------------------------------------------------------- runs


@njit(cache=True, nogil=True)
def _count_runs(values: np.ndarray) -> int:
    n = values.shape[0]
    runs = 1 if n else 0
    for i in range(1, n):
        if values[i] != values[i - 1]:
            runs += 1
    return runs


@njit(cache=True, nogil=True)
def _run_offsets(values: np.ndarray, n_runs: int) -> np.ndarray:
    n = values.shape[0]
    out = np.empty(n_runs + 1, dtype=np.int64)
    out[0] = 0
    j = 1
    for i in range(1, n):
        if values[i] != values[i - 1]:
            out[j] = i
            j += 1
    out[n_runs] = n
    return out


def count_runs(values: np.ndarray | Sequence[np.ndarray]) -> int:
    """Number of runs of equal values (0 for no value); ``values``: one array or
    :data:`Pieces` (a run may span pieces)."""
    if isinstance(values, np.ndarray):
        return int(_count_runs(frozen(values)))
    pieces = [p for p in values if p.shape[0]]
    runs = sum(int(_count_runs(frozen(p))) for p in pieces)
    return runs - sum(int(a[-1] == b[0]) for a, b in pairwise(pieces))


def run_offsets(values: np.ndarray | Sequence[np.ndarray], n_runs: int) -> np.ndarray:
    """Offsets of the ``n_runs`` runs of equal values (:func:`count_runs`): run ``j`` is
    ``values[out[j]:out[j + 1]]`` (of the pieces joined, for :data:`Pieces`)."""
    if isinstance(values, np.ndarray):
        out: np.ndarray = _run_offsets(frozen(values), int(n_runs))
        return out
    starts = []  # of the runs, piece by piece
    start = 0
    last = None
    for p in values:
        if not p.shape[0]:
            continue
        own = _run_offsets(frozen(p), int(_count_runs(frozen(p))))[:-1] + start
        goes_on = last is not None and last == p[0]  # the previous piece's last run goes on
        starts.append(own[1:] if goes_on else own)
        start += p.shape[0]
        last = p[-1]
    starts.append(np.array([start], dtype=np.int64))
    found = np.concatenate(starts)
    assert found.shape[0] == n_runs + 1
    return found


# ------------------------------------------------------------------------------- codes


@njit(cache=True, nogil=True)
def _mark_chunk(c: int, values: np.ndarray, low: int, present: np.ndarray) -> None:
    n = values.shape[0]
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        j = np.int64(np.uint64(values[i]) - np.uint64(low))  # uint64 ids viewed as int64 too
        if not present[j]:  # read first: marked cache lines stay shared between threads
            present[j] = True  # every writer stores the same value


@njit(cache=True, nogil=True)
def _range_lookup_chunk(
    c: int, values: np.ndarray, low: int, rank: np.ndarray, out: np.ndarray
) -> None:
    n = values.shape[0]
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        out[i] = rank[np.int64(np.uint64(values[i]) - np.uint64(low))]


@njit(cache=True, nogil=True)
def _positions_chunk(
    c: int, values: np.ndarray, low: int, table: np.ndarray, out: np.ndarray
) -> None:
    n = values.shape[0]
    size = table.shape[0]
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        v = values[i]
        out[i] = -1
        if v >= low:  # the distance in uint64: no overflow for any two int64 values
            j = np.uint64(v) - np.uint64(low)
            if j < np.uint64(size):
                out[i] = table[np.int64(j)]


def positions_in(values: np.ndarray, keys: np.ndarray, low: int, size: int) -> np.ndarray:
    """For each of ``values``, its position in the distinct ``keys`` or -1 (both int64,
    every key in ``[low, low + size)``; ``values`` anywhere): one lookup table of ``size``
    entries, read in parallel."""
    table = np.full(size, -1, dtype=np.int64)
    table[keys - low] = np.arange(keys.shape[0], dtype=np.int64)
    out = uninitialised(values.shape[0])
    run_chunks(
        _positions_chunk, _n_chunks(values.shape[0], _ROWS), frozen(values), int(low),
        frozen(table), out,
    )  # fmt: skip
    return out


def range_codes(values: np.ndarray, low: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of integer ids in ``[low, low + size)`` that keep their order.

    ``values``: int64 (uint64 ids viewed as int64, with ``low`` wrapped the same way; every
    ``value - low`` must lie in ``[0, size)``). Returns ``(codes, present)``: code ``c`` is the
    ``c``-th smallest distinct id, and ``present[j]`` says whether ``low + j`` occurs.
    """
    present = np.zeros(size, dtype=np.bool_)
    n_chunks = _n_chunks(values.shape[0], _ROWS)
    run_chunks(_mark_chunk, n_chunks, frozen(values), int(low), present)
    rank = np.cumsum(present, dtype=np.int64) - 1
    codes = uninitialised(values.shape[0])
    run_chunks(_range_lookup_chunk, n_chunks, frozen(values), int(low), frozen(rank), codes)
    return codes, present


@njit(cache=True, nogil=True)
def _build_table(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Open-addressing table of distinct ``keys`` (value: the key's index)."""
    bits = table_bits(keys.shape[0])
    mask = (1 << bits) - 1
    tab_key = np.empty(1 << bits, dtype=np.int64)
    tab_val = np.empty(1 << bits, dtype=np.int64)
    for s in range(1 << bits):
        tab_val[s] = -1
    for a in range(keys.shape[0]):
        key = keys[a]
        slot = hash_slot(key, bits)
        while tab_val[slot] >= 0:
            slot = (slot + 1) & mask
        tab_key[slot] = key
        tab_val[slot] = a
    return tab_key, tab_val


@njit(cache=True, nogil=True)
def _table_lookup_chunk(
    c: int, values: np.ndarray, tab_key: np.ndarray, tab_val: np.ndarray, out: np.ndarray
) -> None:
    n = values.shape[0]
    mask = tab_key.shape[0] - 1
    bits = 0
    while (1 << bits) < tab_key.shape[0]:
        bits += 1
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        key = values[i]
        slot = hash_slot(key, bits)
        found = -1
        while tab_val[slot] >= 0:
            if tab_key[slot] == key:
                found = tab_val[slot]
                break
            slot = (slot + 1) & mask
        out[i] = found


def table_codes(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each of ``values`` (int64), its index in the distinct ``keys`` (int64), or -1."""
    tab_key, tab_val = _build_table(frozen(keys))
    out = uninitialised(values.shape[0])
    args = (frozen(values), frozen(tab_key), frozen(tab_val), out)
    run_chunks(_table_lookup_chunk, _n_chunks(values.shape[0], _ROWS), *args)
    return out


# ----------------------------------------------------------------------- counting sort


@njit(cache=True, nogil=True)
def _histogram_chunk(c: int, n_chunks: int, codes: np.ndarray, counts: np.ndarray) -> None:
    n = codes.shape[0]
    row = counts[c]
    for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
        row[codes[i]] += 1


@njit(cache=True, nogil=True)
def count_positions(counts: np.ndarray, offsets: np.ndarray) -> None:
    """``counts[c, g]`` becomes chunk ``c``'s first position for code ``g`` (codes first, then
    chunks); ``offsets[g]`` the first position of code ``g``."""
    n_chunks, n_groups = counts.shape
    pos = 0
    for g in range(n_groups):
        offsets[g] = pos
        for c in range(n_chunks):
            k = counts[c, g]
            counts[c, g] = pos
            pos += k
    offsets[n_groups] = pos


@njit(cache=True, nogil=True)
def _scatter_chunk(
    c: int, n_chunks: int, codes: np.ndarray, starts: np.ndarray, order: np.ndarray
) -> None:
    n = codes.shape[0]
    row = starts[c]
    for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
        g = codes[i]
        order[row[g]] = i
        row[g] += 1


def counting_sort(
    codes: np.ndarray, n_groups: int, *, n_chunks: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A stable order of the rows by their code: ``(offsets, order)``.

    ``codes``: int64 in ``[0, n_groups)``. ``order[offsets[g]:offsets[g + 1]]`` are the rows
    of code ``g`` in input order; the same as ``np.argsort(codes, kind="stable")``, in two
    linear passes (module doc). ``n_chunks``: how many chunks to cut the rows into; by
    default at most one per thread, fewer when there are many codes per row (each chunk holds
    a histogram of ``n_groups`` counts).
    """
    n = codes.shape[0]
    if n_chunks is None:
        n_chunks = max(1, min(numba.get_num_threads(), n // max(8 * n_groups, _ROWS)))
    counts = np.zeros((n_chunks, n_groups), dtype=np.int64)
    run_chunks(_histogram_chunk, n_chunks, n_chunks, frozen(codes), counts)
    offsets = np.empty(n_groups + 1, dtype=np.int64)
    count_positions(counts, offsets)
    order = uninitialised(n)
    run_chunks(_scatter_chunk, n_chunks, n_chunks, frozen(codes), counts, order)
    return offsets, order


# ------------------------------------------------------------------------- radix groups

Pieces = list[np.ndarray]
"""One column as consecutive arrays of 8-byte values (its rows in order), e.g. the chunks of
a Polars column viewed without a copy (:func:`receval.data.layout.column_pieces`)."""


def joined(pieces: Sequence[np.ndarray]) -> np.ndarray:
    """The pieces as one array (the piece itself when there is one): copied on every thread
    (:func:`join_pieces`) when they are 8-byte numbers, else by NumPy."""
    if len(pieces) == 1:
        return pieces[0]
    if not pieces:
        return np.zeros(0, dtype=np.int64)
    dtype = pieces[0].dtype
    if dtype.itemsize != 8 or dtype.kind not in "iuf" or any(p.dtype != dtype for p in pieces):
        return np.concatenate(pieces)
    return join_pieces(pieces)


@njit(cache=True, nogil=True)
def _copy_into(src: np.ndarray, dst: np.ndarray, start: int) -> None:
    for i in range(src.shape[0]):
        dst[start + i] = src[i]


def join_pieces(pieces: Sequence[np.ndarray]) -> np.ndarray:
    """Pieces of 8-byte numbers (one dtype) as one array, each piece copied by a thread of
    :func:`run_chunks` (Polars' ``to_numpy`` of a column in chunks copies them one after the
    other: at 10^8 rows in 785 chunks, 0.46 s a column against 0.24 s here)."""
    dtype = pieces[0].dtype
    views = [frozen(np.ascontiguousarray(p).view(np.int64)) for p in pieces]
    starts = np.cumsum([0] + [v.shape[0] for v in views]).tolist()
    out = uninitialised(starts[-1])

    def copy(c: int) -> None:
        _copy_into(views[c], out, starts[c])

    run_chunks(copy, len(views))
    return out.view(dtype)


@njit(cache=True, nogil=True)
def _high_histogram_unit(
    values: np.ndarray, lo: int, hi: int, low: int, shift: int, row: np.ndarray
) -> None:
    for i in range(lo, hi):
        key = np.int64(np.uint64(values[i]) - np.uint64(low))
        row[key >> shift] += 1


@njit(cache=True, nogil=True)
def _high_scatter_unit(
    values: np.ndarray,
    lo: int,
    hi: int,
    start: int,
    low: int,
    shift: int,
    row: np.ndarray,
    packed: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    first_out: np.ndarray,
    second_out: np.ndarray,
) -> None:
    """Rows ``lo:hi`` of one piece (its first row is row ``start`` of the column) placed by
    the key's high bits: key and row packed, and the carried values (an empty ``first`` /
    ``second``: none)."""
    carry_first = first.shape[0] != 0
    carry_second = second.shape[0] != 0
    for i in range(lo, hi):
        key = np.int64(np.uint64(values[i]) - np.uint64(low))
        d = key >> shift
        p = row[d]
        packed[p] = (key << 32) | (start + i)
        if carry_first:
            first_out[p] = first[i]
        if carry_second:
            second_out[p] = second[i]
        row[d] = p + 1


@njit(cache=True, nogil=True)
def _low_sort_chunk(
    c: int,
    per_chunk: int,
    shift: int,
    bucket_off: np.ndarray,
    packed: np.ndarray,
    offsets: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
) -> None:
    """Buckets ``[c * per_chunk, (c + 1) * per_chunk)`` of the first pass, in place: each
    one's rows copied out, counted and placed back by the key's low bits, in their order
    (stable); ``packed`` then holds the rows' indices, and the counts give every key's
    offset. ``first`` / ``second``: the carried values (empty: none), moved the same way."""
    n_buckets = bucket_off.shape[0] - 1
    width = 1 << shift
    mask = width - 1
    cnt = np.empty(width, dtype=np.int64)
    carry_first = first.shape[0] != 0
    carry_second = second.shape[0] != 0
    b_lo = c * per_chunk
    b_hi = min(n_buckets, (c + 1) * per_chunk)
    longest = longest_range(bucket_off, b_lo, b_hi)
    keep = np.empty(longest, dtype=np.int64)
    keep_first = np.empty(longest if carry_first else 0, dtype=np.int64)
    keep_second = np.empty(longest if carry_second else 0, dtype=np.int64)
    for b in range(b_lo, b_hi):
        lo = bucket_off[b]
        hi = bucket_off[b + 1]
        for j in range(width):
            cnt[j] = 0
        for a in range(lo, hi):
            v = packed[a]
            keep[a - lo] = v
            cnt[(v >> 32) & mask] += 1
        if carry_first:
            for a in range(lo, hi):
                keep_first[a - lo] = first[a]
        if carry_second:
            for a in range(lo, hi):
                keep_second[a - lo] = second[a]
        pos = lo
        base = b << shift
        for j in range(width):
            offsets[base + j] = pos
            k = cnt[j]
            cnt[j] = pos
            pos += k
        for a in range(hi - lo):
            v = keep[a]
            j = (v >> 32) & mask
            p = cnt[j]
            packed[p] = v & 0xFFFFFFFF
            if carry_first:
                first[p] = keep_first[a]
            if carry_second:
                second[p] = keep_second[a]
            cnt[j] = p + 1


def cut(values: np.ndarray, lengths: Sequence[int]) -> Pieces:
    """``values`` as read-only views of consecutive ``lengths`` rows (summing to its length)."""
    cuts = np.cumsum([0, *lengths]).tolist()
    assert cuts[-1] == values.shape[0]
    return [frozen(values[a:b]) for a, b in pairwise(cuts)]


def _cut_like(pieces: Sequence[np.ndarray], like: Sequence[np.ndarray]) -> Pieces:
    """``pieces`` (joined first when in more than one) as views cut where ``like`` is cut."""
    return cut(joined(pieces), [p.shape[0] for p in like])


def _same_cuts(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.shape[0] == y.shape[0] for x, y in zip(a, b, strict=True))


def _work_units(lengths: list[int], n: int) -> list[list[tuple[int, int, int]]]:
    """Pieces cut into units of work of about ``n / (4 * threads)`` rows, in row order: each
    unit a list of ``(piece, lo, hi)``, rows ``lo:hi`` of that piece (a unit may span
    pieces, so a column in many small chunks makes as few units as one in a single chunk)."""
    target = max(1, min(4 * numba.get_num_threads(), n // _ROWS))
    size = max(1, -(-n // target))
    units: list[list[tuple[int, int, int]]] = [[]]
    room = size
    for k, length in enumerate(lengths):
        lo = 0
        while lo < length:
            if room == 0:
                units.append([])
                room = size
            hi = min(length, lo + room)
            units[-1].append((k, lo, hi))
            room -= hi - lo
            lo = hi
    return units


def _first_dtype(pieces: Sequence[np.ndarray]) -> np.dtype:
    return pieces[0].dtype if len(pieces) else np.dtype(np.int64)


def _as_int64_pieces(made: np.ndarray | Sequence[np.ndarray]) -> Pieces:
    pieces = [made] if isinstance(made, np.ndarray) else list(made)
    if not pieces:
        return [frozen(np.zeros(0, dtype=np.int64))]
    out = []
    for a in pieces:
        assert a.ndim == 1 and a.dtype.itemsize == 8 and a.dtype.kind in "iuf"
        out.append(frozen(np.ascontiguousarray(a).view(np.int64)))
    return out


def radix_group(
    values: np.ndarray | Sequence[np.ndarray],
    low: int,
    size: int,
    carry: Sequence[Callable[[], np.ndarray | Sequence[np.ndarray]]] = (),
    low_bits: int | None = None,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A stable order of the rows by integer key ``values - low`` in ``[0, size)``, without
    codes: ``(offsets, order, carried)`` with ``order[offsets[j]:offsets[j + 1]]`` the rows
    of key ``j`` in input order (``offsets``: ``size + 1`` entries, empty keys included); the
    same as ``np.argsort(values - low, kind="stable")``. ``carried``: the array each of
    ``carry`` makes (at most two, each of an 8-byte dtype with one value per row) in that
    order, ``a[order]``, moved with the rows instead of gathered after (a gather reads every
    row at random); each is made just before the first pass and dropped after it.

    ``values`` and what ``carry`` makes: one array each, or :data:`Pieces` (the first pass
    reads them where they lie, e.g. the chunks of a Parquet column, instead of a joined copy
    of each: a carried column in one piece is read as views cut like ``values``, one in
    pieces cut elsewhere is joined first). ``values``: int64
    (uint64 ids viewed as int64, ``low`` wrapped the same way); ``size`` at most
    ``2 ** RADIX_MAX_BITS``, fewer than ``2 ** 32`` rows. Two passes that each keep their
    counters and write streams in cache: the rows are placed by the key's high bits
    (per-unit histograms, as :func:`counting_sort`), then each bucket of the high bits,
    independently and in place, by the low bits, whose counts give every key's offset.
    ``low_bits``: how many (by default from the rows per key, :func:`radix_low_bits`; the
    result does not depend on it). Memory: one array of rows per array returned, and a copy
    of the largest bucket per chunk.
    """
    vp = _as_int64_pieces(values)
    n = sum(p.shape[0] for p in vp)
    assert size <= 1 << RADIX_MAX_BITS and n < 1 << 32 and len(carry) <= 2
    made_raw = [make() for make in carry]
    dtypes = [m.dtype if isinstance(m, np.ndarray) else _first_dtype(m) for m in made_raw]
    made = [_as_int64_pieces(m) for m in made_raw]
    del made_raw
    assert all(sum(p.shape[0] for p in m) == n for m in made)
    made = [m if _same_cuts(vp, m) else _cut_like(m, vp) for m in made]
    none = frozen(np.zeros(0, dtype=np.int64))
    sources = made + [[none] * len(vp)] * (2 - len(made))
    del made
    units = _work_units([p.shape[0] for p in vp], n)
    starts = np.cumsum([0] + [p.shape[0] for p in vp]).tolist()
    shift = radix_low_bits(n, size) if low_bits is None else low_bits
    n_buckets = max(1, (size + (1 << shift) - 1) >> shift)
    counts = np.zeros((len(units), n_buckets), dtype=np.int64)

    def histogram(u: int) -> None:
        for k, lo, hi in units[u]:
            _high_histogram_unit(vp[k], lo, hi, low, shift, counts[u])

    run_chunks(histogram, len(units))
    bucket_off = np.empty(n_buckets + 1, dtype=np.int64)
    count_positions(counts, bucket_off)
    packed = uninitialised(n)
    moved = [uninitialised(n) for _ in carry] + [np.zeros(0, dtype=np.int64)] * (2 - len(carry))

    def scatter(u: int) -> None:
        for k, lo, hi in units[u]:  # in row order: a unit's rows stay in order
            _high_scatter_unit(
                vp[k], lo, hi, starts[k], low, shift, counts[u], packed,
                sources[0][k], sources[1][k], *moved,
            )  # fmt: skip

    run_chunks(scatter, len(units))
    sources.clear()  # the pieces made by carry, dropped
    offsets = uninitialised((n_buckets << shift) + 1)
    offsets[-1] = n
    per_chunk = max(1, n_buckets // (4 * numba.get_num_threads()))
    args = (per_chunk, shift, frozen(bucket_off), packed, offsets, *moved)
    run_chunks(_low_sort_chunk, _n_chunks(n_buckets, per_chunk), *args)
    offsets[size:-1] = n
    out = [done.view(dtype) for done, dtype in zip(moved, dtypes, strict=False)]
    return offsets[: size + 1], packed, out


@njit(cache=True, nogil=True)
def _gather_chunk(c: int, values: np.ndarray, order: np.ndarray, out: np.ndarray) -> None:
    n = order.shape[0]
    for i in range(c * _ROWS, min(n, (c + 1) * _ROWS)):
        out[i] = values[order[i]]


def gather(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``values[order]``: in parallel for 8-byte items (int64, uint64, float64)."""
    if values.dtype.kind not in "iuf" or values.dtype.itemsize != 8:
        taken: np.ndarray = values[order]
        return taken
    out = uninitialised(order.shape[0])
    args = (frozen(values.view(np.int64)), frozen(order), out)
    run_chunks(_gather_chunk, _n_chunks(order.shape[0], _ROWS), *args)
    return out.view(values.dtype)


# --------------------------------------------------------------------- order in groups


@njit(cache=True, nogil=True)
def _merge_sort(key: np.ndarray, order: np.ndarray, lo: int, hi: int, tmp: np.ndarray) -> None:
    """Stable sort of ``order[lo:hi]`` by ascending ``key[order[...]]``: insertion sort of
    runs of ``_INSERTION``, then bottom-up merges through ``tmp``."""
    for a in range(lo, hi, _INSERTION):
        b = min(a + _INSERTION, hi)
        for i in range(a + 1, b):
            r = order[i]
            k = key[r]
            j = i - 1
            while j >= a and key[order[j]] > k:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = r
    width = _INSERTION
    in_tmp = False  # whether the latest pass wrote to tmp
    while width < hi - lo:
        src = tmp if in_tmp else order
        dst = order if in_tmp else tmp
        for a in range(lo, hi, 2 * width):
            mid = min(a + width, hi)
            b = min(a + 2 * width, hi)
            i, j, p = a, mid, a
            while i < mid and j < b:
                if key[src[j]] < key[src[i]]:  # the left run's row first on equal keys
                    dst[p] = src[j]
                    j += 1
                else:
                    dst[p] = src[i]
                    i += 1
                p += 1
            while i < mid:
                dst[p] = src[i]
                i += 1
                p += 1
            while j < b:
                dst[p] = src[j]
                j += 1
                p += 1
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for i in range(lo, hi):
            order[i] = tmp[i]


@njit(cache=True, nogil=True)
def _sort_within_chunk(
    c: int, offsets: np.ndarray, key: np.ndarray, order: np.ndarray, tmp: np.ndarray
) -> None:
    n_groups = offsets.shape[0] - 1
    for g in range(c * _GROUPS, min(n_groups, (c + 1) * _GROUPS)):
        lo, hi = offsets[g], offsets[g + 1]
        ordered = True
        for i in range(lo + 1, hi):
            if key[order[i]] < key[order[i - 1]]:
                ordered = False
                break
        if not ordered:
            _merge_sort(key, order, lo, hi, tmp)


def sort_within(offsets: np.ndarray, order: np.ndarray, key: np.ndarray) -> None:
    """Sort each group ``order[offsets[g]:offsets[g + 1]]`` (row indices) by ascending
    ``key`` of its rows (int64), in place; stable. A group already in order costs one pass."""
    tmp = uninitialised(order.shape[0])
    args = (frozen(offsets), frozen(key), order, tmp)
    run_chunks(_sort_within_chunk, _n_chunks(offsets.shape[0] - 1, _GROUPS), *args)


@njit(cache=True, nogil=True)
def _distinct_chunk(c: int, offsets: np.ndarray, values: np.ndarray, counts: np.ndarray) -> None:
    n_groups = offsets.shape[0] - 1
    for g in range(c * _GROUPS, min(n_groups, (c + 1) * _GROUPS)):
        lo, hi = offsets[g], offsets[g + 1]
        seg = values[lo:hi]
        ordered = True
        for i in range(1, seg.shape[0]):
            if seg[i] < seg[i - 1]:
                ordered = False
                break
        if not ordered:
            seg.sort()
        k = 0
        for i in range(seg.shape[0]):
            if k == 0 or seg[i] != seg[k - 1]:
                seg[k] = seg[i]
                k += 1
        counts[g] = k


@njit(cache=True, nogil=True)
def _compact_chunk(
    c: int, offsets: np.ndarray, values: np.ndarray, new_off: np.ndarray, out: np.ndarray
) -> None:
    n_groups = offsets.shape[0] - 1
    for g in range(c * _GROUPS, min(n_groups, (c + 1) * _GROUPS)):
        lo = offsets[g]
        start = new_off[g]
        for i in range(new_off[g + 1] - start):
            out[start + i] = values[lo + i]


def distinct_within(offsets: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each group ``values[offsets[g]:offsets[g + 1]]`` (int64) sorted ascending without
    repeats: ``(offsets, values)`` of the result. ``values`` is sorted in place (it must be
    the caller's own array); a group already in order costs one pass."""
    n_groups = offsets.shape[0] - 1
    counts = np.empty(n_groups, dtype=np.int64)
    n_chunks = _n_chunks(n_groups, _GROUPS)
    run_chunks(_distinct_chunk, n_chunks, frozen(offsets), values, counts)
    if np.array_equal(counts, np.diff(offsets)):
        return offsets, values
    new_off = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(counts, out=new_off[1:])
    out = uninitialised(int(new_off[-1]))
    run_chunks(_compact_chunk, n_chunks, frozen(offsets), frozen(values), frozen(new_off), out)
    return new_off, out
