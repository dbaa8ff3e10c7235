"""Evaluation in shards of users, merged exactly: the engine-neutral half of distributed
evaluation (the Spark engine, :mod:`receval.engines.spark`, moves the data; this module computes).

A *shard* holds every truth and recs row of some users. :func:`run_shard` evaluates it with
the local engine's own code (:func:`~receval.data.tables.read_pair`,
:func:`~receval.families.ranking.prepare` and each family's part, in shard mode), so no
per-user metric exists twice. What it returns merges exactly:

* per-user rows: shards hold disjoint users, so the per-user frame is their union;
* means of per-user metrics: each part says which terms its mean sums and over what
  (:attr:`~receval.families.contract.Part.sums`); a shard sends their exact expansions
  (:mod:`receval.kernels.exact`) and the merge rounds once, so the mean is the local engine's to
  the last bit;
* counts, confusion counts and row counts: integers;
* global metrics, which no shard can finish alone: each shard's provider returns a
  :class:`~receval.families.states.GlobalState` (``auc`` and ``average_precision`` over rows,
  thresholded rates, rating metrics over rows, exposure for ``coverage``, ``gini``,
  ``entropy``); the :class:`Merger` merges the states of every shard, has their rows
  reduced part by part (by the engine: :func:`evaluate_sharded` cuts them in this process,
  the Spark engine shuffles them) and finishes them, through the protocol only.

Global context (the catalog, train popularity, the item table, truth's rating range) is
computed once over all the data by :func:`build_context` from an engine's :class:`Sources`
and given to every shard. :func:`evaluate_sharded` runs the whole scheme in one process:
the reference the Spark engine is tested against, and a test of the scheme itself.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError, UndefinedMetricWarning, check_seed
from receval.data import tables as T
from receval.data.io import Inputs
from receval.engines.inputs import with_family_tables
from receval.families import beyond as B
from receval.families.beyond_context import train_popularity
from receval.families.contract import (
    Context,
    NoRecs,
    NoRecsPolicy,
    Options,
    Ties,
    TiesPolicy,
    join_per_user,
    no_evaluated_message,
)
from receval.families.providers import family_parts
from receval.families.ranking import prepare
from receval.families.states import GlobalState, compact_expansions, cut_rows
from receval.kernels.exact import parts, total
from receval.metrics.registry import Metric, parse_metrics
from receval.metrics.result import Counts, Result

__all__ = [
    "Merger",
    "PassRunner",
    "ShardOutput",
    "ShardSpec",
    "Sources",
    "build_context",
    "evaluate_sharded",
    "per_user_metrics",
    "run_shard",
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
    to Spark executors once per job).

    ``options`` are :func:`receval.evaluate`'s, checked (:class:`Options`), without ``train``
    and ``items``: what the shards read of them travels in ``context``."""

    metrics: tuple[str, ...]
    options: Options
    has_relevance: bool
    context: Context = field(default_factory=Context)

    @staticmethod
    def of(plan: tuple[Metric, ...], options: Options, has_relevance: bool) -> ShardSpec:
        """The spec of ``plan`` with ``options`` (``train`` and ``items`` left out)."""
        return ShardSpec(
            metrics=tuple(m.canonical for m in plan),
            options=replace(options, train=None, items=None),
            has_relevance=has_relevance,
        )

    @property
    def plan(self) -> tuple[Metric, ...]:
        return parse_metrics(self.metrics)

    @property
    def user_col(self) -> str:
        return self.options.user_col

    @property
    def item_col(self) -> str:
        return self.options.item_col

    @property
    def order_col(self) -> str:
        return self.options.order_col

    @property
    def by_rank(self) -> bool:
        return self.options.by_rank

    @property
    def relevance_col(self) -> str:
        """Truth's relevance column in every shard (``"relevance"`` when not named)."""
        return self.options.relevance_name

    @property
    def ties(self) -> Ties:
        return self.options.ties

    @property
    def threshold(self) -> float:
        return self.options.threshold

    @property
    def no_recs(self) -> NoRecs:
        return self.options.no_recs

    @property
    def settings(self) -> dict[str, Any]:
        return self.options.settings(self.has_relevance)


@dataclass
class ShardOutput:
    """One shard's results: its per-user rows, and ``stats``: counts, details, exact sums
    and ``stats["states"]`` (the global states, rows included; a distributed engine sends
    them detached and moves their rows apart)."""

    per_user: pl.DataFrame
    stats: dict[str, Any]


