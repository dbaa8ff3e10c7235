"""Evaluation in shards of users, merged exactly: the engine-neutral half of distributed
evaluation (the Spark engine, :mod:`receval.engines.spark`, moves the data; this module computes).

A *shard* holds every truth and recs row of some users. :func:`run_shard` evaluates it with
the local engine's own code (:func:`~receval.families.ranking.prepare` and each family's part, in
shard mode), so no per-user metric exists twice. What it returns merges exactly:

* per-user rows: shards hold disjoint users, so the per-user frame is their union;
* means of per-user metrics: each part says which terms its mean sums and over what
  (:attr:`~receval.families.contract.Part.sums`); a shard sends their exact expansions
  (:mod:`receval.kernels.exact`) and the merge rounds once, so the mean is the local engine's to
  the last bit;
* counts, confusion counts and row counts: integers;
* global metrics, which no shard can finish alone:

  - ``auc`` and ``average_precision``: the scored rows (score and a bit per relevance
    threshold) go to a sort by score in ranges (:func:`scored_partition` on each range,
    :func:`combine_scored` across them): exact integer pair counts, exact AP sums;
  - ``logloss`` and rating metrics averaged over rows: exact expansions, and for R²'s
    SS_tot the histogram of true ratings around the merged mean (:func:`sstot_parts`);
  - ``coverage``, ``gini``, ``entropy`` (and items absent from train): exposure counts per
    catalog item, summed by item, then a histogram (:func:`~receval.families.beyond.global_value`).

Global context (the catalog, train popularity, the item table, truth's rating range) is
computed once over all the data by :func:`build_context` from an engine's :class:`Sources`
and given to every shard. :func:`evaluate_sharded` runs the whole scheme in one process:
the reference the Spark engine is tested against, and a test of the scheme itself.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError, UndefinedMetricWarning
from receval.arrays import classification as C
from receval.arrays import rating as R
from receval.data.io import Inputs
from receval.families import beyond as B
from receval.families.contract import (
    NoRecsPolicy,
    Part,
    TiesPolicy,
    check_inputs,
    check_policies,
    check_threshold,
    join_per_user,
    no_evaluated_message,
    warn_unused_relevance,
)
from receval.families.pointwise import need_classes, thresholded
from receval.families.providers import PARTS
from receval.families.ranking import prepare, ranking_part
from receval.families.states import compact_expansions
from receval.kernels.exact import parts, parts_weighted, total
from receval.metrics.registry import Metric, parse_metrics
from receval.metrics.result import Counts, Result

__all__ = [
    "Merger",
    "ShardOutput",
    "ShardSpec",
    "Sources",
    "build_context",
    "combine_scored",
    "evaluate_sharded",
    "per_user_metrics",
    "run_shard",
    "scored_partition",
    "sstot_parts",
]

_CONSTANT_DETAILS = {
    "catalog", "catalog_size", "similarity", "train_users", "head_items", "head_share",
    "rating_range", "categories", "groups", "items_without_group",
}  # fmt: skip


def per_user_metrics(plan: tuple[Metric, ...]) -> list[str]:
    """Canonical names of the metrics in ``plan`` that have a per-user column."""
    return [m.canonical for m in plan if m.has_per_user()]


@dataclass(frozen=True)
class ShardSpec:
    """What every shard needs: the request, the options and the global context (pickled
    to Spark executors once per job)."""

    metrics: tuple[str, ...]
    user_col: str
    item_col: str
    order_col: str
    by_rank: bool
    relevance_col: str
    has_relevance: bool
    ties: TiesPolicy
    threshold: float
    no_recs: NoRecsPolicy
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def plan(self) -> tuple[Metric, ...]:
        return parse_metrics(self.metrics)

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "ties": self.ties, "relevance_threshold": self.threshold, "no_recs": self.no_recs,
            "relevance_col": self.relevance_col if self.has_relevance else None,
        }  # fmt: skip

    def thresholds(self) -> list[float]:
        """The relevance thresholds of the scored metrics (auc, average_precision), in order:
        bit ``j`` of a scored row's label bits is its label at ``thresholds()[j]``."""
        out: list[float] = []
        for m in self.plan:
            if m.spec.ranks_rows:
                value = m.threshold(self.threshold)
                if value not in out:
                    out.append(value)
        return out


