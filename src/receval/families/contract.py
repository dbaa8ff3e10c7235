"""The contract between the metric families and the engines.

Every engine builds one canonical layout of truth and recommendations
(:class:`Prepared`: rows grouped by user, item keys, truth matched against recs; read by
:func:`receval.data.tables.read_pair`, matched by :func:`receval.families.ranking.prepare`)
and hands each family's metrics to that family's provider
(:data:`receval.families.providers.PARTS`). A provider returns a :class:`Part`
(means, per-user columns, details, and what a distributed engine needs to merge shards);
:func:`merge` joins the parts into one :class:`~receval.Result`.

This module holds the layout, the part, the policies every family shares and the checks
every engine makes; it imports nothing above the data and metrics layers. It is also where
the options every engine shares are read (:meth:`Options.of`): a policy given as a string
(``ties``, ``no_recs``) becomes a member of :class:`Ties` / :class:`NoRecs` there, and
every family, engine and kernel below reads that member (the kernels its integer code).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from receval._errors import Choice
from receval.data.audit import check_threshold  # the one rule, also the split audit's
from receval.data.io import ROLES, Inputs
from receval.data.layout import (
    Grouped,
    IdType,
    IdTypeArg,
    check_column_names,
    check_id_type,
)
from receval.data.tables import GRADE_NAMES, SAMPLE_CODE, SAMPLE_ORDER, SAMPLE_PAIR
from receval.families.states import GlobalState, finish_states
from receval.kernels import ranking as K
from receval.metrics.result import Counts, Result
from receval.metrics.specs import Metric

__all__ = [
    "GRADE_NAMES",
    "SAMPLED_METRICS",
    "SAMPLE_CODE",
    "SAMPLE_ORDER",
    "SAMPLE_PAIR",
    "Context",
    "ExactRanks",
    "NoRecs",
    "NoRecsPolicy",
    "Options",
    "Part",
    "Prepared",
    "Ties",
    "TiesPolicy",
    "check_threshold",
    "join_per_user",
    "merge",
    "no_evaluated_message",
    "per_user_frame",
]

TiesPolicy = Literal["expected", "first", "trec", "optimistic", "pessimistic"]
NoRecsPolicy = Literal["zero", "skip", "raise"]


class Ties(int, Choice):
    """``ties=``, parsed (:meth:`~receval._errors.Choice.parse`): how equal scores (or
    repeated ranks) are ordered. A member's value is the ranking kernels' code of the policy
    (:data:`receval.kernels.ranking.POLICY_EXPECTED`, ...); ``str(Ties.FIRST) == "first"``."""

    EXPECTED = K.POLICY_EXPECTED
    FIRST = K.POLICY_FIRST
    TREC = K.POLICY_TREC
    OPTIMISTIC = K.POLICY_OPTIMISTIC
    PESSIMISTIC = K.POLICY_PESSIMISTIC

    @property
    def code(self) -> int:
        """The kernels' code of the policy, a plain int (what the kernels are compiled for)."""
        return int(self.value)

    @property
    def fixed_order(self) -> bool:
        """Whether equal scores keep one fixed order, so that each item has one position:
        ``first`` (input order) and ``trec`` (item id descending, as text)."""
        return self in (Ties.FIRST, Ties.TREC)


class NoRecs(Choice):
    """``no_recs=``, parsed: what an evaluated truth user without recommendations gets
    (``zero``: every metric 0, ``skip``: left out, ``raise``: an error)."""

    ZERO = enum.auto()
    SKIP = enum.auto()
    RAISE = enum.auto()


# the metrics defined over a stochastic ranking given as sampled rankings (sample_col)
SAMPLED_METRICS = ("ee_loss", "ee_disparity", "ee_relevance")


