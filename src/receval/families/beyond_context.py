"""What the beyond-accuracy metrics of one call share (:mod:`receval.families.beyond`): the
catalog and its codes, every user's top-K list ``L_u@K``, the exposure of each item, train
popularity, each user's train history and the relevance of recs rows.

:class:`BeyondContext` is built once per call (or per block of users) from the shared layout
and computes each of these once, on first use. The catalog is the sorted distinct item ids
(the item table's, a shard's given catalog, or truth + recs (+ train)); integer ids in a
dense range are marked in a table by a Numba pass and looked up through one, others go
through Polars ``unique`` and a join; only the selected rows are factorised to catalog codes
(string ids: every row, their codes are the tie keys).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.data.layout import trec_tie_keys
from receval.data.tables import join_types
from receval.families.contract import Prepared, Ties
from receval.kernels import beyond as BK
from receval.metrics.specs import Metric

__all__ = [
    "SHOW",
    "BeyondContext",
    "Popularity",
    "catalog_codes",
    "catalog_of",
    "relevant_rows",
    "row_catalog_codes",
    "train_history",
    "train_popularity",
]

SHOW = 5  # offending values shown in a message


@dataclass
class Popularity:
    """Train popularity read against the catalog: distinct train users per item."""

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
class BeyondContext:
    """What the beyond metrics share: the catalog, top-K lists with their catalog codes,
    exposure, train popularity and item similarity, each computed once (the similarity by
    :func:`receval.families.item_features.list_similarity`, the list metrics' other inputs
    in ``cache``)."""

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
    top_rows: dict[int | None, np.ndarray] = field(default_factory=dict)  # by top(k)
    cache: dict[Any, Any] = field(default_factory=dict)  # the list metrics' shared inputs
    _exposure: dict[int | None, np.ndarray] = field(default_factory=dict)
    _pop: Popularity | None = None
    similarity: dict[int | None, tuple[np.ndarray, str]] = field(default_factory=dict)  # ils

    @property
    def n_catalog(self) -> int:
        return self.catalog.len()

    @staticmethod
    def build(prep: Prepared, plan: tuple[Metric, ...]) -> BeyondContext:
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
            row_codes = catalog_codes(catalog, r_items if ids is None else ids)
            missing = row_codes < 0
            if missing.any():
                absent = r_items.filter(pl.Series(missing)).unique(maintain_order=True)
                msg = (
                    f"items lacks {absent.len()} item(s) that recs recommends, e.g. "
                    f"{absent.head(SHOW).to_list()}; expected every recommended item in the "
                    f"item table (column {item_col!r})."
                )
                raise InputError(msg)
        elif ctx.catalog is not None:  # a shard: the catalog of every shard's items
            catalog = ctx.catalog
            source = str(ctx.catalog_source)
            if ids is None:
                row_codes = catalog_codes(catalog, r_items)
        else:
            catalog, source = catalog_of(
                r_items, ids, prep.t_grp.source[item_col].cast(kind), train
            )
            if ids is None:  # string ids: the codes are the tie keys of "expected" below
                row_codes = catalog_codes(catalog, r_items)
        if prep.ties is Ties.FIRST:
            tie = np.arange(r_items.len(), dtype=np.int64)
        elif prep.ties is Ties.TREC:
            tie = -trec_tie_keys(prep.r_grp.column(item_col), prep.r_item)
        elif ids is not None:
            tie = ids  # item id ascending
        else:
            assert row_codes is not None
            tie = row_codes  # the catalog is sorted by id: code order is id order
        return BeyondContext(prep, plan, catalog, source, ids, row_codes, train, items, tie)

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
                codes = catalog_codes(self.catalog, self.ids[rows])  # every selected id is in it
            self._tops[k] = (off, codes)
            self.top_rows[k] = rows
        return self._tops[k]

    def exposure(self, k: int | None) -> np.ndarray:
        """Per catalog code, the number of lists L@K that hold the item."""
        if k not in self._exposure:
            self._exposure[k] = np.bincount(self.top(k)[1], minlength=self.n_catalog)
        return self._exposure[k]

    def popularity(self) -> Popularity:
        if self._pop is None:
            given = self.prep.context.popularity  # a shard: train's, aggregated once
            if given is not None:
                per_item, n_users = given
            else:
                assert self.train is not None  # checked by check_inputs
                per_item, n_users = train_popularity(
                    self.train, self.prep.user_col, self.prep.item_col
                )
            train_codes = catalog_codes(self.catalog, per_item[self.prep.item_col])
            train_counts = per_item["n"].to_numpy().astype(np.int64)
            counts = np.zeros(self.n_catalog, dtype=np.int64)
            inside = train_codes >= 0
            counts[train_codes[inside]] = train_counts[inside]
            self._pop = Popularity(counts, n_users, train_counts, train_codes)
        return self._pop


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


def catalog_codes(catalog: pl.Series, values: pl.Series | np.ndarray) -> np.ndarray:
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


def row_catalog_codes(ctx: BeyondContext, rows: np.ndarray) -> np.ndarray:
    """Catalog codes of recs rows."""
    if ctx.row_codes is not None:
        return np.ascontiguousarray(ctx.row_codes[rows])
    assert ctx.ids is not None
    return catalog_codes(ctx.catalog, ctx.ids[rows])


def relevant_rows(ctx: BeyondContext, threshold: float) -> np.ndarray:
    """Per recs row, 1.0 when truth holds its (user, item) with relevance >= threshold."""
    prep = ctx.prep
    out = np.zeros(prep.r_grp.frame.height, dtype=np.float64)
    hit = (prep.t_match >= 0) & (prep.t_rel >= threshold)
    out[prep.t_match[hit]] = 1.0
    return out


def train_history(ctx: BeyondContext) -> tuple[np.ndarray, np.ndarray]:
    """Each recs user's train items as catalog codes (-1: outside the catalog), CSR by the
    recs users' order: ``(h_off, h_codes)``."""
    if "history" not in ctx.cache:
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
        ctx.cache["history"] = (h_off, catalog_codes(ctx.catalog, rows[item_col]))
    return ctx.cache["history"]  # type: ignore[no-any-return]