@dataclass
class ShardOutput:
    """One shard's results. ``stats`` is small and picklable; the arrays hold rows."""

    per_user: pl.DataFrame
    stats: dict[str, Any]
    scored: tuple[np.ndarray, np.ndarray] | None = None  # (scores, label bits)
    exposure: dict[int | None, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )  # k -> (catalog codes, exposure, absent from train: 0/1)
    ratings: tuple[np.ndarray, np.ndarray] | None = None  # distinct true ratings, counts


def run_shard(spec: ShardSpec, truth: pl.DataFrame, recs: pl.DataFrame) -> ShardOutput:
    """Evaluate one shard (every row of its users, either side possibly empty).

    ``truth`` has columns ``user_col, item_col, relevance_col``; ``recs`` has ``user_col,
    item_col, order_col``; rows in input order. Warnings are left to the merge, which
    issues them once for all shards.
    """
    plan = spec.plan
    ranking = tuple(m for m in plan if m.spec.family == "ranking")
    options = {**spec.options, "_shard": True, "has_relevance": spec.has_relevance}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prep, kernel = prepare(
            truth, recs, ranking, user_col=spec.user_col, item_col=spec.item_col,
            score_col=spec.order_col, rank_col=spec.order_col if spec.by_rank else None,
            relevance_col=spec.relevance_col, ties=spec.ties,
            relevance_threshold=spec.threshold, no_recs=spec.no_recs, options=options,
        )  # fmt: skip
        parts_: list[Part] = []
        if ranking:
            parts_.append(ranking_part(ranking, prep, kernel))
        for family in ("classification", "rating", "beyond"):
            chosen = tuple(m for m in plan if m.spec.family == family)
            if not chosen or (family == "beyond" and prep.r_grp.n_users == 0):
                continue  # beyond metrics judge recs lists: a shard without any adds nothing
            parts_.append(PARTS[family](chosen, prep))

    columns = per_user_metrics(plan)
    frame = join_per_user(plan, parts_, prep)
    user_type = frame.schema[spec.user_col]
    present = set(frame.columns)  # a set: one lookup per metric, not a scan of the columns
    frame = frame.select(
        pl.col(spec.user_col),
        *[pl.col(c) if c in present else pl.lit(None, dtype=pl.Float64).alias(c) for c in columns],
    ).with_columns(pl.col(spec.user_col).cast(user_type))

    stats: dict[str, Any] = {
        "rows": [truth.height, recs.height],
        "counts": [
            prep.counts.evaluated, prep.counts.no_recs, prep.counts.no_relevant,
            prep.counts.recs_not_in_truth,
        ],
        "details": {},
        "sums": {},
        "logloss": {},
        "rating": None,
    }  # fmt: skip
    out = ShardOutput(frame, stats)
    scored: dict[float, np.ndarray] = {}
    scores: np.ndarray | None = None
    for part in parts_:
        stats["details"].update(part.details)
        for name, (terms, den) in part.sums.items():
            den_value: int | np.ndarray = den if isinstance(den, int) else parts(den)
            stats["sums"][name] = (parts(terms), den_value)
        for name, (kind, payload) in part.pending.items():
            if kind == "scored":
                threshold, labels, scores = payload
                scored[threshold] = labels
            elif kind == "logloss":
                stats["logloss"][name] = payload
            elif kind == "rating":
                n, s_abs, s_sq, s_y, ys, ns = payload
                stats["rating"] = (n, s_abs, s_sq, s_y)
                out.ratings = (ys, ns)
            elif kind == "exposure":
                k, exposure, absent = payload
                if k not in out.exposure or absent is not None:
                    codes = np.flatnonzero(exposure)
                    flags = np.zeros(codes.size) if absent is None else absent[codes]
                    out.exposure[k] = (
                        codes.astype(np.int64),
                        exposure[codes].astype(np.int64),
                        flags.astype(np.int64),
                    )
    if scored:
        assert scores is not None
        bits = np.zeros(scores.shape[0], dtype=np.int64)
        for j, t in enumerate(spec.thresholds()):
            bits |= scored[t].astype(np.int64) << j
        out.scored = (np.asarray(scores, dtype=np.float64) + 0.0, bits)  # -0.0 becomes 0.0
    return out


