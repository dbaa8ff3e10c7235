"""What an engine reads for the metric families besides truth and recs.

The families compute from the layout (:class:`~receval.families.contract.Prepared`) and never
read: an engine reads ``train`` once (:func:`with_train`: its pairs, and the recs rows users
already have in train) and, before the beyond-accuracy family computes, the tables it needs
(:func:`with_family_tables`), all through the input layer (:mod:`receval.data.tables`).
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace
from typing import Any

import polars as pl

from receval._errors import InputError
from receval.data.tables import in_train_counts, read_items, read_train, unify_items, warn_in_train
from receval.families.beyond import check_inputs
from receval.families.contract import Prepared
from receval.metrics.registry import Metric

__all__ = ["recs_item_kind", "with_family_tables", "with_train"]


def recs_item_kind(prep: Prepared) -> type[pl.DataType]:
    """The type item ids of train and items take: recs' (Int64 or String)."""
    return pl.String if prep.r_grp.source[prep.item_col].dtype == pl.String else pl.Int64


def with_train(prep: Prepared, data: Any) -> Prepared:
    """``prep`` with train read once (its distinct (user, item) pairs, kept for the beyond
    metrics) and ``counts.recs_in_train`` set; warns when recs hold items users have in train.
    """
    user_col, item_col = prep.user_col, prep.item_col
    kind = recs_item_kind(prep)
    id_type, inputs = prep.context.id_type, prep.context.inputs
    pairs = read_train(data, user_col, item_col, kind, id_type, inputs, unify=False)
    assert pairs is not None
    rows, users = in_train_counts(prep.t_grp.keys, prep.r_grp.source, pairs, user_col, item_col)
    warn_in_train(rows, users, stacklevel=3)
    counts = replace(prep.counts, recs_in_train=rows)
    context = prep.context
    with suppress(InputError):  # item ids typed as recs' are reused by the beyond metrics;
        # when they cannot be, with_family_tables reads train again and raises this error
        context = replace(context, train_pairs=unify_items(pairs, "train", item_col, kind))
    return replace(prep, counts=counts, context=context)


def with_family_tables(plan: tuple[Metric, ...], prep: Prepared) -> Prepared:
    """``prep`` whose context holds train's pairs and the item table read, their item ids typed
    as recs' (the beyond-accuracy family's inputs); options checked first
    (:func:`receval.families.beyond.check_inputs`), as the family does."""
    check_inputs(plan, prep.context)
    ctx = prep.context
    kind = recs_item_kind(prep)
    train = ctx.train_pairs
    if train is None:
        train = read_train(ctx.train, prep.user_col, prep.item_col, kind, ctx.id_type, ctx.inputs)
    items = read_items(ctx.items, prep.user_col, prep.item_col, kind, ctx.id_type, ctx.inputs)
    return replace(prep, context=replace(ctx, train_pairs=train, items=items))