def run_shard(spec: ShardSpec, truth: pl.DataFrame, recs: pl.DataFrame) -> ShardOutput:
    """Evaluate one shard (every row of its users, either side possibly empty).

    ``truth`` has columns ``user_col, item_col, relevance_col``; ``recs`` has ``user_col,
    item_col, order_col``; rows in input order. Warnings are left to the merge, which
    issues them once for all shards.
    """
    plan = spec.plan
    ranking = tuple(m for m in plan if m.spec.family == "ranking")
    context = replace(spec.context, shard=True, has_relevance=spec.has_relevance)
    sample_col = spec.options.sample_col
    if sample_col is not None:  # sampled rankings: checked and split within each user
        recs, samples = T.split_samples(
            recs, user_col=spec.user_col, item_col=spec.item_col, order_col=spec.order_col,
            sample_col=sample_col, by_rank=spec.by_rank, allow_empty=True,
        )  # fmt: skip
        context = replace(context, samples=samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pair = T.read_pair(
            truth, recs, user_col=spec.user_col, item_col=spec.item_col,
            score_col=spec.order_col, rank_col=spec.order_col if spec.by_rank else None,
            relevance_col=spec.relevance_col, allow_empty=True,
        )  # fmt: skip
        prep, kernel = prepare(
            pair, ranking, ties=spec.ties, relevance_threshold=spec.threshold,
            no_recs=spec.no_recs, context=context,
        )  # fmt: skip
        chosen = plan
        if prep.r_grp.n_users == 0:  # beyond metrics judge recs lists: a shard without any
            chosen = tuple(m for m in plan if m.spec.family != "beyond")  # adds nothing
        beyond = tuple(m for m in chosen if m.spec.family == "beyond")
        if beyond:
            prep = with_family_tables(beyond, prep)
        parts_ = family_parts(chosen, prep, kernel)

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
        "states": {},
    }  # fmt: skip
    for part in parts_:
        stats["details"].update(part.details)
        for name, (terms, den) in part.sums.items():
            den_value: int | np.ndarray = den if isinstance(den, int) else parts(den)
            stats["sums"][name] = (parts(terms), den_value)
        stats["states"].update(part.states)
    return ShardOutput(frame, stats)


# --------------------------------------------------------------- global metrics, merged

PassRunner = Callable[[str, GlobalState, int], list[Any]]
"""How an engine runs pass ``step`` of a merged (detached) state's reduction over its rows,
which it holds: ``run(key, state, step)`` returns the pieces of
:meth:`~receval.families.states.GlobalState.reduce_part` on every part of the rows."""


class Merger:
    """Merges shards' small statistics and global states, then finalises every mean into a
    :class:`Result`."""

    def __init__(self, spec: ShardSpec) -> None:
        self.spec = spec
        self.plan = spec.plan
        self.counts = [0, 0, 0, 0]
        self.rows = [0, 0]  # truth and recs rows seen by the shards
        self.details: dict[str, dict[str, Any]] = {}
        self.sums: dict[str, list[Any]] = {}
        self.states: dict[str, GlobalState] = {}
        # recs rows of truth users whose item the user has in train, and their users (None:
        # no train); counted by the engine over all the data, not by the shards
        self.in_train: tuple[int, int] | None = None

    def add(self, stats: dict[str, Any]) -> None:
        """Add one shard's statistics (its states are merged in, and then belong here)."""
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
        self._merge_states(stats["states"])

    def _merge_states(self, states: dict[str, GlobalState]) -> None:
        for key, state in states.items():
            if key in self.states:
                self.states[key].merge(state)
            else:
                self.states[key] = state

    def merge(self, other: Merger) -> None:
        """Add the statistics ``other`` has merged (shards of other users), exactly."""
        self.add({
            "counts": other.counts, "rows": other.rows, "details": other.details,
            "sums": {}, "states": {},
        })  # fmt: skip
        for name, (nums, n, dens) in other.sums.items():
            entry = self.sums.setdefault(name, [[], 0, []])
            entry[0] += nums
            entry[1] += n
            entry[2] += dens
        self._merge_states(copy.deepcopy(other.states))

    def compact(self) -> None:
        """One expansion per sum (their exact sum): memory stays constant however many
        shards are added (the states fold their merges in batches themselves)."""
        for entry in self.sums.values():
            entry[0] = compact_expansions(entry[0])
            entry[2] = compact_expansions(entry[2])

    def result(self, per_user: pl.DataFrame, run_pass: PassRunner | None = None) -> Result:
        """The Result. The global states' rows are reduced first: by ``run_pass`` (an
        engine that holds the rows apart), else here, whole."""
        spec = self.spec
        in_train = None if self.in_train is None else self.in_train[0]
        evaluated, no_recs, no_relevant, not_in_truth = self.counts
        counts = Counts(evaluated, no_recs, no_relevant, not_in_truth, recs_in_train=in_train)
        if self.in_train is not None:
            T.warn_in_train(*self.in_train, stacklevel=3)
        means: dict[str, float] = {}
        ranking = [m for m in self.plan if m.spec.family == "ranking"]
        if ranking and counts.evaluated == 0:
            raise InputError(no_evaluated_message(spec.threshold))
        for key, state in self.states.items():
            if run_pass is None:
                state.reduce_whole()
            else:
                for step in range(state.passes()):
                    state.absorb(step, run_pass(key, state, step))
        owner = {name: state for state in self.states.values() for name in state.metrics}
        for m in self.plan:
            name = m.canonical
            info = self.details.setdefault(name, {})
            if name in self.sums:
                nums, n, dens = self.sums[name]
                den = total(np.concatenate(dens)) if dens else float(n)
                means[name] = total(np.concatenate(nums)) / den if den else math.nan
            if name in owner:
                value = owner[name].finish(m, info)
                if value is not None:
                    means[name] = value
            if name not in means:  # pragma: no cover - every family's metrics are handled
                msg = f"no merge for {name}"
                raise InputError(msg)
        self._warn(means)
        details = {k: v for k, v in self.details.items() if v}
        ordered = {m.canonical: means[m.canonical] for m in self.plan}
        return Result(self.plan, ordered, per_user, counts, spec.settings, details)

    def _warn(self, means: dict[str, float]) -> None:
        missing = max(
            (int(i.get("missing_predictions", 0)) for i in self.details.values()), default=0
        )
        if missing and self.spec.no_recs is NoRecs.ZERO:
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


