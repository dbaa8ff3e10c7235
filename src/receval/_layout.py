"""Validation and the canonical layout: flat columns plus per-user offsets.

Polars does everything that moves data here: column checks, null/NaN checks, id type
unification, grouping rows by user (run-length encoding of the user column, with a stable sort
only when the input is not grouped yet) and item keys. String item ids become 64-bit hash keys
for the kernel; every match and every duplicate the kernel reports on such keys is verified
exactly against the strings afterwards, with an exact factorisation as the fallback, so a
hash collision can never change a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from ._errors import InputError
from ._kernels import TEXT_KEY_LIMIT, text_order_keys

__all__ = [
    "Grouped",
    "check_frame",
    "exact_item_keys",
    "group_by_user",
    "item_keys",
    "show_rows",
    "trec_tie_keys",
    "unify_ids",
]

Role = Literal["truth", "recs", "train", "items"]
_SHOW = 5


@dataclass(frozen=True)
class Grouped:
    """Rows of one input grouped by user: ``frame`` row order, run keys and offsets.

    ``source`` is the frame in the caller's row order, for error messages.
    """

    frame: pl.DataFrame
    keys: pl.Series
    offsets: np.ndarray
    source: pl.DataFrame

    @property
    def n_users(self) -> int:
        """Number of users (runs)."""
        return self.keys.len()


def show_rows(frame: pl.DataFrame, mask: pl.Series | pl.Expr, columns: list[str]) -> str:
    """The first few rows of ``frame`` where ``mask`` holds, one per line with the row index."""
    rows = frame.select(columns).with_row_index("row").filter(mask).head(_SHOW)
    lines = []
    for rec in rows.iter_rows(named=True):
        row = rec.pop("row")
        lines.append(f"  row {row}: " + ", ".join(f"{k}={v!r}" for k, v in rec.items()))
    return "\n".join(lines)


def check_frame(
    frame: pl.DataFrame,
    role: Role,
    *,
    id_cols: list[str],
    value_col: str,
    value_name: str,
    fix: str,
    allow_empty: bool = False,
) -> pl.DataFrame:
    """Validate one input and return a frame of exactly ``id_cols + [value_col]``.

    The value column is cast to Float64; the input frame itself is never modified.
    ``allow_empty``: a shard of a distributed evaluation may hold no row of this input.
    """
    if frame.height == 0 and not allow_empty:
        msg = f"{role} is empty (0 rows); expected at least one row."
        raise InputError(msg)
    for col in [*id_cols, value_col]:
        if col not in frame.columns:
            msg = f"{role} is missing column {col!r} (columns found: {frame.columns}); " + (
                fix if col == value_col else "pass user_col= / item_col= to name the id columns."
            )
            raise InputError(msg)
    columns = [*id_cols, value_col]
    out = frame.select(columns)
    schema = out.schema
    casts = []
    for col in id_cols:
        dtype = schema[col]
        if isinstance(dtype, pl.Categorical | pl.Enum):
            casts.append(pl.col(col).cast(pl.String))
        elif not (dtype.is_integer() or dtype == pl.String):
            msg = (
                f"{role} column {col!r} holds ids and must be integers or strings; "
                f"got {dtype}. Cast it first, e.g. pl.col({col!r}).cast(pl.Int64)."
            )
            raise InputError(msg)
    vtype = schema[value_col]
    if not (vtype.is_numeric() and vtype != pl.Boolean):
        msg = f"{role} column {value_col!r} ({value_name}) must be numeric; got {vtype}."
        raise InputError(msg)
    casts.append(pl.col(value_col).cast(pl.Float64))
    out = out.with_columns(casts)

    nulls = out.null_count().row(0, named=True)
    for col in columns:
        if nulls[col]:
            msg = (
                f"{role} has {nulls[col]} null value(s) in column {col!r}; expected none. "
                f"First offending rows:\n{show_rows(out, pl.col(col).is_null(), columns)}"
            )
            raise InputError(msg)
    bad = out.select(pl.col(value_col).is_nan().sum()).item()
    if bad:
        msg = (
            f"{role} has {bad} NaN value(s) in column {value_col!r} ({value_name}); expected "
            f"numbers. First offending rows:\n{show_rows(out, pl.col(value_col).is_nan(), columns)}"
        )
        raise InputError(msg)
    if role == "truth":
        inf = out.select(pl.col(value_col).is_infinite().sum()).item()
        if inf:
            mask = pl.col(value_col).is_infinite()
            msg = (
                f"{role} has {inf} infinite value(s) in column {value_col!r} ({value_name}); "
                f"expected finite numbers. First offending rows:\n{show_rows(out, mask, columns)}"
            )
            raise InputError(msg)
    return out


def unify_ids(
    truth: pl.DataFrame, recs: pl.DataFrame, col: str, what: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Give ``col`` one type in both frames: Int64 for integers, String for strings."""
    t, r = truth.schema[col], recs.schema[col]
    if t == r:
        return truth, recs
    if t.is_integer() and r.is_integer():
        return truth.with_columns(pl.col(col).cast(pl.Int64)), recs.with_columns(
            pl.col(col).cast(pl.Int64)
        )
    if t == pl.String and r == pl.String:
        return truth, recs
    msg = (
        f"{what} ids of truth and recs have different types: truth column {col!r} is {t}, "
        f"recs column {col!r} is {r}; expected both integers or both strings. Convert one "
        f"side, e.g. pl.col({col!r}).cast(pl.String)."
    )
    raise InputError(msg)


