"""Segments of users and items: which segment each user (or item) is in, for results by
segment (``evaluate(..., segments=...)``, docs/segments.md).

A segmentation is a table ``id -> segment`` of one kind, ``"user"`` or ``"item"``. It comes
from one of:

* a built-in, computed from ``train``: ``"activity"`` (users by their number of training
  interactions: ``0``, ``1-4``, ``5-19``, ``20-99``, ``100+``), ``"cold_warm"`` (``cold``:
  the user has no training interaction, ``warm``: at least one) and ``"popularity"`` (items by
  their share of the training interactions: ``head``, ``mid``, ``tail``; see
  :func:`popularity_segments`);
* the name of a truth column that holds one value per user (a user-level attribute);
* a table with the user column (or the item column) and one segment column, whose name
  names the segmentation;
* a dict ``{user: segment}``.

:func:`read_segment_file` reads such a table from a Parquet, CSV or TSV file (the command
line's ``--segments FILE``).

Every function here is Polars on whole columns; nothing loops over users.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from receval._errors import InputError, first_line

__all__ = [
    "ACTIVITY_BINS",
    "BUILTINS",
    "POPULARITY_SHARES",
    "Segmentation",
    "activity_segments",
    "cold_warm_segments",
    "popularity_segments",
    "read_segment_file",
    "resolve_segments",
    "same_id_type",
]

SegmentKind = Literal["user", "item"]

ACTIVITY_BINS = (1, 5, 20, 100)  # lower bounds of the bins after "0"
POPULARITY_SHARES = (0.2, 0.8)  # head: the first 20% of train interactions; tail: after 80%
BUILTINS: dict[str, SegmentKind] = {"activity": "user", "cold_warm": "user", "popularity": "item"}
_SHOW = 5


@dataclass(frozen=True)
class Segmentation:
    """One way of cutting users or items into segments.

    Attributes
    ----------
    name:
        The segmentation's name (``"activity"``, a column name, ...).
    kind:
        ``"user"`` or ``"item"``: what the table's ids are.
    table:
        Two columns: the id column (truth's user or item column) and ``"segment"``
        (String), one row per id.
    labels:
        Every segment, in display order (a built-in's segments all appear, empty or not).
    """

    name: str
    kind: SegmentKind
    table: pl.DataFrame
    labels: tuple[str, ...]


def _activity_label(counts: pl.Expr) -> pl.Expr:
    """The activity bin of integer counts (bins 0, 1-4, 5-19, ...): a when/then chain from
    the highest lower bound down (Polars' ``Expr.cut`` is deprecated, and its bins are of
    floats; these compare integers exactly)."""
    labels = activity_labels()
    label = pl.lit(labels[0])
    for low, name in zip(ACTIVITY_BINS, labels[1:], strict=True):
        label = pl.when(counts >= low).then(pl.lit(name)).otherwise(label)
    return label.cast(pl.String)


def activity_labels() -> tuple[str, ...]:
    """The activity segments in order: ``0``, ``1-4``, ``5-19``, ``20-99``, ``100+``."""
    bounds = (*ACTIVITY_BINS, None)
    return ("0", *(f"{lo}+" if hi is None else f"{lo}-{hi - 1}" for lo, hi in
                   zip(ACTIVITY_BINS, bounds[1:], strict=True)))  # fmt: skip


def _train_counts(train: pl.DataFrame, col: str) -> pl.DataFrame:
    return train.group_by(col).agg(pl.len().cast(pl.Int64).alias("n"))


def activity_segments(ids: pl.Series, train: pl.DataFrame) -> pl.DataFrame:
    """Each user of ``ids`` by its number of training rows (``ACTIVITY_BINS``)."""
    col = ids.name
    counts = _train_counts(train, col)
    frame = (
        pl.DataFrame(ids.unique())
        .join(counts, on=col, how="left")
        .with_columns(pl.col("n").fill_null(0))
    )
    return frame.select(col, _activity_label(pl.col("n")).alias("segment"))


def cold_warm_segments(ids: pl.Series, train: pl.DataFrame) -> pl.DataFrame:
    """Each user of ``ids``: ``cold`` without a training row, else ``warm``."""
    col = ids.name
    seen = train.select(pl.col(col).unique()).with_columns(pl.lit(True).alias("seen"))
    frame = pl.DataFrame(ids.unique()).join(seen, on=col, how="left")
    label = pl.when(pl.col("seen").fill_null(False)).then(pl.lit("warm")).otherwise(pl.lit("cold"))
    return frame.select(col, label.alias("segment"))


def popularity_segments(ids: pl.Series, train: pl.DataFrame) -> pl.DataFrame:
    """Each item of ``ids`` by its popularity in ``train`` (its number of training rows).

    Items are taken from the most popular down; an item's *share before* is the share of all
    training rows held by the items strictly more popular than it (items of equal popularity
    share one value, so a segment never splits them). ``head``: share before < 20%; ``tail``:
    share before >= 80%, and every item without a training row; ``mid``: the rest.
    """
    col = ids.name
    counts = _train_counts(train, col)
    total = int(counts["n"].sum()) if counts.height else 0
    by_count = (
        counts.group_by("n")
        .agg(pl.len().cast(pl.Int64).alias("items"))
        .sort("n", descending=True)
        .with_columns(
            (pl.col("n") * pl.col("items")).cum_sum().shift(1, fill_value=0).alias("before")
        )
    )
    head, tail = POPULARITY_SHARES
    share = pl.col("before") / max(total, 1)
    by_count = by_count.select(
        "n",
        pl.when(share < head).then(pl.lit("head")).when(share >= tail).then(pl.lit("tail"))
        .otherwise(pl.lit("mid")).alias("segment"),
    )  # fmt: skip
    frame = pl.DataFrame(ids.unique()).join(counts, on=col, how="left")
    frame = frame.join(by_count, on="n", how="left")
    return frame.select(col, pl.col("segment").fill_null("tail"))


def same_id_type(a: pl.Series, b: pl.Series) -> tuple[pl.Series, pl.Series]:
    """``a`` and ``b`` as one id type to compare: Int64 when both hold integers (UInt64
    included only when it fits), else text."""
    if a.dtype == b.dtype:
        return a, b
    if a.dtype.is_integer() and b.dtype.is_integer() and pl.UInt64 not in (a.dtype, b.dtype):
        return a.cast(pl.Int64), b.cast(pl.Int64)
    return a.cast(pl.String), b.cast(pl.String)


def _from_table(table: pl.DataFrame, user_col: str, item_col: str) -> Segmentation:
    has_user, has_item = user_col in table.columns, item_col in table.columns
    if has_user == has_item or table.width != 2:
        msg = (
            f"segments: a segment table must have two columns, the user column {user_col!r} "
            f"or the item column {item_col!r}, and the segment column; found columns "
            f"{table.columns}."
        )
        raise InputError(msg)
    kind: SegmentKind = "user" if has_user else "item"
    col = user_col if has_user else item_col
    (name,) = [c for c in table.columns if c != col]
    frame = table.select(pl.col(col), pl.col(name).cast(pl.String).alias("segment"))
    nulls = frame["segment"].is_null()
    if nulls.any():
        rows = frame.with_row_index("row").filter(nulls).head(_SHOW).rows()
        msg = (
            f"segments: table column {name!r} has {int(nulls.sum())} null segment(s); expected "
            f"a segment for every {kind}. First rows (row, {col}, segment): {rows}"
        )
        raise InputError(msg)
    _check_one_segment(frame, col, name, kind)
    frame = frame.unique(maintain_order=True)
    labels = tuple(sorted(frame["segment"].unique().to_list()))
    return Segmentation(name, kind, frame, labels)


def _check_one_segment(frame: pl.DataFrame, col: str, name: str, kind: str) -> None:
    many = (
        frame.unique()
        .group_by(col)
        .agg(pl.col("segment").sort())
        .filter(pl.col("segment").list.len() > 1)
    )
    if many.height:
        shown = many.head(_SHOW).rows()
        msg = (
            f"segments: {many.height} {kind}(s) have more than one value of {name!r}; expected "
            f"one segment per {kind}. First ({col}, segments): {shown}"
        )
        raise InputError(msg)


def _builtin(
    name: str, truth: pl.DataFrame, train: pl.DataFrame | None, user_col: str, item_col: str
) -> Segmentation:
    if train is None:
        msg = (
            f"segments={name!r} is computed from the training interactions: pass train= "
            "(CLI --train)."
        )
        raise InputError(msg)
    kind = BUILTINS[name]
    col = user_col if kind == "user" else item_col
    ids, train_ids = same_id_type(truth[col], train[col])
    train = train.select(train_ids)
    if name == "activity":
        table, labels = activity_segments(ids, train), activity_labels()
    elif name == "cold_warm":
        table, labels = cold_warm_segments(ids, train), ("cold", "warm")
    else:
        table, labels = popularity_segments(ids, train), ("head", "mid", "tail")
    return Segmentation(name, kind, table, labels)


def _one(
    spec: Any, truth: pl.DataFrame, train: pl.DataFrame | None, user_col: str, item_col: str
) -> Segmentation:
    if isinstance(spec, str):
        if spec in BUILTINS:
            return _builtin(spec, truth, train, user_col, item_col)
        if spec in truth.columns and spec not in (user_col, item_col):
            table = truth.select(user_col, spec)
            return _from_table(table, user_col, item_col)
        msg = (
            f"segments: {spec!r} is neither a built-in segmentation ({', '.join(BUILTINS)}) nor "
            f"a column of truth (columns: {truth.columns})."
        )
        raise InputError(msg)
    if isinstance(spec, Mapping):
        if not spec:
            msg = "segments: the dict {user: segment} is empty."
            raise InputError(msg)
        users = pl.Series(user_col, list(spec.keys()))
        table = pl.DataFrame([users, pl.Series("segment", [str(v) for v in spec.values()])])
        return _from_table(table, user_col, item_col)
    if isinstance(spec, pl.DataFrame):
        return _from_table(spec, user_col, item_col)
    module = type(spec).__module__.split(".")[0]
    if module in ("pandas", "pyarrow"):
        frame = pl.from_pandas(spec) if module == "pandas" else pl.from_arrow(spec)
        assert isinstance(frame, pl.DataFrame)
        return _from_table(frame, user_col, item_col)
    msg = (
        "segments must be a built-in name ('activity', 'cold_warm', 'popularity'), a truth "
        "column name, a table (id column + segment column), a dict {user: segment}, or a list "
        f"of these; got {type(spec).__name__}."
    )
    raise InputError(msg)


def resolve_segments(
    segments: Any,
    truth: pl.DataFrame,
    train: pl.DataFrame | None,
    user_col: str,
    item_col: str,
) -> list[Segmentation]:
    """The segmentations that ``segments`` asks for (one spec, or a list of specs)."""
    specs = list(segments) if isinstance(segments, list | tuple) else [segments]
    if not specs:
        msg = "segments is an empty list; give at least one segmentation or leave it out."
        raise InputError(msg)
    out = [_one(spec, truth, train, user_col, item_col) for spec in specs]
    names = [s.name for s in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        msg = f"segments: segmentation name(s) {repeated} given more than once."
        raise InputError(msg)
    return out


def read_segment_file(path: str | os.PathLike[str]) -> pl.DataFrame:
    """The segment table of a ``--segments`` file: Parquet (``.parquet``), CSV or TSV by the
    suffix, the column types as Polars infers them (integer ids stay integers); a file that
    cannot be read is an :class:`InputError` naming it and the format it was read as."""
    source = Path(path)
    suffix = source.suffix.lower()
    kinds = {".parquet": "Parquet", ".csv": "CSV", ".tsv": "TSV"}
    if suffix not in kinds:
        msg = f"--segments file {str(source)!r}: expected a .parquet, .csv or .tsv file."
        raise InputError(msg)
    try:
        if suffix == ".parquet":
            return pl.read_parquet(source)
        return pl.read_csv(source, separator="\t" if suffix == ".tsv" else ",")
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
        first = first_line(exc)
        msg = f"--segments file {str(source)!r} could not be read as {kinds[suffix]}: {first}"
        raise InputError(msg) from exc