@dataclass(frozen=True)
class Context:
    """What the metric families read besides the layout: :func:`evaluate`'s family options
    and, in a distributed or streaming engine, the global context computed once over all
    the data (:func:`receval.engines.shard.build_context`).

    Attributes
    ----------
    train, items, item_features, rating_range:
        :func:`evaluate`'s options (``items``, once the engine has read it for the
        beyond-accuracy family, :func:`receval.engines.inputs.with_family_tables`: the
        checked item table).
    id_type:
        The id kinds that train and items follow (:func:`~receval.data.layout.check_id_type`).
    has_relevance:
        Whether truth had a relevance column (None: :func:`~receval.families.ranking.prepare`
        finds out).
    inputs:
        Each input's own column names and format (:class:`~receval.data.io.Inputs`).
    train_pairs:
        Train's distinct (user, item) pairs, read once by the engine (ids typed as recs').
    shard:
        The layout holds some users only (a shard or a block): global metrics leave their
        :class:`~receval.families.states.GlobalState` to be merged, not a value.
    catalog, catalog_source:
        The catalog of every shard (sorted item ids) and where it comes from.
    popularity:
        Train's distinct users per item (``item_col``, ``n``) and its number of users,
        aggregated once over all of train.
    observed_range:
        Truth's (min, max) relevance over every shard (``nmae`` without ``rating_range``).
    history:
        Train's distinct (user, item) pairs, for the metrics that read each user's own train
        items (``needs_history``) in a shard, which has no ``train`` (each keeps its users').
    samples:
        With ``sample_col``: every sampled recs row as its row of the distinct (user, item)
        recs that the layout holds (:data:`SAMPLE_PAIR`, a row of ``r_grp.source``), its
        sample (:data:`SAMPLE_CODE`, its index in the user) and its score or rank
        (:data:`SAMPLE_ORDER`), rows ordered by user (as ``r_grp``), sample, input order;
        None without.
    """

    train: Any = None
    items: Any = None
    item_features: Any = None
    rating_range: tuple[float, float] | None = None
    id_type: IdTypeArg = "auto"
    has_relevance: bool | None = None
    inputs: Inputs | None = None
    train_pairs: pl.DataFrame | None = None
    shard: bool = False
    catalog: pl.Series | None = None
    catalog_source: str | None = None
    popularity: tuple[pl.DataFrame, int] | None = None
    observed_range: tuple[float, float] | None = None
    history: pl.DataFrame | None = None
    samples: pl.DataFrame | None = None


@dataclass(frozen=True)
class Options:
    """:func:`receval.evaluate`'s options that every engine shares, checked once
    (:meth:`of`) and handed to the engine whole.

    Attributes
    ----------
    inputs:
        Each input's own id column names and format (:class:`~receval.data.io.Inputs`); every
        frame read gets truth's names (:attr:`user_col`, :attr:`item_col`).
    kinds:
        The id kinds, ``{"user": kind, "item": kind}``
        (:func:`~receval.data.layout.check_id_type`).
    score_col, rank_col, relevance_col:
        The column names as given (``rank_col`` replaces ``score_col`` when given;
        ``relevance_col`` None: truth's ``"relevance"`` when present, else relevance 1).
    ties, threshold, no_recs:
        The policies, parsed (:class:`Ties`, :class:`NoRecs`), and ``relevance_threshold`` as
        a float.
    train, items, item_features, rating_range:
        The family options, as given.
    sample_col:
        The recs column naming each row's sampled ranking (several rankings per user, a
        stochastic ranker; only :data:`SAMPLED_METRICS`), or None.
    """

    inputs: Inputs
    kinds: dict[str, IdType]
    score_col: str = "score"
    rank_col: str | None = None
    relevance_col: str | None = None
    ties: Ties = Ties.EXPECTED
    threshold: float = 1.0
    no_recs: NoRecs = NoRecs.ZERO
    train: Any = None
    items: Any = None
    item_features: Any = None
    rating_range: tuple[float, float] | None = None
    sample_col: str | None = None

    @staticmethod
    def of(
        *,
        user_col: str = "user",
        item_col: str = "item",
        score_col: str = "score",
        rank_col: str | None = None,
        relevance_col: str | None = None,
        ties: object = "expected",
        relevance_threshold: object = 1,
        no_recs: object = "zero",
        train: Any = None,
        items: Any = None,
        item_features: Any = None,
        rating_range: tuple[float, float] | None = None,
        id_type: object = "auto",
        columns: Mapping[str, Mapping[str, str]] | Any = None,
        input_format: str | Mapping[str, str] | None = None,
        sample_col: str | None = None,
    ) -> Options:
        """The checked options of :func:`receval.evaluate` (same names and defaults), in its
        order: ``id_type``, the column names of recs and truth, each input's own names
        (``columns``) and ``input_format``, then ``ties``, ``no_recs`` and
        ``relevance_threshold``; :class:`InputError` at the first that is wrong."""
        kinds = check_id_type(id_type)
        order_option = "score_col" if rank_col is None else "rank_col"
        order_col = score_col if rank_col is None else rank_col
        ids = {"user_col": user_col, "item_col": item_col}
        sample = {"sample_col": sample_col} if sample_col is not None else {}
        check_column_names({**ids, order_option: order_col, **sample}, "recs")
        relevance = {"relevance_col": relevance_col} if relevance_col is not None else {}
        check_column_names({**ids, **relevance}, "truth")
        inputs = Inputs.of(columns, input_format, user_col, item_col)
        for role in ROLES:  # an input's own id column names, where columns= gives them
            own_user, own_item = inputs.columns[role]
            if (own_user, own_item) == (user_col, item_col):
                continue
            named = {f"columns[{role!r}]['user']": own_user} if role != "items" else {}
            named[f"columns[{role!r}]['item']"] = own_item
            if role == "recs":
                named[order_option] = order_col
            check_column_names({**named, **(relevance if role == "truth" else {})}, role)
        ties_policy = Ties.parse(ties, "ties")
        no_recs_policy = NoRecs.parse(no_recs, "no_recs")
        return Options(
            inputs=inputs, kinds=kinds, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties_policy,
            threshold=check_threshold(relevance_threshold), no_recs=no_recs_policy,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
            sample_col=sample_col,
        )  # fmt: skip

    @property
    def user_col(self) -> str:
        """The user column of every frame read (truth's)."""
        return self.inputs.user_col

    @property
    def item_col(self) -> str:
        """The item column of every frame read (truth's)."""
        return self.inputs.item_col

    @property
    def order_col(self) -> str:
        """The column that orders each user's recs: ``rank_col`` when given, else
        ``score_col``."""
        return self.score_col if self.rank_col is None else self.rank_col

    @property
    def by_rank(self) -> bool:
        """Whether recs are ordered by rank (1 is best) rather than by score."""
        return self.rank_col is not None

    @property
    def relevance_name(self) -> str:
        """The relevance column truth is read with: ``relevance_col``, else ``"relevance"``."""
        return self.relevance_col or "relevance"

    def context(self, **facts: Any) -> Context:
        """The :class:`Context` of these options (the family options, the id kinds and the
        inputs), with ``facts`` (``has_relevance``, ``catalog``, ...) set."""
        return Context(
            train=self.train, items=self.items, item_features=self.item_features,
            rating_range=self.rating_range, id_type=self.kinds, inputs=self.inputs, **facts,
        )  # fmt: skip

    def settings(self, has_relevance: bool) -> dict[str, Any]:
        """What :attr:`Result.settings <receval.Result.settings>` holds of these options
        (``relevance_col``: the column used, None when every row had relevance 1; the
        policies as the user named them)."""
        return {
            "ties": str(self.ties), "relevance_threshold": self.threshold,
            "no_recs": str(self.no_recs),
            "relevance_col": self.relevance_name if has_relevance else None,
        }  # fmt: skip