# --------------------------------------------------------------- global metrics, merged


def scored_partition(scores: np.ndarray, bits: np.ndarray, n_thresholds: int) -> dict[str, Any]:
    """Statistics of one range of scored rows (every row of each score it holds): its lowest
    score and, per threshold, positives, negatives and twice the pairs won inside it."""
    if scores.size == 0:
        return {"low": math.inf, "pos": [0] * n_thresholds, "neg": [0] * n_thresholds,
                "twice": [0] * n_thresholds}  # fmt: skip
    out: dict[str, Any] = {"low": float(scores.min()), "pos": [], "neg": [], "twice": []}
    for j in range(n_thresholds):
        labels = ((bits >> j) & 1).astype(np.int8)
        pos, neg = C.sorted_classes(labels, scores)
        out["pos"].append(int(pos.shape[0]))
        out["neg"].append(int(neg.shape[0]))
        out["twice"].append(C.auc_twice_wins(pos, neg))
    return out


def combine_scored(
    stats: Iterable[dict[str, Any]], n_thresholds: int
) -> list[tuple[int, int, int]]:
    """Per threshold: (twice the pairs won, positives, negatives) over every range.

    Ranges hold disjoint score intervals, so sorted by their lowest score, every positive of a
    range beats every negative of the ranges below it."""
    ordered = sorted(
        (s for s in stats if s["pos"] and s["low"] != math.inf), key=lambda s: s["low"]
    )
    out = []
    for j in range(n_thresholds):
        twice = 0
        neg_below = 0
        n_pos = 0
        for s in ordered:  # one step per range (partition), not per row
            twice += s["twice"][j] + 2 * s["pos"][j] * neg_below
            neg_below += s["neg"][j]
            n_pos += s["pos"][j]
        out.append((twice, n_pos, neg_below))
    return out


def above_counts(
    stats: Iterable[dict[str, Any]], n_thresholds: int
) -> dict[float, list[tuple[int, int]]]:
    """For each range (keyed by its lowest score): per threshold, the positives and negatives
    of the ranges above it (what average precision's range needs)."""
    ordered = sorted((s for s in stats if s["low"] != math.inf), key=lambda s: -s["low"])
    out: dict[float, list[tuple[int, int]]] = {}
    acc = [(0, 0)] * n_thresholds
    for s in ordered:
        out[s["low"]] = list(acc)
        acc = [(a + s["pos"][j], b + s["neg"][j]) for j, (a, b) in enumerate(acc)]
    return out


def ap_partition(
    scores: np.ndarray, bits: np.ndarray, j: int, before: tuple[int, int]
) -> np.ndarray:
    """The expansion of average precision's sum over one range at threshold ``j``, given the
    positives and negatives of the ranges above it."""
    if scores.size == 0:
        return np.zeros(0)
    labels = ((bits >> j) & 1).astype(np.int8)
    _, tps, fps, _, _ = C._threshold_counts(labels, scores)
    return C.ap_terms(tps, fps, before[0], before[1])


def sstot_parts(ys: np.ndarray, counts: np.ndarray, mean: float) -> np.ndarray:
    """The expansion of SS_tot = sum (y - mean)² from distinct true ratings and their counts."""
    d = np.asarray(ys, dtype=np.float64) - mean
    return parts_weighted(d * d, np.asarray(counts, dtype=np.int64))


