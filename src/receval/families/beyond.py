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

This module is the family's provider (:func:`beyond_part`), its input checks, the metrics of
popularity (``novelty``, ``arp``, ``long_tail``), calibration and serendipity, and the dispatch
to the others. What every metric of a call shares (the catalog, the top-K lists, popularity)
lives in :mod:`receval.families.beyond_context`; similarity and categories from the item table
in :mod:`receval.families.item_features`; coverage, ``gini``, ``entropy``, exposure fairness
and their mergeable states in :mod:`receval.families.exposure`.

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
from typing import Any

import numpy as np

from receval._errors import InputError, MetricError
from receval.families.beyond_context import SHOW, BeyondContext, relevant_rows, train_history
from receval.families.contract import SAMPLED_METRICS, Context, Part, Prepared, per_user_frame
from receval.families.exposure import (
    GROUP_METRICS,
    awrf,
    expected_exposure,
    exposure_histogram,
    exposure_state,
    global_value,
    group_exposure,
    group_share,
)
from receval.families.item_features import (
    category_names,
    check_listed,
    feature_sets,
    history_vectors,
    history_without,
    is_vector,
    list_similarity,
)
from receval.kernels import beyond as BK
from receval.metrics.specs import Metric

__all__ = ["beyond_part", "check_inputs", "check_sampled_metrics"]


def beyond_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """Means, per-user values and details of the beyond-accuracy metrics in ``plan``.

    Users are the users in recs (``prep.r_grp``). Per-user metrics (``ils``, ``diversity``,
    ``novelty``, ``arp``, ``long_tail``) get a column (users sorted by id, null where a user
    has no value) and a mean over the users that have a value; ``coverage``, ``gini`` and
    ``entropy`` are global. ``details[name]`` says which catalog, how many users, items absent
    from train, lists too short for a pair, and so on.
    """
    check_inputs(plan, prep.context)
    ctx = BeyondContext.build(prep, plan)
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
        if name in GROUP_METRICS:  # exposure of item groups over every list (global)
            group_exposure(part, ctx, m, info)
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
                exposure_state(part, ctx, m, None)
            else:
                means[m.canonical] = global_value(
                    name, *exposure_histogram(ctx.exposure(m.k)), ctx.n_catalog
                )
        elif m.spec.needs_train:
            pop = ctx.popularity()
            absent = np.count_nonzero((ctx.exposure(m.k) > 0) & (pop.counts == 0))
            info.update(train_users=pop.n_users, not_in_train=int(absent))
            if shard:  # items absent from train count once over every shard's lists
                exposure_state(part, ctx, m, pop.counts == 0)
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
            sims, kind = list_similarity(ctx, m.k)
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
            f"{others[:SHOW]}. Evaluate those metrics on one ranking per user, without "
            "sample_col."
        )
        raise MetricError(msg)


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


# ------------------------------------------- calibration, serendipity, exposure fairness
# Per-user values of each list (docs/calibration.md, docs/serendipity.md, docs/fairness.md;
# exposure fairness in receval.families.exposure). A user's history is their train items;
# categories and groups are (column, value) features of the item table, an item's features
# sharing its weight equally.


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


def _miscalibration(m: Metric, ctx: BeyondContext, info: dict[str, Any]) -> np.ndarray:
    off, codes = ctx.top(m.k)
    names = category_names(m, ctx)
    sets = feature_sets(ctx, names, "a category")
    check_listed(m, ctx, sets, codes, "a category")
    h_off, h_codes = train_history(ctx)
    values = BK.miscalibration(
        h_off, h_codes, off, codes, sets.f_off, sets.feats, m.float_param("alpha")
    )
    info.update(
        categories=len(sets.names),
        history_rows_left_out=history_without(np.diff(sets.f_off) == 0, h_codes),
        no_history=int(np.isnan(values).sum()),
    )
    return values


def _unexpected(m: Metric, ctx: BeyondContext, info: dict[str, Any]) -> np.ndarray:
    """unexpectedness and serendipity (Microsoft Recommenders): similarity to the history."""
    off, codes = ctx.top(m.k)
    h_off, h_codes = train_history(ctx)
    rows = ctx.top_rows[m.k]
    rel = (
        relevant_rows(ctx, ctx.prep.threshold_of(m))[rows]
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
        and is_vector(ctx.items.schema[features])
    ):
        unit, has = history_vectors(ctx, features, codes, h_codes)
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
        sets = feature_sets(ctx, names, "features")
        check_listed(m, ctx, sets, codes, "item features")
        unexp, seren = BK.unexpectedness_jaccard(
            off, codes, rel, h_off, h_codes, sets.f_off, sets.feats
        )
        kind = "jaccard"
        left_out = history_without(np.diff(sets.f_off) == 0, h_codes)
    values = seren if m.name == "serendipity" else unexp
    info.update(
        similarity=kind, history_rows_left_out=left_out, no_history=int(np.isnan(values).sum())
    )
    return values


def _pop_serendipity(m: Metric, ctx: BeyondContext, info: dict[str, Any]) -> np.ndarray:
    """RecTools' serendipity: relevance times max(0, list probability - popularity
    probability), probabilities from ranks among the catalog's n items."""
    off, codes = ctx.top(m.k)
    rows = ctx.top_rows[m.k]
    rel = relevant_rows(ctx, ctx.prep.threshold_of(m))[rows]
    pop = ctx.popularity()
    n = float(ctx.n_catalog)
    distinct = np.unique(pop.train_counts)[::-1]  # descending: dense rank 1 = most popular
    rank = np.searchsorted(-distinct, -pop.counts) + 1.0
    p_any = np.where(pop.counts > 0, (n + 1.0 - rank) / n, 0.0)  # absent from train: 0
    position = np.arange(codes.size, dtype=np.float64) - np.repeat(off[:-1], np.diff(off)) + 1.0
    row_values = rel * np.maximum((n + 1.0 - position) / n - p_any[codes], 0.0)
    info.update(catalog_size=ctx.n_catalog, train_users=pop.n_users)
    return np.add.reduceat(row_values, off[:-1]) / np.diff(off)


_LISTS: dict[str, Callable[[Metric, BeyondContext, dict[str, Any]], np.ndarray]] = {
    "miscalibration": _miscalibration,
    "unexpectedness": _unexpected,
    "serendipity": _unexpected,
    "pop_serendipity": _pop_serendipity,
    "awrf": awrf,
    "ee_loss": expected_exposure,
    "ee_disparity": expected_exposure,
    "ee_relevance": expected_exposure,
    "group_share": group_share,
}