@dataclass(frozen=True)
class Prepared:
    """The canonical layout that every metric family reads.

    Truth and recs rows are grouped by user (``t_grp`` / ``r_grp``: flat frames plus offsets);
    row ``a`` of the arrays below is row ``a`` of ``t_grp.frame`` / ``r_grp.frame``.

    Attributes
    ----------
    u2r:
        For each truth user (group), its recs group or -1.
    t_match:
        For each truth row, the recs row with the same (user, item), or -1.
    t_rel, r_score:
        Truth relevance (1.0 when truth has no relevance column) and the recs order column as
        given (a score, or a rank when ``by_rank``), as float64.
    t_item, r_item:
        64-bit item keys: equal keys are equal items within a user (verified).
    context:
        What the families read besides the layout (:class:`Context`).
    exact:
        A model source's exact ranks (:class:`ExactRanks`), or None for recommendation
        lists; :func:`receval.families.providers.family_parts` hands a layout that has
        them to the exact-rank providers.
    """

    t_grp: Grouped
    r_grp: Grouped
    u2r: np.ndarray
    t_match: np.ndarray
    t_rel: np.ndarray
    r_score: np.ndarray
    t_item: np.ndarray
    r_item: np.ndarray
    user_col: str
    item_col: str
    relevance_col: str
    order_col: str
    by_rank: bool
    ties: Ties
    threshold: float
    no_recs: NoRecs
    counts: Counts
    context: Context = field(default_factory=Context)
    exact: ExactRanks | None = None

    def threshold_of(self, metric: Metric) -> float:
        """The relevance threshold of ``metric``: its ``rel=``, else evaluate's."""
        return metric.threshold(self.threshold)


