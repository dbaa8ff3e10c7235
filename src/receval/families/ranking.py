"""The ranking family, and the layout every family reads.

:func:`prepare` reads and checks truth and recs, groups both by user and runs the ranking
kernel (:mod:`receval.kernels.ranking`) once: it matches truth against recs and computes
every requested ranking metric at every cutoff in the same pass. The result is the shared
:class:`~receval.families.contract.Prepared` layout plus the kernel's values;
:func:`ranking_part` turns those into the family's :class:`~receval.families.contract.Part`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numba
import numpy as np
import polars as pl

from receval._errors import InputError, MetricError, caller_stacklevel
from receval.data.layout import (
    Grouped,
    IdTypeArg,
    column_array,
    exact_item_keys,
    float_column,
    item_keys,
    show_rows,
    trec_tie_keys,
)
from receval.data.tables import Pair
from receval.families.contract import (
    Context,
    NoRecs,
    Part,
    Prepared,
    Ties,
    no_evaluated_message,
    per_user_frame,
)
from receval.families.states import GlobalState
from receval.kernels import ranking as K
from receval.kernels.exact import total_of
from receval.metrics.result import Counts
from receval.metrics.specs import Metric, ParamValue

__all__ = [
    "NDCG_K_MAX",
    "OPS",
    "KernelOutput",
    "PlanArrays",
    "match",
    "plan_arrays",
    "prepare",
    "ranking_part",
]

OPS = {
    "precision": K.OP_PRECISION,
    "recall": K.OP_RECALL,
    "f1": K.OP_FBETA,
    "fbeta": K.OP_FBETA,
    "hit_rate": K.OP_HIT_RATE,
    "mrr": K.OP_MRR,
    "arhr": K.OP_ARHR,
    "map": K.OP_AP,
    "cg": K.OP_CG,
    "dcg": K.OP_DCG,
    "ndcg": K.OP_NDCG,
    "ndcg_k": K.OP_NDCG_K,
    "r_precision": K.OP_R_PRECISION,
    "err": K.OP_ERR,
    "rbp": K.OP_RBP,
    "rbp_residual": K.OP_RBP_RESIDUAL,
    "bpref": K.OP_BPREF,
    "judged": K.OP_JUDGED,
}
USERS_PER_CHUNK = 256


def prepare(
    pair: Pair,
    ranking: tuple[Metric, ...] = (),
    *,
    ties: Ties = Ties.EXPECTED,
    relevance_threshold: float = 1.0,
    no_recs: NoRecs = NoRecs.ZERO,
    context: Context | None = None,
) -> tuple[Prepared, KernelOutput]:
    """Match truth and recs (read by :func:`receval.data.tables.read_pair`) and run the ranking
    kernel.

    The shared first half of :func:`evaluate` (options already checked): every family's part
    reads the returned :class:`Prepared` layout; the :class:`KernelOutput` holds the values of
    the ``ranking`` metrics (none when ``ranking`` is empty: the kernel then only matches).
    """
    return match(
        ranking, pair.t_grp, pair.r_grp, pair.u2r,
        user_col=pair.user_col, item_col=pair.item_col, relevance_col=pair.relevance_col,
        order_col=pair.order_col, by_rank=pair.by_rank, ties=ties,
        threshold=float(relevance_threshold), no_recs=no_recs,
        context=_completed(context or Context(), pair.has_relevance, pair.kinds),
    )  # fmt: skip


def _completed(context: Context, has_relevance: bool, kinds: IdTypeArg) -> Context:
    """``context`` with the id kinds, and whether truth has a relevance column unless the
    engine says (a shard's truth always has one)."""
    if context.has_relevance is not None:
        has_relevance = context.has_relevance
    return replace(context, has_relevance=has_relevance, id_type=kinds)


GAIN_OPS = (K.OP_CG, K.OP_DCG, K.OP_NDCG, K.OP_NDCG_K, K.OP_RBP)


def gain_key(m: Metric) -> tuple[str, ParamValue] | None:
    """The row of per-truth-row values that metric ``m`` reads (None: it reads none): a gain
    (``("gain", linear)``, ``exp`` or a map) or ERR's stopping probabilities
    (``("err", max_grade)``); binary RBP reads none."""
    op = OPS[m.name]
    if op == K.OP_ERR:
        return ("err", m.get("max_grade"))
    if op in GAIN_OPS and m.get("gain") != "binary":
        return ("gain", m.get("gain"))
    return None


def gain_matrix(
    metrics: tuple[Metric, ...], rel: np.ndarray, relevance_col: str
) -> tuple[np.ndarray, list[int]]:
    """One row of per-truth-row values for each distinct :func:`gain_key` among the metrics;
    for each metric, its row (-1: none)."""
    variants: dict[tuple[str, ParamValue], int] = {}  # key -> its row, in first-seen order
    index: list[int] = []
    for m in metrics:
        key = gain_key(m)
        index.append(-1 if key is None else variants.setdefault(key, len(variants)))
    # every row written in place into one matrix: no temporaries, no stacked copy
    out = np.empty((len(variants), rel.shape[0]), dtype=np.float64)
    for row, (kind, gain) in zip(out, variants, strict=True):
        if kind == "err":
            np.maximum(rel, 0.0, out=row)
            row[:] = err_probabilities(rel, row, gain, relevance_col)
        elif gain == "linear":
            np.maximum(rel, 0.0, out=row)
        elif gain == "exp":
            np.maximum(rel, 0.0, out=row)
            np.exp2(row, out=row)
            np.subtract(row, 1.0, out=row)
        else:
            assert isinstance(gain, tuple)
            keys = np.array([k for k, _ in gain], dtype=np.float64)
            vals = np.array([v for _, v in gain], dtype=np.float64)
            pos = np.clip(np.searchsorted(keys, rel), 0, len(keys) - 1)
            found = keys[pos] == rel
            missing = ~found & (rel > 0)
            if missing.any():
                absent = np.unique(rel[missing])[:5].tolist()
                msg = (
                    f"the gain map {dict(gain)} has no gain for relevance value(s) {absent} "
                    f"found in truth column {relevance_col!r}; map every positive relevance "
                    "(relevance <= 0 gains 0 unless mapped)."
                )
                raise InputError(msg)
            np.copyto(row, np.where(found, vals[pos], 0.0))
    return out, index


def err_probabilities(
    rel: np.ndarray, clipped: np.ndarray, max_grade: ParamValue, relevance_col: str
) -> np.ndarray:
    """ERR's stopping probability of each truth row, ``(2^max(rel, 0) - 1) / 2^max_grade``
    (Chapelle et al. 2009; gdeval's arithmetic); a relevance above ``max_grade`` is an error."""
    assert isinstance(max_grade, int | float)
    above = rel > max_grade
    if above.any():
        values = np.unique(rel[above])[:5].tolist()
        msg = (
            f"err(max_grade={max_grade}) needs relevance <= {max_grade}; truth column "
            f"{relevance_col!r} has {int(above.sum())} row(s) above it, with value(s) {values}. "
            f"Give the scale's top grade, e.g. err(max_grade={max(values):g}), or rescale the "
            "relevance."
        )
        raise InputError(msg)
    probabilities: np.ndarray = (np.exp2(clipped) - 1.0) / np.exp2(float(max_grade))
    return probabilities


@dataclass(frozen=True)
class KernelOutput:
    """The ranking kernel's values: ``out`` (users x ranking metrics), ``nrel`` (|R| per user
    and threshold), ``thr_idx`` (each metric's threshold column) and ``ops`` (opcodes)."""

    out: np.ndarray
    nrel: np.ndarray
    thr_idx: list[int]
    ops: np.ndarray


@dataclass(frozen=True)
class PlanArrays:
    """The ranking metrics as the kernels read them: ``thresholds`` (distinct, first-seen
    order; evaluate's own first), ``thr_idx`` / ``thr_arr`` (each metric's threshold column),
    ``t_gain`` (a row of gains per distinct gain, per truth row), ``gain_idx``, ``ops``, ``ks``
    (0: no cutoff) and ``fpar`` (a metric's float parameter, see :func:`fpar`)."""

    thresholds: np.ndarray
    thr_idx: list[int]
    thr_arr: np.ndarray
    t_gain: np.ndarray
    gain_idx: np.ndarray
    ops: np.ndarray
    ks: np.ndarray
    fpar: np.ndarray


def plan_arrays(
    ranking: tuple[Metric, ...], threshold: float, t_rel: np.ndarray, relevance_col: str
) -> PlanArrays:
    """The kernels' view of the ranking metrics (:class:`PlanArrays`)."""
    thresholds = {threshold: 0}  # threshold -> its column, in first-seen order
    thr_idx = []
    for m in ranking:
        thr_idx.append(thresholds.setdefault(m.threshold(threshold), len(thresholds)))
    t_gain, gain_idx = gain_matrix(ranking, t_rel, relevance_col)
    ops = np.array(
        [
            K.OP_HITS if m.name == "recall" and m.str_param("average") == "micro" else OPS[m.name]
            for m in ranking
        ],
        dtype=np.int64,
    )
    return PlanArrays(
        thresholds=np.array(list(thresholds), dtype=np.float64),
        thr_idx=thr_idx,
        thr_arr=np.array(thr_idx, dtype=np.int64),
        t_gain=t_gain,
        gain_idx=np.array(gain_idx, dtype=np.int64),
        ops=ops,
        ks=np.array([m.k or 0 for m in ranking], dtype=np.int64),
        fpar=np.array([fpar(m) for m in ranking], dtype=np.float64),
    )


def match(
    ranking: tuple[Metric, ...],
    t_grp: Grouped,
    r_grp: Grouped,
    u2r: np.ndarray,
    *,
    user_col: str,
    item_col: str,
    relevance_col: str,
    order_col: str,
    by_rank: bool,
    ties: Ties,
    threshold: float,
    no_recs: NoRecs,
    context: Context,
) -> tuple[Prepared, KernelOutput]:
    # the kernel's arrays are made from the source columns (in the caller's row order), then
    # moved with the rows by the grouping (prepare's carry) or gathered in grouped order
    # (Grouped.taken): every one is a function of its row alone
    t_rel = t_grp.taken("value", lambda: _floats(t_grp.source[relevance_col]))
    r_order = r_grp.taken("value", lambda: _floats(r_grp.source[order_col]))
    r_score = -r_order if by_rank else r_order
    ids = [user_col, item_col]
    t_items = t_grp.source[item_col]
    r_items = r_grp.source[item_col]
    hashed = t_items.dtype == pl.String
    t_item = t_grp.taken("item", lambda: item_keys(t_items))
    r_item = r_grp.taken("item", lambda: item_keys(r_items))
    r_tie = np.zeros(0, dtype=np.int64)
    if ties is Ties.TREC:
        r_tie = r_grp.take(trec_tie_keys(r_items, item_keys(r_items)))

    plan_args = plan_arrays(ranking, threshold, t_rel, relevance_col)
    thr_idx = plan_args.thr_idx
    t_gain = plan_args.t_gain

    longest = max(
        int(np.diff(t_grp.offsets).max(initial=0)), int(np.diff(r_grp.offsets).max(initial=0))
    )
    log2p = np.log2(np.arange(2, longest + 3, dtype=np.float64))
    n_users = t_grp.n_users
    n_chunks = max(1, min(n_users // USERS_PER_CHUNK, numba.get_num_threads() * 16))
    pa = plan_args
    args = (
        t_grp.offsets, t_item, t_rel, t_gain, r_grp.offsets, r_item, r_score, r_tie, u2r,
        pa.thresholds, pa.ops, pa.ks, pa.thr_arr, pa.gain_idx, pa.fpar, log2p,
    )  # fmt: skip
    out, nrel, status, t_match = K.rank_users(args, ties.code, n_chunks)

    unmatched = np.ones(r_grp.n_users, dtype=np.bool_)
    unmatched[u2r[u2r >= 0]] = False
    others = np.flatnonzero(unmatched)
    other_dups = K.duplicate_groups(r_grp.offsets, r_item, others)

    exact = False
    if status.any() or other_dups.any():
        exact = check_duplicates(status, others[other_dups], t_grp, r_grp, u2r, ids, hashed)
    elif hashed:
        exact = not matches_verified(t_items, r_items, t_grp.rows, r_grp.rows, t_match)
    if exact:  # a 64-bit hash collision between distinct ids: redo with exact codes
        t_items, r_items = t_grp.column(item_col), r_grp.column(item_col)
        t_item, r_item = exact_item_keys(t_items, r_items)
        if ties is Ties.TREC:
            r_tie = trec_tie_keys(r_items, r_item)
        args = (*args[:1], t_item, *args[2:5], r_item, r_score, r_tie, *args[8:])
        out, nrel, status, t_match = K.rank_users(args, ties.code, n_chunks)
        other_dups = K.duplicate_groups(r_grp.offsets, r_item, others)
        if status.any() or other_dups.any():
            check_duplicates(status, others[other_dups], t_grp, r_grp, u2r, ids, False)

    has_recs = u2r >= 0
    evaluated = nrel[:, 0] >= 1
    counts = Counts(
        evaluated=int(evaluated.sum()),
        no_recs=int((evaluated & ~has_recs).sum()),
        no_relevant=int((~evaluated).sum()),
        recs_not_in_truth=int(r_grp.n_users - has_recs.sum()),
    )
    prep = Prepared(
        t_grp=t_grp, r_grp=r_grp, u2r=u2r, t_match=t_match, t_rel=t_rel, r_score=r_order,
        t_item=t_item, r_item=r_item, user_col=user_col, item_col=item_col,
        relevance_col=relevance_col, order_col=order_col, by_rank=by_rank, ties=ties,
        threshold=threshold, no_recs=no_recs, counts=counts, context=context,
    )  # fmt: skip
    return prep, KernelOutput(out, nrel, thr_idx, plan_args.ops)


def fpar(m: Metric) -> float:
    if m.name == "fbeta":
        return m.float_param("beta")
    if m.name == "f1":
        return 1.0
    if m.name == "map":
        return 1.0 if m.str_param("denominator") == "min" else 0.0
    if m.name in ("rbp", "rbp_residual"):
        return m.float_param("p")
    if m.name == "ndcg_k" and m.k is not None:  # the ideal DCG of K items of gain 1
        if m.k > NDCG_K_MAX:
            msg = (
                f"`k` of ndcg_k must be at most {NDCG_K_MAX:,} (its ideal DCG sums K terms); "
                f"got {m.k}."
            )
            raise MetricError(msg)
        return float(np.sum(1.0 / np.log2(np.arange(2, m.k + 2, dtype=np.float64))))
    return 0.0


NDCG_K_MAX = 10_000_000


def matches_verified(
    t_items: pl.Series,
    r_items: pl.Series,
    t_rows: Callable[[np.ndarray], np.ndarray],
    r_rows: Callable[[np.ndarray], np.ndarray],
    t_match: np.ndarray,
) -> bool:
    """True when every hash-key match joins equal item strings (``t_items`` / ``r_items``:
    the source columns; ``t_rows`` / ``r_rows`` map grouped rows to their source rows)."""
    rows = np.flatnonzero(t_match >= 0)
    if rows.size == 0:
        return True
    left = t_items.gather(t_rows(rows))
    right = r_items.gather(r_rows(t_match[rows]))
    return bool((left == right).all())


def _floats(series: pl.Series) -> np.ndarray:
    return column_array(float_column(series))


def check_duplicates(
    status: np.ndarray,
    other_groups: np.ndarray,
    t_grp: Grouped,
    r_grp: Grouped,
    u2r: np.ndarray,
    ids: list[str],
    hashed: bool,
) -> bool:
    """Raise on real duplicate (user, item) rows; return True when hash keys collided instead.

    ``status`` flags truth users (and, through them, their recs groups); ``other_groups``
    are flagged recs groups of users not in truth.
    """
    flagged = (
        ("truth", t_grp, np.flatnonzero(status == K.STATUS_DUP_TRUTH)),
        ("recs", r_grp, np.concatenate([u2r[status == K.STATUS_DUP_RECS], other_groups])),
    )
    for role, grp, groups in flagged:
        if groups.size == 0:
            continue
        users = grp.keys.gather(groups).implode()
        dup = pl.struct(ids).is_duplicated()
        found = grp.frame.filter(pl.col(ids[0]).is_in(users)).select(dup.sum()).item()
        if found == 0 and hashed:
            continue
        total = grp.source.select(dup.sum()).item()
        msg = (
            f"{role} has {total} duplicate (user, item) row(s); expected each item at most once "
            f"per user. First offending rows:\n{show_rows(grp.source, dup, grp.source.columns)}"
        )
        raise InputError(msg)
    return True


def ranking_part(
    plan: tuple[Metric, ...], prep: Prepared, kernel: KernelOutput, lists: bool = True
) -> Part:
    """Means and per-user values of the ranking metrics from the kernel's output.

    ``lists``: the recs are lists as given (a table), whose metrics without a cutoff are
    checked for lists cut at a common length (:class:`ListLengths`); False for a model's
    exact ranks over the whole ranking."""
    out, nrel, thr_idx, ops = kernel.out, kernel.nrel, kernel.thr_idx, kernel.ops
    counts, t_grp, u2r = prep.counts, prep.t_grp, prep.u2r
    user_col, no_recs = prep.user_col, prep.no_recs
    has_recs = u2r >= 0
    shard = prep.context.shard
    if counts.evaluated == 0 and not shard:
        raise InputError(no_evaluated_message(prep.threshold))
    in_any = (nrel[:, thr_idx] >= 1).any(axis=1)
    if no_recs is NoRecs.RAISE and (in_any & ~has_recs).any():
        missing = t_grp.keys.filter(pl.Series(in_any & ~has_recs))
        msg = (
            f"{missing.len()} evaluated user(s) have no recommendations (no_recs='raise'), "
            f"e.g. {missing.head(5).to_list()}; use no_recs='zero' to score them 0 or 'skip'."
        )
        raise InputError(msg)

    # means are exactly rounded sums (kernels.exact.total_of, the value of math.fsum at
    # kernel speed): no mean depends on the order of users
    columns: dict[str, np.ndarray] = {}
    means: dict[str, float] = {}
    sums: dict[str, tuple[np.ndarray, np.ndarray | int]] = {}
    keep = in_any & has_recs if no_recs is NoRecs.SKIP else in_any
    for j, m in enumerate(plan):
        den = nrel[:, thr_idx[j]]
        values = out[:, j]
        counted = den >= 1
        if no_recs is NoRecs.SKIP:
            counted &= has_recs
            values = np.where(has_recs, values, np.nan)
        if ops[j] == K.OP_HITS:
            total = den[counted].sum()
            means[m.canonical] = total_of(values[counted]) / float(total) if total else math.nan
            sums[m.canonical] = (values[counted], int(total))
            values = values / np.where(den > 0, den, 1.0)
        else:
            n_counted = int(counted.sum())
            means[m.canonical] = total_of(values[counted]) / n_counted if n_counted else math.nan
            sums[m.canonical] = (values[counted], n_counted)
        if not counted.any():
            warnings.warn(f"no user is evaluated by {m.canonical}; its mean is NaN.", stacklevel=3)
        columns[m.canonical] = values

    frame = per_user_frame(t_grp.keys, np.flatnonzero(keep), columns, user_col)
    whole_list = tuple(m.canonical for m in plan if m.k is None and m.sampling is None)
    states: dict[str, GlobalState] = {}
    if whole_list and lists:
        states[ListLengths.KEY] = ListLengths.of(whole_list, prep)
    return Part(means, frame, sums=sums, states=states)


@dataclass
class ListLengths(GlobalState):
    """Whether the recommendation lists look cut at a common length: a top-K table read as
    if each list were the model's whole ranking (issue #29: ``mrr`` from a top-100 table is
    ``mrr@100``; the model gives the full ranking's value).

    The lists of truth users are cut at ``L`` when ``L`` is the longest, at least
    :attr:`MIN_LISTS` (10) lists and at least half of them have exactly ``L`` items (a few
    users' lists of one length are chance), and some of those miss a relevant
    truth item (which, ranked past ``L`` in the full ranking, counts here as never
    recommended). Lists that hold every relevant item (each user's sampled candidates ranked
    in full, say) are not cut: the metrics are then exact. Merged exactly over blocks of
    users (the longest length, and the lists at it). :meth:`finish` records it in the
    details of every metric without a cutoff (``lists_cut_at``, ``lists_at_cut``, ``lists``,
    ``at_cut_missing_relevant``) and warns once.
    """

    KEY = "ranking_list_lengths"
    MIN_LISTS = 10
    metrics: tuple[str, ...]
    longest: int = 0
    at_longest: int = 0  # lists of exactly ``longest`` items
    missing: int = 0  # of those, the lists that miss a relevant truth item
    lists: int = 0
    warned: bool = False

    @staticmethod
    def of(metrics: tuple[str, ...], prep: Prepared) -> ListLengths:
        """The lengths of the lists of ``prep``'s truth users (vectorised, no user loop)."""
        has = np.flatnonzero(prep.u2r >= 0)
        if has.size == 0:
            return ListLengths(metrics)
        r_off = prep.r_grp.offsets
        length = r_off[prep.u2r[has] + 1] - r_off[prep.u2r[has]]
        longest = int(length.max())
        at = has[length == longest]
        t_off = prep.t_grp.offsets
        unranked = (prep.t_match < 0) & (prep.t_rel >= prep.threshold)
        # each truth user's relevant rows not in its list, summed by group (cumulative sums)
        ends = np.concatenate([[0], np.cumsum(unranked, dtype=np.int64)])
        missing = ends[t_off[at + 1]] - ends[t_off[at]]
        return ListLengths(metrics, longest, int(at.size), int((missing > 0).sum()), int(has.size))

    def merge(self, other: ListLengths) -> ListLengths:
        if other.longest > self.longest:
            self.longest, self.at_longest, self.missing = (
                other.longest, other.at_longest, other.missing,
            )  # fmt: skip
        elif other.longest == self.longest:
            self.at_longest += other.at_longest
            self.missing += other.missing
        self.lists += other.lists
        return self

    @property
    def cut(self) -> bool:
        """Whether the lists look cut at :attr:`longest` (see the class)."""
        return (
            self.longest >= 1
            and self.at_longest >= self.MIN_LISTS
            and 2 * self.at_longest >= self.lists
            and self.missing >= 1
        )

    def finish(self, metric: Metric, info: dict[str, Any]) -> float | None:
        if not self.cut:
            return None
        info.update(
            lists_cut_at=self.longest, lists_at_cut=self.at_longest, lists=self.lists,
            at_cut_missing_relevant=self.missing,
        )  # fmt: skip
        if not self.warned:
            self.warned = True
            names = ", ".join(self.metrics)
            cut = ", ".join(f"{n}@{self.longest}" for n in self.metrics)
            are = "is" if len(self.metrics) == 1 else "are"
            warnings.warn(
                f"{self.at_longest} of the {self.lists} truth users' recommendation lists have "
                f"exactly {self.longest} items, the longest, and {self.missing} of them miss a "
                f"relevant item: the lists look cut at {self.longest} (a top-{self.longest} "
                f"table), so {names} {are} really {cut} (a relevant item ranked past "
                f"{self.longest} counts as never recommended). Name the cutoff to say so, or "
                "evaluate the model itself (receval.FactorModel, receval.ScoreModel) for the "
                "exact value over the whole ranking; result.details records it.",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
        return None
