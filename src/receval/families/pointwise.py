"""Pointwise metrics through :func:`receval.evaluate`: classification (AUC, GAUC, average
precision, log loss, thresholded rates) and rating prediction (MAE, MSE, RMSE, NMAE, R²).

Classification rows are the recs rows: a row's label is 1 when its item is in the user's truth
with relevance >= the metric's threshold (items absent from truth are 0), its score is the recs
score. Rating rows are the truth rows: the true rating is truth's relevance, the prediction is
the recs score of the same (user, item). Both read the :class:`~receval.families.contract.Prepared`
layout that :func:`~receval.evaluate` builds once (``t_match`` joins truth rows to recs rows);
the arithmetic is in :mod:`receval.arrays.classification` and :mod:`receval.arrays.rating`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from receval._errors import InputError, UndefinedMetricWarning
from receval.arrays import classification as C
from receval.arrays import rating as R
from receval.data.layout import show_rows
from receval.families.contract import NoRecs, Part, Prepared, per_user_frame
from receval.families.states import (
    COMPACT,
    GlobalState,
    compact_expansions,
    counts_matrix,
    state_rows,
    sum_by_key,
)
from receval.kernels import classification as KC
from receval.kernels import rating as KR
from receval.kernels.exact import parts_weighted, total
from receval.metrics.specs import Metric

__all__ = [
    "ConfusionCounts",
    "RatingRows",
    "ScoreHistogram",
    "classification_part",
    "labelled",
    "rating_part",
]


def labelled(prep: Prepared) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The classification rows of the layout ``prep``: (labels, scores, users), as
    :func:`receval.engines.local.labelled_rows` describes."""
    labels, _ = _labels(prep, prep.threshold)
    in_truth = _in_truth(prep)
    all_sizes = np.diff(prep.r_grp.offsets)
    sizes = all_sizes[in_truth]
    keep = np.repeat(in_truth, all_sizes)
    users = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    scores = np.ascontiguousarray(prep.r_score[keep], dtype=np.float64)
    return np.ascontiguousarray(labels[keep]), scores, users


