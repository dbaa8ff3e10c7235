"""Numba kernels of the evaluation from a model (:mod:`receval.engines.model`).

Two kernels, both run in chunks of users on Python threads
(:func:`receval.kernels.pools.run_chunks`):

* :func:`scan_block` reads one block of scores (users x candidate columns) once. For every
  truth row of a user it counts the candidates scoring strictly above the truth item and tied
  with it (and, for the tie policies that need them, the tied candidates that come first in
  catalog order or in trec_eval's order), and it keeps the user's top K candidates by descending
  score, ties in catalog order. Excluded columns are skipped; with per-user candidates only the
  listed columns are read.
* :func:`rank_from_counts` turns those counts into every ranking metric. A truth item with
  ``above`` candidates above it and ``tied`` candidates (itself included) at its score fills
  positions ``above + 1 .. above + tied`` of the full ranking; under ``ties="expected"`` that is
  its tie group, under the other policies its exact position follows from the counts. The
  groups are passed to the same metric code as the ranking kernel
  (:func:`receval.kernels.ranking.group_metrics`, with the same
  :class:`~receval.kernels.ranking.Plan`), so every metric equals the ranking
  kernel's on the full ranked list, which is never built.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from receval.kernels.pools import run_chunks
from receval.kernels.ranking import (
    POLICY_EXPECTED,
    POLICY_FIRST,
    POLICY_OPTIMISTIC,
    POLICY_TREC,
    Plan,
    cascade_flag,
    cascade_metrics,
    group_metrics,
    scratch,
)
from receval.kernels.toolbox import frozen, longest_range, sort_desc

_LINEAR_MAX = 8  # up to this many distinct truth scores, one counting pass per score
_RUN = 256  # columns whose maximum the top-K selection checks at once


class Truth(NamedTuple):
    """Truth rows grouped by user, as :func:`rank_from_counts` reads them: offsets, catalog
    column, whether the item is a candidate (``cand``), relevance, gains (``gain[v, row]``) and
    the item's score."""

    off: np.ndarray
    col: np.ndarray
    cand: np.ndarray
    rel: np.ndarray
    gain: np.ndarray
    score: np.ndarray


class Counts(NamedTuple):
    """What :func:`scan_block` counted per truth row (the candidates above it, tied with it,
    tied and before it in catalog order and in trec_eval's order) and per user (candidates)."""

    above: np.ndarray
    tied: np.ndarray
    first_before: np.ndarray
    trec_before: np.ndarray
    n_cand: np.ndarray


