"""Beyond-accuracy metrics: coverage, intra-list similarity and diversity, novelty and
popularity bias (docs/beyond.md).

These metrics judge the lists themselves, so every user in recs counts, in truth or not.
``L_u@K`` is the user's ``min(K, n_u)`` best recs (all of them without ``@K``): score
descending (rank ascending with ``rank_col``), equal scores broken by input row order
(``ties="first"``), by item id descending compared as text (``"trec"``, as trec_eval), or,
under ``"expected"``, ``"optimistic"`` and ``"pessimistic"`` (which are defined through
relevance and mean nothing here), by item id ascending (integers numerically, strings as text),
so no value depends on row order. Every metric is a function of the set ``L_u@K``.

Data flow: Polars reads and checks ``train`` / ``items`` and unifies item id types with recs;
a Numba kernel selects each user's top K (:mod:`receval.kernels.beyond`), integer ids
breaking ties by themselves; the catalog is the sorted distinct ids (integer ids in a dense
range are marked in a table by a Numba pass, others go through Polars ``unique``), and only
the selected rows are factorised to catalog codes (string ids: every row, their codes are the
tie keys); NumPy (``bincount``, ``reduceat``) and the similarity kernels do the rest. No Python
loop runs over users or rows, except over the distinct item pairs when ``item_features`` is a
caller's function (it is the caller's code).

Examples
--------
>>> import receval
>>> recs = {"u1": {"a": 0.9, "b": 0.8, "c": 0.1}, "u2": {"a": 0.7, "d": 0.6}}
>>> train = {"x": {"a": 1, "b": 1}, "y": {"a": 1}, "z": {"c": 1}, "w": {"a": 1}}
>>> res = receval.evaluate({"u1": {"a": 1}}, recs, ["coverage@2", "novelty@2"], train=train)
>>> res["coverage@2"]  # a, b, d of the catalog a, b, c, d
0.75
>>> res.details["coverage@2"]["catalog"]
'truth+recs+train'
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError, MetricError
from receval.data.layout import (
    trec_tie_keys,
)
from receval.data.tables import join_types
from receval.families.contract import (
    SAMPLE_CODE,
    SAMPLE_ORDER,
    SAMPLE_PAIR,
    SAMPLED_METRICS,
    Context,
    Part,
    Prepared,
    Ties,
    per_user_frame,
)
from receval.families.states import COMPACT, GlobalState, counts_matrix, state_rows
from receval.kernels import beyond as BK
from receval.kernels.exact import parts_weighted, segment_parts, segment_totals
from receval.kernels.exact import total as total_exact
from receval.metrics.specs import Metric

__all__ = [
    "ExposureCounts",
    "GroupExposure",
    "beyond_part",
    "catalog_of",
    "check_inputs",
    "check_sampled_metrics",
    "exposure_histogram",
    "global_value",
    "train_popularity",
]

_SHOW = 5


def beyond_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means, per-user values and details of the beyond-accuracy metrics in ``plan``.

    Users are the users in recs (``prep.r_grp``). Per-user metrics (``ils``, ``diversity``,
    ``novelty``, ``arp``, ``long_tail``) get a column (users sorted by id, null where a user
    has no value) and a mean over the users that have a value; ``coverage``, ``gini`` and
    ``entropy`` are global. ``details[name]`` says which catalog, how many users, items absent
    from train, lists too short for a pair, and so on.
    """
    check_inputs(plan, prep.context)
    ctx = _Context.build(prep, plan)
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    columns: dict[str, np.ndarray] = {}
    part = Part(means, None, details)
    shard = prep.context.shard
    n_users = prep.r_grp.n_users
    for m in plan:
        off, codes = ctx.top(m.k)
        name = m.name
        info: dict[str, Any] = {"users": n_users}
        if name in _GROUP_METRICS:  # exposure of item groups over every list (global)
            _group_exposure(part, ctx, m, info)
            details[m.canonical] = info
            continue
        if name in _LISTS:  # calibration, serendipity, exposure fairness (docs/fairness.md)
            values = _LISTS[name](m, ctx, info)
            _per_user_values(part, m, values, info, columns)
            details[m.canonical] = info
            continue
        if m.is_global():
            info.update(catalog=ctx.catalog_source, catalog_size=ctx.n_catalog)
            if shard:  # exposure sums over every shard's users before it has a value
                _exposure_state(part, ctx, m, None)
            else:
                means[m.canonical] = global_value(
                    name, *exposure_histogram(ctx.exposure(m.k)), ctx.n_catalog
                )
        elif m.spec.needs_train:
            pop = ctx.popularity()
            absent = np.count_nonzero((ctx.exposure(m.k) > 0) & (pop.counts == 0))
            info.update(train_users=pop.n_users, not_in_train=int(absent))
            if shard:  # items absent from train count once over every shard's lists
                _exposure_state(part, ctx, m, pop.counts == 0)
            if name == "novelty":
                safe = np.maximum(pop.counts, 1).astype(np.float64)
                row_values = -np.log2(safe / pop.n_users)[codes]
            elif name == "arp":
                row_values = pop.counts.astype(np.float64)[codes]
            else:
                in_head, head_items, head_share = pop.head(m.float_param("head"))
                row_values = (~in_head[codes]).astype(np.float64)
                info.update(head_items=head_items, head_share=head_share)
            values = np.add.reduceat(row_values, off[:-1]) / np.diff(off)
            columns[m.canonical] = values
            means[m.canonical] = math.fsum(values) / values.size if values.size else math.nan
            part.sums[m.canonical] = (values, int(values.size))
        else:
            sims, kind = ctx.ils(m.k)
            values = sims if name == "ils" else 1.0 - sims
            short = np.isnan(values)
            info.update(similarity=kind, short_lists=int(short.sum()))
            info["users"] = int((~short).sum())
            columns[m.canonical] = values
            kept = values[~short]
            part.sums[m.canonical] = (kept, int(kept.size))
            if kept.size == 0:
                warnings.warn(
                    f"no recs user has 2 or more items in {m.canonical}; its mean is NaN.",
                    stacklevel=4,
                )
            means[m.canonical] = math.fsum(kept) / kept.size if kept.size else math.nan
        details[m.canonical] = info
    if columns:
        every = np.arange(prep.r_grp.n_users)
        part.per_user = per_user_frame(prep.r_grp.keys, every, columns, prep.user_col)
    return part


def check_sampled_metrics(plan: tuple[Metric, ...], sample_col: str) -> None:
    """:class:`MetricError` unless every metric of ``plan`` is defined over a stochastic
    ranking given as sampled rankings (:data:`SAMPLED_METRICS`, docs/fairness.md)."""
    others = [m.canonical for m in plan if m.name not in SAMPLED_METRICS]
    if others:
        msg = (
            f"sample_col={sample_col!r} gives several sampled rankings per user (a stochastic "
            f"ranker); only {', '.join(SAMPLED_METRICS)} are defined over them, not "
            f"{others[:_SHOW]}. Evaluate those metrics on one ranking per user, without "
            "sample_col."
        )
        raise MetricError(msg)


def _exposure_state(part: Part, ctx: _Context, m: Metric, absent: np.ndarray | None) -> None:
    """Add ``m`` to the exposure state of its cutoff (made from this block's lists on first
    use; ``absent``: per catalog code, whether the item is absent from train)."""
    key = f"exposure@{m.k}"
    state = part.states.get(key)
    exposure = ctx.exposure(m.k)
    codes = np.flatnonzero(exposure)
    if not isinstance(state, ExposureCounts):
        state = ExposureCounts()
        state.add(ctx.catalog.gather(codes), exposure[codes], np.zeros(codes.size))
        part.states[key] = state
    if absent is not None:
        state.add(ctx.catalog.gather(codes), np.zeros(codes.size), absent[codes])
    state.metrics += (m.canonical,)