class Merger:
    """Merges shards' small statistics, then finalises every mean into a :class:`Result`."""

    def __init__(self, spec: ShardSpec) -> None:
        self.spec = spec
        self.plan = spec.plan
        self.counts = [0, 0, 0, 0]
        self.rows = [0, 0]  # truth and recs rows seen by the shards
        self.details: dict[str, dict[str, Any]] = {}
        self.sums: dict[str, list[Any]] = {}
        self.logloss: dict[str, list[Any]] = {}
        self.rating: list[Any] | None = None
        # recs rows of truth users whose item the user has in train, and their users (None:
        # no train); counted by the engine over all the data, not by the shards
        self.in_train: tuple[int, int] | None = None

    def add(self, stats: dict[str, Any]) -> None:
        self.counts = [a + b for a, b in zip(self.counts, stats["counts"], strict=True)]
        self.rows = [a + b for a, b in zip(self.rows, stats["rows"], strict=True)]
        for name, info in stats["details"].items():
            into = self.details.setdefault(name, {})
            for key, value in info.items():
                if key not in into:
                    into[key] = value
                elif key not in _CONSTANT_DETAILS:
                    into[key] += value
        for name, (num, den) in stats["sums"].items():
            entry = self.sums.setdefault(name, [[], 0, []])
            entry[0].append(num)
            if isinstance(den, int):
                entry[1] += den
            else:
                entry[2].append(den)
        for name, (expansion, n) in stats["logloss"].items():
            entry = self.logloss.setdefault(name, [[], 0])
            entry[0].append(expansion)
            entry[1] += n
        if stats["rating"] is not None:
            n, s_abs, s_sq, s_y = stats["rating"]
            if self.rating is None:
                self.rating = [0, [], [], []]
            self.rating[0] += n
            for j, e in enumerate((s_abs, s_sq, s_y)):
                self.rating[j + 1].append(e)

    def merge(self, other: Merger) -> None:
        """Add the statistics ``other`` has merged (shards of other users), exactly."""
        self.add({
            "counts": other.counts, "rows": other.rows, "details": other.details,
            "sums": {}, "logloss": {}, "rating": None,
        })  # fmt: skip
        for name, (nums, n, dens) in other.sums.items():
            entry = self.sums.setdefault(name, [[], 0, []])
            entry[0] += nums
            entry[1] += n
            entry[2] += dens
        for name, (expansions, n) in other.logloss.items():
            entry = self.logloss.setdefault(name, [[], 0])
            entry[0] += expansions
            entry[1] += n
        if other.rating is not None:
            if self.rating is None:
                self.rating = [0, [], [], []]
            self.rating[0] += other.rating[0]
            for j in (1, 2, 3):
                self.rating[j] += other.rating[j]

    def compact(self) -> None:
        """One expansion per sum (their exact sum): memory stays constant however many
        shards are added."""
        for entry in self.sums.values():
            entry[0] = compact_expansions(entry[0])
            entry[2] = compact_expansions(entry[2])
        for entry in self.logloss.values():
            entry[0] = compact_expansions(entry[0])
        if self.rating is not None:
            for j in (1, 2, 3):
                self.rating[j] = compact_expansions(self.rating[j])

    def rating_mean(self) -> float:
        """The mean true rating over every rated row (SS_tot is taken around it)."""
        if self.rating is None or self.rating[0] == 0:
            return 0.0
        return total(np.concatenate(self.rating[3])) / int(self.rating[0])

    def result(
        self,
        per_user: pl.DataFrame,
        scored: list[tuple[int, int, int]] | None = None,
        ap: list[np.ndarray] | None = None,
        exposure: dict[int | None, tuple[np.ndarray, np.ndarray, int]] | None = None,
        sstot: np.ndarray | None = None,
    ) -> Result:
        """The Result. ``scored``/``ap`` per threshold of :meth:`ShardSpec.thresholds`;
        ``exposure[k]`` = (histogram values, counts, items exposed but absent from train);
        ``sstot`` the expansion of SS_tot around :meth:`rating_mean`."""
        spec = self.spec
        in_train = None if self.in_train is None else self.in_train[0]
        evaluated, no_recs, no_relevant, not_in_truth = self.counts
        counts = Counts(evaluated, no_recs, no_relevant, not_in_truth, recs_in_train=in_train)
        if self.in_train is not None:
            B.warn_in_train(*self.in_train, stacklevel=3)
        thresholds = spec.thresholds()
        means: dict[str, float] = {}
        ranking = [m for m in self.plan if m.spec.family == "ranking"]
        if ranking and counts.evaluated == 0:
            raise InputError(no_evaluated_message(spec.threshold))
        for m in self.plan:
            name = m.canonical
            info = self.details.setdefault(name, {})
            if name in self.sums:
                nums, n, dens = self.sums[name]
                den = total(np.concatenate(dens)) if dens else float(n)
                means[name] = total(np.concatenate(nums)) / den if den else math.nan
            elif m.spec.ranks_rows:
                assert scored is not None and ap is not None
                j = thresholds.index(m.threshold(spec.threshold))
                twice, n_pos, n_neg = scored[j]
                if m.name == "auc":
                    need_classes(m, n_pos, n_pos + n_neg, thresholds[j])
                    means[name] = C.auc_value(twice, n_pos, n_neg)
                else:
                    need_classes(m, n_pos, n_pos + n_neg, thresholds[j], negatives=False)
                    means[name] = total(ap[j]) / n_pos
            elif m.name == "logloss":
                expansions, n = self.logloss.get(name, [[], 0])
                means[name] = total(np.concatenate(expansions)) / n if n else math.nan
            elif "tp" in info:
                cm = C.ConfusionMatrix(
                    info["tp"],
                    info["fp"],
                    info["fn"],
                    info["tn"],
                    m.float_param("threshold"),
                )
                means[name] = thresholded(m, cm)
            elif m.spec.family == "rating":
                means[name] = self._rating_rows(m, info, sstot)
            elif m.spec.family == "beyond":
                assert exposure is not None
                values, hist, _ = exposure[m.k]
                means[name] = B.global_value(m.name, values, hist, int(info["catalog_size"]))
            else:  # pragma: no cover - every family's metrics are handled above
                msg = f"no merge for {name}"
                raise InputError(msg)
            if "not_in_train" in info and exposure is not None and m.k in exposure:
                info["not_in_train"] = exposure[m.k][2]
        self._warn(means)
        details = {k: v for k, v in self.details.items() if v}
        ordered = {m.canonical: means[m.canonical] for m in self.plan}
        return Result(self.plan, ordered, per_user, counts, spec.settings, details)

    def _rating_rows(self, m: Metric, info: dict[str, Any], sstot: np.ndarray | None) -> float:
        n = self.rating[0] if self.rating is not None else 0
        if n == 0 or self.rating is None:
            return math.nan
        sums = R.sums_from_parts(
            n, np.concatenate(self.rating[1]), np.concatenate(self.rating[2]),
            sstot if sstot is not None else np.zeros(0),
        )[None, :]  # fmt: skip
        width = math.nan
        if m.spec.uses_rating_range:
            lo, hi = info["rating_range"]
            width = R.rating_width(lo, hi)
        values, _ = R.values_from_sums(m.name, sums, width)
        return float(values[0])

    def _warn(self, means: dict[str, float]) -> None:
        missing = max(
            (int(i.get("missing_predictions", 0)) for i in self.details.values()), default=0
        )
        if missing and self.spec.no_recs == "zero":
            names = ", ".join(m.canonical for m in self.plan if m.spec.family == "rating")
            warnings.warn(
                f"{missing} truth row(s) have no predicted rating (no recs row for the same "
                f"user and item); {names} take the prediction as 0 (no_recs='zero'). Use "
                "no_recs='skip' to leave them out.",
                UserWarning,
                stacklevel=4,
            )
        for name, value in means.items():
            if math.isnan(value):
                warnings.warn(
                    f"{name} is undefined on these data (no user or row gives it a value); "
                    "its value is NaN.",
                    UndefinedMetricWarning,
                    stacklevel=4,
                )


