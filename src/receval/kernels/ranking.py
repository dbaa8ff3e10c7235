"""Numba kernels for the per-user work of the top-K ranking metrics.

Layering: :func:`_score_user` evaluates one user, :func:`_rank_chunk` one chunk of users
(each chunk owns its scratch buffers and hash tables), and :func:`rank_users`, the Python
wrapper, runs the chunks in parallel on Python threads (``nogil`` kernels; a ``prange`` driver
computes the same but compiles 2-3 s slower on a first run);
:func:`receval.families.ranking.match` builds the plan and reads the results. Everything
accumulates in float64.

The kernel sees the canonical layout built by :mod:`receval.data.layout`, in argument groups
(NamedTuples of arrays, built once by :func:`rank_users`):

* :class:`Truth`: rows grouped by user, offsets, int64 item keys, relevance and one row of
  gains per gain variant;
* :class:`Recs`: rows grouped by user in input order, offsets, item keys, scores (higher is
  better), the ``trec`` tiebreak key (higher first; empty unless needed) and ``u2r``: for
  each truth user, its recs group or -1;
* :class:`Plan`: the metrics (opcodes, cutoffs, thresholds, gains, float parameters) and the
  tie policy; :class:`Outputs`, :class:`Buffers` and :class:`Scratch`: what the kernel writes.

Ties. The user's list is ordered by score (stable). Under ``expected`` every run of equal
scores is a tie group; under the other policies the group is ordered by its tiebreak and every
position becomes a group of one. Each metric is then a sum over groups using the closed forms of
McSherry & Najork (2008) given in docs/metrics.md; with groups of one they reduce to the plain
definitions, computed with the same operations as trec_eval. The cascade metrics and those of
incomplete judgments (ERR, RBP and its residual, bpref, judged) are computed by
:func:`_cascade_value`, only when one of them is asked for.

Under ``expected`` and ``first`` without cascade metrics (every threshold > 0), a list is not
sorted: only the groups that hold a truth item can add to a metric, and each matched item's
position and group size are counts of the scores above and equal to its own
(:func:`_counted_groups`); the groups without one are left out (the compressed form that
:mod:`receval.kernels.model` also passes), which gives the same values bit for bit. A user
with more than ``COUNTED_MAX`` matched items is sorted instead.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit, prange

from receval.kernels.pools import run_chunks
from receval.kernels.toolbox import (
    fill_table,
    frozen,
    sort_desc,
    sort_group,
    table_bits,
    table_find,
    table_put,
)

# Operation codes of the metric plan (kept in sync with receval.families.ranking.OPS).
OP_PRECISION = 0
OP_RECALL = 1
OP_HITS = 2  # numerator of micro recall
OP_FBETA = 3
OP_HIT_RATE = 4
OP_MRR = 5
OP_ARHR = 6
OP_AP = 7
OP_CG = 8
OP_DCG = 9
OP_NDCG = 10
OP_R_PRECISION = 11
OP_NDCG_K = 12  # DCG over the DCG of K items of the user's largest gain (RecTools)
# cascade metrics and incomplete judgments (:func:`_cascade_value`): every opcode from OP_ERR on
OP_ERR = 13
OP_RBP = 14
OP_RBP_RESIDUAL = 15
OP_BPREF = 16
OP_JUDGED = 17

POLICY_EXPECTED = 0
POLICY_FIRST = 1
POLICY_TREC = 2
POLICY_OPTIMISTIC = 3
POLICY_PESSIMISTIC = 4

STATUS_OK = 0
STATUS_DUP_TRUTH = 1
STATUS_DUP_RECS = 2


# ------------------------------------------------------------------------- argument groups
#
# The kernels take their arrays in a few groups (Numba reads a NamedTuple of arrays as one
# argument, each field typed apart), built once by the wrapper: a new metric parameter is one
# more field of Plan, filled by the wrapper's caller and read where it is used.


class Truth(NamedTuple):
    """Truth rows grouped by user: offsets, int64 item keys, relevance, and one row of gains
    per gain variant (``gain[v, row]``)."""

    off: np.ndarray
    item: np.ndarray
    rel: np.ndarray
    gain: np.ndarray


class Recs(NamedTuple):
    """Recommendation rows grouped by user in input order: offsets, int64 item keys, scores
    (higher is better), the ``trec`` tiebreak key (higher first; empty unless needed), and for
    each truth user its recs group or -1 (``u2r``)."""

    off: np.ndarray
    item: np.ndarray
    score: np.ndarray
    tie: np.ndarray
    u2r: np.ndarray


class Plan(NamedTuple):
    """The metric plan: the distinct ``thresholds``, then per metric its opcode (``ops``,
    ``OP_*``), cutoff (``ks``, 0: none), threshold column (``thr_idx``), gain row
    (``gain_idx``) and float parameter (``fpar``: F-beta's beta, RBP's persistence, ...);
    ``log2p[a]`` = log2(a + 2) for every position; the tie ``policy`` (``POLICY_*``)."""

    thresholds: np.ndarray
    ops: np.ndarray
    ks: np.ndarray
    thr_idx: np.ndarray
    gain_idx: np.ndarray
    fpar: np.ndarray
    log2p: np.ndarray
    policy: int


class Scratch(NamedTuple):
    """The metric code's scratch (:func:`scratch`): sort keys (``tkey``), a permutation and
    the sort's buffers (``perm``, ``itmp``, ``ftmp``), the ideal gains (``ideal``) and the
    cascade metrics' probabilities (``cbuf``)."""

    tkey: np.ndarray
    perm: np.ndarray
    itmp: np.ndarray
    ftmp: np.ndarray
    ideal: np.ndarray
    cbuf: np.ndarray


