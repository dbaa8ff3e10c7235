"""Numba kernels of the splitters (:mod:`receval.data.split`) and of their leakage audit
(:mod:`receval.data.audit`): each user's repeated items dropped, each user's interactions put
in order and their last ones held out, each user's test rows checked against their train rows.

Layering: one ``@njit`` function per user (``_sorted_positions``, ``_holdout_one``), a
``nogil`` driver over one chunk of users, run on Python threads by
:func:`receval.kernels.pools.run_chunks`, and a documented Python wrapper (:func:`dedupe`,
:func:`compact`, :func:`holdout`, :func:`audit_users`).

Input layout: *grouped* arrays, the rows grouped by user by a stable counting sort
(:func:`receval.kernels.grouping.counting_sort`): user ``u``'s rows are positions
``offsets[u]`` to ``offsets[u + 1] - 1`` of every per-row array (``rows``: their row indices in
the input, ascending within a user), so that a kernel reads each user's rows as one
contiguous run. Per row an order key ``time`` (int64: a timestamp's order key) and a tie key
``tie`` (int64: a seeded hash). A user's rows are ordered by ``(time, tie, row)``
(``by_time``) or ``(tie, row)``: the row index (within a user, the position) decides only
between rows whose keys are equal, that is rows identical in user, item and time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from receval.kernels.pools import run_chunks
from receval.kernels.toolbox import frozen, hash_slot, longest_range, table_bits

__all__ = [
    "DROPPED", "TEST", "TRAIN", "VALIDATION", "audit_users", "compact", "dedupe", "holdout",
]  # fmt: skip

DROPPED, TRAIN, TEST, VALIDATION = -1, 0, 1, 2
"""The part of a row (:func:`holdout`'s output)."""
_CHUNK = 1024
"""Users per chunk."""
_INSERTION = 16
"""Runs up to this long are sorted by insertion."""


@njit(cache=True, nogil=True)
def _before(a: int, b: int, first: np.ndarray, second: np.ndarray, by_first: bool) -> bool:
    """Whether position ``a`` comes before ``b``: by (first, second, position), or by
    (second, position) when not ``by_first``."""
    if by_first and first[a] != first[b]:
        return bool(first[a] < first[b])
    if second[a] != second[b]:
        return bool(second[a] < second[b])
    return a < b


@njit(cache=True, nogil=True)
def _sorted_positions(first: np.ndarray, second: np.ndarray, by_first: bool) -> np.ndarray:
    """The positions 0..m-1 sorted by :func:`_before` (runs sorted by insertion, then merged;
    the kernel's own loops, no NumPy sort to compile). The keys are the segment's own,
    gathered into small contiguous arrays, so that the comparisons stay in cache."""
    m = first.shape[0]
    pos = np.arange(m)
    for lo in range(0, m, _INSERTION):
        hi = min(lo + _INSERTION, m)
        for i in range(lo + 1, hi):
            r = pos[i]
            j = i - 1
            while j >= lo and _before(r, pos[j], first, second, by_first):
                pos[j + 1] = pos[j]
                j -= 1
            pos[j + 1] = r
    if m <= _INSERTION:
        return pos
    src = pos
    dst = np.empty_like(pos)
    width = _INSERTION
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i, j, k = lo, mid, lo
            if mid >= hi or not _before(src[mid], src[mid - 1], first, second, by_first):
                dst[lo:hi] = src[lo:hi]  # already in order (or a lone run)
                continue
            while i < mid and j < hi:
                if _before(src[j], src[i], first, second, by_first):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    return src


@njit(cache=True, nogil=True, inline="always")
def _after(a: int, b: int, time: np.ndarray, tie: np.ndarray) -> bool:
    """Whether row ``a`` comes after row ``b`` in the order of (time, tie, row)."""
    if time[a] != time[b]:
        return bool(time[a] > time[b])
    if tie[a] != tie[b]:
        return bool(tie[a] > tie[b])
    return a > b


@njit(cache=True, nogil=True, inline="always")
def _probe(key: int, bits: int, stamp: int, tab_key: np.ndarray, tab_stamp: np.ndarray) -> int:
    """The slot of ``key`` in a table of ``2**bits`` slots whose live slots carry ``stamp``:
    its own, or the free slot where it goes."""
    mask = (1 << bits) - 1
    slot = hash_slot(key, bits)
    while tab_stamp[slot] == stamp and tab_key[slot] != key:
        slot = (slot + 1) & mask
    return slot


@njit(cache=True, nogil=True)
def _dedupe_chunk(
    chunk: int,
    step: int,
    offsets: np.ndarray,
    items: np.ndarray,
    time: np.ndarray,
    tie: np.ndarray,
    last: bool,
    keep: np.ndarray,
    dropped: np.ndarray,
) -> None:
    n_users = offsets.shape[0] - 1
    lo, hi = chunk * step, min((chunk + 1) * step, n_users)
    size = 1 << table_bits(longest_range(offsets, lo, hi))
    tab_key = np.empty(size, dtype=np.int64)
    tab_row = np.empty(size, dtype=np.int64)
    tab_stamp = np.full(size, -1, dtype=np.int64)
    for u in range(lo, hi):
        start, stop = offsets[u], offsets[u + 1]
        bits = table_bits(stop - start)
        for i in range(start, stop):  # each item's first (last) row in (time, tie, row)
            if not keep[i]:
                continue
            slot = _probe(items[i], bits, u, tab_key, tab_stamp)
            if tab_stamp[slot] != u:
                tab_stamp[slot] = u
                tab_key[slot] = items[i]
                tab_row[slot] = i
            else:
                best = tab_row[slot]
                if _after(i, best, time, tie) if last else _after(best, i, time, tie):
                    tab_row[slot] = i
        n = 0
        for i in range(start, stop):
            if keep[i] and tab_row[_probe(items[i], bits, u, tab_key, tab_stamp)] != i:
                keep[i] = False
                n += 1
        dropped[u] = n


def dedupe(
    offsets: np.ndarray,
    items: np.ndarray,
    time: np.ndarray,
    tie: np.ndarray,
    last: bool,
    keep: np.ndarray,
) -> int:
    """Keep one row of each (user, item) pair: unset ``keep`` (in place) of the others.

    Grouped arrays (module doc). ``items``: per row an exact int64 key of the item (equal
    items, equal keys). Of a pair's rows, the first in the user's order ``(time, tie, row)``
    is kept (``last``: the last); found with a hash table of the user's items, so no user's
    rows are sorted. Rows already unset in ``keep`` take no part. Returns the number of rows
    unset.
    """
    n_users = offsets.shape[0] - 1
    dropped = np.zeros(n_users, dtype=np.int64)
    if n_users:
        n_chunks = (n_users + _CHUNK - 1) // _CHUNK
        args = (frozen(offsets), frozen(items), frozen(time), frozen(tie))
        run_chunks(_dedupe_chunk, n_chunks, _CHUNK, *args, last, keep, dropped)
    return int(dropped.sum())


@njit(cache=True, nogil=True)
def _count_kept_chunk(
    chunk: int, step: int, offsets: np.ndarray, keep: np.ndarray, counts: np.ndarray
) -> None:
    n_users = offsets.shape[0] - 1
    for u in range(chunk * step, min((chunk + 1) * step, n_users)):
        c = 0
        for i in range(offsets[u], offsets[u + 1]):
            if keep[i]:
                c += 1
        counts[u + 1] = c


@njit(cache=True, nogil=True)
def _compact_chunk(
    chunk: int,
    step: int,
    offsets: np.ndarray,
    keep: np.ndarray,
    kept_offsets: np.ndarray,
    rows: np.ndarray,
    time: np.ndarray,
    tie: np.ndarray,
    out_rows: np.ndarray,
    out_time: np.ndarray,
    out_tie: np.ndarray,
) -> None:
    n_users = offsets.shape[0] - 1
    for u in range(chunk * step, min((chunk + 1) * step, n_users)):
        j = kept_offsets[u]
        for i in range(offsets[u], offsets[u + 1]):
            if keep[i]:
                out_rows[j] = rows[i]
                out_time[j] = time[i]
                out_tie[j] = tie[i]
                j += 1


def compact(
    offsets: np.ndarray, keep: np.ndarray, rows: np.ndarray, time: np.ndarray, tie: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The grouped arrays ``rows``, ``time`` and ``tie`` (module doc) of the rows that
    ``keep`` (grouped too) holds: ``(offsets, rows, time, tie)``, the same users, each with
    their kept rows in the same order."""
    n_users = offsets.shape[0] - 1
    n_chunks = (n_users + _CHUNK - 1) // _CHUNK
    kept_offsets = np.zeros(n_users + 1, dtype=np.int64)
    run_chunks(_count_kept_chunk, n_chunks, _CHUNK, frozen(offsets), frozen(keep), kept_offsets)
    np.cumsum(kept_offsets, out=kept_offsets)
    n = int(kept_offsets[n_users])
    out = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
    args = (frozen(offsets), frozen(keep), frozen(kept_offsets), frozen(rows))
    run_chunks(_compact_chunk, n_chunks, _CHUNK, *args, frozen(time), frozen(tie), *out)
    return kept_offsets, *out


@njit(cache=True, nogil=True)
def _count(m: int, n: int, p: int, q: int) -> int:
    """``n`` when it is given (> 0), else floor(p * m / q): a fraction p/q of m rows."""
    if n > 0:
        return n
    return (p * m) // q


@njit(cache=True, nogil=True)
def _holdout_one(
    seg: np.ndarray,
    time: np.ndarray,
    test: np.ndarray,
    validation: np.ndarray,
    together: bool,
    drop_short: bool,
    part: np.ndarray,
) -> bool:
    """Write the part of each of one user's rows (``seg``: their row indices in the user's
    order, ``time`` their time keys in the same order); whether the user is too short for the
    holdout (then every row is train, or dropped with ``drop_short``)."""
    m = seg.shape[0]
    if m == 0:
        return False
    n_test = _count(m, test[0], test[1], test[2])
    n_val = _count(m, validation[0], validation[1], validation[2])
    first_test = m - n_test  # the test part is seg[first_test:], validation before it
    if together and n_test > 0 and first_test > 0:  # ties at the cut go to test
        while first_test > 0 and time[first_test - 1] == time[first_test]:
            first_test -= 1
    first_val = first_test - n_val
    if together and n_val > 0 and first_val > 0:
        while first_val > 0 and time[first_val - 1] == time[first_val]:
            first_val -= 1
    if n_test == 0 or first_val < 1:  # no test row, or no train row left
        fill = DROPPED if drop_short else TRAIN
        for i in range(m):
            part[seg[i]] = fill
        return True
    for i in range(m):
        if i >= first_test:
            part[seg[i]] = TEST
        elif i >= first_val:
            part[seg[i]] = VALIDATION
        else:
            part[seg[i]] = TRAIN
    return False


@njit(cache=True, nogil=True)
def _holdout_chunk(
    chunk: int,
    step: int,
    offsets: np.ndarray,
    rows: np.ndarray,
    time: np.ndarray,
    tie: np.ndarray,
    by_time: bool,
    test: np.ndarray,
    validation: np.ndarray,
    together: bool,
    drop_short: bool,
    part: np.ndarray,
    short: np.ndarray,
) -> None:
    n_users = offsets.shape[0] - 1
    for u in range(chunk * step, min((chunk + 1) * step, n_users)):
        start, stop = offsets[u], offsets[u + 1]
        pos = _sorted_positions(time[start:stop], tie[start:stop], by_time)
        seg = rows[start:stop][pos]
        seg_time = time[start:stop][pos]
        short[u] = _holdout_one(seg, seg_time, test, validation, together, drop_short, part)


def holdout(
    offsets: np.ndarray,
    rows: np.ndarray,
    time: np.ndarray,
    tie: np.ndarray,
    n_rows: int,
    test: tuple[int, int, int],
    validation: tuple[int, int, int],
    *,
    by_time: bool,
    together: bool,
    drop_short: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Put each user's rows in order, ``(time, tie, row)`` (``by_time``) or ``(tie, row)``,
    and hold out the last ones.

    Grouped arrays (module doc) of the rows that take part: ``rows`` their indices among the
    ``n_rows`` rows of the input. ``test`` and ``validation`` are ``(n, p, q)``: ``n`` rows
    when ``n > 0``, else floor(p * m / q) of a user's ``m`` rows (``(0, 0, 1)``: none). The
    last ones are test, the ones before them validation, the rest train. ``together``: a test
    or validation part whose first row ties in ``time`` with the row before it takes that row
    too (and so on), so that no timestamp is cut in two. A user left without a test row or a
    train row is *short*: every row of theirs is train (``drop_short``: dropped).

    Returns ``(part, short)``: per input row :data:`TRAIN`, :data:`TEST`,
    :data:`VALIDATION`, or :data:`DROPPED` (the rows not in ``rows``); per user whether they
    were short.
    """
    n_users = offsets.shape[0] - 1
    part = np.full(n_rows, DROPPED, dtype=np.int8)
    short = np.zeros(n_users, dtype=np.bool_)
    if n_users:
        n_chunks = (n_users + _CHUNK - 1) // _CHUNK
        run_chunks(
            _holdout_chunk, n_chunks, _CHUNK, frozen(offsets), frozen(rows), frozen(time),
            frozen(tie), by_time, np.asarray(test, dtype=np.int64),
            np.asarray(validation, dtype=np.int64), together, drop_short, part, short,
        )  # fmt: skip
    return part, short


_PAIRS, _BEFORE_USER, _TIES_USER, _N_TRAIN, _N_SIDE = 0, 1, 2, 3, 4
_BEFORE_GLOBAL, _TIES_GLOBAL, _TRAIN_AFTER, _COLD_ITEM_ROWS = 5, 6, 7, 8
_HAS_TRAIN, _HAS_SIDE, _HAS_RELEVANT = 1, 2, 4


@njit(cache=True, nogil=True)
def _audit_chunk(
    chunk: int,
    step: int,
    offsets: np.ndarray,
    part: np.ndarray,
    side: int,
    items: np.ndarray,
    time: np.ndarray,
    relevant: np.ndarray,
    flags: np.ndarray,
    counts: np.ndarray,
    bounds: np.ndarray,
    train_items: np.ndarray,
    side_items: np.ndarray,
) -> None:
    """Per user: the pairs and time checks against the user's own train rows, the row
    counts, the latest train and earliest ``side`` time (``bounds``); the items seen in
    train and in ``side`` marked (threads only ever store True)."""
    n_users = offsets.shape[0] - 1
    lo, hi = chunk * step, min((chunk + 1) * step, n_users)
    size = 1 << table_bits(longest_range(offsets, lo, hi))
    tab_key = np.empty(size, dtype=np.int64)
    tab_stamp = np.full(size, -1, dtype=np.int64)
    for u in range(lo, hi):
        start, stop = offsets[u], offsets[u + 1]
        bits = table_bits(stop - start)
        n_train = 0
        last = 0
        for i in range(start, stop):  # the user's train items and latest train time
            if part[i] != TRAIN:
                continue
            if n_train == 0 or time[i] > last:
                last = time[i]
            n_train += 1
            if not train_items[items[i]]:
                train_items[items[i]] = True
            slot = _probe(items[i], bits, u, tab_key, tab_stamp)
            tab_stamp[slot] = u
            tab_key[slot] = items[i]
        n_side = 0
        first = 0
        any_relevant = False
        pairs = before = ties = 0
        for i in range(start, stop):
            if part[i] != side:
                continue
            if n_side == 0 or time[i] < first:
                first = time[i]
            n_side += 1
            if not side_items[items[i]]:
                side_items[items[i]] = True
            any_relevant = any_relevant or relevant[i]
            if tab_stamp[_probe(items[i], bits, u, tab_key, tab_stamp)] == u:
                pairs += 1
            if n_train:
                if time[i] < last:
                    before += 1
                elif time[i] == last:
                    ties += 1
        flags[u] = (
            (_HAS_TRAIN if n_train else 0)
            | (_HAS_SIDE if n_side else 0)
            | (_HAS_RELEVANT if any_relevant else 0)
        )
        counts[u, _PAIRS] = pairs
        counts[u, _BEFORE_USER] = before
        counts[u, _TIES_USER] = ties
        counts[u, _N_TRAIN] = n_train
        counts[u, _N_SIDE] = n_side
        bounds[u, 0] = last
        bounds[u, 1] = first


@njit(cache=True, nogil=True)
def _audit_global_chunk(
    chunk: int,
    step: int,
    offsets: np.ndarray,
    part: np.ndarray,
    side: int,
    items: np.ndarray,
    time: np.ndarray,
    last_train: int,
    first_side: int,
    train_items: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Per user: the rows against the latest train and earliest ``side`` time over every
    user, and the ``side`` rows whose item has no train row."""
    n_users = offsets.shape[0] - 1
    for u in range(chunk * step, min((chunk + 1) * step, n_users)):
        before = ties = after = cold = 0
        for i in range(offsets[u], offsets[u + 1]):
            if part[i] == TRAIN:
                if time[i] > first_side:
                    after += 1
            elif part[i] == side:
                if time[i] < last_train:
                    before += 1
                elif time[i] == last_train:
                    ties += 1
                if not train_items[items[i]]:
                    cold += 1
        counts[u, _BEFORE_GLOBAL] = before
        counts[u, _TIES_GLOBAL] = ties
        counts[u, _TRAIN_AFTER] = after
        counts[u, _COLD_ITEM_ROWS] = cold


def audit_users(
    offsets: np.ndarray,
    part: np.ndarray,
    side: int,
    items: np.ndarray,
    n_items: int,
    time: np.ndarray,
    relevant: np.ndarray,
) -> dict[str, int]:
    """The leakage audit's counts of the rows of part ``side`` (:data:`TEST` or
    :data:`VALIDATION`) against the :data:`TRAIN` rows, in two passes over each user's rows.

    Grouped arrays (module doc): per row its ``part`` (int8), a dense item code in
    ``[0, n_items)``, its time order key and whether it is relevant. Returns the counts by
    name: ``train_rows``, ``test_rows`` (of ``side``), ``train_users``, ``test_users``,
    ``test_items``; those of :data:`receval.data.audit.CHECKS`, with the time checks counted
    over the times given (the caller keeps them only where there is a time column and both
    parts have rows).
    """
    n_users = offsets.shape[0] - 1
    flags = np.zeros(n_users, dtype=np.int8)
    counts = np.zeros((n_users, 9), dtype=np.int64)
    bounds = np.zeros((n_users, 2), dtype=np.int64)
    train_items = np.zeros(n_items, dtype=np.bool_)
    side_items = np.zeros(n_items, dtype=np.bool_)
    n_chunks = (n_users + _CHUNK - 1) // _CHUNK
    args = (frozen(offsets), frozen(part), int(side), frozen(items), frozen(time))
    run_chunks(
        _audit_chunk, n_chunks, _CHUNK, *args, frozen(relevant), flags, counts, bounds,
        train_items, side_items,
    )  # fmt: skip
    in_train, in_side = (flags & _HAS_TRAIN) > 0, (flags & _HAS_SIDE) > 0
    last_train = int(bounds[in_train, 0].max()) if in_train.any() else 0
    first_side = int(bounds[in_side, 1].min()) if in_side.any() else 0
    run_chunks(
        _audit_global_chunk, n_chunks, _CHUNK, *args, last_train, first_side,
        frozen(train_items), counts,
    )  # fmt: skip
    total = counts.sum(axis=0).tolist()
    return {
        "train_rows": total[_N_TRAIN],
        "test_rows": total[_N_SIDE],
        "train_users": int(np.count_nonzero(in_train)),
        "test_users": int(np.count_nonzero(in_side)),
        "test_items": int(np.count_nonzero(side_items)),
        "test_before_train_end": total[_BEFORE_GLOBAL],
        "train_after_test_start": total[_TRAIN_AFTER],
        "test_before_user_train_end": total[_BEFORE_USER],
        "ties_at_global_cut": total[_TIES_GLOBAL],
        "ties_at_user_cut": total[_TIES_USER],
        "test_pairs_in_train": total[_PAIRS],
        "cold_test_users": int(np.count_nonzero(in_side & ~in_train)),
        "cold_test_items": int(np.count_nonzero(side_items & ~train_items)),
        "cold_item_test_rows": total[_COLD_ITEM_ROWS],
        "test_users_without_relevant": int(
            np.count_nonzero(in_side & ((flags & _HAS_RELEVANT) == 0))
        ),
        "train_users_without_test": int(np.count_nonzero(in_train & ~in_side)),
    }
