"""Item similarity and item categories for the beyond-accuracy family, read from the item
table or a caller's function (``item_features=``, ``by=``; docs/beyond.md,
docs/calibration.md, docs/serendipity.md, docs/fairness.md).

* :func:`list_similarity`: each list's mean pairwise similarity (``ils``, ``diversity``):
  cosine of one vector column, Jaccard of the (column, value) features of categorical
  columns, or the caller's ``sim(item_a, item_b)`` once per distinct pair;
* :func:`feature_sets`: the (column, value) features of every catalog item, as CSR by
  catalog code, with their names (the categories of calibration, the groups of exposure
  fairness) and :func:`category_names`, the columns they come from;
* :func:`history_vectors`: unit vectors of the recommended items and of the users' train
  items (serendipity, unexpectedness).

Every item that is recommended must have a valid vector or feature; the messages name the
first few that do not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.families.beyond_context import SHOW, BeyondContext
from receval.kernels import beyond as BK
from receval.metrics.specs import Metric

__all__ = [
    "FeatureSets",
    "category_names",
    "check_listed",
    "feature_sets",
    "history_vectors",
    "history_without",
    "is_vector",
    "list_similarity",
]


def list_similarity(ctx: BeyondContext, k: int | None) -> tuple[np.ndarray, str]:
    """Per-user mean pairwise similarity of L@K (NaN for lists shorter than 2), and how it
    was measured (``"cosine"``, ``"jaccard"`` or ``"callable"``)."""
    if k not in ctx.similarity:
        off, codes = ctx.top(k)
        features = ctx.prep.context.item_features
        if callable(features):
            ctx.similarity[k] = (_ils_callable(ctx, off, codes, features), "callable")
        else:
            assert ctx.items is not None  # checked by check_inputs
            used = np.flatnonzero(ctx.exposure(k))
            ctx.similarity[k] = _ils_columns(
                ctx.items, features, ctx.prep.item_col, used, off, codes
            )
    return ctx.similarity[k]


def _ils_callable(
    ctx: BeyondContext, off: np.ndarray, codes: np.ndarray, sim: Callable[[Any, Any], Any]
) -> np.ndarray:
    """Each distinct unordered pair is passed to ``sim`` once (a Python loop over the
    distinct pairs: the caller's function; slow for many pairs)."""
    n = ctx.n_catalog
    pair_off, keys = BK.list_pairs(off, codes, n)
    distinct, inverse = np.unique(keys, return_inverse=True)
    ids_a = ctx.catalog.gather(distinct // n).to_list()
    ids_b = ctx.catalog.gather(distinct % n).to_list()
    values = np.empty(distinct.size, dtype=np.float64)
    for j, (a, b) in enumerate(zip(ids_a, ids_b, strict=True)):
        value = sim(a, b)
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            msg = f"item_features: sim({a!r}, {b!r}) returned {value!r}; expected a number."
            raise InputError(msg)
        if not math.isfinite(float(value)):
            msg = f"item_features: sim({a!r}, {b!r}) returned {value!r}; expected a finite number."
            raise InputError(msg)
        values[j] = float(value)
    kp = np.diff(off)
    owner = np.repeat(np.arange(kp.size), np.diff(pair_off))
    sums = np.bincount(owner, weights=values[inverse.ravel()], minlength=kp.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(kp >= 2, 2.0 * sums / (kp * (kp - 1.0)), np.nan)


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
    if isinstance(features, str) and is_vector(items.schema[features]):
        unit = _unit_vectors(sub, features, item_col, items.height)
        return BK.ils_vectors(off, codes, unit), "cosine"
    f_off, feats = _feature_csr(sub, names, item_col, items.height)
    return BK.ils_jaccard(off, codes, f_off, feats), "jaccard"


def is_vector(dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.List | pl.Array):
        inner = dtype.inner
        return inner is not None and inner.is_numeric() and inner != pl.Boolean
    return False


def _name_items(frame: pl.DataFrame, mask: pl.Series, item_col: str) -> str:
    return str(frame.filter(mask)[item_col].head(SHOW).to_list())


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
            f"{lengths.filter(odd).head(SHOW).to_list()}."
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


def _feature_csr(
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


def category_names(m: Metric, ctx: BeyondContext) -> list[str]:
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
        if is_vector(ctx.items.schema[name]):
            msg = (
                f"{m.canonical} reads categories from column {name!r}, a vector column; "
                "expected a categorical column (values or lists of values), e.g. by=genre."
            )
            raise InputError(msg)
    return list(names)


@dataclass
class FeatureSets:
    """Features per catalog code (CSR, sorted codes): ``f_off``, ``feats``; their names
    (``names[f - 1]``: ``"<column index>\\x1f<value>"``; codes run from 1) and the number of
    catalog items without one."""

    f_off: np.ndarray
    feats: np.ndarray
    names: list[str]
    missing: int


def feature_sets(ctx: BeyondContext, names: list[str], role: str) -> FeatureSets:
    """Feature sets of every catalog item that has one (items with a null value or an empty
    list are left without, and counted in ``missing``)."""
    key = ("sets", tuple(names))
    if key not in ctx.cache:
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
        f_off, feats = _feature_csr(valid, names, ctx.prep.item_col, items.height)
        labels = _feature_labels(valid, names)
        ctx.cache[key] = FeatureSets(f_off, feats, labels, items.height - valid.height)
    sets: FeatureSets = ctx.cache[key]
    return sets


def _feature_labels(valid: pl.DataFrame, names: list[str]) -> list[str]:
    """The feature names in the order of their codes in :func:`_feature_csr`."""
    pieces = []
    for j, name in enumerate(names):
        col = valid[name]
        frame = pl.DataFrame({"v": col})
        if isinstance(col.dtype, pl.List | pl.Array):
            frame = frame.explode("v").drop_nulls("v")
        pieces.append(frame.select((pl.lit(f"{j}\x1f") + pl.col("v").cast(pl.String)).alias("f")))
    return pl.concat(pieces).unique().sort("f")["f"].to_list()


def check_listed(
    m: Metric, ctx: BeyondContext, sets: FeatureSets, codes: np.ndarray, what: str
) -> None:
    """Raise when a recommended item has no category (null, or an empty list)."""
    empty = np.diff(sets.f_off)[codes] == 0
    if empty.any():
        bad = ctx.catalog.gather(np.unique(codes[empty])[:SHOW]).to_list()
        msg = (
            f"{m.canonical} needs {what} for every recommended item; "
            f"{int(np.unique(codes[empty]).size)} recommended item(s) have a null value or an "
            f"empty list in the item table, e.g. {bad}."
        )
        raise InputError(msg)


def history_without(sets_empty: np.ndarray, h_codes: np.ndarray) -> int:
    """History rows left out: items outside the catalog or without features."""
    inside = h_codes >= 0
    return int((~inside).sum() + sets_empty[h_codes[inside]].sum())


def history_vectors(
    ctx: BeyondContext, col: str, codes: np.ndarray, h_codes: np.ndarray
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