def build_context(plan: tuple[Metric, ...], options: Context, sources: Sources) -> Context:
    """The global context of a sharded evaluation, given :func:`receval.evaluate`'s family
    options: what every shard gets (truth's rating range for ``nmae``, the item table or the
    catalog, train popularity), each asked of ``sources`` only when a metric of ``plan``
    needs it."""
    observed = None
    if any(m.spec.uses_rating_range for m in plan) and options.rating_range is None:
        observed = sources.truth_range()
    out = Context(
        item_features=options.item_features, rating_range=options.rating_range,
        observed_range=observed,
    )  # fmt: skip
    beyond = tuple(m for m in plan if m.spec.family == "beyond")
    if not beyond:
        return out
    B.check_inputs(beyond, options)
    train = options.train
    popularity = sources.popularity(train) if train is not None else None
    if train is not None and any(m.spec.needs_history for m in beyond):
        if sources.history is None:
            names = [m.canonical for m in beyond if m.spec.needs_history]
            msg = f"{names} read each user's train items, which this engine cannot ship."
            raise InputError(msg)
        out = replace(out, history=sources.history(train))
    items = sources.items(options.items)
    if items is not None:
        return replace(out, popularity=popularity, items=items)
    # the catalog: every item of truth, recs and train
    ids = sources.item_ids()
    if popularity is not None:
        ids.append(popularity[0][sources.item_col])
    named = [i.alias(sources.item_col) for i in ids]
    empty = pl.Series(sources.item_col, [], dtype=sources.kind)  # no id yet (streaming)
    return replace(
        out, popularity=popularity,
        catalog=pl.concat(named).unique().sort() if named else empty,
        catalog_source="truth+recs" + ("+train" if train is not None else ""),
    )  # fmt: skip