class Outputs(NamedTuple):
    """The ranking kernel's outputs: ``out`` (users x metrics), ``nrel`` (users x thresholds:
    |R| per threshold), ``status`` (per user: ``STATUS_*``) and ``t_match`` (per truth row:
    the recs row it matched, or -1)."""

    out: np.ndarray
    nrel: np.ndarray
    status: np.ndarray
    t_match: np.ndarray


class Buffers(NamedTuple):
    """One chunk's buffers for :func:`_score_user`: the hash tables of the user's truth items
    (``tab_*``) and of its listed items (``seen_*``), then the list position by position
    (truth row, relevance, order) and its tie groups (start, size, members)."""

    tab_key: np.ndarray
    tab_val: np.ndarray
    tab_stamp: np.ndarray
    seen_key: np.ndarray
    seen_val: np.ndarray
    seen_stamp: np.ndarray
    prow: np.ndarray
    prel: np.ndarray
    gstart: np.ndarray
    gsize: np.ndarray
    order: np.ndarray
    gmem: np.ndarray


@njit(cache=True, nogil=True)
def scratch(n_max: int, nt_max: int) -> Scratch:
    """The metric code's scratch for lists of at most ``n_max`` items and users of at most
    ``nt_max`` truth rows (np.empty only: see :func:`_rank_chunk`)."""
    m_max = max(n_max, nt_max)
    return Scratch(
        np.empty(n_max, dtype=np.float64),
        np.empty(m_max, dtype=np.int64),
        np.empty(m_max, dtype=np.int64),
        np.empty(m_max, dtype=np.float64),
        np.empty(nt_max, dtype=np.float64),
        np.empty(2 * nt_max + 2, dtype=np.float64),
    )


@njit(cache=True, nogil=True, inline="always")
def _sorted_sum(values: np.ndarray, perm: np.ndarray, tmp: np.ndarray, lo: int, hi: int) -> float:
    """Sum of values[lo:hi] taken in ascending order (``perm``, ``tmp``: scratch)."""
    for a in range(lo, hi):
        perm[a] = a
    sort_desc(values, perm, tmp, lo, hi)
    total = 0.0
    for a in range(hi - 1, lo - 1, -1):
        total += values[perm[a]]
    return total


@njit(cache=True, nogil=True, inline="always")
def _hyper_step(prob: np.ndarray, lo: int, draws: int, good: int, pop: int) -> None:
    """One more draw without replacement: ``prob[lo + a]`` = P(a of the ``draws`` items drawn
    so far are among the ``good`` ones of ``pop``) becomes the same for ``draws + 1``."""
    left = pop - draws
    bad = pop - good
    for a in range(min(draws + 1, good), -1, -1):
        v = 0.0
        if a <= draws:  # the next item is a bad one (none left: that state has probability 0)
            v = prob[lo + a] * (bad - draws + a) / left
        if a >= 1:
            v += prob[lo + a - 1] * (good - a + 1) / left
        prob[lo + a] = v