_TILE = 4096  # columns counted in float32 lanes: every count up to 2**24 is exact
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _count_range(
    row: np.ndarray,
    start: int,
    stop: int,
    vals: np.ndarray,
    d: int,
    cnt_gt: np.ndarray,
    cnt_eq: np.ndarray,
) -> None:
    """Add, for each distinct truth score ``vals[q]``, the columns ``start .. stop - 1`` of
    ``row`` scoring above it (``cnt_gt``) and equal to it (``cnt_eq``)."""
    if d <= _LINEAR_MAX:  # branch-free passes over each tile, two scores per pass
        # Counts add up in float32 lanes over tiles of _TILE columns (exact: whole numbers
        # below 2**24, in any order, so reassociation changes nothing) and go to int64 per
        # tile: sixteen lanes to a vector where int64 counters would take eight. Two scores
        # a pass read each column once for four counts (0.35-0.38 ns a column for five
        # scores, against 0.41-0.43 with one score a pass; four a pass: 0.55, registers run
        # out). Comparisons are IEEE (no "nnan"/"ninf" flags). A loop from 0 over a slice
        # vectorises; one from start does not.
        for t0 in range(start, stop, _TILE):
            seg = row[t0 : min(t0 + _TILE, stop)]
            q = 0
            while q + 1 < d:
                v = vals[q]
                w = vals[q + 1]
                gt_v = _ZERO
                eq_v = _ZERO
                gt_w = _ZERO
                eq_w = _ZERO
                for j in range(seg.shape[0]):
                    x = seg[j]
                    gt_v += _ONE if x > v else _ZERO
                    eq_v += _ONE if x == v else _ZERO
                    gt_w += _ONE if x > w else _ZERO
                    eq_w += _ONE if x == w else _ZERO
                cnt_gt[q] += np.int64(gt_v)
                cnt_eq[q] += np.int64(eq_v)
                cnt_gt[q + 1] += np.int64(gt_w)
                cnt_eq[q + 1] += np.int64(eq_w)
                q += 2
            if q < d:
                v = vals[q]
                gt = _ZERO
                eq = _ZERO
                for j in range(seg.shape[0]):
                    x = seg[j]
                    gt += _ONE if x > v else _ZERO
                    eq += _ONE if x == v else _ZERO
                cnt_gt[q] += np.int64(gt)
                cnt_eq[q] += np.int64(eq)
        return
    # many scores: one pass, a binary search per column at or above the lowest score;
    # cnt_gt[q] then counts the columns above exactly q + 1 of them, until _scan_chunk sums
    vmin = vals[0]
    for j in range(start, stop):
        x = row[j]
        if x >= vmin:
            lo = 0
            hi = d
            while lo < hi:
                mid = (lo + hi) >> 1
                if vals[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo > 0:
                cnt_gt[lo - 1] += 1
            if lo < d and vals[lo] == x:
                cnt_eq[lo] += 1


@njit(cache=True, nogil=True)
def _count_list(
    row: np.ndarray,
    cols: np.ndarray,
    start: int,
    stop: int,
    vals: np.ndarray,
    d: int,
    cnt_gt: np.ndarray,
    cnt_eq: np.ndarray,
) -> None:
    """:func:`_count_range` over the listed columns ``cols[start:stop]``."""
    if d <= _LINEAR_MAX:
        for q in range(d):
            v = vals[q]
            gt = 0
            eq = 0
            for p in range(start, stop):
                x = row[cols[p]]
                gt += 1 if x > v else 0
                eq += 1 if x == v else 0
            cnt_gt[q] += gt
            cnt_eq[q] += eq
        return
    vmin = vals[0]
    for p in range(start, stop):
        x = row[cols[p]]
        if x >= vmin:
            lo = 0
            hi = d
            while lo < hi:
                mid = (lo + hi) >> 1
                if vals[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo > 0:
                cnt_gt[lo - 1] += 1
            if lo < d and vals[lo] == x:
                cnt_eq[lo] += 1


@njit(cache=True, nogil=True)
def _tied_before(
    row: np.ndarray,
    v: float,
    col: int,
    per_user: bool,
    pc_col: np.ndarray,
    plo: int,
    phi: int,
    ex_col: np.ndarray,
    elo: int,
    ehi: int,
    tie_key: np.ndarray,
    trec: bool,
) -> int:
    """Candidates scoring ``v`` that precede column ``col``: in catalog order (columns below
    it) or, with ``trec``, in trec_eval's order (a higher ``tie_key``)."""
    count = 0
    if per_user:
        for p in range(plo, phi):
            j = pc_col[p]
            if row[j] == v and ((tie_key[j] > tie_key[col]) if trec else j < col):
                count += 1
        return count
    e = elo
    end = row.shape[0] if trec else col
    for j in range(end):
        while e < ehi and ex_col[e] < j:
            e += 1
        if e < ehi and ex_col[e] == j:
            continue
        if row[j] == v and (not trec or tie_key[j] > tie_key[col]):
            count += 1
    return count


@njit(cache=True, nogil=True, inline="always")
def _heap_push(x: float, j: int, k: int, hn: int, hs: np.ndarray, hc: np.ndarray) -> int:
    """Offer (score ``x``, tie key ``j``) to a heap of the best ``k``: higher scores first,
    equal scores by ascending key (the root is the worst entry). Returns the heap's size."""
    if hn < k:
        a = hn
        hn += 1
        while a > 0:  # sift up: the parent must be worse than the new entry
            p = (a - 1) >> 1
            if hs[p] < x or (hs[p] == x and hc[p] > j):
                break
            hs[a] = hs[p]
            hc[a] = hc[p]
            a = p
        hs[a] = x
        hc[a] = j
        return hn
    if not (x > hs[0] or (x == hs[0] and j < hc[0])):
        return hn
    a = 0
    while True:  # sift down from the root
        c = 2 * a + 1
        if c >= hn:
            break
        r = c + 1
        if r < hn and (hs[r] < hs[c] or (hs[r] == hs[c] and hc[r] > hc[c])):
            c = r
        if hs[c] > x or (hs[c] == x and hc[c] < j):
            break
        hs[a] = hs[c]
        hc[a] = hc[c]
        a = c
    hs[a] = x
    hc[a] = j
    return hn


@njit(cache=True, nogil=True)
def _heap_range(
    row: np.ndarray,
    start: int,
    stop: int,
    sel_key: np.ndarray,
    k: int,
    hn: int,
    hs: np.ndarray,
    hc: np.ndarray,
) -> int:
    """Offer columns ``start .. stop - 1`` (tie keys ``sel_key``) to the top-``k`` heap;
    returns its size.

    Once the heap is full, a run of ``_RUN`` columns none of which reaches the heap's smallest
    score is skipped after one vectorised count: for a full catalog most runs are.
    """
    j = start
    while j < stop:
        end = min(j + _RUN, stop)
        if hn == k:
            seg = row[j:end]  # a loop from 0 over a slice vectorises (a float max does not)
            low = hs[0]
            reach = 0
            for a in range(seg.shape[0]):
                reach += 1 if seg[a] >= low else 0
            if reach == 0:
                j = end
                continue
        for a in range(j, end):
            x = row[a]
            if hn < k or x >= hs[0]:
                hn = _heap_push(x, sel_key[a], k, hn, hs, hc)
        j = end
    return hn


@njit(cache=True, nogil=True)
def _scan_chunk(
    ch: int,
    step: int,
    scores: np.ndarray,
    b_user: np.ndarray,
    t_off: np.ndarray,
    t_col: np.ndarray,
    t_cand: np.ndarray,
    ex_off: np.ndarray,
    ex_col: np.ndarray,
    pc_off: np.ndarray,
    pc_col: np.ndarray,
    per_user: bool,
    tie_key: np.ndarray,
    want_first: bool,
    want_trec: bool,
    k_top: int,
    sel_key: np.ndarray,
    key_col: np.ndarray,
    t_score: np.ndarray,
    above: np.ndarray,
    tied: np.ndarray,
    first_before: np.ndarray,
    trec_before: np.ndarray,
    n_cand: np.ndarray,
    top_col: np.ndarray,
    top_score: np.ndarray,
    top_n: np.ndarray,
) -> None:
    """Block rows ``[ch * step, (ch + 1) * step)``: row ``b`` of ``scores`` is truth user
    ``b_user[b]``, whose truth rows are ``t_off[u] .. t_off[u + 1]`` (``t_col``: their score
    column or -1; ``t_cand``: whether they are candidates), excluded columns
    ``ex_col[ex_off[u] : ex_off[u + 1]]`` and, when ``per_user``, candidate columns
    ``pc_col[pc_off[u] : pc_off[u + 1]]`` (both sorted ascending). The top ``k_top`` break
    equal scores by ascending ``sel_key`` (a distinct key per column; ``key_col`` maps a key
    back to its column). Outputs are indexed by truth row (``t_score`` .. ``trec_before``) and
    by truth user (``n_cand``, ``top_*``)."""
    n_rows = scores.shape[0]
    n_cols = scores.shape[1]
    lo_b = min(ch * step, n_rows)
    hi_b = min(lo_b + step, n_rows)
    nt_max = 1
    for b in range(lo_b, hi_b):
        u = b_user[b]
        nt_max = max(nt_max, t_off[u + 1] - t_off[u])
    keys = np.empty(nt_max, dtype=np.float64)
    perm = np.empty(nt_max, dtype=np.int64)
    tmp = np.empty(nt_max, dtype=np.int64)
    members = np.empty(nt_max, dtype=np.int64)
    vals = np.empty(nt_max, dtype=scores.dtype)  # the row's own type: exact comparisons
    grp_off = np.empty(nt_max + 1, dtype=np.int64)
    cnt_gt = np.empty(nt_max, dtype=np.int64)
    cnt_eq = np.empty(nt_max, dtype=np.int64)
    kh = max(k_top, 1)
    hs = np.empty(kh, dtype=np.float64)
    hc = np.empty(kh, dtype=np.int64)
    for b in range(lo_b, hi_b):
        u = b_user[b]
        row = scores[b]
        ts = t_off[u]
        te = t_off[u + 1]
        # the user's candidate truth rows, by ascending score, grouped by distinct score
        nc = 0
        for a in range(ts, te):
            above[a] = 0
            tied[a] = 0
            first_before[a] = 0
            trec_before[a] = 0
            if t_col[a] >= 0:
                t_score[a] = row[t_col[a]]
                if t_cand[a]:
                    keys[nc] = -t_score[a]
                    perm[nc] = a
                    nc += 1
        for i in range(nc):
            members[i] = i
        sort_desc(keys, members, tmp, np.int64(0), nc)  # descending -score: ascending score
        d = 0
        for i in range(nc):
            a = perm[members[i]]
            members[i] = a
            x = row[t_col[a]]
            if d == 0 or vals[d - 1] != x:
                vals[d] = x
                grp_off[d] = i
                d += 1
        grp_off[d] = nc
        for q in range(d):
            cnt_gt[q] = 0
            cnt_eq[q] = 0

        hn = 0
        count = 0
        elo = ex_off[u]
        ehi = ex_off[u + 1]
        plo = pc_off[u] if per_user else 0
        phi = pc_off[u + 1] if per_user else 0
        if per_user:
            count = phi - plo
            if d > 0:
                _count_list(row, pc_col, plo, phi, vals, d, cnt_gt, cnt_eq)
            if k_top > 0:
                for p in range(plo, phi):
                    j = pc_col[p]
                    x = row[j]
                    if hn < k_top or x >= hs[0]:
                        hn = _heap_push(x, sel_key[j], k_top, hn, hs, hc)
        else:
            e = elo
            start = 0
            while start < n_cols:  # the segments between excluded columns
                stop = ex_col[e] if e < ehi else n_cols
                if stop > start:
                    count += stop - start
                    if d > 0:
                        _count_range(row, start, stop, vals, d, cnt_gt, cnt_eq)
                    if k_top > 0:
                        hn = _heap_range(row, start, stop, sel_key, k_top, hn, hs, hc)
                start = max(start, stop + 1)
                e += 1
        n_cand[u] = count
        if d > _LINEAR_MAX:  # above score q: above exactly r + 1 of them, some r >= q
            run = 0
            for q in range(d - 1, -1, -1):
                run += cnt_gt[q]
                cnt_gt[q] = run
        for q in range(d):
            for mm in range(grp_off[q], grp_off[q + 1]):
                a = members[mm]
                above[a] = cnt_gt[q]
                tied[a] = cnt_eq[q]
                if cnt_eq[q] > 1 and want_first:
                    first_before[a] = _tied_before(
                        row, vals[q], t_col[a], per_user, pc_col, plo, phi, ex_col, elo, ehi,
                        tie_key, False,
                    )  # fmt: skip
                if cnt_eq[q] > 1 and want_trec:
                    trec_before[a] = _tied_before(
                        row, vals[q], t_col[a], per_user, pc_col, plo, phi, ex_col, elo, ehi,
                        tie_key, True,
                    )  # fmt: skip
        # the heap, best first: pop the worst to the back
        top_n[u] = hn
        for last in range(hn - 1, -1, -1):
            top_score[u, last] = hs[0]
            top_col[u, last] = key_col[hc[0]]
            x = hs[last]
            j = hc[last]
            size = last
            a = 0
            while True:
                c = 2 * a + 1
                if c >= size:
                    break
                r = c + 1
                if r < size and (hs[r] < hs[c] or (hs[r] == hs[c] and hc[r] > hc[c])):
                    c = r
                if hs[c] > x or (hs[c] == x and hc[c] < j):
                    break
                hs[a] = hs[c]
                hc[a] = hc[c]
                a = c
            if size > 0:
                hs[a] = x
                hc[a] = j


@njit(cache=True, nogil=True)
def _positions(
    ts: int, te: int, truth: Truth, counts: Counts, policy: int, pos: np.ndarray, rows: np.ndarray
) -> int:
    """The user's candidate truth rows (``rows[:n]``) and the 0-based position of each in the
    full ranking (``pos``; under ``expected``, the start of its tie group). Returns ``n``."""
    t_col, t_cand, t_rel, t_score = truth.col, truth.cand, truth.rel, truth.score
    above, tied = counts.above, counts.tied
    first_before, trec_before = counts.first_before, counts.trec_before
    n = 0
    for a in range(ts, te):
        if not t_cand[a]:
            continue
        p = above[a]
        if policy == POLICY_FIRST:
            p += first_before[a]
        elif policy == POLICY_TREC:
            p += trec_before[a]
        elif policy != POLICY_EXPECTED:
            # optimistic: relevance descending, pessimistic: ascending; candidates outside
            # truth have relevance 0 and come after (optimistic) or before (pessimistic) the
            # truth items of relevance 0; otherwise equal relevance in catalog order
            sign = 1.0 if policy == POLICY_OPTIMISTIC else -1.0
            ra = sign * t_rel[a]
            truth_tied = 1
            for b in range(ts, te):
                if b == a or not t_cand[b] or t_score[b] != t_score[a]:
                    continue
                truth_tied += 1
                rb = sign * t_rel[b]
                if rb > ra or (rb == ra and t_col[b] < t_col[a]):
                    p += 1
            zero = 0.0 * sign
            if zero > ra or (zero == ra and policy != POLICY_OPTIMISTIC):
                p += tied[a] - truth_tied  # every tied candidate outside truth comes first
        pos[n] = p
        rows[n] = a
        n += 1
    return n


@njit(cache=True, nogil=True)
def _rank_chunk(
    ch: int,
    step: int,
    truth: Truth,
    counts: Counts,
    plan: Plan,
    out: np.ndarray,
    nrel: np.ndarray,
    cascade: np.ndarray | None,
) -> None:
    """Users ``[ch * step, (ch + 1) * step)``: |R| per threshold and every ranking metric
    (``cascade``: see :func:`receval.kernels.ranking.cascade_flag`)."""
    t_off, t_rel, t_gain, tied = truth.off, truth.rel, truth.gain, counts.tied
    thresholds, ops, policy = plan.thresholds, plan.ops, plan.policy
    n_users = t_off.shape[0] - 1
    lo = min(ch * step, n_users)
    hi = min(lo + step, n_users)
    nt_max = longest_range(t_off, lo, hi)
    pos = np.empty(nt_max, dtype=np.int64)
    rows = np.empty(nt_max, dtype=np.int64)
    keys = np.empty(nt_max, dtype=np.float64)
    order = np.empty(nt_max, dtype=np.int64)
    gpos = np.empty(nt_max + 1, dtype=np.int64)
    gsize = np.empty(nt_max + 1, dtype=np.int64)
    gmem = np.empty(nt_max + 1, dtype=np.int64)
    prow = np.empty(nt_max, dtype=np.int64)
    prel = np.empty(nt_max, dtype=np.float64)
    work = scratch(nt_max, nt_max)
    for u in range(lo, hi):
        ts = t_off[u]
        te = t_off[u + 1]
        for c in range(thresholds.shape[0]):
            cnt = 0
            for a in range(ts, te):
                if t_rel[a] >= thresholds[c]:
                    cnt += 1
            nrel[u, c] = cnt
        if ops.shape[0] == 0:
            continue
        n = max(counts.n_cand[u], 0)
        nm = _positions(ts, te, truth, counts, policy, pos, rows)
        for i in range(nm):  # list order: ascending position
            keys[i] = -float(pos[i])
            order[i] = i
        sort_desc(keys, order, work.itmp, np.int64(0), nm)
        ng = 0
        for i in range(nm):
            a = rows[order[i]]
            p = pos[order[i]]
            if policy != POLICY_EXPECTED or ng == 0 or gpos[ng - 1] != p:
                gpos[ng] = p
                gsize[ng] = tied[a] if policy == POLICY_EXPECTED else 1
                gmem[ng] = i
                ng += 1
            prow[i] = a
            prel[i] = t_rel[a]
        gmem[ng] = nm
        group_metrics(
            u, n, ng, gpos, gsize, gmem, prow, prel, t_gain, ts, te, plan, out, nrel, work
        )
        if cascade is not None:  # pruned, with the call, when None
            cascade_metrics(
                u, n, ng, gpos, gsize, gmem, prow, prel, t_gain, t_rel, ts, te, plan, out, nrel,
                work,
            )  # fmt: skip


@njit(cache=True, nogil=True)
def _gauc_chunk(
    ch: int,
    step: int,
    t_off: np.ndarray,
    t_cand: np.ndarray,
    t_rel: np.ndarray,
    t_score: np.ndarray,
    above: np.ndarray,
    tied: np.ndarray,
    n_cand: np.ndarray,
    threshold: float,
    twice_wins: np.ndarray,
    positives: np.ndarray,
) -> None:
    """Per user: twice the (positive, negative) candidate pairs the positive wins (a tie
    counts one) and the positives, over every candidate (candidates outside truth are
    negatives)."""
    n_users = t_off.shape[0] - 1
    lo = min(ch * step, n_users)
    hi = min(lo + step, n_users)
    for u in range(lo, hi):
        ts = t_off[u]
        te = t_off[u + 1]
        npos = 0
        for a in range(ts, te):
            if t_cand[a] and t_rel[a] >= threshold:
                npos += 1
        nneg = max(n_cand[u], 0) - npos
        wins = 0
        for a in range(ts, te):
            if not (t_cand[a] and t_rel[a] >= threshold):
                continue
            pos_above = 0
            pos_tied = 0
            for b in range(ts, te):
                if b != a and t_cand[b] and t_rel[b] >= threshold:
                    if t_score[b] > t_score[a]:
                        pos_above += 1
                    elif t_score[b] == t_score[a]:
                        pos_tied += 1
            neg_above = above[a] - pos_above
            neg_tied = tied[a] - 1 - pos_tied
            wins += 2 * (nneg - neg_above - neg_tied) + neg_tied
        twice_wins[u] = wins
        positives[u] = npos


# ----------------------------------------------------------------------------- Python wrappers


def scan_block(
    scores: np.ndarray,
    b_user: np.ndarray,
    layout: tuple[Any, ...],
    want_first: bool,
    want_trec: bool,
    k_top: int,
    outputs: tuple[np.ndarray, ...],
    n_chunks: int,
) -> None:
    """Run :func:`_scan_chunk` over one block. ``layout``: ``t_off, t_col, t_cand, ex_off,
    ex_col, pc_off, pc_col, per_user, tie_key, sel_key, key_col``; ``outputs``: ``t_score,
    above, tied, first_before, trec_before, n_cand, top_col, top_score, top_n`` (filled in
    place)."""
    t_off, t_col, t_cand, ex_off, ex_col, pc_off, pc_col, per_user, tie_key = layout[:9]
    sel_key, key_col = layout[9:]
    step = (scores.shape[0] + n_chunks - 1) // n_chunks
    run_chunks(
        _scan_chunk, n_chunks, step, frozen(scores), frozen(b_user), frozen(t_off),
        frozen(t_col), frozen(t_cand), frozen(ex_off), frozen(ex_col), frozen(pc_off),
        frozen(pc_col), bool(per_user), frozen(tie_key), want_first, want_trec, k_top,
        frozen(sel_key), frozen(key_col), *outputs,
    )  # fmt: skip


def scan_rows(
    scores: np.ndarray,
    b_user: np.ndarray,
    *arrays: Any,
) -> None:
    """:func:`_scan_chunk` over every row of ``scores`` on the calling thread (its caller runs
    several at once). ``arrays``: ``t_off, t_col, t_cand, ex_off, ex_col, pc_off, pc_col,
    per_user, tie_key, want_first, want_trec, k_top, sel_key, key_col, outputs`` (inputs
    already read-only, as :func:`receval.kernels.ranking.frozen` makes them)."""
    *inputs, outputs = arrays
    _scan_chunk(0, scores.shape[0], frozen(scores), frozen(b_user), *inputs, *outputs)


def rank_from_counts(
    arrays: tuple[np.ndarray, ...], policy: int, n_chunks: int, n_metrics: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every ranking metric from the counts of :func:`scan_block`.

    ``arrays``: the fields of :class:`Truth`, :class:`Counts` and
    :class:`~receval.kernels.ranking.Plan` but its ``policy``: ``t_off, t_col, t_cand, t_rel,
    t_gain, t_score, above, tied, first_before, trec_before, n_cand, thresholds, ops, ks,
    thr_idx, gain_idx, fpar, log2p``. Returns ``out`` (users x metrics) and ``nrel`` (users x
    thresholds), as the ranking kernel does.
    """
    views = [frozen(a) for a in arrays]
    truth = Truth(*views[:6])
    counts = Counts(*views[6:11])
    plan = Plan._make((*views[11:18], int(policy)))
    n_users = truth.off.shape[0] - 1
    out = np.empty((n_users, n_metrics), dtype=np.float64)
    nrel = np.empty((n_users, plan.thresholds.shape[0]), dtype=np.float64)
    step = (n_users + n_chunks - 1) // n_chunks
    cascade = cascade_flag(plan.ops)
    run_chunks(_rank_chunk, n_chunks, step, truth, counts, plan, out, nrel, cascade)
    return out, nrel


def gauc_counts(
    arrays: tuple[np.ndarray, ...], threshold: float, n_chunks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per user, twice the pairs won and the positives (``arrays``: ``t_off, t_cand, t_rel,
    t_score, above, tied, n_cand``)."""
    views: Any = [frozen(a) for a in arrays]
    n_users = views[0].shape[0] - 1
    twice_wins = np.empty(n_users, dtype=np.int64)
    positives = np.empty(n_users, dtype=np.int64)
    step = (n_users + n_chunks - 1) // n_chunks
    run_chunks(_gauc_chunk, n_chunks, step, *views, float(threshold), twice_wins, positives)
    return twice_wins, positives


@njit(cache=True, nogil=True)
def _repeated_item(t_off: np.ndarray, idx: np.ndarray, n_items: int) -> int:
    seen = np.full(n_items, -1, dtype=np.int64)
    for u in range(t_off.shape[0] - 1):
        for r in range(t_off[u], t_off[u + 1]):
            c = idx[r]
            if c >= 0:
                if seen[c] == u:
                    return r
                seen[c] = u
    return -1


def repeated_item(t_off: np.ndarray, idx: np.ndarray, n_items: int) -> int:
    """The first row (grouped by user: ``t_off``) whose item index ``idx`` (in
    ``[0, n_items)``; -1: none, skipped) came before among its user's rows, or -1."""
    return int(_repeated_item(frozen(t_off), frozen(idx), n_items))


@njit(cache=True, nogil=True)
def _listed_rows(
    t_off: np.ndarray, idx: np.ndarray, l_off: np.ndarray, l_val: np.ndarray, hit: np.ndarray
) -> int:
    count = 0
    for u in range(t_off.shape[0] - 1):
        lo = l_off[u]
        hi = l_off[u + 1]
        for r in range(t_off[u], t_off[u + 1]):
            c = idx[r]
            found = False
            if c >= 0 and hi > lo:
                p = lo + np.searchsorted(l_val[lo:hi], c)
                found = p < hi and l_val[p] == c
            hit[r] = found
            count += found
    return count


def listed_rows(
    t_off: np.ndarray, idx: np.ndarray, lists: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Per row (grouped by user: ``t_off``), whether its item index ``idx`` (-1: none) is in
    its user's sorted list (``lists``: offsets and values per user, as
    :func:`receval.engines.model.pair_offsets` gives)."""
    hit = np.empty(idx.shape[0], dtype=np.bool_)
    _listed_rows(frozen(t_off), frozen(idx), frozen(lists[0]), frozen(lists[1]), hit)
    return hit
