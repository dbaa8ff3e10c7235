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
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.data.io import Inputs, Role, read_table, rename_ids
from receval.data.layout import (
    INTERNAL,
    IdTypeArg,
    cast_ids,
    check_frame,
    check_id_type,
    id_type_fix,
    show_rows,
    trec_tie_keys,
)
from receval.families.contract import Part, Prepared, per_user_frame
from receval.kernels import beyond as BK
from receval.kernels.exact import parts_weighted
from receval.kernels.exact import total as total_exact
from receval.metrics.registry import Metric

__all__ = [
    "beyond_part",
    "catalog_of",
    "check_train",
    "check_train_columns",
    "exposure_histogram",
    "global_value",
    "in_train_counts",
    "join_key_type",
    "read_items",
    "read_train",
    "train_popularity",
    "unify_items",
    "warn_in_train",
]

_SHOW = 5
_ONE = f"{INTERNAL}_one__"


def beyond_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means, per-user values and details of the beyond-accuracy metrics in ``plan``.

    Users are the users in recs (``prep.r_grp``). Per-user metrics (``ils``, ``diversity``,
    ``novelty``, ``arp``, ``long_tail``) get a column (users sorted by id, null where a user
    has no value) and a mean over the users that have a value; ``coverage``, ``gini`` and
    ``entropy`` are global. ``details[name]`` says which catalog, how many users, items absent
    from train, lists too short for a pair, and so on.
    """
    _check_inputs(plan, prep.options)
    ctx = _Context.build(prep, plan)
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    columns: dict[str, np.ndarray] = {}
    part = Part(means, None, details)
    shard = bool(prep.options.get("_shard"))
    n_users = prep.r_grp.n_users
    for m in plan:
        off, codes = ctx.top(m.k)
        name = m.name
        info: dict[str, Any] = {"users": n_users}
        if m.is_global():
            info.update(catalog=ctx.catalog_source, catalog_size=ctx.n_catalog)
            if shard:  # exposure sums over every shard's users before it has a value
                part.pending[m.canonical] = ("exposure", (m.k, ctx.exposure(m.k), None))
            else:
                means[m.canonical] = global_value(
                    name, *exposure_histogram(ctx.exposure(m.k)), ctx.n_catalog
                )
        elif m.spec.needs_train:
            pop = ctx.popularity()
            absent = np.count_nonzero((ctx.exposure(m.k) > 0) & (pop.counts == 0))
            info.update(train_users=pop.n_users, not_in_train=int(absent))
            if shard:  # items absent from train count once over every shard's lists
                part.pending[m.canonical] = ("exposure", (m.k, ctx.exposure(m.k), pop.counts == 0))
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


def _check_inputs(plan: tuple[Metric, ...], options: dict[str, Any]) -> None:
    """Name the missing argument before reading anything."""
    for m in plan:
        if m.spec.needs_train and options.get("train") is None and "_popularity" not in options:
            msg = (
                f"{m.canonical} needs item popularity from training interactions; pass "
                "train= (rows (user, item), same sources as truth; --train on the command line)."
            )
            raise InputError(msg)
        if m.spec.needs_item_features:
            features = options.get("item_features")
            if features is None:
                msg = (
                    f"{m.canonical} needs item similarity; pass item_features= (a vector "
                    "column of items, a list of categorical columns, or a function "
                    "sim(item_a, item_b) -> float; --item-features on the command line)."
                )
                raise InputError(msg)
            if not callable(features) and options.get("items") is None:
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
        opts, user_col = prep.options, prep.user_col
        id_type, inputs = opts.get("id_type", "auto"), opts.get("_inputs")
        train = opts.get("_train_pairs")  # read once by evaluate when train is given
        if train is None:
            train = read_train(opts.get("train"), user_col, item_col, kind, id_type, inputs)
        items = read_items(opts.get("items"), user_col, item_col, kind, id_type, inputs)
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
        elif "_catalog" in prep.options:  # a shard: the catalog of every shard's items
            catalog = prep.options["_catalog"]
            source = prep.options["_catalog_source"]
            if ids is None:
                row_codes = _codes(catalog, r_items)
        else:
            catalog, source = catalog_of(
                r_items, ids, prep.t_grp.source[item_col].cast(kind), train
            )
            if ids is None:  # string ids: the codes are the tie keys of "expected" below
                row_codes = _codes(catalog, r_items)
        if prep.ties == "first":
            tie = np.arange(r_items.len(), dtype=np.int64)
        elif prep.ties == "trec":
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
        return self._tops[k]

    def exposure(self, k: int | None) -> np.ndarray:
        """Per catalog code, the number of lists L@K that hold the item."""
        if k not in self._exposure:
            self._exposure[k] = np.bincount(self.top(k)[1], minlength=self.n_catalog)
        return self._exposure[k]

    def popularity(self) -> _Popularity:
        if self._pop is None:
            given = self.prep.options.get("_popularity")  # a shard: train's, aggregated once
            if given is not None:
                per_item, n_users = given
            else:
                assert self.train is not None  # checked by _check_inputs
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
            features = self.prep.options["item_features"]
            if callable(features):
                self._sim[k] = (self._ils_callable(off, codes, features), "callable")
            else:
                assert self.items is not None  # checked by _check_inputs
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


def unify_items(frame: pl.DataFrame, role: str, col: str, kind: type[pl.DataType]) -> pl.DataFrame:
    """Give ``frame[col]`` the item id type of recs (Int64 or String), or raise."""
    dtype = frame.schema[col]
    if kind == pl.Int64 and dtype.is_integer():
        return frame.with_columns(pl.col(col).cast(pl.Int64))
    if kind == pl.String and dtype == pl.String:
        return frame
    recs_type = "integers" if kind == pl.Int64 else "strings"
    msg = (
        f"item ids of {role} and recs have different types: {role} column {col!r} is {dtype}, "
        f"recs column {col!r} holds {recs_type}; expected both integers or both strings. "
        f"{id_type_fix('item')} or convert one side, e.g. pl.col({col!r}).cast(pl.String)."
    )
    raise InputError(msg)


def check_train_columns(columns: list[str], user_col: str, item_col: str) -> None:
    """Raise unless train has the user and item columns."""
    for col in (user_col, item_col):
        if col not in columns:
            msg = (
                f"train is missing column {col!r} (columns found: {columns}); pass "
                "user_col= / item_col= to name the id columns."
            )
            raise InputError(msg)


def check_train(prep: Prepared, data: Any) -> Prepared:
    """``prep`` with train read once (its distinct (user, item) pairs, kept for the beyond
    metrics) and ``counts.recs_in_train`` set; warns when recs hold items users have in train.
    """
    user_col, item_col = prep.user_col, prep.item_col
    r_items = prep.r_grp.source[item_col]
    kind = pl.String if r_items.dtype == pl.String else pl.Int64
    id_type, inputs = prep.options.get("id_type", "auto"), prep.options.get("_inputs")
    pairs = read_train(data, user_col, item_col, kind, id_type, inputs, unify=False)
    assert pairs is not None
    rows, users = in_train_counts(prep.t_grp.keys, prep.r_grp.source, pairs, user_col, item_col)
    warn_in_train(rows, users, stacklevel=3)
    counts = replace(prep.counts, recs_in_train=rows)
    options = prep.options
    with suppress(InputError):  # item ids typed as recs' are reused by the beyond metrics,
        # which otherwise read train again and raise this error when one needs it
        options = {**options, "_train_pairs": unify_items(pairs, "train", item_col, kind)}
    return replace(prep, counts=counts, options=options)


def join_key_type(a: pl.DataType, b: pl.DataType) -> type[pl.DataType]:
    """The type two id columns are compared as: Int64 when both hold integers (UInt64: as
    decimal text), else text (train ids read from a CSV file against integer ids elsewhere:
    ``"7"`` is 7, ``"007"`` is not)."""
    if a.is_integer() and b.is_integer() and pl.UInt64 not in (a, b):
        return pl.Int64
    return pl.String


def _join_types(a: pl.DataFrame, b: pl.DataFrame, col: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``a[col]`` and ``b[col]`` of one type (:func:`join_key_type`), to join on."""
    t, u = a.schema[col], b.schema[col]
    if t == u:
        return a, b
    kind = join_key_type(t, u)
    return a.with_columns(pl.col(col).cast(kind)), b.with_columns(pl.col(col).cast(kind))