@njit(cache=True, nogil=True)
def _cascade_value(
    mi: int,
    n: int,
    ng: int,
    gpos: np.ndarray,
    gsize: np.ndarray,
    gmem: np.ndarray,
    prow: np.ndarray,
    prel: np.ndarray,
    t_gain: np.ndarray,
    t_rel: np.ndarray,
    ts: int,
    te: int,
    plan: Plan,
    nr: float,
    scratch: Scratch,
) -> float:
    """ERR, RBP, the RBP residual, bpref or judged (metric ``mi`` of ``plan``) of one user with
    ``n >= 1`` items and ``nr`` relevant ones, from the tie groups of :func:`group_metrics`
    (the same arguments). The plan gives the opcode, the threshold, the cutoff (0 for none),
    the row of ``t_gain`` (ERR's stopping probabilities, RBP's gains; -1: binary RBP) and
    RBP's persistence (``fpar``).

    A member with ``prow >= 0`` has a truth row (judged); positions of a group that are not
    members, and positions in no group (the model engine lists truth items only), are unjudged.
    Under ``expected``, linear metrics (RBP, residual, judged) give each position of a group its
    average; ERR and bpref take the exact expectation over the orders of the group, with
    hypergeometric probabilities (docs/metrics.md). Groups of one reduce to the plain sums, in
    trec_eval's order of operations for bpref.
    """
    op: int = plan.ops[mi]
    thr: float = plan.thresholds[plan.thr_idx[mi]]
    k: int = plan.ks[mi]
    gv: int = plan.gain_idx[mi]
    p: float = plan.fpar[mi]
    tkey, perm_buf, itmp_buf, cbuf = scratch.tkey, scratch.perm, scratch.itmp, scratch.cbuf
    kk = k if k > 0 else n
    kc = min(kk, n)
    acc = 0.0
    if op == OP_JUDGED:
        for gi in range(ng):
            s = gpos[gi]
            if s >= kc:
                break
            m = gsize[gi]
            j = min(s + m, kc) - s
            judged = 0
            for a in range(gmem[gi], gmem[gi + 1]):
                if prow[a] >= 0:
                    judged += 1
            if judged:
                acc += (judged / m) * j
        return acc / kc
    if op == OP_RBP:
        for gi in range(ng):
            s = gpos[gi]
            if s >= kc:
                break
            m = gsize[gi]
            j = min(s + m, kc) - s
            mlo = gmem[gi]
            mhi = gmem[gi + 1]
            gsum = 0.0
            if gv < 0:
                for a in range(mlo, mhi):
                    if prel[a] >= thr:
                        gsum += 1.0
            elif mhi - mlo == 1:
                if prow[mlo] >= 0 and prel[mlo] >= thr:
                    gsum = t_gain[gv, prow[mlo]]
            else:  # summed in sorted order: the same for every input order of the tie
                for a in range(mlo, mhi):
                    tkey[a] = t_gain[gv, prow[a]] if prow[a] >= 0 and prel[a] >= thr else 0.0
                gsum = _sorted_sum(tkey, perm_buf, itmp_buf, mlo, mhi)
            if gsum != 0.0:
                acc += (gsum / m) * p**s * (1.0 - p**j)
        return acc
    if op == OP_RBP_RESIDUAL:
        cur = 0  # positions before cur are accounted for
        for gi in range(ng):
            s = gpos[gi]
            if s >= kc:
                break
            m = gsize[gi]
            j = min(s + m, kc) - s
            if s > cur:  # positions in no group: unjudged
                acc += p**cur * (1.0 - p ** (s - cur))
            judged = 0
            for a in range(gmem[gi], gmem[gi + 1]):
                if prow[a] >= 0:
                    judged += 1
            if judged < m:
                acc += ((m - judged) / m) * p**s * (1.0 - p**j)
            cur = s + j
        if kc > cur:
            acc += p**cur * (1.0 - p ** (kc - cur))
        return acc + p**kk
    if op == OP_ERR:
        decay = 1.0  # the probability that the user reaches the group
        for gi in range(ng):
            s = gpos[gi]
            if s >= kc:
                break
            m = gsize[gi]
            j = min(s + m, kc) - s
            mlo = gmem[gi]
            r = 0  # members that may stop the user: their R in tkey[mlo : mlo + r]
            for a in range(mlo, gmem[gi + 1]):
                if prow[a] >= 0 and t_gain[gv, prow[a]] > 0.0:
                    tkey[mlo + r] = t_gain[gv, prow[a]]
                    r += 1
            if r == 0:
                continue
            if m == 1:
                acc += decay * tkey[mlo] / (s + 1)
                decay *= 1.0 - tkey[mlo]
                continue
            # E[D_t], D_t = the product of 1 - R over the first t positions of the group, is
            # sum_a P(a of them stop) * M_a, M_a = the mean product of 1 - R over a-subsets of
            # the r members (the elementary symmetric means, cbuf[:r + 1], of the sorted R);
            # the group adds sum_{t<=j} (E[D_{t-1}] - E[D_t]) / (s + t).
            for a in range(r):
                perm_buf[mlo + a] = mlo + a
            sort_desc(tkey, perm_buf, itmp_buf, mlo, mlo + r)
            cbuf[0] = 1.0
            for i in range(1, r + 1):
                y = 1.0 - tkey[perm_buf[mlo + i - 1]]
                cbuf[i] = y * cbuf[i - 1]
                for d in range(i - 1, 0, -1):
                    cbuf[d] = ((i - d) / i) * cbuf[d] + (d / i) * y * cbuf[d - 1]
            hp = r + 1  # cbuf[hp + a]: P(a of the first t positions hold a member)
            cbuf[hp] = 1.0
            for a in range(1, r + 1):
                cbuf[hp + a] = 0.0
            prev = 1.0
            gacc = 0.0
            for t in range(j):
                _hyper_step(cbuf, hp, t, r, m)
                now = 0.0
                for a in range(min(t + 1, r) + 1):
                    now += cbuf[hp + a] * cbuf[a]
                gacc += (prev - now) / (s + t + 1)
                prev = now
            acc += decay * gacc
            if j < m:
                break
            decay *= cbuf[r]
        return acc
    # OP_BPREF
    n_non = 0  # the user's judged non-relevant items: 0 <= relevance < thr (trec_eval)
    for a in range(ts, te):
        if 0.0 <= t_rel[a] < thr:
            n_non += 1
    den = min(nr, float(n_non))
    above = 0  # judged non-relevant items ranked above the current group
    for gi in range(ng):
        s = gpos[gi]
        if s >= kc:
            break
        m = gsize[gi]
        j = min(s + m, kc) - s
        r = 0
        q = 0
        for a in range(gmem[gi], gmem[gi + 1]):
            if prow[a] >= 0:
                if prel[a] >= thr:
                    r += 1
                elif prel[a] >= 0.0:
                    q += 1
        if r > 0 and m == 1:
            if above > 0:
                acc += 1.0 - min(float(above), nr) / den
            else:
                acc += 1.0
        elif r > 0:
            # a relevant member at position t of the group follows X judged non-relevant ones,
            # X hypergeometric: t - 1 draws from the m - 1 others, q of them non-relevant
            cbuf[0] = 1.0
            for x in range(1, q + 1):
                cbuf[x] = 0.0
            total = 0.0
            for t in range(j):
                if t > 0:
                    _hyper_step(cbuf, 0, t - 1, q, m - 1)
                for x in range(min(t, q) + 1):
                    h = above + x
                    total += cbuf[x] * (1.0 - min(float(h), nr) / den if h > 0 else 1.0)
            acc += (r / m) * total
        if j < m:
            break
        above += q
    return acc / nr


