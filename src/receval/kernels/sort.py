"""Parallel LSD radix sort of order-preserving uint64 keys of float64 scores.

**Keys.** :func:`float_keys` maps each float64 score to a uint64 whose unsigned order is the
scores' order: the IEEE bits with the sign bit set for a positive number, all bits inverted for
a negative one; ``-0.0`` is read as ``0.0`` first, so that equal scores always get equal keys
(and distinct scores distinct keys). NaN has no place in the order: every caller has refused
it before (:func:`receval.arrays.classification.as_scores`, and the readers for
:func:`receval.evaluate`). Integer scores reach the kernels as float64, exactly (issue #7:
integers that float64 cannot hold are refused up front), so their keys are exact too; float32
scores widen to float64 exactly. :func:`float_of_keys` maps keys back to the scores.

**Sort.** Least significant digit first, each pass a stable counting sort by one digit: every
chunk of rows counts its digits (one read of the keys gives the counts of every pass at once),
an exclusive prefix sum over (digit, chunk) gives each chunk where its rows of each digit go,
and the chunks scatter their rows there (stable: chunk order, then row order). The chunks run
on Python threads (:func:`receval.kernels.pools.run_chunks`). Only the bits that vary between
the keys are sorted on: the OR and the AND of the keys, known from the pass that makes them,
give those bits, and the digits cover the span from the lowest to the highest varying bit in as few
passes of at most :data:`_MAX_BITS` bits as it takes (scores in a small range, or with few
distinct values spread over a few bits, need fewer passes; equal keys need none).
:func:`sort_pairs` moves a payload with each key and may sort on the payload's high bits after
the key (a composite key: payload digits first in importance), which is how GAUC groups rows by
user with each user's rows in score order in one sort.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit

from receval.kernels.pools import run_chunks
from receval.kernels.toolbox import frozen

__all__ = [
    "float_keys",
    "float_of_keys",
    "order_key",
    "sort_keys",
    "sort_pairs",
    "span_passes",
]

_SIGN = np.uint64(1 << 63)
_MAX_BITS = 16
"""The widest digit: 65536 counters per chunk and pass."""
_ROWS_PER_CHUNK = 1 << 16
"""At least this many rows per chunk (below it, one chunk: no thread)."""


def n_chunks_for(n: int) -> int:
    """Chunks for ``n`` rows: one per thread, none smaller than :data:`_ROWS_PER_CHUNK`."""
    return max(1, min(numba.get_num_threads(), n // _ROWS_PER_CHUNK))


@njit(cache=True, nogil=True)
def _key(bits: np.uint64) -> np.uint64:
    """The order-preserving key of one float64's bits (``-0.0`` as ``0.0``)."""
    sign = np.uint64(0x8000000000000000)
    if bits == sign:
        bits = np.uint64(0)
    if bits & sign:
        return ~bits
    return bits | sign


order_key = _key
"""The order-preserving key of one float64's bits, for other kernels (a Numba function)."""


@njit(cache=True, nogil=True)
def _keys_chunk(
    chunk: int, n_chunks: int, bits: np.ndarray, out: np.ndarray, bounds: np.ndarray
) -> None:
    """Keys of ``bits[lo:hi]`` (float64 bits) into ``out``; the OR and the AND of the keys in
    ``bounds[chunk]``."""
    n = bits.shape[0]
    lo = n * chunk // n_chunks
    hi = n * (chunk + 1) // n_chunks
    o = np.uint64(0)
    a = ~np.uint64(0)
    for i in range(lo, hi):
        k = _key(bits[i])
        out[i] = k
        o |= k
        a &= k
    bounds[chunk, 0] = o
    bounds[chunk, 1] = a