@dataclass
class ExposureCounts(GlobalState):
    """``coverage``, ``gini``, ``entropy`` at one cutoff (and the items absent from train
    of ``novelty``, ``arp``, ``long_tail``): per item id (``key``), in how many top-K lists
    it is and whether it is absent from train (``counts``). Rows of an item from several
    blocks add up (absent: the same flag); parts of the rows hold disjoint items
    (``spread="hash"``), each reduced to a histogram of exposure counts."""

    metrics: tuple[str, ...] = ()
    frame: pl.DataFrame | None = None  # columns key, n (Int64), absent (Int64 0/1)
    _pending: list[pl.DataFrame] = field(default_factory=list, repr=False)
    _hist: tuple[np.ndarray, np.ndarray, int] | None = field(default=None, repr=False)

    def add(self, items: pl.Series, counts: np.ndarray, absent: np.ndarray) -> None:
        """Add the exposure of ``items`` (ids) and their absent-from-train flags."""
        piece = pl.DataFrame(
            {
                "key": items,
                "n": np.asarray(counts, dtype=np.int64),
                "absent": np.asarray(absent, dtype=np.int64),
            }
        )
        self._pending.append(piece)
        if len(self._pending) >= COMPACT:
            self.compact()

    def merge(self, other: ExposureCounts) -> ExposureCounts:
        """Add ``other``'s exposure (in place; returns self)."""
        if other.metrics != self.metrics:
            msg = "exposure states of different metrics cannot merge"
            raise ValueError(msg)
        if other.frame is not None:
            self._pending.append(other.frame)
        self._pending.extend(other._pending)
        if len(self._pending) >= COMPACT:
            self.compact()
        return self

    def compact(self) -> None:
        if not self._pending:
            return
        pieces = ([self.frame] if self.frame is not None else []) + self._pending
        self._pending = []
        self.frame = _by_item(pl.concat(pieces, how="vertical_relaxed"))

    def rows(self) -> pl.DataFrame:
        self.compact()
        if self.frame is None:
            return state_rows(pl.Series("key", [], dtype=pl.Int64), np.zeros((0, 2)))
        counts = np.stack([self.frame["n"].to_numpy(), self.frame["absent"].to_numpy()], axis=1)
        return state_rows(self.frame["key"], counts)

    def detach(self) -> ExposureCounts:
        return ExposureCounts(self.metrics)

    def passes(self) -> int:
        return 1

    def reduce_part(self, step: int, rows: pl.DataFrame) -> pl.DataFrame:
        """The histogram of the part's items: per exposure count, the items that have it and
        those of them absent from train."""
        counts = counts_matrix(rows, 2)
        per_item = _by_item(
            pl.DataFrame({"key": rows["key"], "n": counts[:, 0], "absent": counts[:, 1]})
        )
        return (
            per_item.filter(pl.col("n") > 0)
            .group_by("n")
            .agg(pl.len().cast(pl.Int64).alias("items"), pl.col("absent").sum())
        )

    def absorb(self, step: int, pieces: list[Any]) -> None:
        if not pieces:
            empty = np.zeros(0, dtype=np.int64)
            self._hist = (empty, empty, 0)
            return
        hist = (
            pl.concat(pieces)
            .group_by("n")
            .agg(pl.col("items").sum(), pl.col("absent").sum())
            .sort("n")
        )
        self._hist = (
            hist["n"].to_numpy().astype(np.int64),
            hist["items"].to_numpy().astype(np.int64),
            int(hist["absent"].sum()),
        )

    def finish(self, metric: Metric, info: dict[str, Any]) -> float | None:
        if self._hist is None:
            self.absorb(0, [])
        assert self._hist is not None
        values, counts, absent = self._hist
        if metric.is_global():
            return global_value(metric.name, values, counts, int(info["catalog_size"]))
        if "not_in_train" in info:
            info["not_in_train"] = absent
        return None


def _by_item(frame: pl.DataFrame) -> pl.DataFrame:
    """Exposure rows summed by item (absent: the flag of any of its rows)."""
    return frame.group_by("key").agg(pl.col("n").sum(), pl.col("absent").max())