def _local_sources(
    t: pl.DataFrame, r: pl.DataFrame, spec: ShardSpec, inputs: Inputs | None = None
) -> Sources:
    """:class:`Sources` of local frames (the one-process scheme); ``inputs``: the item
    table's own column name and format (train comes read, with truth's names)."""
    user_col, item_col = spec.user_col, spec.item_col
    kind = pl.String if r[item_col].dtype == pl.String else pl.Int64

    def popularity(data: Any) -> tuple[pl.DataFrame, int]:
        train = T.read_train(data, user_col, item_col, kind)
        assert train is not None
        return train_popularity(train, user_col, item_col)

    def truth_range() -> tuple[float, float]:
        rel = t[spec.relevance_col].cast(pl.Float64)
        return float(rel.min()), float(rel.max())  # type: ignore[arg-type]

    def history(data: Any) -> pl.DataFrame:
        train = T.read_train(data, user_col, item_col, kind)
        assert train is not None
        return train

    return Sources(
        user_col, item_col, kind, truth_range, popularity,
        lambda data: T.read_items(data, user_col, item_col, kind, inputs=inputs),
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
    sample_col: str | None = None,
) -> Result:
    """:func:`receval.evaluate` by the distributed scheme, in one process.

    Users go to ``n_shards`` shards at random (``seed``), each shard is evaluated by
    :func:`run_shard`, the rows of each global state are cut into ``n_ranges`` parts (score
    ranges, or hashed keys) and reduced part by part, and everything is merged as the Spark
    engine merges it. The result equals :func:`receval.evaluate`'s.
    """
    options = Options.of(
        user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
        relevance_col=relevance_col, ties=ties, relevance_threshold=relevance_threshold,
        no_recs=no_recs, train=train, items=items, item_features=item_features,
        rating_range=rating_range, columns=columns, input_format=input_format,
        sample_col=sample_col,
    )  # fmt: skip
    inputs = options.inputs
    user_col, item_col = options.user_col, options.item_col
    order_col, rel_name = options.order_col, options.relevance_name
    t = inputs.read(truth, "truth", rel_name)
    r = inputs.read(recs, "recs", order_col)
    for frame, role in ((t, "truth"), (r, "recs")):
        if frame.height == 0:
            msg = f"{role} is empty (0 rows); expected at least one row."
            raise InputError(msg)
    has_relevance = relevance_col is not None or rel_name in t.columns
    if not has_relevance:
        T.warn_unused_relevance(t.columns, [user_col, item_col], stacklevel=2)
    if not has_relevance and user_col in t.columns and item_col in t.columns:
        t = t.select(user_col, item_col).with_columns(pl.lit(1.0).alias(rel_name))
    pairs = None
    if train is not None:  # read once: the in-train count and popularity
        kind = pl.String if r.schema.get(item_col) == pl.String else pl.Int64
        pairs = T.read_train(train, user_col, item_col, kind, inputs=inputs, unify=False)
    plan = parse_metrics(metrics)
    spec = ShardSpec.of(plan, options, has_relevance)
    T.check_inputs(
        t.head(1),
        r.head(1),
        ids=[user_col, item_col],
        relevance_col=rel_name,
        order_col=order_col,
        by_rank=spec.by_rank,
    )  # columns and types; values are checked in each shard
    family_options = replace(options, train=pairs).context()  # train read once
    context = build_context(plan, family_options, _local_sources(t, r, spec, inputs))
    spec = replace(spec, context=context)

    t_users, r_users = t[user_col].unique(), r[user_col].unique()
    if t_users.dtype != r_users.dtype and t_users.dtype.is_integer() and r_users.dtype.is_integer():
        t_users, r_users = t_users.cast(pl.Int64), r_users.cast(pl.Int64)
    if t_users.dtype != r_users.dtype:  # the shards raise the local engine's error
        return _local_error(t, r, spec)
    rng = np.random.default_rng(check_seed(seed))
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
    rows: dict[str, list[pl.DataFrame]] = {}  # each state's rows, as a shuffle gathers them
    for s in range(n_shards):  # the shards a cluster runs side by side
        out = run_shard(
            spec,
            t_keyed.filter(pl.col("__shard") == s).drop("__shard"),
            r_keyed.filter(pl.col("__shard") == s).drop("__shard"),
        )
        frames.append(out.per_user)
        states: dict[str, GlobalState] = out.stats["states"]
        for key, state in states.items():
            found = state.rows()
            if found is not None and found.height:
                rows.setdefault(key, []).append(found)
        merger.add({**out.stats, "states": {k: st.detach() for k, st in states.items()}})
    per_user = pl.concat(frames).sort(user_col)
    if pairs is not None:  # the shards have checked truth and recs
        if sample_col is not None:  # sampled rankings: each (user, item) pair once
            r = r.unique([user_col, item_col], maintain_order=True)
        merger.in_train = T.in_train_counts(t_users, r, pairs, user_col, item_col)
    if per_user.width == 1 and per_user.height == 0:
        per_user = pl.DataFrame({user_col: t[user_col].head(0)})
    gathered = {key: pl.concat(found) for key, found in rows.items()}

    def run_pass(key: str, state: GlobalState, step: int) -> list[Any]:
        if key not in gathered:
            return []
        return [state.reduce_part(step, p) for p in cut_rows(gathered[key], state.spread, n_ranges)]

    return merger.result(per_user, run_pass)


def _local_error(t: pl.DataFrame, r: pl.DataFrame, spec: ShardSpec) -> Result:
    T.read_pair(
        t, r, user_col=spec.user_col, item_col=spec.item_col, score_col=spec.order_col,
        rank_col=spec.order_col if spec.by_rank else None, relevance_col=spec.relevance_col,
    )  # fmt: skip
    msg = "truth and recs user ids have different types"  # pragma: no cover - read_pair raises
    raise InputError(msg)