@njit(cache=True, nogil=True)
def _split_chunk(
    chunk: int,
    n_chunks: int,
    bits: np.ndarray,
    labels: np.ndarray,
    pos_start: np.ndarray,
    neg_start: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray,
    bounds: np.ndarray,
) -> None:
    """Keys of the positives' and of the negatives' scores of rows ``lo:hi``, each class in
    row order from ``pos_start[chunk]`` / ``neg_start[chunk]``; the OR and the AND of each
    class's keys in ``bounds[chunk, class]`` (class 0: positives)."""
    n = bits.shape[0]
    lo = n * chunk // n_chunks
    hi = n * (chunk + 1) // n_chunks
    a = pos_start[chunk]
    b = neg_start[chunk]
    op = np.uint64(0)
    ap = ~np.uint64(0)
    on = np.uint64(0)
    an = ~np.uint64(0)
    for i in range(lo, hi):
        k = _key(bits[i])
        if labels[i]:
            pos[a] = k
            a += 1
            op |= k
            ap &= k
        else:
            neg[b] = k
            b += 1
            on |= k
            an &= k
    bounds[chunk, 0, 0] = op
    bounds[chunk, 0, 1] = ap
    bounds[chunk, 1, 0] = on
    bounds[chunk, 1, 1] = an


@njit(cache=True, nogil=True)
def _group_keys_chunk(
    chunk: int,
    n_chunks: int,
    bits: np.ndarray,
    labels: np.ndarray,
    codes: np.ndarray,
    keys: np.ndarray,
    payload: np.ndarray,
    bounds: np.ndarray,
) -> None:
    """Keys of rows ``lo:hi`` and their payloads ``code * 2 + label``; the OR and the AND of
    the keys in ``bounds[chunk, 0]``, of the payloads in ``bounds[chunk, 1]``."""
    n = bits.shape[0]
    lo = n * chunk // n_chunks
    hi = n * (chunk + 1) // n_chunks
    ok = np.uint64(0)
    ak = ~np.uint64(0)
    op = np.uint64(0)
    ap = ~np.uint64(0)
    for i in range(lo, hi):
        k = _key(bits[i])
        keys[i] = k
        ok |= k
        ak &= k
        p = (np.uint64(codes[i]) << np.uint64(1)) | np.uint64(labels[i])
        payload[i] = p
        op |= p
        ap &= p
    bounds[chunk, 0, 0] = ok
    bounds[chunk, 0, 1] = ak
    bounds[chunk, 1, 0] = op
    bounds[chunk, 1, 1] = ap


@njit(cache=True, nogil=True)
def _hist_chunk(
    chunk: int,
    n_chunks: int,
    keys: np.ndarray,
    shift: np.uint64,
    mask: np.uint64,
    hist: np.ndarray,
) -> None:
    """Counts of the digit ``(key >> shift) & mask`` over rows ``lo:hi`` (``hist[chunk]``)."""
    n = keys.shape[0]
    lo = n * chunk // n_chunks
    hi = n * (chunk + 1) // n_chunks
    h = hist[chunk]
    for d in range(h.shape[0]):
        h[d] = 0
    for i in range(lo, hi):
        h[(np.uint64(keys[i]) >> shift) & mask] += 1


@njit(cache=True, nogil=True)
def _scatter_keys_chunk(
    chunk: int,
    n_chunks: int,
    src: np.ndarray,
    dst: np.ndarray,
    shift: np.uint64,
    mask: np.uint64,
    starts: np.ndarray,
) -> None:
    """Move rows ``lo:hi`` of ``src`` to ``dst`` by their digit (``starts[chunk, digit]``:
    where this chunk's first row of each digit goes)."""
    n = src.shape[0]
    lo = n * chunk // n_chunks
    hi = n * (chunk + 1) // n_chunks
    at = starts[chunk].copy()
    for i in range(lo, hi):
        k = src[i]
        d = (k >> shift) & mask
        dst[at[d]] = k
        at[d] += 1


@njit(cache=True, nogil=True)
def _scatter_pairs_chunk(
    chunk: int,
    n_chunks: int,
    src: np.ndarray,
    dst: np.ndarray,
    psrc: np.ndarray,
    pdst: np.ndarray,
    on_payload: bool,
    shift: np.uint64,
    mask: np.uint64,
    starts: np.ndarray,
) -> None:
    """:func:`_scatter_keys_chunk` moving each key's payload with it; the digit is the key's,
    or the payload's with ``on_payload``."""
    n = src.shape[0]
    lo = n * chunk // n_chunks
    hi = n * (chunk + 1) // n_chunks
    at = starts[chunk].copy()
    if on_payload:
        for i in range(lo, hi):
            p = psrc[i]
            d = (np.uint64(p) >> shift) & mask
            j = at[d]
            dst[j] = src[i]
            pdst[j] = p
            at[d] += 1
    else:
        for i in range(lo, hi):
            k = src[i]
            d = (k >> shift) & mask
            j = at[d]
            dst[j] = k
            pdst[j] = psrc[i]
            at[d] += 1