def exposure_histogram(exposure: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct positive exposure counts, ascending, and how many items have each."""
    values, counts = np.unique(exposure[exposure > 0], return_counts=True)
    return values.astype(np.int64), counts.astype(np.int64)


def global_value(name: str, values: np.ndarray, counts: np.ndarray, n_catalog: int) -> float:
    """coverage, gini or entropy from the exposure histogram: ``counts[j]`` catalog items were
    recommended ``values[j]`` times (ascending, all > 0); the other items never were.

    A histogram is what a distributed engine can merge (exposure summed by item, then
    counted by value); every sum here is exact, so the value depends on nothing else.
    """
    n = n_catalog
    exposed = int(counts.sum())
    if name == "coverage":
        return exposed / n
    total = int(np.dot(values, counts)) if values.size else 0
    if name == "gini":
        # sorted ascending, the zeros take ranks 1..n - exposed; value v of count c takes the
        # next c ranks a..b, contributing v * sum_{i=a..b} (2i - n - 1): an exact integer
        ends = (n - exposed) + np.cumsum(counts)
        starts = ends - counts
        numerator = sum(
            int(v) * (int(b) * (int(b) + 1) - int(a) * (int(a) + 1) - int(c) * (n + 1))
            for v, a, b, c in zip(values, starts, ends, counts, strict=True)
        )  # a loop over the distinct exposure counts (about sqrt(2 * total) at most)
        return numerator / (n * total)
    p = values / total
    return abs(total_exact(parts_weighted(-p * np.log2(p), counts)))


def check_inputs(plan: tuple[Metric, ...], context: Context) -> None:
    """Name the missing argument before reading anything."""
    for m in plan:
        if m.spec.needs_train and context.train is None and context.popularity is None:
            msg = (
                f"{m.canonical} needs item popularity from training interactions; pass "
                "train= (rows (user, item), same sources as truth; --train on the command line)."
            )
            raise InputError(msg)
        if m.spec.needs_items and context.items is None:
            msg = (
                f"{m.canonical} reads item categories or groups from the item table; pass "
                "items= (a frame or file with the item column and the column named by by=; "
                "--items on the command line)."
            )
            raise InputError(msg)
        if m.spec.needs_item_features:
            features = context.item_features
            if features is None:
                msg = (
                    f"{m.canonical} needs item similarity; pass item_features= (a vector "
                    "column of items, a list of categorical columns, or a function "
                    "sim(item_a, item_b) -> float; --item-features on the command line)."
                )
                raise InputError(msg)
            if not callable(features) and context.items is None:
                msg = (
                    f"{m.canonical} reads item_features={features!r} from the item table; pass "
                    "items= (a frame or file with the item column and those feature columns; "
                    "--items on the command line)."
                )
                raise InputError(msg)


@dataclass
class _Popularity:
    counts: np.ndarray  # per catalog code: distinct train users (0: not in train)
    n_users: int
    train_counts: np.ndarray  # per distinct train item (also those outside the catalog)
    train_codes: np.ndarray  # their catalog codes, -1 outside the catalog

    def head(self, share: float) -> tuple[np.ndarray, int, float]:
        """Head membership per catalog code: the most popular train items that together make
        up ``share`` of train interactions, items tied at the boundary all included."""
        pop = self.train_counts
        total = int(pop.sum())
        ascending = np.sort(pop)
        cum = np.cumsum(ascending)
        at_most = cum[np.searchsorted(ascending, pop, side="right") - 1]
        more_popular = total - at_most  # interactions of strictly more popular items
        member = more_popular < share * total
        in_head = np.zeros(self.counts.size, dtype=np.bool_)
        inside = self.train_codes >= 0
        in_head[self.train_codes[inside & member]] = True
        return in_head, int(member.sum()), int(pop[member].sum()) / total


@dataclass
class _Context:
    """What the beyond metrics share: the catalog, top-K lists with their catalog codes,
    exposure, train popularity and item similarity, each computed once."""

    prep: Prepared
    plan: tuple[Metric, ...]
    catalog: pl.Series
    catalog_source: str
    ids: np.ndarray | None  # int64 item id per recs row (integer ids), else None
    row_codes: np.ndarray | None  # catalog code per recs row when computed for every row
    train: pl.DataFrame | None
    items: pl.DataFrame | None
    tie: np.ndarray
    _tops: dict[int | None, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    _top_rows: dict[int | None, np.ndarray] = field(default_factory=dict)
    _cache: dict[Any, Any] = field(default_factory=dict)  # the list metrics' shared inputs
    _exposure: dict[int | None, np.ndarray] = field(default_factory=dict)
    _pop: _Popularity | None = None
    _sim: dict[int | None, tuple[np.ndarray, str]] = field(default_factory=dict)

    @property
    def n_catalog(self) -> int:
        return self.catalog.len()

    @staticmethod
    def build(prep: Prepared, plan: tuple[Metric, ...]) -> _Context:
        item_col = prep.item_col
        r_items = prep.r_grp.column(item_col)
        kind = pl.String if r_items.dtype == pl.String else pl.Int64
        r_items = r_items.cast(kind)
        ids = None if kind == pl.String else np.ascontiguousarray(r_items.to_numpy(), np.int64)
        ctx = prep.context
        # read by the engine (receval.engines.inputs.with_family_tables), typed as recs' ids
        train, items = ctx.train_pairs, ctx.items
        assert ctx.train is None or train is not None, "train is read by the engine"
        row_codes = None
        if items is not None:
            catalog = items[item_col]
            source = "items"
            row_codes = _codes(catalog, r_items if ids is None else ids)
            missing = row_codes < 0
            if missing.any():
                absent = r_items.filter(pl.Series(missing)).unique(maintain_order=True)
                msg = (
                    f"items lacks {absent.len()} item(s) that recs recommends, e.g. "
                    f"{absent.head(_SHOW).to_list()}; expected every recommended item in the "
                    f"item table (column {item_col!r})."
                )
                raise InputError(msg)
        elif ctx.catalog is not None:  # a shard: the catalog of every shard's items
            catalog = ctx.catalog
            source = str(ctx.catalog_source)
            if ids is None:
                row_codes = _codes(catalog, r_items)
        else:
            catalog, source = catalog_of(
                r_items, ids, prep.t_grp.source[item_col].cast(kind), train
            )
            if ids is None:  # string ids: the codes are the tie keys of "expected" below
                row_codes = _codes(catalog, r_items)
        if prep.ties is Ties.FIRST:
            tie = np.arange(r_items.len(), dtype=np.int64)
        elif prep.ties is Ties.TREC:
            tie = -trec_tie_keys(prep.r_grp.column(item_col), prep.r_item)
        elif ids is not None:
            tie = ids  # item id ascending
        else:
            assert row_codes is not None
            tie = row_codes  # the catalog is sorted by id: code order is id order
        return _Context(prep, plan, catalog, source, ids, row_codes, train, items, tie)

    def top(self, k: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Offsets and catalog codes of every user's L@K, best first."""
        if k not in self._tops:
            offsets = self.prep.r_grp.offsets
            longest = int(np.diff(offsets).max(initial=0))
            score = np.ascontiguousarray(self.prep.r_score, dtype=np.float64)
            off, rows = BK.select_top(
                offsets, score, self.tie, longest if k is None else k, negate=self.prep.by_rank
            )
            if self.row_codes is not None:
                codes = np.ascontiguousarray(self.row_codes[rows])
            else:
                assert self.ids is not None
                codes = _codes(self.catalog, self.ids[rows])  # every selected id is in it
            self._tops[k] = (off, codes)
            self._top_rows[k] = rows
        return self._tops[k]

    def exposure(self, k: int | None) -> np.ndarray:
        """Per catalog code, the number of lists L@K that hold the item."""
        if k not in self._exposure:
            self._exposure[k] = np.bincount(self.top(k)[1], minlength=self.n_catalog)
        return self._exposure[k]

    def popularity(self) -> _Popularity:
        if self._pop is None:
            given = self.prep.context.popularity  # a shard: train's, aggregated once
            if given is not None:
                per_item, n_users = given
            else:
                assert self.train is not None  # checked by check_inputs
                per_item, n_users = train_popularity(
                    self.train, self.prep.user_col, self.prep.item_col
                )
            train_codes = _codes(self.catalog, per_item[self.prep.item_col])
            train_counts = per_item["n"].to_numpy().astype(np.int64)
            counts = np.zeros(self.n_catalog, dtype=np.int64)
            inside = train_codes >= 0
            counts[train_codes[inside]] = train_counts[inside]
            self._pop = _Popularity(counts, n_users, train_counts, train_codes)
        return self._pop

    def ils(self, k: int | None) -> tuple[np.ndarray, str]:
        """Per-user mean pairwise similarity of L@K (NaN for lists shorter than 2)."""
        if k not in self._sim:
            off, codes = self.top(k)
            features = self.prep.context.item_features
            if callable(features):
                self._sim[k] = (self._ils_callable(off, codes, features), "callable")
            else:
                assert self.items is not None  # checked by check_inputs
                used = np.flatnonzero(self.exposure(k))
                self._sim[k] = _ils_columns(
                    self.items, features, self.prep.item_col, used, off, codes
                )
        return self._sim[k]

    def _ils_callable(
        self, off: np.ndarray, codes: np.ndarray, sim: Callable[[Any, Any], Any]
    ) -> np.ndarray:
        """Each distinct unordered pair is passed to ``sim`` once (a Python loop over the
        distinct pairs: the caller's function; slow for many pairs)."""
        n = self.n_catalog
        pair_off, keys = BK.list_pairs(off, codes, n)
        distinct, inverse = np.unique(keys, return_inverse=True)
        ids_a = self.catalog.gather(distinct // n).to_list()
        ids_b = self.catalog.gather(distinct % n).to_list()
        values = np.empty(distinct.size, dtype=np.float64)
        for j, (a, b) in enumerate(zip(ids_a, ids_b, strict=True)):
            value = sim(a, b)
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                msg = f"item_features: sim({a!r}, {b!r}) returned {value!r}; expected a number."
                raise InputError(msg)
            if not math.isfinite(float(value)):
                msg = (
                    f"item_features: sim({a!r}, {b!r}) returned {value!r}; expected a finite "
                    "number."
                )
                raise InputError(msg)
            values[j] = float(value)
        kp = np.diff(off)
        owner = np.repeat(np.arange(kp.size), np.diff(pair_off))
        sums = np.bincount(owner, weights=values[inverse.ravel()], minlength=kp.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(kp >= 2, 2.0 * sums / (kp * (kp - 1.0)), np.nan)


def train_popularity(train: pl.DataFrame, user_col: str, item_col: str) -> tuple[pl.DataFrame, int]:
    """Distinct train users per item (columns ``item_col``, ``n``; sorted by item) and the
    number of train users, from train's distinct (user, item) pairs."""
    per_item = train.group_by(item_col).agg(pl.len().cast(pl.Int64).alias("n")).sort(item_col)
    return per_item, int(train[user_col].n_unique())


def catalog_of(
    recs: pl.Series, ids: np.ndarray | None, truth: pl.Series, train: pl.DataFrame | None
) -> tuple[pl.Series, str]:
    """The catalog when no item table is given: truth + recs (+ train) items, and its name."""
    others = [truth]
    source = "truth+recs"
    if train is not None:
        others.append(train[recs.name])
        source += "+train"
    return _catalog(recs, ids, others), source


def _catalog(recs: pl.Series, ids: np.ndarray | None, others: list[pl.Series]) -> pl.Series:
    """The sorted distinct item ids of recs and ``others`` (truth, train), typed as in recs;
    ``ids``: the recs ids as int64 (integer ids) or None (strings).

    Integer ids whose range is at most about twice the number of rows are marked in a table
    of that range (a parallel pass, no hashing or sorting of rows); other ids are made
    distinct part by part before the union is made distinct and sorted.
    """
    item_col = recs.name
    if ids is None:
        return pl.concat([p.unique() for p in [recs, *others]]).unique().sort()
    arrays = [ids] + [np.ascontiguousarray(p.to_numpy(), dtype=np.int64) for p in others]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return pl.Series(item_col, [], dtype=pl.Int64)
    low = min(int(a.min()) for a in arrays)
    high = max(int(a.max()) for a in arrays)
    if high - low <= 2 * sum(a.size for a in arrays) + (1 << 20):
        present = np.zeros(high - low + 1, dtype=np.bool_)
        for a in arrays:
            BK.mark(a, low, present)
        return pl.Series(item_col, np.flatnonzero(present) + low, dtype=pl.Int64)
    uniq = [pl.Series(item_col, a).unique() for a in arrays]
    return pl.concat(uniq).unique().sort()


def _codes(catalog: pl.Series, values: pl.Series | np.ndarray) -> np.ndarray:
    """Position of each value in the sorted, distinct ``catalog`` (-1 when absent); integer
    ids may come as an int64 array."""
    if catalog.dtype == pl.String:
        frame = pl.DataFrame({"k": catalog, "c": pl.int_range(catalog.len(), eager=True)})
        joined = pl.DataFrame({"k": values}).join(frame, on="k", how="left", maintain_order="left")
        return np.ascontiguousarray(joined["c"].fill_null(-1).to_numpy(), dtype=np.int64)
    keys = catalog.to_numpy()
    vals = np.ascontiguousarray(values, dtype=np.int64)
    if keys.size == 0 or vals.size == 0:
        return np.full(vals.size, -1, dtype=np.int64)
    low, high = int(keys[0]), int(keys[-1])
    if high - low <= 8 * keys.size + (1 << 20):  # dense ids: a lookup table, O(1) per value
        table = np.full(high - low + 1, -1, dtype=np.int64)
        table[keys - low] = np.arange(keys.size, dtype=np.int64)
        return BK.lookup(vals, low, table)
    pos = np.minimum(np.searchsorted(keys, vals), keys.size - 1)
    return np.where(keys[pos] == vals, pos, -1).astype(np.int64)


def _ils_columns(
    items: pl.DataFrame,
    features: Any,
    item_col: str,
    used: np.ndarray,
    off: np.ndarray,
    codes: np.ndarray,
) -> tuple[np.ndarray, str]:
    """ils from columns of the item table: one vector column (cosine) or categorical
    columns (Jaccard of the sets of (column, value) features)."""
    names = [features] if isinstance(features, str) else features
    if (
        not isinstance(names, list | tuple)
        or not names
        or not all(isinstance(n, str) for n in names)
    ):
        msg = (
            "item_features must be a column name of items, a list of column names, or a "
            f"function sim(item_a, item_b) -> float; got {features!r}."
        )
        raise InputError(msg)
    for name in names:
        if name not in items.columns or name == item_col:
            msg = (
                f"item_features names column {name!r}, which items does not have as a feature "
                f"(columns found: {items.columns})."
            )
            raise InputError(msg)
    sub = items.with_row_index("__code__").filter(pl.col("__code__").is_in(used.tolist()))
    if isinstance(features, str) and _is_vector(items.schema[features]):
        unit = _unit_vectors(sub, features, item_col, items.height)
        return BK.ils_vectors(off, codes, unit), "cosine"
    f_off, feats = _feature_sets(sub, names, item_col, items.height)
    return BK.ils_jaccard(off, codes, f_off, feats), "jaccard"


def _is_vector(dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.List | pl.Array):
        inner = dtype.inner
        return inner is not None and inner.is_numeric() and inner != pl.Boolean
    return False


def _name_items(frame: pl.DataFrame, mask: pl.Series, item_col: str) -> str:
    return str(frame.filter(mask)[item_col].head(_SHOW).to_list())


def _unit_vectors(sub: pl.DataFrame, col: str, item_col: str, n_items: int) -> np.ndarray:
    """Unit vectors of the recommended items, rows indexed by catalog code."""
    vec = sub[col]
    if isinstance(vec.dtype, pl.Array):
        vec = vec.cast(pl.List(vec.dtype.inner))
    nulls = vec.is_null()
    if nulls.any():
        msg = (
            f"item_features column {col!r} is null for {int(nulls.sum())} recommended item(s), "
            f"e.g. {_name_items(sub, nulls, item_col)}; expected a vector for every item."
        )
        raise InputError(msg)
    lengths = vec.list.len()
    dim = int(lengths.mode().sort()[-1])
    odd = lengths != dim
    if odd.any():
        msg = (
            f"item_features column {col!r} holds vectors of unequal length: most have {dim} "
            f"values, {int(odd.sum())} recommended item(s) differ, e.g. "
            f"{_name_items(sub, odd, item_col)} with lengths "
            f"{lengths.filter(odd).head(_SHOW).to_list()}."
        )
        raise InputError(msg)
    flat = vec.explode()
    bad_rows = vec.list.eval(
        pl.element().is_null() | ~pl.element().cast(pl.Float64).is_finite()
    ).list.any()
    if dim == 0 or bad_rows.any():
        mask = bad_rows if dim else pl.Series([True] * sub.height)
        msg = (
            f"item_features column {col!r} has empty vectors or null/NaN/infinite values for "
            f"item(s) {_name_items(sub, mask, item_col)}; expected finite numbers."
        )
        raise InputError(msg)
    matrix = flat.cast(pl.Float64).to_numpy().reshape(sub.height, dim)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    zero = norms == 0
    if zero.any():
        msg = (
            f"item_features column {col!r} has zero vectors for item(s) "
            f"{_name_items(sub, pl.Series(zero), item_col)}; cosine similarity is undefined "
            "for them."
        )
        raise InputError(msg)
    unit = np.zeros((n_items, dim), dtype=np.float64)
    unit[sub["__code__"].to_numpy().astype(np.int64)] = matrix / norms[:, None]
    return unit


def _feature_sets(
    sub: pl.DataFrame, names: list[str] | tuple[str, ...], item_col: str, n_items: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct feature codes per catalog code (CSR): a feature is (column, value);
    list columns contribute each element."""
    pieces = []
    for j, name in enumerate(names):
        col = sub[name]
        nulls = col.is_null()
        if nulls.any():
            msg = (
                f"item_features column {name!r} is null for {int(nulls.sum())} recommended "
                f"item(s), e.g. {_name_items(sub, nulls, item_col)}; expected a value (or a "
                "list of values) for every item."
            )
            raise InputError(msg)
        frame = pl.DataFrame({"code": sub["__code__"], "v": col})
        if isinstance(col.dtype, pl.List | pl.Array):
            frame = frame.explode("v").drop_nulls("v")
        pieces.append(
            frame.select(
                pl.col("code").cast(pl.Int64),
                (pl.lit(f"{j}\x1f") + pl.col("v").cast(pl.String)).alias("f"),
            )
        )
    pairs = pl.concat(pieces).unique()
    pairs = pairs.with_columns(pl.col("f").rank("dense").cast(pl.Int64).alias("f")).sort(
        "code", "f"
    )
    code_arr = pairs["code"].to_numpy()
    counts = np.bincount(code_arr, minlength=n_items)
    used = sub["__code__"].to_numpy().astype(np.int64)
    empty = counts[used] == 0
    if empty.any():
        msg = (
            f"item_features {list(names)} give no feature to recommended item(s) "
            f"{_name_items(sub, pl.Series(empty), item_col)} (empty lists); Jaccard similarity "
            "is undefined for them."
        )
        raise InputError(msg)
    f_off = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(counts, out=f_off[1:])
    return f_off, np.ascontiguousarray(pairs["f"].to_numpy(), dtype=np.int64)


# ------------------------------------------- calibration, serendipity, exposure fairness
# Per-user values of each list (docs/calibration.md, docs/serendipity.md, docs/fairness.md).
# A user's history is their train items; categories and groups are (column, value) features
# of the item table, an item's features sharing its weight equally.


def _per_user_values(
    part: Part, m: Metric, values: np.ndarray, info: dict[str, Any], columns: dict[str, Any]
) -> None:
    """A per-user column, its mean over the users with a value (NaN: no value) and its sums."""
    kept = values[~np.isnan(values)]
    columns[m.canonical] = values
    part.sums[m.canonical] = (kept, int(kept.size))
    info["users"] = int(kept.size)
    if kept.size == 0:
        warnings.warn(f"no recs user has a value of {m.canonical}; its mean is NaN.", stacklevel=5)
    part.means[m.canonical] = math.fsum(kept) / kept.size if kept.size else math.nan


def _row_codes(ctx: _Context, rows: np.ndarray) -> np.ndarray:
    """Catalog codes of recs rows."""
    if ctx.row_codes is not None:
        return np.ascontiguousarray(ctx.row_codes[rows])
    assert ctx.ids is not None
    return _codes(ctx.catalog, ctx.ids[rows])


def _relevant_rows(ctx: _Context, threshold: float) -> np.ndarray:
    """Per recs row, 1.0 when truth holds its (user, item) with relevance >= threshold."""
    prep = ctx.prep
    out = np.zeros(prep.r_grp.frame.height, dtype=np.float64)
    hit = (prep.t_match >= 0) & (prep.t_rel >= threshold)
    out[prep.t_match[hit]] = 1.0
    return out


def _history(ctx: _Context) -> tuple[np.ndarray, np.ndarray]:
    """Each recs user's train items as catalog codes (-1: outside the catalog), CSR by the
    recs users' order: ``(h_off, h_codes)``."""
    if "history" not in ctx._cache:
        prep = ctx.prep
        user_col, item_col = prep.user_col, prep.item_col
        train = ctx.train if ctx.train is not None else prep.context.history
        assert train is not None  # checked by check_inputs
        users = pl.DataFrame({user_col: prep.r_grp.keys}).with_row_index("__u")
        users, train = join_types(users, train, user_col)
        rows = train.select(user_col, item_col).join(users, on=user_col, how="inner")
        rows = rows.sort("__u", item_col)
        owner = rows["__u"].to_numpy().astype(np.int64)
        h_off = np.zeros(prep.r_grp.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=prep.r_grp.n_users), out=h_off[1:])
        ctx._cache["history"] = (h_off, _codes(ctx.catalog, rows[item_col]))
    return ctx._cache["history"]  # type: ignore[no-any-return]


def _category_names(m: Metric, ctx: _Context) -> list[str]:
    """The item table's columns that give ``m`` its categories: ``by``, else the categorical
    columns of item_features."""
    by = m.get("by")
    if isinstance(by, str):
        names = [by]
    else:
        features = ctx.prep.context.item_features
        given = [features] if isinstance(features, str) else features
        if (
            not isinstance(given, list | tuple)
            or not given
            or not all(isinstance(n, str) for n in given)
        ):
            msg = (
                f"{m.canonical} reads item categories from a column of items; pass by=COLUMN "
                f"in the metric (e.g. {m.name}(by=genre)) or item_features= naming categorical "
                f"columns; got item_features={features!r}."
            )
            raise InputError(msg)
        names = list(given)
    assert ctx.items is not None  # checked by check_inputs
    for name in names:
        if name not in ctx.items.columns or name == ctx.prep.item_col:
            msg = (
                f"{m.canonical} reads categories from column {name!r}, which items does not "
                f"have (columns found: {ctx.items.columns})."
            )
            raise InputError(msg)
        if _is_vector(ctx.items.schema[name]):
            msg = (
                f"{m.canonical} reads categories from column {name!r}, a vector column; "
                "expected a categorical column (values or lists of values), e.g. by=genre."
            )
            raise InputError(msg)
    return list(names)


@dataclass
class _Sets:
    """Features per catalog code (CSR, sorted codes): ``f_off``, ``feats``; their names
    (``names[f - 1]``: ``"<column index>\\x1f<value>"``; codes run from 1) and the number of
    catalog items without one."""

    f_off: np.ndarray
    feats: np.ndarray
    names: list[str]
    missing: int


def _sets(ctx: _Context, names: list[str], role: str) -> _Sets:
    """Feature sets of every catalog item that has one (items with a null value or an empty
    list are left without, and counted in ``missing``)."""
    key = ("sets", tuple(names))
    if key not in ctx._cache:
        items = ctx.items
        assert items is not None
        ok = pl.lit(True)
        for name in names:
            dtype = items.schema[name]
            if isinstance(dtype, pl.List | pl.Array):
                listed = pl.col(name).cast(pl.List(dtype.inner))
                ok = ok & (listed.list.drop_nulls().list.len() > 0).fill_null(False)
            else:
                ok = ok & pl.col(name).is_not_null()
        coded = items.with_row_index("__code__")
        valid = coded.filter(ok)
        f_off, feats = _feature_sets(valid, names, ctx.prep.item_col, items.height)
        labels = _feature_labels(valid, names)
        ctx._cache[key] = _Sets(f_off, feats, labels, items.height - valid.height)
    sets: _Sets = ctx._cache[key]
    return sets


def _feature_labels(valid: pl.DataFrame, names: list[str]) -> list[str]:
    """The feature names in the order of their codes in :func:`_feature_sets`."""
    pieces = []
    for j, name in enumerate(names):
        col = valid[name]
        frame = pl.DataFrame({"v": col})
        if isinstance(col.dtype, pl.List | pl.Array):
            frame = frame.explode("v").drop_nulls("v")
        pieces.append(frame.select((pl.lit(f"{j}\x1f") + pl.col("v").cast(pl.String)).alias("f")))
    return pl.concat(pieces).unique().sort("f")["f"].to_list()


def _check_listed(m: Metric, ctx: _Context, sets: _Sets, codes: np.ndarray, what: str) -> None:
    """Raise when a recommended item has no category (null, or an empty list)."""
    empty = np.diff(sets.f_off)[codes] == 0
    if empty.any():
        bad = ctx.catalog.gather(np.unique(codes[empty])[:_SHOW]).to_list()
        msg = (
            f"{m.canonical} needs {what} for every recommended item; "
            f"{int(np.unique(codes[empty]).size)} recommended item(s) have a null value or an "
            f"empty list in the item table, e.g. {bad}."
        )
        raise InputError(msg)


def _history_without(sets_empty: np.ndarray, h_codes: np.ndarray) -> int:
    """History rows left out: items outside the catalog or without features."""
    inside = h_codes >= 0
    return int((~inside).sum() + sets_empty[h_codes[inside]].sum())


def _miscalibration(m: Metric, ctx: _Context, info: dict[str, Any]) -> np.ndarray:
    off, codes = ctx.top(m.k)
    names = _category_names(m, ctx)
    sets = _sets(ctx, names, "a category")
    _check_listed(m, ctx, sets, codes, "a category")
    h_off, h_codes = _history(ctx)
    values = BK.miscalibration(
        h_off, h_codes, off, codes, sets.f_off, sets.feats, m.float_param("alpha")
    )
    info.update(
        categories=len(sets.names),
        history_rows_left_out=_history_without(np.diff(sets.f_off) == 0, h_codes),
        no_history=int(np.isnan(values).sum()),
    )
    return values


def _unexpected(m: Metric, ctx: _Context, info: dict[str, Any]) -> np.ndarray:
    """unexpectedness and serendipity (Microsoft Recommenders): similarity to the history."""
    off, codes = ctx.top(m.k)
    h_off, h_codes = _history(ctx)
    rows = ctx._top_rows[m.k]
    rel = (
        _relevant_rows(ctx, ctx.prep.threshold_of(m))[rows]
        if m.name == "serendipity"
        else np.ones(rows.size, dtype=np.float64)
    )
    features = ctx.prep.context.item_features
    if callable(features):
        msg = (
            f"{m.canonical} compares each recommended item with every train item of the user; "
            "item_features must name columns of items (a vector column, or categorical "
            "columns), not a function."
        )
        raise InputError(msg)
    assert ctx.items is not None
    if (
        isinstance(features, str)
        and features in ctx.items.columns
        and _is_vector(ctx.items.schema[features])
    ):
        unit, has = _history_vectors(ctx, features, codes, h_codes)
        unexp, seren = BK.unexpectedness_vectors(off, codes, rel, h_off, h_codes, unit, has)
        kind = "cosine"
        left_out = int((h_codes < 0).sum() + (~has[h_codes[h_codes >= 0]]).sum())
    else:
        names = [features] if isinstance(features, str) else list(features)
        for name in names:
            if name not in ctx.items.columns or name == ctx.prep.item_col:
                msg = (
                    f"item_features names column {name!r}, which items does not have as a "
                    f"feature (columns found: {ctx.items.columns})."
                )
                raise InputError(msg)
        sets = _sets(ctx, names, "features")
        _check_listed(m, ctx, sets, codes, "item features")
        unexp, seren = BK.unexpectedness_jaccard(
            off, codes, rel, h_off, h_codes, sets.f_off, sets.feats
        )
        kind = "jaccard"
        left_out = _history_without(np.diff(sets.f_off) == 0, h_codes)
    values = seren if m.name == "serendipity" else unexp
    info.update(
        similarity=kind, history_rows_left_out=left_out, no_history=int(np.isnan(values).sum())
    )
    return values


def _history_vectors(
    ctx: _Context, col: str, codes: np.ndarray, h_codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors by catalog code of the recommended items (every one must have a valid
    vector) and of the history items that have one (others left out): ``(unit, has)``."""
    items = ctx.items
    assert items is not None
    item_col = ctx.prep.item_col
    used = np.unique(codes)
    coded = items.with_row_index("__code__")
    strict = coded.filter(pl.col("__code__").is_in(used.tolist()))
    unit = _unit_vectors(strict, col, item_col, items.height)
    has = np.zeros(items.height, dtype=np.bool_)
    has[used] = True
    hist = np.setdiff1d(np.unique(h_codes[h_codes >= 0]), used)
    if hist.size:
        vec = pl.col(col)
        dtype = items.schema[col]
        if isinstance(dtype, pl.Array):
            vec = vec.cast(pl.List(dtype.inner))
        dim = unit.shape[1]
        bad = pl.element().is_null() | ~pl.element().cast(pl.Float64).is_finite()
        loose = coded.filter(pl.col("__code__").is_in(hist.tolist())).with_columns(vec.alias(col))
        loose = loose.filter(
            pl.col(col).is_not_null()
            & (pl.col(col).list.len() == dim)
            & ~pl.col(col).list.eval(bad).list.any()
            & (pl.col(col).list.eval(pl.element().cast(pl.Float64) ** 2).list.sum() > 0)
        )
        if loose.height:
            unit += _unit_vectors(loose, col, item_col, items.height)
            has[loose["__code__"].to_numpy().astype(np.int64)] = True
    return unit, has


def _pop_serendipity(m: Metric, ctx: _Context, info: dict[str, Any]) -> np.ndarray:
    """RecTools' serendipity: relevance times max(0, list probability - popularity
    probability), probabilities from ranks among the catalog's n items."""
    off, codes = ctx.top(m.k)
    rows = ctx._top_rows[m.k]
    rel = _relevant_rows(ctx, ctx.prep.threshold_of(m))[rows]
    pop = ctx.popularity()
    n = float(ctx.n_catalog)
    distinct = np.unique(pop.train_counts)[::-1]  # descending: dense rank 1 = most popular
    rank = np.searchsorted(-distinct, -pop.counts) + 1.0
    p_any = np.where(pop.counts > 0, (n + 1.0 - rank) / n, 0.0)  # absent from train: 0
    position = np.arange(codes.size, dtype=np.float64) - np.repeat(off[:-1], np.diff(off)) + 1.0
    row_values = rel * np.maximum((n + 1.0 - position) / n - p_any[codes], 0.0)
    info.update(catalog_size=ctx.n_catalog, train_users=pop.n_users)
    return np.add.reduceat(row_values, off[:-1]) / np.diff(off)


def _exposure(m: Metric, ctx: _Context, geometric: bool) -> tuple[np.ndarray, ...]:
    """Each user's exposed rows with their expected attention, and their catalog codes."""
    key = ("exposure", m.k, geometric, m.float_param("patience"))
    if key not in ctx._cache:
        prep = ctx.prep
        top_off, _ = ctx.top(m.k)
        score = np.ascontiguousarray(prep.r_score, dtype=np.float64)
        e_off, rows, att = BK.exposure_rows(
            prep.r_grp.offsets, score, ctx.tie, top_off, ctx._top_rows[m.k],
            negate=prep.by_rank, expected=prep.ties is Ties.EXPECTED, geometric=geometric,
            patience=m.float_param("patience"),
        )  # fmt: skip
        ctx._cache[key] = (e_off, rows, att, _row_codes(ctx, rows))
    return ctx._cache[key]  # type: ignore[no-any-return]


def _awrf(m: Metric, ctx: _Context, info: dict[str, Any]) -> np.ndarray:
    geometric = m.str_param("attention") == "geometric"
    e_off, _, att, codes = _exposure(m, ctx, geometric)
    sets = _sets(ctx, _category_names(m, ctx), "a group")
    _check_listed(m, ctx, sets, codes, "a group")
    n_groups = len(sets.names)  # feature codes run from 1 to n_groups
    size = np.diff(sets.f_off)
    weights = 1.0 / np.repeat(size, size).astype(np.float64)
    if m.str_param("target") == "uniform":
        target = np.full(n_groups + 1, 1.0 / n_groups)
        target[0] = 0.0
    else:  # each group's share of the catalog items that have a group
        target = np.bincount(sets.feats, weights=weights, minlength=n_groups + 1)
        target = target / int((size > 0).sum())
    values = BK.awrf(e_off, codes, att, sets.f_off, sets.feats, weights, target)
    info.update(groups=n_groups, items_without_group=sets.missing)
    return values


def _sampled_exposure(m: Metric, ctx: _Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's expected exposure from its sampled rankings (``sample_col``): ``(e_off,
    rows, eps)``, ``eps`` the mean over the user's samples of each item's attention in the
    sample (0 where a sample leaves it out; Diaz et al. 2020, the sampled estimate), one entry
    per exposed recs row (a distinct (user, item)), in the order the items are first exposed
    (sample by sample, best first: with one sample, the order and values of a ranking)."""
    key = ("sampled", m.k, m.float_param("patience"))
    if key not in ctx._cache:
        prep = ctx.prep
        samples = prep.context.samples
        assert samples is not None
        offsets = prep.r_grp.offsets
        n_rows = int(offsets[-1])
        order = prep.r_grp.order
        to_grouped = np.arange(n_rows, dtype=np.int64)
        if order is not None:  # source row -> grouped row
            to_grouped[order] = np.arange(n_rows, dtype=np.int64)
        row_user = np.repeat(np.arange(prep.r_grp.n_users, dtype=np.int64), np.diff(offsets))
        grouped = to_grouped[samples[SAMPLE_PAIR].to_numpy()]
        code = samples[SAMPLE_CODE].to_numpy()
        user = row_user[grouped]  # rows by user, then sample, then input order
        score = np.ascontiguousarray(samples[SAMPLE_ORDER].to_numpy(), np.float64)
        if prep.ties is Ties.FIRST:
            tie = np.arange(grouped.size, dtype=np.int64)
        else:  # the policy's key of the item, as for one ranking
            tie = np.ascontiguousarray(ctx.tie[grouped])
        starts = np.flatnonzero(
            np.concatenate(([True], (user[1:] != user[:-1]) | (code[1:] != code[:-1])))
        )
        l_off = np.append(starts, grouped.size).astype(np.int64)
        per_user = np.bincount(user[starts], minlength=prep.r_grp.n_users).astype(np.float64)
        longest = int(np.diff(l_off).max(initial=0))
        top_off, top_rows = BK.select_top(
            l_off, score, tie, longest if m.k is None else m.k, negate=prep.by_rank
        )
        _, x_rows, att = BK.exposure_rows(
            l_off, score, tie, top_off, top_rows, negate=prep.by_rank,
            expected=prep.ties is Ties.EXPECTED, geometric=True, patience=m.float_param("patience"),
        )  # fmt: skip
        exposed = grouped[x_rows]
        owner = user[x_rows]
        weight = att / per_user[owner]
        eps = np.bincount(exposed, weights=weight, minlength=n_rows)
        first_rows, first = np.unique(exposed, return_index=True)
        rows = first_rows[np.argsort(first, kind="stable")]  # user by user, first exposed first
        e_off = np.zeros(prep.r_grp.n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(row_user[rows], minlength=prep.r_grp.n_users), out=e_off[1:])
        ctx._cache[key] = (e_off, rows, np.ascontiguousarray(eps[rows]))
    return ctx._cache[key]  # type: ignore[no-any-return]


def _expected_exposure(m: Metric, ctx: _Context, info: dict[str, Any]) -> np.ndarray:
    """EE-L, EE-D or EE-R per user (Diaz et al. 2020), attention patience^(j-1); from several
    sampled rankings per user, the mean of their exposures (:func:`_sampled_exposure`)."""
    prep = ctx.prep
    gamma = m.float_param("patience")
    if prep.context.samples is not None:
        e_off, rows, att = _sampled_exposure(m, ctx)
    else:
        e_off, rows, att, _ = _exposure(m, ctx, True)
    threshold = prep.threshold_of(m)
    rel = _relevant_rows(ctx, threshold)[rows]
    n_users = prep.r_grp.n_users
    # relevant truth items per recs user, and those outside the catalog (they widen it)
    t_rel = (prep.t_rel >= threshold).astype(np.int64)
    t_off = prep.t_grp.offsets
    t_item = prep.t_grp.frame[prep.item_col]
    outside = (_codes(ctx.catalog, t_item.cast(ctx.catalog.dtype)) < 0).astype(np.int64) * t_rel
    per_truth = np.add.reduceat(t_rel, t_off[:-1]) if t_rel.size else np.zeros(0, np.int64)
    out_truth = np.add.reduceat(outside, t_off[:-1]) if t_rel.size else np.zeros(0, np.int64)
    has = prep.u2r >= 0
    n_rel = np.zeros(n_users, dtype=np.float64)
    n_out = np.zeros(n_users, dtype=np.float64)
    n_rel[prep.u2r[has]] = per_truth[has]
    n_out[prep.u2r[has]] = out_truth[has]
    n = ctx.n_catalog + n_out  # the items each ideal ranking orders
    depth = n if m.k is None else np.minimum(float(m.k), n)

    def attention_to(j: np.ndarray) -> np.ndarray:  # sum of gamma^(i-1), i = 1..j
        return (1.0 - gamma**j) / (1.0 - gamma)

    top = attention_to(np.minimum(n_rel, depth))
    with np.errstate(invalid="ignore", divide="ignore"):
        ideal_rel = np.where(n_rel > 0, top / n_rel, 0.0)
        ideal_other = np.where(n > n_rel, (attention_to(depth) - top) / (n - n_rel), 0.0)
    owner = np.repeat(np.arange(n_users), np.diff(e_off))
    target = np.where(rel > 0, ideal_rel[owner], ideal_other[owner])
    disparity = np.add.reduceat(att * att, e_off[:-1])
    relevance = np.add.reduceat(att * target, e_off[:-1])
    info.update(catalog_size=ctx.n_catalog, no_relevant=int((n_rel == 0).sum()))
    if m.name == "ee_disparity":
        return disparity
    if m.name == "ee_relevance":
        return relevance
    ideal = n_rel * ideal_rel**2 + (n - n_rel) * ideal_other**2
    loss: np.ndarray = np.maximum(disparity - 2.0 * relevance + ideal, 0.0)
    return loss


def _group_share(m: Metric, ctx: _Context, info: dict[str, Any]) -> np.ndarray:
    off, codes = ctx.top(m.k)
    names = _category_names(m, ctx)
    group = m.get("group")
    if len(names) != 1 or not isinstance(group, str):
        msg = (
            f"{m.canonical} takes the share of one group of one column; pass both in the "
            f"metric, e.g. group_share(by=provider, group=p1)@10 (columns: {names})."
        )
        raise MetricError(msg)
    sets = _sets(ctx, names, "a group")
    _check_listed(m, ctx, sets, codes, "a group")
    label = f"0\x1f{group}"
    if label not in sets.names:
        known = [n.split("\x1f", 1)[1] for n in sets.names[:_SHOW]]
        msg = (
            f"{m.canonical}: no item of the item table is in group {group!r} of column "
            f"{names[0]!r}; expected one of its values, e.g. {known}."
        )
        raise InputError(msg)
    g = sets.names.index(label) + 1  # feature codes run from 1
    size = np.diff(sets.f_off)
    owner = np.repeat(np.arange(size.size), size)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_item = np.bincount(
            owner[sets.feats == g], weights=1.0 / size[owner[sets.feats == g]],
            minlength=size.size,
        )  # fmt: skip
    info.update(groups=len(sets.names), items_without_group=sets.missing)
    return np.add.reduceat(per_item[codes], off[:-1]) / np.diff(off)


_LISTS: dict[str, Callable[[Metric, _Context, dict[str, Any]], np.ndarray]] = {
    "miscalibration": _miscalibration,
    "unexpectedness": _unexpected,
    "serendipity": _unexpected,
    "pop_serendipity": _pop_serendipity,
    "awrf": _awrf,
    "ee_loss": _expected_exposure,
    "ee_disparity": _expected_exposure,
    "ee_relevance": _expected_exposure,
    "group_share": _group_share,
}


# ------------------------------------------------ exposure of item groups over every list
# Global metrics (docs/fairness.md, "Exposure of groups over every list"): each group's
# attention summed over every user's list, kept as exact expansions per group, so that every
# engine (local, sharded, streaming, Spark) merges the blocks' states to the same bits.

_GROUP_METRICS = frozenset(
    {
        "exposure_share",
        "exposure_disparity",
        "exposure_gap",
        "exposure_gini",
        "exposure_entropy",
        "group_coverage",
    }
)
_PAIRED = frozenset({"exposure_share", "exposure_disparity", "exposure_gap"})  # take group=
_COMPARED = frozenset({"exposure_disparity", "exposure_gap"})  # and reference=


def _group_labels(names: list[str], sets: _Sets) -> tuple[str, ...]:
    """The groups' names in the order of their codes (1, 2, ...): the value of the column,
    ``column=value`` when the groups come from several columns."""
    out = []
    for feature in sets.names:
        j, value = feature.split("\x1f", 1)
        out.append(value if len(names) == 1 else f"{names[int(j)]}={value}")
    return tuple(out)


def _group_code(m: Metric, param: str, names: list[str], labels: tuple[str, ...]) -> int:
    """The code (from 1) of the group named by ``param`` of ``m``, or raise."""
    value = m.get(param)
    if len(names) != 1 or not isinstance(value, str):
        msg = (
            f"{m.canonical} compares one group of one column; pass both in the metric, e.g. "
            f"{m.name}(by=provider, group=p1)@10 (columns: {names}; {param}: {value!r})."
        )
        raise MetricError(msg)
    if value not in labels:
        msg = (
            f"{m.canonical}: no item of the item table is in group {value!r} of column "
            f"{names[0]!r} ({param}=); expected one of its {len(labels)} groups, e.g. "
            f"{list(labels[:_SHOW])}."
        )
        raise InputError(msg)
    return labels.index(value) + 1


def _group_exposure(part: Part, ctx: _Context, m: Metric, info: dict[str, Any]) -> None:
    """Add ``m`` to the group-exposure state of its cutoff, column and attention (made from
    this block's lists on first use)."""
    names = _category_names(m, ctx)
    sets = _sets(ctx, names, "a group")
    labels = _group_labels(names, sets)
    if not labels:
        msg = (
            f"{m.canonical} reads groups from {names}, where no item of the item table has a "
            "value; expected at least one item with a group."
        )
        raise InputError(msg)
    if m.name in _PAIRED:
        g = _group_code(m, "group", names, labels)
        if m.name in _COMPARED:
            if m.get("reference") is not None:
                r = _group_code(m, "reference", names, labels)
                if r == g:
                    msg = (
                        f"{m.canonical} compares a group with itself; pass another group as "
                        f"reference=, or none to compare with every other group."
                    )
                    raise MetricError(msg)
            elif len(labels) < 2:
                msg = (
                    f"{m.canonical} compares group {labels[0]!r} with the other groups of "
                    f"{names[0]!r}, and the item table has no other; expected 2 groups or more."
                )
                raise MetricError(msg)
    timed = any(p.name == "attention" for p in m.spec.params)
    mode = f"{m.str_param('attention')}:{m.float_param('patience')!r}" if timed else "lists"
    key = f"group_exposure@{m.k}:{names!r}:{mode}"
    state = part.states.get(key)
    if not isinstance(state, GroupExposure):
        state = _group_state(ctx, m, sets, labels, timed)
        part.states[key] = state
    state.metrics += (m.canonical,)
    info.update(groups=len(labels), items_without_group=sets.missing)


def _group_state(
    ctx: _Context, m: Metric, sets: _Sets, labels: tuple[str, ...], timed: bool
) -> GroupExposure:
    """This block's group exposure: attention per group (``timed``) and appearances in L@K."""
    n_groups = len(labels)
    size = np.diff(sets.f_off)
    weights = 1.0 / np.repeat(size, size).astype(np.float64)
    owner = np.repeat(np.arange(size.size), size)
    items = np.bincount(sets.feats, weights=weights, minlength=n_groups + 1)
    exposure = ctx.exposure(m.k)
    hits = np.bincount(sets.feats, weights=exposure[owner], minlength=n_groups + 1)
    hits[0] = exposure[size == 0].sum()
    if timed:
        _, _, att, codes = _exposure(m, ctx, m.str_param("attention") == "geometric")
        values, seg = BK.group_pairs(codes, att, sets.f_off, sets.feats, weights)
        flat, off = segment_parts(values, seg, n_groups + 1)
    else:
        flat, off = np.zeros(0), np.zeros(n_groups + 2, dtype=np.int64)
    return GroupExposure(
        labels=labels, items=items[1:], flat=flat, off=off,
        hits=hits.astype(np.int64), lists=ctx.prep.r_grp.n_users,
    )  # fmt: skip


@dataclass
class GroupExposure(GlobalState):
    """The exposure of the item groups of one column at one cutoff and attention, over the
    lists of a block of users: per segment (0: items without a group, then each group),
    the attention summed exactly (an expansion, :func:`receval.kernels.exact.segment_parts`)
    and the appearances in the top-K lists; the lists counted. Small (a few floats per
    group), so it has no rows: blocks merge by adding (exactly), whatever their order."""

    metrics: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()  # group names, by code 1, 2, ...
    items: np.ndarray = field(default_factory=lambda: np.zeros(0))  # n_g per group
    flat: np.ndarray = field(default_factory=lambda: np.zeros(0))  # expansions, by segment
    off: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    hits: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    lists: int = 0

    def merge(self, other: GroupExposure) -> GroupExposure:
        """Add ``other``'s lists (in place; returns self)."""
        if other.metrics != self.metrics or other.labels != self.labels:
            msg = "group exposure states of different metrics or groups cannot merge"
            raise ValueError(msg)
        n_seg = self.off.size - 1
        seg = np.arange(n_seg)
        values = np.concatenate([self.flat, other.flat])
        which = np.concatenate(
            [np.repeat(seg, np.diff(self.off)), np.repeat(seg, np.diff(other.off))]
        )
        self.flat, self.off = segment_parts(values, which, n_seg)
        self.hits = self.hits + other.hits
        self.lists += other.lists
        return self

    def finish(self, metric: Metric, info: dict[str, Any]) -> float | None:
        exposure = segment_totals(self.flat, self.off)  # per segment, exactly rounded
        shown = total_exact(self.flat[self.off[1] :])  # attention to items with a group
        every = total_exact(self.flat)
        name = metric.name
        info["users"] = self.lists
        if name == "group_coverage":
            info["items_without_group_shown"] = int(self.hits[0])
            return int(np.count_nonzero(self.hits[1:])) / len(self.labels)
        info["exposure_without_group"] = float(exposure[0] / every) if every > 0 else math.nan
        if name in ("exposure_gini", "exposure_entropy"):
            return _spread(name, exposure[1:], shown)
        if shown <= 0.0:  # no attention to any item with a group
            return math.nan
        g = self.labels.index(str(metric.get("group"))) + 1
        if name == "exposure_share":
            return float(exposure[g] / shown)
        reference = metric.get("reference")
        if reference is None:  # every other group: the exact sum of their expansions
            rest = np.ones(len(self.labels) + 1, dtype=np.bool_)
            rest[[0, g]] = False
            keep = np.repeat(rest, np.diff(self.off))
            e_ref = total_exact(self.flat[keep])
            n_ref = math.fsum(self.items[rest[1:]])
        else:
            r = self.labels.index(str(reference)) + 1
            e_ref, n_ref = float(exposure[r]), float(self.items[r - 1])
        mine = exposure[g] / self.items[g - 1]
        theirs = e_ref / n_ref
        if name == "exposure_gap":
            return float(mine / self.lists - theirs / self.lists)
        if theirs == 0.0:
            return math.inf if mine > 0.0 else math.nan
        return float(mine / theirs)


def _spread(name: str, exposure: np.ndarray, total: float) -> float:
    """Gini index or entropy (bits) of the groups' exposure (``total``: its exact sum)."""
    if total <= 0.0:
        return math.nan
    x = np.sort(exposure)
    n = x.size
    if name == "exposure_gini":
        ranks = np.arange(1, n + 1, dtype=np.float64)
        return math.fsum(((2.0 * ranks - n - 1.0) * x).tolist()) / (n * total)
    p = x[x > 0.0] / total
    return abs(math.fsum((-p * np.log2(p)).tolist()))