@njit(cache=True, nogil=True)
def cascade_metrics(
    u: int,
    n: int,
    ng: int,
    gpos: np.ndarray,
    gsize: np.ndarray,
    gmem: np.ndarray,
    prow: np.ndarray,
    prel: np.ndarray,
    t_gain: np.ndarray,
    t_rel: np.ndarray,
    ts: int,
    te: int,
    plan: Plan,
    out: np.ndarray,
    nrel: np.ndarray,
    scratch: Scratch,
) -> None:
    """The cascade metrics of user ``u`` (row ``u`` of ``out``) that :func:`group_metrics`
    left: users they evaluate, with recs (the same tie groups; ``t_rel``: truth relevance, for
    bpref's judged non-relevant items).

    Callers reach it behind ``if cascade is not None``, ``cascade`` an argument that is None
    when no cascade metric is asked for: Numba then prunes the call and never compiles this
    code (a first run compiles the other metrics as fast as before).
    """
    if n == 0:
        return
    for mi in range(plan.ops.shape[0]):
        if plan.ops[mi] < OP_ERR:
            continue
        nr = nrel[u, plan.thr_idx[mi]]
        if nr == 0:
            continue
        out[u, mi] = _cascade_value(
            mi, n, ng, gpos, gsize, gmem, prow, prel, t_gain, t_rel, ts, te, plan, nr, scratch
        )


@njit(cache=True, nogil=True, inline="always")
def group_metrics(
    u: int,
    n: int,
    ng: int,
    gpos: np.ndarray,
    gsize: np.ndarray,
    gmem: np.ndarray,
    prow: np.ndarray,
    prel: np.ndarray,
    t_gain: np.ndarray,
    ts: int,
    te: int,
    plan: Plan,
    out: np.ndarray,
    nrel: np.ndarray,
    scratch: Scratch,
) -> None:
    """Every requested metric of user ``u`` (row ``u`` of ``out``) from its tie groups.

    The list has ``n`` items; group ``gi`` fills positions ``gpos[gi] .. gpos[gi] + gsize[gi]
    - 1`` (0-based, groups in list order) and its items with a truth row are
    ``gmem[gi] .. gmem[gi + 1] - 1`` of ``prow`` (the truth row, or -1) and ``prel`` (its
    relevance). Positions of a group without a member hold non-truth items (relevance and gain
    0), so a group may list only its truth items (:mod:`receval.kernels.model`) or every item
    (:func:`_score_user`, ``gpos = gmem``): the sums are the same. ``nrel[u]`` holds |R| per
    threshold; ``ts .. te`` are the user's truth rows (the ideal DCG).

    The cascade metrics (opcodes from ``OP_ERR`` on) get their value here only for a user they
    do not evaluate (NaN) or without recs; :func:`cascade_metrics` computes the others.
    """
    thresholds, ops, ks, thr_idx = plan.thresholds, plan.ops, plan.ks, plan.thr_idx
    gain_idx, fpar, log2p = plan.gain_idx, plan.fpar, plan.log2p
    tkey, perm_buf, itmp_buf = scratch.tkey, scratch.perm, scratch.itmp
    ftmp_buf, ideal_buf = scratch.ftmp, scratch.ideal
    nt = te - ts
    # the user's truth gains in descending order (ideal_buf[:nt]), sorted once per gain (not
    # once per metric)
    ideal_gv = -1
    for mi in range(ops.shape[0]):
        op = ops[mi]
        c = thr_idx[mi]
        thr = thresholds[c]
        nr = nrel[u, c]
        if nr == 0:
            out[u, mi] = np.nan
            continue
        if n == 0:  # the residual of an empty list: p^K (1 without @K), else 0
            out[u, mi] = fpar[mi] ** ks[mi] if op == OP_RBP_RESIDUAL else 0.0
            continue
        if op >= OP_ERR:  # cascade_metrics
            continue
        kk = ks[mi]
        if op == OP_R_PRECISION:
            kk = int(nr)
        elif kk == 0:
            kk = n
        kc = min(kk, n)
        gv = gain_idx[mi]

        hits = 0.0
        acc = 0.0
        h = 0.0
        for gi in range(ng):
            s = gpos[gi]
            if s >= kc:
                break
            m = gsize[gi]
            j = min(s + m, kc) - s
            mlo = gmem[gi]
            mhi = gmem[gi + 1]
            if op in (OP_CG, OP_DCG, OP_NDCG, OP_NDCG_K):
                if mhi - mlo == 1:
                    gsum = t_gain[gv, prow[mlo]] if prow[mlo] >= 0 else 0.0
                else:  # summed in sorted order: the same for every input order of the tie
                    for a in range(mlo, mhi):
                        tkey[a] = t_gain[gv, prow[a]] if prow[a] >= 0 else 0.0
                    gsum = _sorted_sum(tkey, perm_buf, itmp_buf, mlo, mhi)
                if gsum != 0.0:
                    gm = gsum / m
                    if op == OP_CG:
                        acc += gm * j
                    else:
                        for a in range(s, s + j):
                            acc += gm / log2p[a]
                continue
            r = 0
            for a in range(mlo, mhi):
                if prel[a] >= thr:
                    r += 1
            if r == 0:
                continue
            if op == OP_HIT_RATE:
                miss = 1.0
                for a in range(j):
                    miss *= (m - r - a) / (m - a)
                acc = 1.0 - miss
                break
            if op == OP_MRR:
                prob = r / m
                top = min(m - r + 1, j)
                for x in range(1, top + 1):
                    acc += prob / (s + x)
                    if x < top:
                        prob *= (m - x - r + 1) / (m - x)
                break
            if op == OP_ARHR:
                rm = r / m
                for a in range(s, s + j):
                    acc += rm / (a + 1)
            elif op == OP_AP:
                base = (r / m) * (h + 1.0)
                pair = 0.0
                if m > 1:
                    pair = (r * (r - 1.0)) / (m * (m - 1.0))
                for t in range(1, j + 1):
                    acc += (base + (t - 1) * pair) / (s + t)
                h += r
            else:
                hits += (r / m) * j

        if op in (OP_PRECISION, OP_R_PRECISION):
            out[u, mi] = hits / kk
        elif op == OP_RECALL:
            out[u, mi] = hits / nr
        elif op == OP_HITS:
            out[u, mi] = hits
        elif op == OP_FBETA:
            b2 = fpar[mi] * fpar[mi]
            out[u, mi] = (1.0 + b2) * hits / (b2 * nr + kk)
        elif op == OP_AP:
            den = nr
            if fpar[mi] > 0.0:
                den = min(kk, nr)
            out[u, mi] = acc / den
        elif op == OP_NDCG:
            if acc == 0.0:
                out[u, mi] = 0.0
            else:
                if gv != ideal_gv:
                    for a in range(nt):
                        ftmp_buf[a] = t_gain[gv, ts + a]
                        perm_buf[a] = a
                    sort_desc(ftmp_buf, perm_buf, itmp_buf, np.int64(0), nt)
                    for a in range(nt):
                        ideal_buf[a] = ftmp_buf[perm_buf[a]]
                    ideal_gv = gv
                idcg = 0.0
                icut = nt if ks[mi] == 0 else min(ks[mi], nt)
                for a in range(icut):
                    best = ideal_buf[a]
                    if best > 0.0:
                        idcg += best / log2p[a]
                out[u, mi] = acc / idcg
        elif op == OP_NDCG_K:
            if acc == 0.0:
                out[u, mi] = 0.0
            else:
                gmax = 0.0
                for a in range(ts, te):
                    gmax = max(gmax, t_gain[gv, a])
                unit = fpar[mi]  # sum_{j<=K} 1 / log2(j + 1), or 0: K is the list's length
                if unit == 0.0:
                    for a in range(n):
                        unit += 1.0 / log2p[a]
                out[u, mi] = acc / (gmax * unit)
        else:
            out[u, mi] = acc