def _labels(prep: Prepared, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Labels of the recs rows at ``threshold`` and the mask of relevant truth rows."""
    relevant = prep.t_rel >= threshold
    labels = np.zeros(prep.r_score.shape[0], dtype=np.int8)
    matched = prep.t_match[relevant & (prep.t_match >= 0)]
    labels[matched] = 1
    return labels, relevant


def warn_nan(name: str, why: str) -> None:
    warnings.warn(f"{name} is undefined ({why}); its value is NaN.", UndefinedMetricWarning, 4)


def classification_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means (and per-user values for ``gauc``) of the classification metrics.

    See the module docstring for the rows and labels; details per metric: ``rows``,
    ``positives``, ``truth_rows_without_score`` (truth rows with no recs row: not scored) and
    ``positives_without_score`` (those of them that are relevant), plus the confusion counts
    of thresholded metrics and the users used / skipped by ``gauc``.
    """
    if prep.by_rank:
        names = ", ".join(m.canonical for m in plan)
        msg = (
            f"classification metrics ({names}) need scores, not ranks: recs were given with "
            f"rank_col={prep.order_col!r}. Pass score_col= instead."
        )
        raise InputError(msg)
    # users in recs but not in truth are left out of accuracy metrics (docs/metrics.md, "Users")
    in_truth = _in_truth(prep)
    groups = np.flatnonzero(in_truth)
    sizes = np.diff(prep.r_grp.offsets)
    keep = None if groups.size == prep.r_grp.n_users else np.repeat(in_truth, sizes)
    scores = np.ascontiguousarray(prep.r_score, dtype=np.float64)
    if keep is not None:
        scores = scores[keep]
    offsets = np.zeros(groups.size + 1, dtype=np.int64)
    np.cumsum(sizes[groups], out=offsets[1:])
    n_rows = scores.shape[0]
    left_out = int(prep.r_score.shape[0] - n_rows)
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    columns: dict[str, np.ndarray] = {}
    part = Part(means, None, details)
    shard = prep.context.shard
    cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    sorted_cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    ranked: dict[str, tuple[float, np.ndarray]] = {}  # a shard's auc / average_precision
    for m in plan:
        threshold = prep.threshold_of(m)
        if threshold not in cache:
            labels, relevant = _labels(prep, threshold)
            cache[threshold] = (labels if keep is None else labels[keep], relevant)
            if prep.no_recs is NoRecs.RAISE:
                raise_no_recs(prep, cache[threshold][1], m)
        labels, relevant = cache[threshold]
        n_pos = int(np.count_nonzero(labels))
        info: dict[str, Any] = {
            "rows": n_rows,
            "positives": n_pos,
            "truth_rows_without_score": int(np.count_nonzero(prep.t_match < 0)),
            "positives_without_score": int(np.count_nonzero(relevant & (prep.t_match < 0))),
            "rows_of_users_not_in_truth": left_out,
        }
        name = m.name
        if shard and m.spec.ranks_rows:
            # a global sort over every shard's rows: a histogram of scores, merged (below)
            ranked[m.canonical] = (threshold, labels)
            details[m.canonical] = info
            continue
        if shard and name == "logloss":
            _check_probabilities(prep, m)
            part.sums[m.canonical] = (C.log_loss_parts(labels, scores), n_rows)
            details[m.canonical] = info
            continue
        if name == "auc":
            need_classes(m, n_pos, n_rows, threshold)
            if threshold not in sorted_cache:
                sorted_cache[threshold] = KC.sorted_class_keys(labels, scores)
            value = C.auc_from_sorted(*sorted_cache[threshold])
        elif name == "average_precision":
            need_classes(m, n_pos, n_rows, threshold, negatives=False)
            value = C.average_precision(labels, scores)
        elif name == "logloss":
            _check_probabilities(prep, m)
            value = C.log_loss_of(labels, scores)
        elif name == "gauc":
            value, column, used, skipped, sums = _gauc(m, offsets, labels, scores)
            columns[m.canonical] = column
            part.sums[m.canonical] = sums
            info.update(users_used=used, users_skipped=skipped)
        elif m.spec.thresholded:
            cut = m.float_param("threshold")
            cm = C.confusion_counts(labels, scores, cut)
            info.update(tp=cm.tp, fp=cm.fp, fn=cm.fn, tn=cm.tn)
            if shard:
                part.states[m.canonical] = ConfusionCounts((m.canonical,), cm)
                details[m.canonical] = info
                continue
            value = thresholded(m, cm)
        else:  # pragma: no cover - the registry's classification family is covered above
            msg = f"no kernel for classification metric {m.canonical}"
            raise InputError(msg)
        means[m.canonical] = value
        details[m.canonical] = info

    if ranked:
        part.states["scored"] = ScoreHistogram.of_metrics(ranked, scores)
    if columns:
        kept = prep.r_grp.keys.gather(groups)
        part.per_user = per_user_frame(kept, np.arange(groups.size), columns, prep.user_col)
    return part


def raise_no_recs(prep: Prepared, relevant: np.ndarray, m: Metric) -> None:
    """no_recs='raise': an evaluated truth user (one with a relevant item) has no recs."""
    t_off = prep.t_grp.offsets
    counts = np.add.reduceat(relevant.astype(np.int64), t_off[:-1])
    missing = (counts > 0) & (prep.u2r < 0)
    if missing.any():
        users = prep.t_grp.keys.filter(pl.Series(missing))
        msg = (
            f"{users.len()} evaluated user(s) have no recommendations (no_recs='raise'), "
            f"e.g. {users.head(5).to_list()}; {m.canonical} would not see their relevant items. "
            "Use no_recs='zero' or 'skip' to leave their truth rows unscored (they are counted "
            "in the result's details)."
        )
        raise InputError(msg)


def need_classes(
    m: Metric, n_pos: int, n_rows: int, threshold: float, *, negatives: bool = True
) -> None:
    if n_pos == 0 or (negatives and n_pos == n_rows):
        only = "0 (no recommended item is relevant" if n_pos == 0 else "1 (every one is relevant"
        msg = (
            f"{m.canonical} is undefined on these rows: every one of the {n_rows} recs rows is "
            f"labelled {only} at relevance >= {threshold:g}); expected both labels. Check "
            "relevance_col and the threshold (rel=)."
        )
        raise InputError(msg)


def _check_probabilities(prep: Prepared, m: Metric) -> None:
    col = prep.order_col
    bad = int(np.count_nonzero((prep.r_score < 0) | (prep.r_score > 1)))
    if bad:
        source = prep.r_grp.source
        mask = (pl.col(col) < 0) | (pl.col(col) > 1)
        msg = (
            f"{m.canonical} needs probabilities: recs column {col!r} has {bad} score(s) outside "
            f"[0, 1]; log loss never clips silently. First offending rows:\n"
            f"{show_rows(source, mask, source.columns)}"
        )
        raise InputError(msg)


def _in_truth(prep: Prepared) -> np.ndarray:
    """For each recs group, whether its user is in truth."""
    found = np.zeros(prep.r_grp.n_users, dtype=np.bool_)
    found[prep.u2r[prep.u2r >= 0]] = True
    return found


def _gauc(
    m: Metric, offsets: np.ndarray, labels: np.ndarray, scores: np.ndarray
) -> tuple[float, np.ndarray, int, int, tuple[np.ndarray, np.ndarray]]:
    """GAUC's value, per-user AUCs, users used and skipped, and its mean as (w * auc, w)."""
    rows, positives, auc_u = KC.grouped_pair_counts(offsets, labels, scores)
    weight = m.str_param("weight")
    value, used, skipped = C.gauc_from_groups(auc_u, rows, positives, weight)
    if not used:
        warn_nan(m.canonical, "no user has both a relevant and a non-relevant recommended item")
    ok = ~np.isnan(auc_u)
    w = C.gauc_weights(rows[ok], positives[ok], weight)
    return value, auc_u, used, skipped, (w * auc_u[ok], w)


def thresholded(m: Metric, cm: C.ConfusionMatrix) -> float:
    name = m.canonical
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # re-raised below by name
        value = {
            "accuracy": lambda: cm.accuracy,
            "ppv": lambda: cm.precision,
            "tpr": lambda: cm.tpr,
            "fpr": lambda: cm.fpr,
            "tnr": lambda: cm.tnr,
            "fbeta_score": lambda: cm.fbeta(m.float_param("beta")),
        }[m.name]()
    if math.isnan(value):
        warn_nan(name, f"0/0 with TP={cm.tp}, FP={cm.fp}, FN={cm.fn}, TN={cm.tn}")
    return value


# ---------------------------------------------------------------- classification states


def _split_sum(values: np.ndarray) -> int:
    """The exact sum of non-negative int64 ``values`` as a Python int (no int64 overflow:
    high and low 32-bit halves summed apart)."""
    v = np.asarray(values, dtype=np.int64)
    return int((v >> 32).sum()) * (1 << 32) + int((v & 0xFFFFFFFF).sum())


@dataclass
class ScoreHistogram(GlobalState):
    """``auc`` and ``average_precision`` over rows: each distinct score (ascending) with its
    positives and negatives at every relevance threshold ``j`` (``counts[:, j]`` and
    ``counts[:, n_thresholds + j]``). The exact pair counts of the AUC and the exact terms of
    AP's sum follow from it, equal to those of the sorted rows.

    Its rows are the histogram (``key`` a score); a distributed engine cuts them into
    disjoint score ranges (``spread="range"``): the first pass counts each range's pairs
    (every positive of a range beats every negative of the ranges below it), the second
    (``average_precision`` only) its AP terms, given the counts of the ranges above it.
    ``reads[i]`` is the threshold (bit) of ``metrics[i]``.
    """

    n_thresholds: int
    metrics: tuple[str, ...] = ()
    reads: tuple[int, ...] = ()
    levels: tuple[float, ...] = ()  # the relevance threshold of each bit (for messages)
    ap: bool = True  # whether a metric needs average precision's terms (a second pass)
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    _pending: list[ScoreHistogram] = field(default_factory=list, repr=False)
    _scored: list[tuple[int, int, int]] = field(default_factory=list, repr=False)
    _above: dict[float, list[tuple[int, int]]] = field(default_factory=dict, repr=False)
    _ap: list[np.ndarray] = field(default_factory=list, repr=False)

    spread: ClassVar[Literal["range", "hash"]] = "range"

    def __post_init__(self) -> None:
        if self.counts.shape != (self.scores.size, 2 * self.n_thresholds):
            self.counts = np.zeros((self.scores.size, 2 * self.n_thresholds), dtype=np.int64)

    @classmethod
    def of_rows(cls, scores: np.ndarray, bits: np.ndarray, n_thresholds: int) -> ScoreHistogram:
        """The state of scored rows: ``bits`` holds each row's label at threshold ``j`` in
        bit ``j``."""
        distinct, pos, neg = KC.bit_histogram(  # -0.0 and 0.0 are one score
            np.asarray(scores, dtype=np.float64), np.asarray(bits, dtype=np.int64), n_thresholds
        )
        counts = np.ascontiguousarray(np.hstack([pos.T, neg.T]), dtype=np.int64)
        return cls(n_thresholds, scores=distinct, counts=counts)

    @classmethod
    def of_metrics(
        cls, ranked: dict[str, tuple[float, np.ndarray]], scores: np.ndarray
    ) -> ScoreHistogram:
        """The state of a block's scored rows for the metrics ``ranked`` (canonical name ->
        its relevance threshold and the rows' labels at it)."""
        thresholds = list(dict.fromkeys(t for t, _ in ranked.values()))
        bits = np.zeros(scores.shape[0], dtype=np.int64)
        for t, labels in ranked.values():
            bits |= labels.astype(np.int64) << thresholds.index(t)
        state = cls.of_rows(scores, bits, len(thresholds))
        state.metrics = tuple(ranked)
        state.reads = tuple(thresholds.index(t) for t, _ in ranked.values())
        state.levels = tuple(thresholds)
        state.ap = any(name.startswith("average_precision") for name in ranked)
        return state

    def merge(self, other: ScoreHistogram) -> ScoreHistogram:
        """Add ``other``'s rows (in place; returns self). Merging is deferred and done in
        batches, so that many small blocks do not re-sort a large state each time."""
        if (other.n_thresholds, other.metrics, other.reads) != (
            self.n_thresholds, self.metrics, self.reads,
        ):  # fmt: skip
            msg = "score histograms of different metrics or thresholds cannot merge"
            raise ValueError(msg)
        self._pending.extend([other, *other._pending])
        other._pending = []
        if len(self._pending) >= COMPACT:
            self.compact()
        return self

    def compact(self) -> None:
        """Fold the pending states into the main arrays."""
        if not self._pending:
            return
        pieces = [self, *self._pending]
        self._pending = []
        self.scores, self.counts = sum_by_key(
            np.concatenate([p.scores for p in pieces]), np.vstack([p.counts for p in pieces])
        )

    @property
    def pos(self) -> np.ndarray:
        """Per threshold ``j``, the positives of each distinct score (``pos[j]``)."""
        self.compact()
        return self.counts[:, : self.n_thresholds].T

    @property
    def neg(self) -> np.ndarray:
        """Per threshold ``j``, the negatives of each distinct score (``neg[j]``)."""
        self.compact()
        return self.counts[:, self.n_thresholds :].T

    @property
    def nbytes(self) -> int:
        self.compact()
        return int(self.scores.nbytes + self.counts.nbytes)

    def rows(self) -> pl.DataFrame:
        self.compact()
        return state_rows(self.scores, self.counts)

    def detach(self) -> ScoreHistogram:
        return ScoreHistogram(self.n_thresholds, self.metrics, self.reads, self.levels, self.ap)

    def passes(self) -> int:
        return 2 if self.ap else 1

    def reduce_part(self, step: int, rows: pl.DataFrame) -> Any:
        """Pass 0: the range's lowest score and, per threshold, its positives, negatives and
        twice the pairs won inside it. Pass 1: per threshold, the expansion of AP's terms
        over the range."""
        t = self.n_thresholds
        scores, counts = sum_by_key(rows["key"].to_numpy(), counts_matrix(rows, 2 * t))
        pos, neg = counts[:, :t], counts[:, t:]
        if step == 0:
            twice = []
            for j in range(t):
                neg_below = np.cumsum(neg[:, j]) - neg[:, j]  # negatives of lower scores
                twice.append(_split_sum(pos[:, j] * (2 * neg_below + neg[:, j])))
            low = float(scores[0])
            return low, [int(x) for x in pos.sum(axis=0)], [int(x) for x in neg.sum(axis=0)], twice
        before = self._above[float(scores[0])]
        out = []
        for j in range(t):
            tps = np.cumsum(pos[::-1, j])  # rows scoring >= each distinct score, highest first
            fps = np.cumsum(neg[::-1, j])
            out.append(C.ap_terms(tps, fps, before[j][0], before[j][1]))
        return out

    def absorb(self, step: int, pieces: list[Any]) -> None:
        t = self.n_thresholds
        if step == 1:
            self._ap = [np.concatenate([np.zeros(0)] + [p[j] for p in pieces]) for j in range(t)]
            return
        ordered = sorted(pieces, key=lambda p: p[0])  # ranges hold disjoint score intervals
        self._scored = []
        for j in range(t):
            twice = neg_below = n_pos = 0
            for _, pos, neg, wins in ordered:  # one step per range, not per row
                twice += wins[j] + 2 * pos[j] * neg_below
                neg_below += neg[j]
                n_pos += pos[j]
            self._scored.append((twice, n_pos, neg_below))
        self._above = {}
        acc = [(0, 0)] * t
        for low, pos, neg, _ in reversed(ordered):
            self._above[low] = list(acc)
            acc = [(a + pos[j], b + neg[j]) for j, (a, b) in enumerate(acc)]
        self._ap = [np.zeros(0) for _ in range(t)]

    def totals(self) -> tuple[list[tuple[int, int, int]], list[np.ndarray]]:
        """Per threshold: (twice the (positive, negative) pairs won, a tie counting one;
        positives; negatives), and the expansion of average precision's sum: the values
        that sorting every row would give (all the rows, reduced here)."""
        self.reduce_whole()
        if not self._scored:  # no row
            self.absorb(0, [])
        return self._scored, self._ap

    def finish(self, metric: Metric, info: dict[str, Any]) -> float:
        j = self.reads[self.metrics.index(metric.canonical)]
        if not self._scored:
            self.absorb(0, [])
        twice, n_pos, n_neg = self._scored[j]
        threshold = self.levels[j]
        if metric.name == "auc":
            need_classes(metric, n_pos, n_pos + n_neg, threshold)
            return C.auc_value(twice, n_pos, n_neg)
        need_classes(metric, n_pos, n_pos + n_neg, threshold, negatives=False)
        return total(self._ap[j]) / n_pos


@dataclass
class ConfusionCounts(GlobalState):
    """A thresholded rate (``ppv``, ``tpr``, ``accuracy`` ...): its confusion counts."""

    metrics: tuple[str, ...]
    cm: C.ConfusionMatrix

    def merge(self, other: ConfusionCounts) -> ConfusionCounts:
        a, b = self.cm, other.cm
        self.cm = replace(a, tp=a.tp + b.tp, fp=a.fp + b.fp, fn=a.fn + b.fn, tn=a.tn + b.tn)
        return self

    def finish(self, metric: Metric, info: dict[str, Any]) -> float:
        return thresholded(metric, self.cm)


# ------------------------------------------------------------------------------- rating


def rating_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means (and per-user values for ``average=user``) of the rating metrics.

    Rows are the truth rows; the prediction is the recs score of the same (user, item).
    Truth rows without a recs row follow ``no_recs``: ``"zero"`` predicts 0 (with a warning),
    ``"skip"`` leaves them out, ``"raise"`` raises; ``details[name]["missing_predictions"]``
    counts them either way. An infinite predicted rating is an :class:`InputError` (recs
    scores may be infinite for ranking, not here), and so is a true rating outside an explicit
    ``rating_range`` when ``nmae`` is asked for. Sums beyond float64 are inf
    (:mod:`receval.arrays.rating`), per user too.
    """
    names = ", ".join(m.canonical for m in plan)
    if prep.by_rank:
        msg = (
            f"rating metrics ({names}) need predicted ratings in a score column, not ranks: "
            f"recs were given with rank_col={prep.order_col!r}. Pass score_col= instead."
        )
        raise InputError(msg)
    if prep.context.has_relevance is False:
        msg = (
            f"rating metrics ({names}) need true ratings: truth has no relevance column. Pass "
            "relevance_col= to name the column that holds the ratings."
        )
        raise InputError(msg)
    y = prep.t_rel
    match = prep.t_match
    missing = match < 0
    n_missing = int(np.count_nonzero(missing))
    if prep.r_score.shape[0]:
        pred = np.where(missing, 0.0, prep.r_score[np.where(missing, 0, match)])
    else:  # a shard of users without any recs row
        pred = np.zeros(match.shape[0], dtype=np.float64)
    infinite = ~np.isfinite(pred)  # recs scores are never NaN (read_table refuses them)
    if infinite.any():
        _raise_infinite(prep, match[infinite], names)
    user_of_row = np.repeat(
        np.arange(prep.t_grp.n_users, dtype=np.int64), np.diff(prep.t_grp.offsets)
    )
    shard = prep.context.shard
    if n_missing:
        if prep.no_recs is NoRecs.RAISE:
            _raise_missing(prep, missing, names)
        if prep.no_recs is NoRecs.ZERO:
            warnings.warn(
                f"{n_missing} truth row(s) have no predicted rating (no recs row for the same "
                f"user and item); {names} take the prediction as 0 (no_recs='zero'). Use "
                "no_recs='skip' to leave them out.",
                UserWarning,
                stacklevel=4,
            )
    keep = ~missing if (prep.no_recs is NoRecs.SKIP and n_missing) else None
    if keep is not None:
        y, pred, user_of_row = y[keep], pred[keep], user_of_row[keep]
    y = np.ascontiguousarray(y, dtype=np.float64)
    pred = np.ascontiguousarray(pred, dtype=np.float64)

    range_given = prep.context.rating_range
    observed = prep.context.observed_range  # a shard: truth's range over every shard
    if range_given is not None:
        lo, hi = R.check_range(tuple(range_given))
    elif observed is not None:
        lo, hi = observed
    elif prep.t_rel.size:
        lo, hi = float(prep.t_rel.min()), float(prep.t_rel.max())
    else:  # a shard without truth rows, and no nmae (which gets the observed range)
        lo, hi = math.nan, math.nan
    if range_given is not None and any(m.spec.uses_rating_range for m in plan):
        _check_in_range(prep, tuple(range_given), lo, hi)
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    columns: dict[str, np.ndarray] = {}
    part = Part(means, None, details)
    global_sums: np.ndarray | None = None
    user_sums: np.ndarray | None = None
    for m in plan:
        width = R.rating_width(lo, hi) if m.spec.uses_rating_range else math.nan
        info: dict[str, Any] = {"rows": int(y.shape[0]), "missing_predictions": n_missing}
        if m.spec.uses_rating_range:
            info["rating_range"] = [lo, hi]
        if shard and m.is_global():
            # exact sums over every shard's rows; SS_tot needs the mean of all of them first
            if "rating" not in part.states:
                part.states["rating"] = RatingRows.of_rows(y, pred)
            state = part.states["rating"]
            assert isinstance(state, RatingRows)
            state.metrics += (m.canonical,)
            details[m.canonical] = info
            continue
        if y.shape[0] == 0 and not shard:
            means[m.canonical] = math.nan
            warn_nan(m.canonical, "no truth row has a predicted rating")
            details[m.canonical] = info
            continue
        if m.is_global():
            if global_sums is None:
                global_sums = R.global_sums(y, pred)[None, :]
            values, undefined = R.values_from_sums(m.name, global_sums, width)
            means[m.canonical] = float(values[0])
            if undefined and m.name == "r2":
                overflow = R.sstot_overflows(global_sums)
                warn_nan(m.canonical, R.r2_reason(undefined - overflow, overflow))
        else:
            if user_sums is None:
                offsets = np.zeros(prep.t_grp.n_users + 1, dtype=np.int64)
                np.cumsum(np.bincount(user_of_row, minlength=prep.t_grp.n_users), out=offsets[1:])
                order = np.arange(y.shape[0], dtype=np.int64)
                user_sums = KR.group_sums(offsets, order, y, pred)
            values, undefined = R.values_from_sums(m.name, user_sums, width)
            defined = values[~np.isnan(values)]
            means[m.canonical] = R.mean_of(defined)
            part.sums[m.canonical] = (defined, int(defined.size))
            info["users"] = int(np.count_nonzero(user_sums[:, 0] > 0))
            if m.name == "r2":
                info["users_skipped"] = undefined
                if undefined:
                    overflow = R.sstot_overflows(user_sums)
                    warnings.warn(
                        f"{m.canonical}: {undefined} user(s) have an undefined r2 ("
                        f"{R.r2_reason(undefined - overflow, overflow)}); null, and left out of "
                        "the mean.",
                        UndefinedMetricWarning,
                        stacklevel=4,
                    )
            scale = m.spec.uses_rating_range  # a scale of zero width has warned already
            if math.isnan(means[m.canonical]) and not defined.size and not scale:
                warn_nan(m.canonical, "no user has a defined value")
            columns[m.canonical] = values
        details[m.canonical] = info

    if columns:
        assert user_sums is not None
        rows = np.flatnonzero(user_sums[:, 0] > 0)
        part.per_user = per_user_frame(prep.t_grp.keys, rows, columns, prep.user_col)
    return part


@dataclass
class RatingRows(GlobalState):
    """Rating metrics over rows (``mae``, ``mse``, ``rmse``, ``nmae``, ``r2``): the rows,
    the exact expansions of sum |e|, sum e² and sum y, and as rows the distinct true ratings
    with their counts (``key``, ``counts``): R²'s SS_tot is taken around the mean of every
    row, known once every block is merged (the small part), then summed over the ratings
    part by part (``spread="hash"``)."""

    metrics: tuple[str, ...] = ()
    n: int = 0
    sums: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] = field(
        default_factory=lambda: ([], [], [])
    )
    ys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    ns: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), dtype=np.int64))
    _pending: list[RatingRows] = field(default_factory=list, repr=False)
    _sstot: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @classmethod
    def of_rows(cls, y: np.ndarray, pred: np.ndarray) -> RatingRows:
        s_abs, s_sq, s_y = R.row_parts(y, pred)
        ys, ns = np.unique(y, return_counts=True)
        return cls((), int(y.shape[0]), ([s_abs], [s_sq], [s_y]), ys, ns.reshape(-1, 1))

    def merge(self, other: RatingRows) -> RatingRows:
        if other.metrics != self.metrics:
            msg = "rating states of different metrics cannot merge"
            raise ValueError(msg)
        self.n += other.n
        for mine, theirs in zip(self.sums, other.sums, strict=True):
            mine.extend(theirs)
        self._pending.extend([other, *other._pending])
        other._pending = []
        if len(self._pending) >= COMPACT:
            self.compact()
        return self

    def compact(self) -> None:
        for expansions in self.sums:
            expansions[:] = compact_expansions(expansions)
        if self._pending:
            pieces = [self, *self._pending]
            self._pending = []
            self.ys, self.ns = sum_by_key(
                np.concatenate([p.ys for p in pieces]), np.vstack([p.ns for p in pieces])
            )

    def rows(self) -> pl.DataFrame:
        self.compact()
        return state_rows(self.ys, self.ns)

    def detach(self) -> RatingRows:
        self.compact()
        return RatingRows(self.metrics, self.n, tuple(list(e) for e in self.sums))  # type: ignore[arg-type]

    def passes(self) -> int:
        return 1

    def mean(self) -> float:
        """The mean true rating over every rated row (SS_tot is taken around it)."""
        return total(np.concatenate([np.zeros(0), *self.sums[2]])) / self.n if self.n else 0.0

    def reduce_part(self, step: int, rows: pl.DataFrame) -> np.ndarray:
        """The expansion of SS_tot = sum (y - mean)² over the ratings of one part."""
        ys, ns = sum_by_key(rows["key"].to_numpy(), counts_matrix(rows, 1))
        d = np.asarray(ys, dtype=np.float64) - self.mean()
        return parts_weighted(d * d, ns[:, 0])

    def absorb(self, step: int, pieces: list[Any]) -> None:
        self._sstot = np.concatenate([np.zeros(0), *pieces])

    def finish(self, metric: Metric, info: dict[str, Any]) -> float:
        if self.n == 0:
            return math.nan
        s_abs, s_sq = (np.concatenate([np.zeros(0), *e]) for e in self.sums[:2])
        sums = R.sums_from_parts(self.n, s_abs, s_sq, self._sstot)[None, :]
        width = math.nan
        if metric.spec.uses_rating_range:
            lo, hi = info["rating_range"]
            width = R.rating_width(lo, hi)
        values, _ = R.values_from_sums(metric.name, sums, width)
        return float(values[0])


def _raise_infinite(prep: Prepared, recs_rows: np.ndarray, names: str) -> None:
    """Infinite predicted ratings (``recs_rows``: their rows in ``prep.r_grp.frame``)."""
    ids = [prep.user_col, prep.item_col]
    col = prep.order_col
    pairs = prep.r_grp.frame[recs_rows].select(ids)
    source = prep.r_grp.source
    rows = (
        source.select(ids).with_row_index("__row").join(pairs, on=ids, how="semi")["__row"]
    ).to_numpy()
    mask = pl.Series(np.isin(np.arange(source.height), rows))
    msg = (
        f"recs has {recs_rows.size} non-finite value(s) in column {col!r} (predicted ratings "
        f"of {names}); expected finite numbers (infinite scores are allowed for ranking "
        f"metrics only). First offending rows:\n{show_rows(source, mask, source.columns)}"
    )
    raise InputError(msg)


def _check_in_range(prep: Prepared, given: tuple[Any, ...], lo: float, hi: float) -> None:
    """Every true rating lies in the explicit ``rating_range`` (predictions may lie outside)."""
    outside = (prep.t_rel < lo) | (prep.t_rel > hi)
    if outside.any():
        col = prep.relevance_col
        source = prep.t_grp.source
        mask = (pl.col(col) < lo) | (pl.col(col) > hi)
        msg = (
            f"truth has {int(np.count_nonzero(outside))} rating(s) in column {col!r} outside "
            f"rating_range={given!r}; expected true ratings on the scale [r_min, r_max] "
            "(predictions may lie outside it). First offending rows:\n"
            f"{show_rows(source, mask, source.columns)}"
        )
        raise InputError(msg)


def _raise_missing(prep: Prepared, missing: np.ndarray, names: str) -> None:
    ids = [prep.user_col, prep.item_col]
    pairs = prep.t_grp.frame.filter(pl.Series(missing)).select(ids)
    source = prep.t_grp.source
    rows = (
        source.select(ids).with_row_index("__row").join(pairs, on=ids, how="semi")["__row"]
    ).to_numpy()
    mask = np.zeros(source.height, dtype=np.bool_)
    mask[rows] = True
    msg = (
        f"{int(missing.sum())} truth row(s) have no predicted rating (no recs row for the same "
        f"user and item; no_recs='raise'), so {names} cannot be computed. First offending "
        f"truth rows:\n{show_rows(source, pl.Series(mask), source.columns)}\n"
        "Use no_recs='zero' to predict 0 for them or 'skip' to leave them out."
    )
    raise InputError(msg)