# ------------------------------------------------------------------ context and driver


def spec_of(
    metrics: Any,
    *,
    user_col: str,
    item_col: str,
    score_col: str,
    rank_col: str | None,
    relevance_col: str | None,
    has_relevance: bool,
    ties: TiesPolicy,
    relevance_threshold: float,
    no_recs: NoRecsPolicy,
    options: dict[str, Any],
) -> ShardSpec:
    """The :class:`ShardSpec` of a request (options checked as :func:`receval.evaluate`)."""
    plan = parse_metrics(metrics)
    check_policies(ties, no_recs)
    return ShardSpec(
        metrics=tuple(m.canonical for m in plan), user_col=user_col, item_col=item_col,
        order_col=rank_col if rank_col is not None else score_col, by_rank=rank_col is not None,
        relevance_col=relevance_col or "relevance", has_relevance=has_relevance, ties=ties,
        threshold=check_threshold(relevance_threshold), no_recs=no_recs, options=options,
    )  # fmt: skip


@dataclass(frozen=True)
class Sources:
    """Where an engine finds what the global context is made of (the local frames, or Spark).

    ``truth_range()``: truth's (min, max) relevance; ``popularity(train)``: distinct train
    users per item (``item_col``, ``n``; sorted by item) and train's users; ``items(data)``:
    the checked item table; ``item_ids()``: the distinct item ids of truth and recs. Item ids
    come typed as recs' (``kind``).
    """

    user_col: str
    item_col: str
    kind: type[pl.DataType]
    truth_range: Callable[[], tuple[float, float]]
    popularity: Callable[[Any], tuple[pl.DataFrame, int]]
    items: Callable[[Any], pl.DataFrame | None]
    item_ids: Callable[[], list[pl.Series]]
    history: Callable[[Any], pl.DataFrame] | None = None
    """train's distinct (user, item) pairs, item ids typed as recs' (for the metrics that
    read each user's own train items: every shard keeps its users' rows)."""