@njit(cache=True, nogil=True, inline="always")
def _reads_judgments(ops: np.ndarray) -> bool:
    """Whether a metric of the plan reads which items are judged, not only their relevance
    (rbp_residual, judged): ``optimistic`` / ``pessimistic`` then order equal relevance."""
    for op in ops:  # noqa: SIM110 (Numba compiles no generator for any())
        if op in (OP_RBP_RESIDUAL, OP_JUDGED):
            return True
    return False


COUNTED_MAX = 64
"""Most matched items per user for which :func:`_counted_groups` counts positions (each
costs a pass over the list); a user with more is sorted instead."""


@njit(cache=True, nogil=True, inline="always")
def _counted_groups(
    n: int,
    rs: int,
    r_score: np.ndarray,
    k: int,
    first: bool,
    order: np.ndarray,
    prow: np.ndarray,
    prel: np.ndarray,
    gpos: np.ndarray,
    gsize: np.ndarray,
    gmem: np.ndarray,
    skey: np.ndarray,
) -> int:
    """The tie groups that hold a matched item, without sorting the list; returns their count.

    ``order[:k]``, ``prow[:k]``, ``prel[:k]``: the ``k`` matched items (list index, truth row,
    relevance), in list order. An item of score ``x`` at list index ``j`` is at position
    ``#{score > x}`` of a group of ``#{score == x}`` items (``first``: at position
    ``#{score > x} + #{score == x before j}``, a group of one), the same positions and sizes as
    the stable sort by descending score and its runs of equal scores. The members end up
    ordered by position, each group ``gi`` at ``gpos[gi]`` of size ``gsize[gi]`` with members
    ``gmem[gi] .. gmem[gi + 1] - 1``: the compressed form :func:`group_metrics` reads (groups
    without a matched item add nothing to the metrics, every threshold being > 0).
    ``skey``: scratch of ``k`` integers.
    """
    for a in range(k):
        j = order[a]
        x = r_score[rs + j]
        above = 0
        same = 0
        for p in range(j):
            v = r_score[rs + p]
            above += v > x
            same += v == x
        before = same
        for p in range(j, n):
            v = r_score[rs + p]
            above += v > x
            same += v == x
        skey[a] = above + before if first else above
        gsize[a] = 1 if first else same
    # members by position (insertion sort: k is small; equal positions share a group)
    for a in range(1, k):
        key = skey[a]
        size = gsize[a]
        o = order[a]
        r = prow[a]
        v = prel[a]
        b = a - 1
        while b >= 0 and skey[b] > key:
            skey[b + 1] = skey[b]
            gsize[b + 1] = gsize[b]
            order[b + 1] = order[b]
            prow[b + 1] = prow[b]
            prel[b + 1] = prel[b]
            b -= 1
        skey[b + 1] = key
        gsize[b + 1] = size
        order[b + 1] = o
        prow[b + 1] = r
        prel[b + 1] = v
    ng = 0
    for a in range(k):
        if a == 0 or skey[a] != skey[a - 1]:
            gpos[ng] = skey[a]
            gsize[ng] = gsize[a]  # ng <= a: entries not yet read
            gmem[ng] = a
            ng += 1
    gmem[ng] = k
    return ng


