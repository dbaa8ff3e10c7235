"""Exposure and fairness metrics of the beyond-accuracy family (docs/beyond.md,
docs/fairness.md): how often and with how much attention items and groups of items are
shown, with the mergeable states of those that are global.

* the catalog's exposure counts: ``coverage``, ``gini``, ``entropy`` from the histogram of
  per-item counts (:func:`global_value`), merged across blocks and shards as
  :class:`ExposureCounts` (also the items absent from train of ``novelty``, ``arp``,
  ``long_tail``);
* per-user exposure fairness, from each ranked position's expected attention (tied items
  sharing their positions' attention under ``ties="expected"``): ``awrf``, expected exposure
  ``ee_loss`` / ``ee_disparity`` / ``ee_relevance`` (also over several sampled rankings per
  user) and ``group_share``;
* the exposure of item groups over every list (``exposure_share``, ``exposure_disparity``,
  ``exposure_gap``, ``exposure_gini``, ``exposure_entropy``, ``group_coverage``), kept as
  exact expansions per group in :class:`GroupExposure`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError, MetricError
from receval.families.beyond_context import (
    SHOW,
    BeyondContext,
    catalog_codes,
    relevant_rows,
    row_catalog_codes,
)
from receval.families.contract import SAMPLE_CODE, SAMPLE_ORDER, SAMPLE_PAIR, Part, Ties
from receval.families.item_features import (
    FeatureSets,
    category_names,
    check_listed,
    feature_sets,
)
from receval.families.states import COMPACT, GlobalState, counts_matrix, state_rows
from receval.kernels import beyond as BK
from receval.kernels.exact import parts_weighted, segment_parts, segment_totals
from receval.kernels.exact import total as total_exact
from receval.metrics.specs import Metric

__all__ = [
    "GROUP_METRICS",
    "ExposureCounts",
    "GroupExposure",
    "awrf",
    "expected_exposure",
    "exposure_histogram",
    "exposure_state",
    "global_value",
    "group_exposure",
    "group_share",
]


def exposure_state(part: Part, ctx: BeyondContext, m: Metric, absent: np.ndarray | None) -> None:
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


# ------------------------------------------------ exposure fairness of each list
# Per-user values from the attention of each ranked position (docs/fairness.md).


def _exposure(m: Metric, ctx: BeyondContext, geometric: bool) -> tuple[np.ndarray, ...]:
    """Each user's exposed rows with their expected attention, and their catalog codes."""
    key = ("exposure", m.k, geometric, m.float_param("patience"))
    if key not in ctx.cache:
        prep = ctx.prep
        top_off, _ = ctx.top(m.k)
        score = np.ascontiguousarray(prep.r_score, dtype=np.float64)
        e_off, rows, att = BK.exposure_rows(
            prep.r_grp.offsets, score, ctx.tie, top_off, ctx.top_rows[m.k],
            negate=prep.by_rank, expected=prep.ties is Ties.EXPECTED, geometric=geometric,
            patience=m.float_param("patience"),
        )  # fmt: skip
        ctx.cache[key] = (e_off, rows, att, row_catalog_codes(ctx, rows))
    return ctx.cache[key]  # type: ignore[no-any-return]


def awrf(m: Metric, ctx: BeyondContext, info: dict[str, Any]) -> np.ndarray:
    geometric = m.str_param("attention") == "geometric"
    e_off, _, att, codes = _exposure(m, ctx, geometric)
    sets = feature_sets(ctx, category_names(m, ctx), "a group")
    check_listed(m, ctx, sets, codes, "a group")
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


def _sampled_exposure(m: Metric, ctx: BeyondContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's expected exposure from its sampled rankings (``sample_col``): ``(e_off,
    rows, eps)``, ``eps`` the mean over the user's samples of each item's attention in the
    sample (0 where a sample leaves it out; Diaz et al. 2020, the sampled estimate), one entry
    per exposed recs row (a distinct (user, item)), in the order the items are first exposed
    (sample by sample, best first: with one sample, the order and values of a ranking)."""
    key = ("sampled", m.k, m.float_param("patience"))
    if key not in ctx.cache:
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
        ctx.cache[key] = (e_off, rows, np.ascontiguousarray(eps[rows]))
    return ctx.cache[key]  # type: ignore[no-any-return]


def expected_exposure(m: Metric, ctx: BeyondContext, info: dict[str, Any]) -> np.ndarray:
    """EE-L, EE-D or EE-R per user (Diaz et al. 2020), attention patience^(j-1); from several
    sampled rankings per user, the mean of their exposures (:func:`_sampled_exposure`)."""
    prep = ctx.prep
    gamma = m.float_param("patience")
    if prep.context.samples is not None:
        e_off, rows, att = _sampled_exposure(m, ctx)
    else:
        e_off, rows, att, _ = _exposure(m, ctx, True)
    threshold = prep.threshold_of(m)
    rel = relevant_rows(ctx, threshold)[rows]
    n_users = prep.r_grp.n_users
    # relevant truth items per recs user, and those outside the catalog (they widen it)
    t_rel = (prep.t_rel >= threshold).astype(np.int64)
    t_off = prep.t_grp.offsets
    t_item = prep.t_grp.frame[prep.item_col]
    t_codes = catalog_codes(ctx.catalog, t_item.cast(ctx.catalog.dtype))
    outside = (t_codes < 0).astype(np.int64) * t_rel
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


def group_share(m: Metric, ctx: BeyondContext, info: dict[str, Any]) -> np.ndarray:
    off, codes = ctx.top(m.k)
    names = category_names(m, ctx)
    group = m.get("group")
    if len(names) != 1 or not isinstance(group, str):
        msg = (
            f"{m.canonical} takes the share of one group of one column; pass both in the "
            f"metric, e.g. group_share(by=provider, group=p1)@10 (columns: {names})."
        )
        raise MetricError(msg)
    sets = feature_sets(ctx, names, "a group")
    check_listed(m, ctx, sets, codes, "a group")
    label = f"0\x1f{group}"
    if label not in sets.names:
        known = [n.split("\x1f", 1)[1] for n in sets.names[:SHOW]]
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


# ------------------------------------------------ exposure of item groups over every list
# Global metrics (docs/fairness.md, "Exposure of groups over every list"): each group's
# attention summed over every user's list, kept as exact expansions per group, so that every
# engine (local, sharded, streaming, Spark) merges the blocks' states to the same bits.

GROUP_METRICS = frozenset(
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


def _group_labels(names: list[str], sets: FeatureSets) -> tuple[str, ...]:
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
            f"{list(labels[:SHOW])}."
        )
        raise InputError(msg)
    return labels.index(value) + 1


def group_exposure(part: Part, ctx: BeyondContext, m: Metric, info: dict[str, Any]) -> None:
    """Add ``m`` to the group-exposure state of its cutoff, column and attention (made from
    this block's lists on first use)."""
    names = category_names(m, ctx)
    sets = feature_sets(ctx, names, "a group")
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
    ctx: BeyondContext, m: Metric, sets: FeatureSets, labels: tuple[str, ...], timed: bool
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