def span_passes(diff: int, max_bits: int = _MAX_BITS) -> tuple[int, int, int]:
    """``(low bit, digit width, passes)`` that cover the bits set in ``diff`` (0 passes for
    ``diff == 0``)."""
    if diff == 0:
        return 0, 0, 0
    low = (diff & -diff).bit_length() - 1
    span = diff.bit_length() - low
    passes = -(-span // max_bits)
    return low, -(-span // passes), passes


def _plan(diff: int, pay_diff: int, max_bits: int) -> list[tuple[int, int, bool]]:
    """Every pass as ``(shift, width, on payload)``: the key's digits first, lowest first, then
    the payload's; each part's digits share one width, as narrow as its passes allow. A digit
    in which no bit varies is no pass."""
    plan: list[tuple[int, int, bool]] = []
    for d, on in ((diff, False), (pay_diff, True)):
        low, width, passes = span_passes(d, max_bits)
        for p in range(passes):
            s = low + p * width
            if (d >> s) & ((1 << width) - 1):
                plan.append((s, width, on))
    return plan


def _starts(hist: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums over (digit, chunk) of one pass's counts ``hist[chunk, digit]``."""
    flat = np.ascontiguousarray(hist.T).ravel()
    starts = np.cumsum(flat) - flat
    return np.ascontiguousarray(starts.reshape(hist.shape[1], hist.shape[0]).T)


def _max_bits(n: int) -> int:
    """A digit no wider than the rows justify (counter tables stay small next to the data)."""
    return max(8, min(_MAX_BITS, n.bit_length() - 4))


def _varying(bounds: np.ndarray) -> int:
    """The bits that vary between keys, from the chunks' ``(OR, AND)`` rows (a chunk with no
    row has OR 0 and AND all ones, which changes neither)."""
    o = int(np.bitwise_or.reduce(bounds[..., 0], axis=0))
    a = int(np.bitwise_and.reduce(bounds[..., 1], axis=0))
    return o & ~a & ((1 << 64) - 1)


def _empty_bounds(*shape: int) -> np.ndarray:
    bounds = np.zeros((*shape, 2), dtype=np.uint64)
    bounds[..., 1] = ~np.uint64(0)
    return bounds


def float_keys(scores: np.ndarray) -> tuple[np.ndarray, int]:
    """Order-preserving uint64 keys of float64 ``scores`` (no NaN) and the bits that vary
    between them."""
    s = np.ascontiguousarray(scores, dtype=np.float64)
    n = s.shape[0]
    keys = np.empty(n, dtype=np.uint64)
    if n == 0:
        return keys, 0
    chunks = n_chunks_for(n)
    bounds = _empty_bounds(chunks)
    run_chunks(_keys_chunk, chunks, chunks, frozen(s.view(np.uint64)), keys, bounds)
    return keys, _varying(bounds)


def class_keys(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Keys of the positives' and of the negatives' scores (``labels`` 0/1), each class in row
    order, and the bits that vary within each class."""
    s = np.ascontiguousarray(scores, dtype=np.float64)
    y = np.ascontiguousarray(labels)
    n = s.shape[0]
    chunks = n_chunks_for(n)
    cuts = np.array([n * c // chunks for c in range(chunks + 1)], dtype=np.int64)
    n_pos = np.array(
        [np.count_nonzero(y[cuts[c] : cuts[c + 1]]) for c in range(chunks)], dtype=np.int64
    )
    pos_start = np.zeros(chunks, dtype=np.int64)
    np.cumsum(n_pos[:-1], out=pos_start[1:])
    neg_start = np.zeros(chunks, dtype=np.int64)
    np.cumsum((np.diff(cuts) - n_pos)[:-1], out=neg_start[1:])
    total_pos = int(n_pos.sum())
    pos = np.empty(total_pos, dtype=np.uint64)
    neg = np.empty(n - total_pos, dtype=np.uint64)
    bounds = _empty_bounds(chunks, 2)
    if n:
        args = (frozen(s.view(np.uint64)), frozen(y), frozen(pos_start), frozen(neg_start))
        run_chunks(_split_chunk, chunks, chunks, *args, pos, neg, bounds)
    return pos, neg, _varying(bounds[:, 0]), _varying(bounds[:, 1])


def group_keys(
    labels: np.ndarray, scores: np.ndarray, codes: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Keys of ``scores``, payloads ``code * 2 + label`` (uint32 when they fit, else uint64)
    and the bits that vary between the keys and between the payloads."""
    s = np.ascontiguousarray(scores, dtype=np.float64)
    n = s.shape[0]
    dtype = np.uint32 if 2 * n_groups < 1 << 32 else np.uint64
    keys = np.empty(n, dtype=np.uint64)
    payload = np.empty(n, dtype=dtype)
    if n == 0:
        return keys, payload, 0, 0
    chunks = n_chunks_for(n)
    bounds = _empty_bounds(chunks, 2)
    bits = frozen(s.view(np.uint64))
    y = frozen(np.ascontiguousarray(labels))
    c = frozen(np.ascontiguousarray(codes, dtype=np.int64))
    run_chunks(_group_keys_chunk, chunks, chunks, bits, y, c, keys, payload, bounds)
    return keys, payload, _varying(bounds[:, 0]), _varying(bounds[:, 1])


def sort_keys(keys: np.ndarray, varying: int) -> np.ndarray:
    """``keys`` sorted ascending (the array itself, sorted in place, or a new one; ``keys`` is
    overwritten either way). ``varying``: the bits that vary between the keys (or a superset)."""
    n = keys.shape[0]
    plan = _plan(varying, 0, _max_bits(n))
    if not plan:
        return keys
    chunks = n_chunks_for(n)
    src, dst = keys, np.empty_like(keys)
    for shift, width, _ in plan:
        h = np.empty((chunks, 1 << width), dtype=np.int64)
        digit = (np.uint64(shift), np.uint64((1 << width) - 1))
        run_chunks(_hist_chunk, chunks, chunks, frozen(src), *digit, h)
        run_chunks(_scatter_keys_chunk, chunks, chunks, frozen(src), dst, *digit, _starts(h))
        src, dst = dst, src
    return src


def sort_pairs(
    keys: np.ndarray, payload: np.ndarray, varying: int, pay_varying: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``keys`` sorted ascending with ``payload`` (uint32 or uint64) moved alongside; stable
    (equal keys keep their input order). With ``pay_varying``, the payload bits to sort on
    (e.g. its high bits), the order is by those bits first, then by key. Both inputs are
    overwritten."""
    n = keys.shape[0]
    plan = _plan(varying, pay_varying, _max_bits(n))
    if not plan:
        return keys, payload
    chunks = n_chunks_for(n)
    src, dst = keys, np.empty_like(keys)
    psrc, pdst = payload, np.empty_like(payload)
    for shift, width, on in plan:
        h = np.empty((chunks, 1 << width), dtype=np.int64)
        digit = (np.uint64(shift), np.uint64((1 << width) - 1))
        run_chunks(_hist_chunk, chunks, chunks, frozen(psrc if on else src), *digit, h)
        args = (frozen(src), dst, frozen(psrc), pdst, on, *digit, _starts(h))
        run_chunks(_scatter_pairs_chunk, chunks, chunks, *args)
        src, dst = dst, src
        psrc, pdst = pdst, psrc
    return src, psrc


def float_of_keys(keys: np.ndarray) -> np.ndarray:
    """The float64 scores of keys made by :func:`float_keys` (``0.0`` for zero)."""
    k = np.asarray(keys, dtype=np.uint64)
    bits = np.where(k & _SIGN, k ^ _SIGN, ~k)
    return bits.view(np.float64)