@njit(cache=True, nogil=True)
def _score_user(
    u: int,
    truth: Truth,
    recs: Recs,
    plan: Plan,
    outputs: Outputs,
    bufs: Buffers,
    scratch: Scratch,
    cascade: np.ndarray | None,
    counted: bool,
) -> int:
    """Evaluate truth user ``u``: its metrics and |R| in ``outputs``; returns its status.

    ``cascade`` is None when no cascade metric is asked for (:func:`cascade_metrics`);
    ``counted``: position the matched items by counting scores (:func:`_counted_groups`).
    """
    t_off, t_item, t_rel, t_gain = truth
    r_off, r_item, r_score, r_tie, u2r = recs
    thresholds, ops, policy = plan.thresholds, plan.ops, plan.policy
    out, nrel, t_match = outputs.out, outputs.nrel, outputs.t_match
    tab_key, tab_val, tab_stamp, seen_key, seen_val, seen_stamp = bufs[:6]
    prow_buf, prel_buf, gstart_buf, gsize_buf = bufs.prow, bufs.prel, bufs.gstart, bufs.gsize
    order_buf, gmem_buf = bufs.order, bufs.gmem
    tkey_buf, perm_buf, itmp_buf, ftmp_buf = scratch.tkey, scratch.perm, scratch.itmp, scratch.ftmp
    ts = t_off[u]
    te = t_off[u + 1]
    nt = te - ts
    # truth of the user in a hash table keyed by item
    stamp = u + 1
    if fill_table(t_item, ts, te, tab_key, tab_val, tab_stamp, stamp):
        return STATUS_DUP_TRUTH
    tbits = table_bits(nt)
    for c in range(thresholds.shape[0]):
        cnt = 0
        for a in range(ts, te):
            if t_rel[a] >= thresholds[c]:
                cnt += 1
        nrel[u, c] = cnt

    g = u2r[u]
    n = 0
    rs = 0
    if g >= 0:
        rs = r_off[g]
        n = r_off[g + 1] - rs

    checked = False  # recs searched for duplicates (once: a second search finds them all)
    if counted and ops.shape[0] != 0:
        # the groups of the matched items only, from counts of scores (_counted_groups): no
        # sort of the list, the same groups and values as the sort below
        checked = True
        sbits = table_bits(n)
        k = 0
        for p in range(n):  # one pass: the search for duplicates and the match with truth
            row = rs + p
            if table_put(r_item[row], sbits, seen_key, seen_stamp, stamp) < 0:
                return STATUS_DUP_RECS  # the item came before in this list
            trow = table_find(r_item[row], tbits, tab_key, tab_val, tab_stamp, stamp)
            if trow >= 0:
                t_match[trow] = row
                order_buf[k] = p
                prow_buf[k] = trow
                prel_buf[k] = t_rel[trow]
                k += 1
        if k <= COUNTED_MAX:
            ng = _counted_groups(
                n, rs, r_score, k, policy == POLICY_FIRST, order_buf, prow_buf, prel_buf,
                gstart_buf, gsize_buf, gmem_buf, itmp_buf,
            )  # fmt: skip
            group_metrics(
                u, n, ng, gstart_buf, gsize_buf, gmem_buf, prow_buf, prel_buf, t_gain, ts, te,
                plan, out, nrel, scratch,
            )  # fmt: skip
            return STATUS_OK

    # order the list by descending score (stable: "first" reads the input order of equal
    # scores), match it against truth; with no ranking metric requested only the matching is
    # wanted: keep input order
    order = order_buf
    for p in range(n):
        order[p] = p
    if ops.shape[0] != 0:
        ordered = True
        for p in range(1, n):
            if r_score[rs + p] > r_score[rs + p - 1]:
                ordered = False
                break
        if not ordered:
            for p in range(n):
                tkey_buf[p] = r_score[rs + p]
            sort_desc(tkey_buf, order, itmp_buf, np.int64(0), n)  # not 0: see sort_desc
    dup = not checked and n > 1
    if dup and fill_table(r_item, rs, rs + n, seen_key, seen_val, seen_stamp, stamp):
        return STATUS_DUP_RECS
    prow = prow_buf[:n]
    prel = prel_buf[:n]
    tkey = tkey_buf[:n]
    for p in range(n):
        row = rs + order[p]
        trow = table_find(r_item[row], tbits, tab_key, tab_val, tab_stamp, stamp)
        prow[p] = trow
        prel[p] = 0.0
        if trow >= 0:
            prel[p] = t_rel[trow]
            t_match[trow] = row
    if ops.shape[0] == 0:
        return STATUS_OK

    # tie groups: runs of equal scores, in list order
    gstart = gstart_buf[: n + 1]
    ng = 0
    p = 0
    while p < n:
        q = p + 1
        s0 = r_score[rs + order[p]]
        while q < n and r_score[rs + order[q]] == s0:
            q += 1
        if policy == POLICY_EXPECTED or q - p == 1:
            gstart[ng] = p
            ng += 1
        else:
            if policy in (POLICY_OPTIMISTIC, POLICY_PESSIMISTIC) and _reads_judgments(ops):
                # equal relevance: judged items first (optimistic) or last (pessimistic), by a
                # stable sort before the sort by relevance
                for a in range(p, q):
                    tkey[a] = 1.0 if (prow[a] >= 0) == (policy == POLICY_OPTIMISTIC) else 0.0
                sort_group(tkey, order, prow, prel, perm_buf, itmp_buf, ftmp_buf, np.int64(p), q)
            if policy != POLICY_FIRST:
                for a in range(p, q):
                    if policy == POLICY_TREC:
                        tkey[a] = float(r_tie[rs + order[a]])
                    elif policy == POLICY_OPTIMISTIC:
                        tkey[a] = prel[a]
                    else:
                        tkey[a] = -prel[a]
                sort_group(tkey, order, prow, prel, perm_buf, itmp_buf, ftmp_buf, np.int64(p), q)
            for a in range(p, q):
                gstart[ng] = a
                ng += 1
        p = q
    gstart[ng] = n

    for gi in range(ng):
        gsize_buf[gi] = gstart[gi + 1] - gstart[gi]
    group_metrics(
        u, n, ng, gstart, gsize_buf, gstart, prow, prel, t_gain, ts, te, plan, out, nrel, scratch
    )
    if cascade is not None:  # pruned, with the call, when None (see cascade_metrics)
        cascade_metrics(
            u, n, ng, gstart, gsize_buf, gstart, prow, prel, t_gain, t_rel, ts, te, plan, out,
            nrel, scratch,
        )  # fmt: skip
    return STATUS_OK