@dataclass(frozen=True)
class ExactRanks:
    """A model source's exact full-catalog ranks, counted by the scan engine
    (:mod:`receval.engines.model`), in place of recommendation lists: what the providers of
    :mod:`receval.families.exact` read when :attr:`Prepared.exact` holds it.

    Per truth row (row ``a`` of ``Prepared.t_grp.frame``): ``t_col`` the item's column in
    the scored catalog (-1: not in it), ``t_cand`` whether the item is one of the user's
    candidates, ``t_score`` the model's score (NaN: not scored), ``above`` / ``tied`` the
    candidates scored above / equal to it, ``first_before`` / ``trec_before`` the tied
    candidates placed before it by ``ties="first"`` / ``"trec"``. Per truth user:
    ``n_cand`` the user's candidates (-1: the model does not score the user). ``n_chunks``:
    the kernels' work split (one chunk per thread or more)."""

    t_col: np.ndarray
    t_cand: np.ndarray
    t_score: np.ndarray
    above: np.ndarray
    tied: np.ndarray
    first_before: np.ndarray
    trec_before: np.ndarray
    n_cand: np.ndarray
    n_chunks: int


@dataclass
class Part:
    """What one family's part of an evaluation returns.

    ``per_user`` holds the user column (``user_col``) and one Float64 column per metric that
    has per-user values (canonical names), or is None when none has; ``details`` maps a
    canonical name to extra facts about it (users skipped, the catalog used, ...).

    ``sums[name] = (terms, den)`` says how a per-user (or per-row) metric's mean is made:
    ``fsum(terms) / den``, ``den`` a count or an array of weights (summed exactly), so that a
    distributed engine (:mod:`receval.engines.shard`) merges it exactly. ``states`` holds the
    :class:`GlobalState` of the metrics that are not such a mean, keyed by a name of the
    provider's choice (states of the same key merge); a metric whose state is there needs no
    mean in ``means``: :func:`merge` finishes it.
    """

    means: dict[str, float]
    per_user: pl.DataFrame | None = None
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    sums: dict[str, tuple[np.ndarray, np.ndarray | int]] = field(default_factory=dict)
    states: dict[str, GlobalState] = field(default_factory=dict)


def merge(
    plan: tuple[Metric, ...], parts: list[Part], prep: Prepared, settings: dict[str, Any]
) -> Result:
    """One Result from the families' parts: means in request order (a metric left to a state
    is finished here, in this process), per-user columns joined on the user (sorted by user
    id), details."""
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    states: dict[str, GlobalState] = {}
    for p in parts:
        means.update(p.means)
        details.update(p.details)
        states.update(p.states)
    for state in states.values():
        state.reduce_whole()
    finish_states(plan, states, means, details)
    details = {k: v for k, v in details.items() if v}  # as the sharded engines leave them
    per_user = join_per_user(plan, parts, prep)
    ordered = {m.canonical: means[m.canonical] for m in plan}
    return Result(plan, ordered, per_user, prep.counts, settings, details)


def join_per_user(plan: tuple[Metric, ...], parts: list[Part], prep: Prepared) -> pl.DataFrame:
    """The parts' per-user columns joined on the user (sorted by user id), in request order."""
    frames = [p.per_user for p in parts if p.per_user is not None]
    user_col = prep.user_col
    if len(frames) == 1:
        per_user = frames[0]
    elif frames:
        per_user = frames[0]
        for other in frames[1:]:
            per_user = per_user.join(other, on=user_col, how="full", coalesce=True)
        per_user = per_user.sort(user_col)
    else:
        per_user = pl.DataFrame({user_col: prep.t_grp.keys.head(0)})
    present = set(per_user.columns)  # a set: one lookup per metric, not a scan of the columns
    columns = [m.canonical for m in plan if m.canonical in present]
    return per_user.select(user_col, *columns)


def no_evaluated_message(threshold: float) -> str:
    """The error when truth has no user with a relevant item."""
    return (
        f"truth has no user with a relevant item (relevance >= {threshold}); nothing to "
        "evaluate. Check relevance_col and relevance_threshold."
    )


def per_user_frame(
    keys: pl.Series, rows: np.ndarray, columns: dict[str, np.ndarray], user_col: str
) -> pl.DataFrame:
    """A part's per-user frame: the users ``keys[rows]`` sorted by id (column ``user_col``),
    then one Float64 column per metric, ``columns[name][rows]`` (NaN becomes null)."""
    users = keys.gather(rows)
    by_id = users.arg_sort().to_numpy()
    rows = rows[by_id]
    return pl.DataFrame(
        [users.gather(by_id).alias(user_col)]
        + [
            pl.Series(name, col[rows], dtype=pl.Float64, nan_to_null=True)
            for name, col in columns.items()
        ]
    )