def build_context(
    plan: tuple[Metric, ...], options: dict[str, Any], sources: Sources
) -> dict[str, Any]:
    """The global context of a sharded evaluation: the options every shard gets (truth's
    rating range for ``nmae``, the item table or the catalog, train popularity), each asked
    of ``sources`` only when a metric of ``plan`` needs it."""
    out = {k: v for k, v in options.items() if k in ("item_features", "rating_range")}
    if any(m.spec.uses_rating_range for m in plan) and options.get("rating_range") is None:
        out["_observed_range"] = sources.truth_range()
    beyond = tuple(m for m in plan if m.spec.family == "beyond")
    if not beyond:
        return out
    B._check_inputs(beyond, options)
    train = options.get("train")
    if train is not None:
        out["_popularity"] = sources.popularity(train)
    if train is not None and any(m.spec.needs_history for m in beyond):
        if sources.history is None:
            names = [m.canonical for m in beyond if m.spec.needs_history]
            msg = f"{names} read each user's train items, which this engine cannot ship."
            raise InputError(msg)
        out["_history"] = sources.history(train)
    items = sources.items(options.get("items"))
    if items is not None:
        out["items"] = items
    else:  # the catalog: every item of truth, recs and train
        ids = sources.item_ids()
        if train is not None:
            ids.append(out["_popularity"][0][sources.item_col])
        out["_catalog"] = pl.concat([i.alias(sources.item_col) for i in ids]).unique().sort()
        out["_catalog_source"] = "truth+recs" + ("+train" if train is not None else "")
    return out


def _local_sources(
    t: pl.DataFrame, r: pl.DataFrame, spec: ShardSpec, inputs: Inputs | None = None
) -> Sources:
    """:class:`Sources` of local frames (the one-process scheme); ``inputs``: the item
    table's own column name and format (train comes read, with truth's names)."""
    user_col, item_col = spec.user_col, spec.item_col
    kind = pl.String if r[item_col].dtype == pl.String else pl.Int64

    def popularity(data: Any) -> tuple[pl.DataFrame, int]:
        train = B.read_train(data, user_col, item_col, kind)
        assert train is not None
        return B.train_popularity(train, user_col, item_col)

    def truth_range() -> tuple[float, float]:
        rel = t[spec.relevance_col].cast(pl.Float64)
        return float(rel.min()), float(rel.max())  # type: ignore[arg-type]

    def history(data: Any) -> pl.DataFrame:
        train = B.read_train(data, user_col, item_col, kind)
        assert train is not None
        return train

    return Sources(
        user_col, item_col, kind, truth_range, popularity,
        lambda data: B.read_items(data, user_col, item_col, kind, inputs=inputs),
        lambda: [t[item_col].cast(kind).unique(), r[item_col].cast(kind).unique()],
        history,
    )  # fmt: skip