@njit(cache=True, nogil=True)
def _rank_outputs(n_users: int, n_metrics: int, n_thresholds: int, n_truth_rows: int) -> Outputs:
    """The ranking kernel's outputs, allocated (each chunk fills its own rows)."""
    return Outputs(
        np.empty((n_users, n_metrics), dtype=np.float64),
        np.empty((n_users, n_thresholds), dtype=np.float64),
        np.empty(n_users, dtype=np.int64),
        np.empty(n_truth_rows, dtype=np.int64),
    )


@njit(cache=True, nogil=True)
def _buffers(nt_max: int, n_max: int) -> Buffers:
    """One chunk's :class:`Buffers` for users of at most ``nt_max`` truth rows and lists of at
    most ``n_max`` items, the tables' stamps cleared."""
    tsize = 1 << table_bits(nt_max)
    rsize = 1 << table_bits(n_max)
    tab_stamp = np.empty(tsize, dtype=np.int64)
    seen_stamp = np.empty(rsize, dtype=np.int64)
    for a in range(tsize):
        tab_stamp[a] = 0
    for a in range(rsize):
        seen_stamp[a] = 0
    return Buffers(
        np.empty(tsize, dtype=np.int64),
        np.empty(tsize, dtype=np.int64),
        tab_stamp,
        np.empty(rsize, dtype=np.int64),
        np.empty(rsize, dtype=np.int64),
        seen_stamp,
        np.empty(n_max, dtype=np.int64),
        np.empty(n_max, dtype=np.float64),
        np.empty(n_max + 1, dtype=np.int64),
        np.empty(n_max + 1, dtype=np.int64),
        np.empty(n_max, dtype=np.int64),
        np.empty(n_max + 1, dtype=np.int64),
    )


@njit(cache=True, nogil=True)
def _rank_chunk(
    ch: int,
    step: int,
    truth: Truth,
    recs: Recs,
    plan: Plan,
    outputs: Outputs,
    counted: bool,
    cascade: np.ndarray | None,
) -> None:
    """One chunk of users ``[ch * step, (ch + 1) * step)``: its own scratch buffers and hash
    tables, its own rows of the outputs (chunks run on Python threads: :func:`rank_users`).
    ``cascade`` is None when no cascade metric is asked for (:func:`cascade_metrics`).
    np.empty only, filled by loops: np.zeros and np.full would each compile their own
    implementations on a first run."""
    t_off, r_off, u2r = truth.off, recs.off, recs.u2r
    thresholds = plan.thresholds
    n_users = t_off.shape[0] - 1
    lo = min(ch * step, n_users)
    hi = min(lo + step, n_users)
    for a in range(t_off[lo], t_off[hi]):
        outputs.t_match[a] = -1
    for u in range(lo, hi):
        for c in range(thresholds.shape[0]):
            outputs.nrel[u, c] = 0.0
    nt_max = 1
    n_max = 1
    for u in range(lo, hi):
        nt_max = max(nt_max, t_off[u + 1] - t_off[u])
        if u2r[u] >= 0:
            n_max = max(n_max, r_off[u2r[u] + 1] - r_off[u2r[u]])
    bufs = _buffers(nt_max, n_max)
    work = scratch(n_max, nt_max)
    # positions counted (_counted_groups) where that gives the sorted list's values: ties
    # "expected" or "first", no cascade metric, every threshold > 0
    by_count = counted and cascade is None and plan.policy in (POLICY_EXPECTED, POLICY_FIRST)
    for c in range(thresholds.shape[0]):
        if not thresholds[c] > 0.0:
            by_count = False
    for u in range(lo, hi):
        outputs.status[u] = _score_user(
            u, truth, recs, plan, outputs, bufs, work, cascade, by_count
        )