def in_train_counts(
    truth_users: pl.Series, recs: pl.DataFrame, train: pl.DataFrame, user_col: str, item_col: str
) -> tuple[int, int]:
    """(rows, users): the recs rows of users in truth whose (user, item) pair is in ``train``
    (distinct pairs), and how many users they belong to. Ids of different types compare as
    :func:`join_key_type` says."""
    keys = recs.select(user_col, item_col)
    users = pl.DataFrame({user_col: truth_users})
    users, keys = _join_types(users, keys, user_col)
    keys = keys.join(users, on=user_col, how="semi")
    keys, train = _join_types(keys, train, user_col)
    keys, train = _join_types(keys, train, item_col)
    found = keys.join(train, on=[user_col, item_col], how="semi")
    return found.height, found[user_col].n_unique()


def warn_in_train(rows: int, users: int, stacklevel: int = 2) -> None:
    """The warning about recs rows whose item the user already has in train (none: no
    warning)."""
    if rows:
        warnings.warn(
            f"{rows} recommendation rows ({users} users) are items the user already has in "
            "train; exclude them before evaluating, or keep them if recommending known items "
            "is intended (result.counts.recs_in_train counts them).",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def read_train(
    data: Any,
    user_col: str,
    item_col: str,
    kind: type[pl.DataType],
    id_type: IdTypeArg = "auto",
    inputs: Inputs | None = None,
    unify: bool = True,
) -> pl.DataFrame | None:
    """Distinct (user, item) pairs of train, ids cast as ``id_type`` asks, item ids typed as
    in recs (``kind``; ``unify`` false: as read). ``inputs``: train's own column names and
    format (its columns then renamed to ``user_col`` and ``item_col``)."""
    if data is None:
        return None
    role: Role = "train"
    own_user, own_item = inputs.columns[role] if inputs is not None else (user_col, item_col)
    fmt = inputs.formats[role] if inputs is not None else None
    raw = read_table(
        data, role, user_col=own_user, item_col=own_item, value_col=_ONE, input_format=fmt
    )
    check_train_columns(raw.columns, own_user, own_item)
    raw = raw.select(own_user, own_item).with_columns(pl.lit(1.0).alias(_ONE))
    frame = check_frame(
        raw, role, id_cols=[own_user, own_item], value_col=_ONE, value_name="unused",
        fix="train needs only the user and item columns.",
    )  # fmt: skip
    kinds = check_id_type(id_type)
    frame = cast_ids(frame, role, {own_user: kinds["user"], own_item: kinds["item"]})
    if unify:
        frame = unify_items(frame, "train", own_item, kind)
    ids = [pl.col(own_user).alias(user_col), pl.col(own_item).alias(item_col)]
    return frame.select(ids).unique()


def read_items(
    data: Any,
    user_col: str,
    item_col: str,
    kind: type[pl.DataType],
    id_type: IdTypeArg = "auto",
    inputs: Inputs | None = None,
) -> pl.DataFrame | None:
    """The item table sorted by item id (ids cast as ``id_type`` asks, then unique and typed
    as in recs). ``inputs``: the table's own item column name and format (the column then
    renamed to ``item_col``)."""
    if data is None:
        return None
    role: Role = "items"
    if not isinstance(data, pl.DataFrame | pl.LazyFrame) and isinstance(data, dict):
        msg = "items must be a Polars/pandas DataFrame, a PyArrow Table or a Parquet/CSV file."
        raise InputError(msg)
    canonical = item_col
    if inputs is not None:
        item_col = inputs.columns[role][1]
    fmt = inputs.formats[role] if inputs is not None else None
    raw = read_table(
        data, role, user_col=user_col, item_col=item_col, value_col=_ONE, input_format=fmt
    )
    if item_col not in raw.columns:
        msg = (
            f"items is missing column {item_col!r} (columns found: {raw.columns}); pass "
            "item_col= to name the item id column."
        )
        raise InputError(msg)
    checked = check_frame(
        raw.select(item_col).with_columns(pl.lit(1.0).alias(_ONE)), role, id_cols=[item_col],
        value_col=_ONE, value_name="unused", fix="",
    )  # fmt: skip
    checked = cast_ids(checked, role, {item_col: check_id_type(id_type)["item"]})
    frame = raw.with_columns(checked[item_col])
    frame = unify_items(frame, "items", item_col, kind)
    dup = pl.col(item_col).is_duplicated()
    n_dup = frame.select(dup.sum()).item()
    if n_dup:
        msg = (
            f"items has {n_dup} rows with a repeated item id; expected each item once. "
            f"First offending rows:\n{show_rows(frame, dup, [item_col])}"
        )
        raise InputError(msg)
    frame = rename_ids(frame, role, (user_col, item_col), (user_col, canonical))
    return frame.sort(canonical)


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