def evaluate_sharded(
    truth: Any,
    recs: Any,
    metrics: Any,
    *,
    n_shards: int = 4,
    seed: int = 0,
    n_ranges: int = 3,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    rank_col: str | None = None,
    relevance_col: str | None = None,
    ties: TiesPolicy = "expected",
    relevance_threshold: float = 1,
    no_recs: NoRecsPolicy = "zero",
    train: Any = None,
    items: Any = None,
    item_features: Any = None,
    rating_range: tuple[float, float] | None = None,
    columns: Any = None,
    input_format: Any = None,
) -> Result:
    """:func:`receval.evaluate` by the distributed scheme, in one process.

    Users go to ``n_shards`` shards at random (``seed``), each shard is evaluated by
    :func:`run_shard`, scored rows are cut into ``n_ranges`` score ranges, and everything is
    merged as the Spark engine merges it. The result equals :func:`receval.evaluate`'s.
    """
    order_col = rank_col if rank_col is not None else score_col
    rel_name = relevance_col or "relevance"
    inputs = Inputs.of(columns, input_format, user_col, item_col)
    user_col, item_col = inputs.user_col, inputs.item_col
    t = inputs.read(truth, "truth", rel_name)
    r = inputs.read(recs, "recs", order_col)
    for frame, role in ((t, "truth"), (r, "recs")):
        if frame.height == 0:
            msg = f"{role} is empty (0 rows); expected at least one row."
            raise InputError(msg)
    has_relevance = relevance_col is not None or rel_name in t.columns
    if not has_relevance:
        warn_unused_relevance(t.columns, [user_col, item_col], stacklevel=2)
    if not has_relevance and user_col in t.columns and item_col in t.columns:
        t = t.select(user_col, item_col).with_columns(pl.lit(1.0).alias(rel_name))
    pairs = None
    if train is not None:  # read once: the in-train count and popularity
        kind = pl.String if r.schema.get(item_col) == pl.String else pl.Int64
        pairs = B.read_train(train, user_col, item_col, kind, inputs=inputs, unify=False)
    options = {"train": pairs, "items": items, "item_features": item_features,
               "rating_range": rating_range}  # fmt: skip
    spec = spec_of(
        metrics, user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
        relevance_col=relevance_col, has_relevance=has_relevance, ties=ties,
        relevance_threshold=relevance_threshold, no_recs=no_recs, options={},
    )  # fmt: skip
    plan = spec.plan
    check_inputs(
        t.head(1),
        r.head(1),
        ids=[user_col, item_col],
        relevance_col=rel_name,
        order_col=order_col,
        by_rank=spec.by_rank,
    )  # columns and types; values are checked in each shard
    context = build_context(plan, options, _local_sources(t, r, spec, inputs))
    spec = ShardSpec(**{**spec.__dict__, "options": context})

    t_users, r_users = t[user_col].unique(), r[user_col].unique()
    if t_users.dtype != r_users.dtype and t_users.dtype.is_integer() and r_users.dtype.is_integer():
        t_users, r_users = t_users.cast(pl.Int64), r_users.cast(pl.Int64)
    if t_users.dtype != r_users.dtype:  # the shards raise the local engine's error
        return _local_error(t, r, spec)
    rng = np.random.default_rng(seed)
    users = pl.concat([t_users, r_users]).unique().sort()
    shard_of = pl.DataFrame({user_col: users, "__shard": rng.integers(0, n_shards, users.len())})
    t_keyed = t.with_columns(pl.col(user_col).cast(users.dtype)).join(
        shard_of, on=user_col, how="left", maintain_order="left"
    )
    r_keyed = r.with_columns(pl.col(user_col).cast(users.dtype)).join(
        shard_of, on=user_col, how="left", maintain_order="left"
    )
    merger = Merger(spec)
    frames = []
    scored_rows = []
    exposure: dict[int | None, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    ratings = []
    for s in range(n_shards):  # the shards a cluster runs side by side
        out = run_shard(
            spec,
            t_keyed.filter(pl.col("__shard") == s).drop("__shard"),
            r_keyed.filter(pl.col("__shard") == s).drop("__shard"),
        )
        frames.append(out.per_user)
        merger.add(out.stats)
        if out.scored is not None:
            scored_rows.append(out.scored)
        for k, rows in out.exposure.items():
            exposure.setdefault(k, []).append(rows)
        if out.ratings is not None:
            ratings.append(out.ratings)
    per_user = pl.concat(frames).sort(user_col)
    if pairs is not None:  # the shards have checked truth and recs
        merger.in_train = B.in_train_counts(t_users, r, pairs, user_col, item_col)

    n_thr = len(spec.thresholds())
    scored = ap = None
    if n_thr:
        scores = np.concatenate([s for s, _ in scored_rows]) if scored_rows else np.zeros(0)
        bits = (
            np.concatenate([b for _, b in scored_rows])
            if scored_rows
            else np.zeros(0, dtype=np.int64)
        )
        ranges = _score_ranges(scores, n_ranges)
        stats = [scored_partition(scores[idx], bits[idx], n_thr) for idx in ranges]
        scored = combine_scored(stats, n_thr)
        above = above_counts(stats, n_thr)
        ap = [
            np.concatenate(
                [np.zeros(0)]
                + [
                    ap_partition(scores[idx], bits[idx], j, above[st["low"]][j])
                    for idx, st in zip(ranges, stats, strict=True)
                    if st["low"] != math.inf
                ]
            )
            for j in range(n_thr)
        ]
    merged_exposure = {k: _merge_exposure(rows) for k, rows in exposure.items()}
    sstot = None
    if ratings:
        ys = np.concatenate([y for y, _ in ratings])
        ns = np.concatenate([n for _, n in ratings])
        hist = pl.DataFrame({"y": ys, "n": ns}).group_by("y").agg(pl.col("n").sum()).sort("y")
        sstot = sstot_parts(hist["y"].to_numpy(), hist["n"].to_numpy(), merger.rating_mean())
    if per_user.width == 1 and per_user.height == 0:
        per_user = pl.DataFrame({user_col: t[user_col].head(0)})
    return merger.result(per_user, scored, ap, merged_exposure, sstot)


def _local_error(t: pl.DataFrame, r: pl.DataFrame, spec: ShardSpec) -> Result:
    prepare(
        t, r, user_col=spec.user_col, item_col=spec.item_col, score_col=spec.order_col,
        rank_col=spec.order_col if spec.by_rank else None, relevance_col=spec.relevance_col,
    )  # fmt: skip
    msg = "truth and recs user ids have different types"  # pragma: no cover - prepare raises
    raise InputError(msg)


def _score_ranges(scores: np.ndarray, n_ranges: int) -> list[np.ndarray]:
    """Row indices of ``n_ranges`` disjoint score intervals (equal scores together), as a
    range partitioner cuts them."""
    if scores.size == 0:
        return [np.zeros(0, dtype=np.int64)]
    bounds = np.unique(np.quantile(scores, np.linspace(0, 1, n_ranges + 1)[1:-1]))
    which = np.searchsorted(bounds, scores, side="left")
    return [np.flatnonzero(which == j) for j in range(bounds.size + 1)]


def _merge_exposure(
    rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, int]:
    """Exposure summed by catalog code over shards, as (histogram values, counts, items
    exposed but absent from train)."""
    frame = pl.DataFrame(
        {
            "code": np.concatenate([c for c, _, _ in rows]),
            "n": np.concatenate([n for _, n, _ in rows]),
            "absent": np.concatenate([a for _, _, a in rows]),
        }
    )
    per_item = frame.group_by("code").agg(pl.col("n").sum(), pl.col("absent").max())
    hist = per_item.group_by("n").agg(pl.len().alias("items")).sort("n")
    return (
        hist["n"].to_numpy().astype(np.int64),
        hist["items"].to_numpy().astype(np.int64),
        int(per_item["absent"].sum()),
    )