@njit(cache=True, parallel=True)
def _duplicate_groups(offsets: np.ndarray, items: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """For each of ``groups`` (indices into ``offsets``), whether it repeats an item key."""
    flags = np.zeros(groups.shape[0], dtype=np.bool_)
    n_chunks = min(groups.shape[0], 64)
    if n_chunks == 0:
        return flags
    step = (groups.shape[0] + n_chunks - 1) // n_chunks
    for ch in prange(n_chunks):
        lo = ch * step
        hi = min(lo + step, groups.shape[0])
        n_max = 1
        for a in range(lo, hi):
            n_max = max(n_max, offsets[groups[a] + 1] - offsets[groups[a]])
        size = 1 << table_bits(n_max)
        seen_key = np.empty(size, dtype=np.int64)
        seen_val = np.empty(size, dtype=np.int64)
        seen_stamp = np.zeros(size, dtype=np.int64)
        for a in range(lo, hi):
            g = groups[a]
            flags[a] = fill_table(
                items, offsets[g], offsets[g + 1], seen_key, seen_val, seen_stamp, a + 1
            )
    return flags


TEXT_KEY_LIMIT = 10**15
"""Integers below this have at most 15 digits, so their text-order key is below 2^53."""


@njit(cache=True, parallel=True)
def _text_order_keys(values: np.ndarray) -> np.ndarray:
    """Keys that order non-negative integers (< 10^15) as their decimal text compares.

    The text d_1..d_L becomes the base-11 number with digits d_i + 1, padded with 0 (end of
    text, below every digit) to 15 places, so a prefix sorts first ("10" < "9"). Every key is
    below 11^15 < 2^53 and survives the float64 comparison of the tie sort exactly.
    """
    out = np.empty(values.shape[0], dtype=np.int64)
    digits = 15
    for i in prange(values.shape[0]):
        v = values[i]
        width = 1
        p = 10
        while width < digits and v >= p:
            width += 1
            p *= 10
        code = 0  # the digits, least significant first, as base-11 places
        x = v
        place = 1
        for _ in range(width):
            code += (x % 10 + 1) * place
            x //= 10
            place *= 11
        for _ in range(digits - width):  # pad: shift to the 15 most significant places
            code *= 11
        out[i] = code
    return out


# ----------------------------------------------------------------------------- Python wrappers
#
# Numba compiles one machine-code version per argument type, and a read-only array (Polars
# hands out zero-copy read-only views) is a different type from a writable one. The wrappers
# pass every input array read-only, so each kernel has exactly one signature: compiled once,
# cached on disk, and never compiled again whatever the input's origin.


def rank_users(
    arrays: tuple[np.ndarray, ...], policy: int, n_chunks: int, *, counted: bool = True
) -> Outputs:
    """Run the ranking kernel over every truth user.

    ``arrays`` are, in order, the fields of :class:`Truth`, :class:`Recs` and :class:`Plan`
    but its ``policy``: ``t_off, t_item, t_rel, t_gain, r_off, r_item, r_score, r_tie, u2r,
    thresholds, ops, ks, thr_idx, gain_idx, fpar, log2p``. Returns the :class:`Outputs`.
    ``counted``: find the matched items' positions by counting scores where that gives the
    same values (:func:`_counted_groups`); False always sorts each list (the tests compare the
    two).
    """
    views = [frozen(a) for a in arrays]
    truth = Truth(*views[:4])
    recs = Recs(*views[4:9])
    plan = Plan._make((*views[9:16], int(policy)))
    n_users = truth.off.shape[0] - 1
    outputs = _rank_outputs(
        n_users, plan.ops.shape[0], plan.thresholds.shape[0], truth.item.shape[0]
    )
    step = (n_users + n_chunks - 1) // n_chunks
    cascade = cascade_flag(plan.ops)
    run_chunks(_rank_chunk, n_chunks, step, truth, recs, plan, outputs, bool(counted), cascade)
    return outputs


def cascade_flag(ops: np.ndarray) -> np.ndarray | None:
    """The kernels' ``cascade`` argument: None unless a cascade metric (opcode >= ``OP_ERR``)
    is asked for, so that Numba compiles their code only then (:func:`cascade_metrics`)."""
    return np.zeros(0, dtype=np.int64) if bool((ops >= OP_ERR).any()) else None


def duplicate_groups(offsets: np.ndarray, items: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """For each of ``groups`` (indices into ``offsets``), whether it repeats an item key."""
    if groups.shape[0] == 0:  # the usual case (every recs user in truth): nothing to compile
        return np.zeros(0, dtype=np.bool_)
    kernel: Any = _duplicate_groups
    return kernel(frozen(offsets), frozen(items), frozen(groups))  # type: ignore[no-any-return]


def text_order_keys(values: np.ndarray) -> np.ndarray:
    """Keys that order non-negative integers (< ``TEXT_KEY_LIMIT``) as their text compares."""
    kernel: Any = _text_order_keys
    return kernel(frozen(values))  # type: ignore[no-any-return]