def group_by_user(frame: pl.DataFrame, user_col: str) -> Grouped:
    """Group rows by user, keeping input order within a user (a stable sort if needed)."""
    source = frame
    runs = frame.select(pl.col(user_col).rle()).unnest(user_col)
    if not runs["value"].is_unique().all():
        frame = frame.sort(user_col, maintain_order=True)
        runs = frame.select(pl.col(user_col).rle()).unnest(user_col)
    offsets = np.zeros(runs.height + 1, dtype=np.int64)
    np.cumsum(runs["len"].to_numpy(), out=offsets[1:])
    return Grouped(frame, runs["value"].alias(user_col), offsets, source)


def item_keys(series: pl.Series) -> np.ndarray:
    """int64 keys of item ids: the ids themselves, or a 64-bit hash of string ids."""
    if series.dtype == pl.String:
        return np.ascontiguousarray(series.hash(seed=0x5EC).to_numpy().view(np.int64))
    return np.ascontiguousarray(series.to_numpy(), dtype=np.int64)


def exact_item_keys(truth_items: pl.Series, recs_items: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Dense int64 codes shared by both sides (exact; used when hash keys collide)."""
    both = pl.concat([truth_items, recs_items]).cast(pl.Categorical).to_physical()
    codes = both.cast(pl.Int64).to_numpy()
    n = truth_items.len()
    return np.ascontiguousarray(codes[:n]), np.ascontiguousarray(codes[n:])


def trec_tie_keys(items: pl.Series, keys: np.ndarray) -> np.ndarray:
    """Per row, a key that orders item ids as their text compares (trec_eval order).

    Integer ids in [0, 10^15) get their key directly (:func:`text_order_keys`). Otherwise
    ``keys``, the kernel's item keys of the same rows (equal ids have equal keys, distinct ids
    distinct keys), pick one id per key; those ids are ranked as text and joined back.
    """
    if items.dtype.is_integer() and keys.size:
        low, high = int(keys.min()), int(keys.max())
        if low >= 0 and high < TEXT_KEY_LIMIT:
            return text_order_keys(keys)
    rows = pl.DataFrame({"key": keys, "id": items})
    uniq = rows.unique(subset="key", keep="any")
    uniq = uniq.select(
        "key", pl.col("id").cast(pl.String).rank("ordinal").cast(pl.Int64).alias("r")
    )
    keyed = rows.select("key").join(uniq, on="key", how="left", maintain_order="left")
    return np.ascontiguousarray(keyed["r"].to_numpy(), dtype=np.int64)
