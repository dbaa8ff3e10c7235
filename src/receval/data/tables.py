"""The input layer: every table an engine reads, read once, checked and typed here.

The engines hand raw inputs (frames, files, dicts; :class:`~receval.data.io.Inputs` gives each
its own column names and format) to this module and get back checked Polars frames and the
canonical grouped layout (:class:`~receval.data.layout.Grouped`): truth and recs
(:func:`read_pair`, :func:`read_truth`), sampled rankings (:func:`split_samples`), ``train``
(:func:`read_train`), ``items`` (:func:`read_items`), and the ``(user, item)`` rows of
``exclude`` and per-user ``candidates`` (:func:`read_pairs`, :func:`read_unified`). The metric
families compute from what it returns and read nothing themselves.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.data.io import Inputs, Role, check_exists, read_table, rename_ids
from receval.data.layout import (
    INTERNAL,
    Grouped,
    IdType,
    IdTypeArg,
    cast_ids,
    check_frame,
    check_id_type,
    float_column,
    group_by_user,
    id_type_fix,
    item_key_column,
    show_rows,
    unify_ids,
)
from receval.kernels import beyond as BK
from receval.kernels import grouping as G

SHOW = 5  # offending values shown in a message


# truth column names (compared in lower case) that look like a relevance grade: one of them
# left unused while every row gets relevance 1 is named in a warning
GRADE_NAMES = frozenset(
    {
        "relevance", "relevance_score", "rel", "rating", "ratings", "rate", "stars", "label",
        "labels", "grade", "grades", "score", "scores", "weight", "click", "clicks", "clicked",
        "judgment", "judgement", "gain", "preference", "target",
    }
)  # fmt: skip


# the columns of Context.samples: each sampled row's (user, item) as a row of the distinct
# (user, item) recs, its sample as a dense code, and its score or rank
SAMPLE_PAIR = f"{INTERNAL}_pair__"


SAMPLE_CODE = f"{INTERNAL}_sample__"


SAMPLE_ORDER = f"{INTERNAL}_order__"


@dataclass(frozen=True)
class Pair:
    """Truth and recs read, checked, typed and grouped by user: the canonical layout's input.

    ``t_grp`` / ``r_grp`` hold each side's rows grouped by user (their ``carry``: the item keys
    and the values as float64, made in the caller's row order); ``u2r`` maps each truth user to
    its recs group (-1: none). ``relevance_col`` and ``order_col`` name the value columns;
    ``has_relevance`` says whether truth had a relevance column (without one, every row has
    relevance 1); ``kinds`` are the id kinds the ids were cast by.
    """

    t_grp: Grouped
    r_grp: Grouped
    u2r: np.ndarray
    user_col: str
    item_col: str
    relevance_col: str
    order_col: str
    by_rank: bool
    has_relevance: bool
    kinds: dict[str, IdType]


def read_pair(
    truth: Any,
    recs: Any,
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    rank_col: str | None = None,
    relevance_col: str | None = None,
    id_type: IdTypeArg = "auto",
    allow_empty: bool = False,
    stacklevel: int = 2,
) -> Pair:
    """Read, check, cast, unify and group ``truth`` and ``recs`` (:class:`Pair`).

    ``rank_col`` replaces ``score_col`` when given; ``relevance_col`` None: truth's
    ``"relevance"`` column when present, else relevance 1 (with a warning when a column looks
    like an unused grade, ``stacklevel`` frames above the caller). ``allow_empty``: a shard
    or block, whose either side may have no row.
    """
    order_col = rank_col if rank_col is not None else score_col
    given_relevance = relevance_col is not None
    relevance_col = relevance_col or "relevance"
    t_raw = read_table(
        truth, "truth", user_col=user_col, item_col=item_col, value_col=relevance_col
    )
    r_raw = read_table(recs, "recs", user_col=user_col, item_col=item_col, value_col=order_col)
    has_relevance = given_relevance or relevance_col in t_raw.columns
    if not has_relevance:
        warn_unused_relevance(t_raw.columns, [user_col, item_col], stacklevel=stacklevel + 1)
    if not given_relevance and relevance_col not in t_raw.columns and t_raw.height:
        t_raw = t_raw.with_columns(pl.lit(1.0).alias(relevance_col))  # columns checked next
    ids = [user_col, item_col]
    t_frame, r_frame = check_inputs(
        t_raw, r_raw, ids=ids, relevance_col=relevance_col, order_col=order_col,
        by_rank=rank_col is not None, allow_empty=allow_empty,
    )  # fmt: skip
    kinds = check_id_type(id_type)
    id_kinds = {user_col: kinds["user"], item_col: kinds["item"]}
    t_frame = cast_ids(t_frame, "truth", id_kinds)
    r_frame = cast_ids(r_frame, "recs", id_kinds)
    t_frame, r_frame = unify_ids(t_frame, r_frame, user_col, "user")
    t_frame, r_frame = unify_ids(t_frame, r_frame, item_col, "item")
    # the kernel's arrays, made in the caller's row order: grouping moves them with the rows
    t_grp = group_by_user(t_frame, user_col, _kernel_arrays(t_frame, item_col, relevance_col))
    r_grp = group_by_user(r_frame, user_col, _kernel_arrays(r_frame, item_col, order_col))
    return Pair(
        t_grp, r_grp, match_users(t_grp.keys, r_grp.keys), user_col=user_col,
        item_col=item_col, relevance_col=relevance_col, order_col=order_col,
        by_rank=rank_col is not None, has_relevance=has_relevance, kinds=kinds,
    )  # fmt: skip


def warn_unused_relevance(columns: list[str], ids: list[str], stacklevel: int = 2) -> None:
    """Warn when truth, read without a relevance column (every row relevance 1), has columns
    named like a relevance grade (:data:`GRADE_NAMES`, any case) that are not its ids."""
    found = [c for c in columns if c.lower() in GRADE_NAMES and c not in ids]
    if not found:
        return
    first = found[0]
    names = ", ".join(repr(c) for c in found)
    warnings.warn(
        f"truth column(s) {names} look like relevance grades but are not used: without "
        "relevance_col and without a column 'relevance', every truth row has relevance 1. "
        f"Pass relevance_col={first!r} (CLI --relevance-col {first}) to use it.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


def check_inputs(
    truth: pl.DataFrame,
    recs: pl.DataFrame,
    *,
    ids: list[str],
    relevance_col: str,
    order_col: str,
    by_rank: bool,
    allow_empty: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Truth and recs checked by :func:`~receval.data.layout.check_frame` (columns, types,
    values), with the messages every engine gives."""
    t_frame = check_frame(
        truth, "truth", id_cols=ids, value_col=relevance_col, value_name="relevance",
        fix="pass relevance_col= to name the relevance column, or leave it out (every row then "
        "has relevance 1).", allow_empty=allow_empty,
    )  # fmt: skip
    r_frame = check_frame(
        recs, "recs", id_cols=ids, value_col=order_col,
        value_name="rank" if by_rank else "score",
        fix="pass score_col= or rank_col= to name the column that orders each user's list.",
        allow_empty=allow_empty,
    )  # fmt: skip
    return t_frame, r_frame


def _kernel_arrays(
    frame: pl.DataFrame, item_col: str, value_col: str
) -> dict[str, Callable[[], pl.Series]]:
    """What :func:`match` reads of one input, in the caller's row order, as makers for
    ``group_by_user``'s ``carry``: the item keys and the values (as float64)."""
    return {
        "item": lambda: item_key_column(frame[item_col]),
        "value": lambda: float_column(frame[value_col]),
    }


_LOOKUP_MAX = 1 << 24  # most entries (8 bytes each) of the lookup table of match_users


def _table_lookup(t_keys: pl.Series, r_keys: pl.Series) -> bool:
    """Whether :func:`match_users` may look ``t_keys`` up in a table of ``r_keys``."""
    if t_keys.dtype != pl.Int64 or r_keys.dtype != pl.Int64 or r_keys.len() == 0:
        return False
    if t_keys.has_nulls() or r_keys.has_nulls():
        return False
    low, high = r_keys.min(), r_keys.max()
    assert isinstance(low, int) and isinstance(high, int)
    span = high - low + 1
    return span <= min(_LOOKUP_MAX, 4 * r_keys.len() + 1024)


def match_users(t_keys: pl.Series, r_keys: pl.Series) -> np.ndarray:
    """For each truth user, the index of its recs group, or -1 (for any ids: each value of
    ``t_keys``, its position in the distinct ``r_keys``).

    Int64 ids whose distinct ``r_keys`` span a range of at most four entries per key are
    looked up in a table (:func:`receval.kernels.grouping.positions_in`): 2x10^6 ids against
    10^5 keys in 4 ms where Polars' join took 40-65 ms and left 20-60 MiB in its allocator."""
    if _table_lookup(t_keys, r_keys):
        keys = r_keys.to_numpy()
        low = int(keys.min())
        size = int(keys.max()) - low + 1
        return G.positions_in(t_keys.to_numpy(), keys, low, size)
    left = pl.DataFrame({"k": t_keys})
    right = pl.DataFrame({"k": r_keys, "g": pl.int_range(r_keys.len(), dtype=pl.Int64, eager=True)})
    joined = left.join(right, on="k", how="left", maintain_order="left")
    return np.ascontiguousarray(joined["g"].fill_null(-1).to_numpy(), dtype=np.int64)


_ONE = f"{INTERNAL}_one__"


def split_samples(
    recs: pl.DataFrame, *, user_col: str, item_col: str, order_col: str, sample_col: str,
    by_rank: bool, allow_empty: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """Sampled rankings (rows ``(user, item, sample, score or rank)``) as the distinct
    ``(user, item, score)`` rows the layout holds (each pair's first row; rows grouped by user,
    input order within a user) and the sampled rows by their pair, ordered by user, sample
    (first appearance in the user's rows) and input order
    (:attr:`Context.samples <receval.families.contract.Context>`). A Numba pass over each
    user's rows (:func:`receval.kernels.beyond.sampled_lists`) does the work in linear time.

    :class:`InputError` for a missing or null sample column, an item twice in one sample of a
    user, or a user whose samples rank different numbers of items (each sample is one whole
    ranking of the stochastic ranker: a shorter one is a truncated sample). Every check is
    within a user: a shard or block of whole users (``allow_empty``: possibly no row) gives
    the local engine's values.
    """
    if sample_col not in recs.columns:
        msg = (
            f"recs is missing column {sample_col!r} (sample_col; columns found: "
            f"{recs.columns}); expected the column naming each row's sampled ranking."
        )
        raise InputError(msg)
    cols = [user_col, item_col, sample_col]
    checked = check_frame(
        recs, "recs", id_cols=cols, value_col=order_col,
        value_name="rank" if by_rank else "score",
        fix="pass score_col= or rank_col= to name the column that orders each sampled ranking.",
        allow_empty=allow_empty,
    )  # fmt: skip
    grp = group_by_user(checked, user_col)
    source = np.arange(checked.height, dtype=np.int64) if grp.order is None else grp.order
    code, rep, pos, dup, shortest, longest = BK.sampled_lists(
        grp.offsets, grp.take(_equality_keys(checked[item_col])),
        grp.take(_equality_keys(checked[sample_col])),
    )  # fmt: skip
    if dup.any():
        twice = np.zeros(checked.height, dtype=np.bool_)
        twice[source[dup]] = True
        msg = (
            f"recs has {int(dup.sum())} rows whose item appears twice in the same sample of "
            f"the same user ({sample_col!r}); expected each sample to rank an item at most "
            f"once. First offending rows:\n"
            f"{show_rows(checked, pl.Series(twice), [*cols, order_col])}"
        )
        raise InputError(msg)
    uneven = np.flatnonzero(shortest != longest)
    if uneven.size:
        shown = ", ".join(
            f"{grp.keys[int(u)]!r} ({shortest[u]} to {longest[u]} items)" for u in uneven[:SHOW]
        )
        msg = (
            f"recs has {uneven.size} user(s) whose samples ({sample_col!r}) rank different "
            f"numbers of items, e.g. {shown}; expected every sample of a user to be a whole "
            "ranking of the same length (a shorter sample is a truncated one)."
        )
        raise InputError(msg)
    grouped = np.arange(rep.size, dtype=np.int64)
    first = rep == grouped  # each user's first row of each item: the layout's rows
    pair_of = np.cumsum(first) - 1
    by_sample = np.empty(rep.size, dtype=np.int64)
    by_sample[pos] = grouped  # the user's rows by sample, then input order
    order = grp.take(checked[order_col].to_numpy())
    pairs = checked.select(user_col, item_col, order_col)[source[first]]
    samples = pl.DataFrame(
        {
            SAMPLE_PAIR: pair_of[rep[by_sample]],
            SAMPLE_CODE: code[by_sample],
            SAMPLE_ORDER: np.ascontiguousarray(order[by_sample], dtype=np.float64),
        }
    )
    return pairs, samples


def _equality_keys(ids: pl.Series) -> np.ndarray:
    """int64 keys, equal exactly when the ids are equal: integer ids, or the codes of text."""
    if ids.dtype == pl.String:
        return np.ascontiguousarray(ids.cast(pl.Categorical).to_physical().to_numpy(), np.int64)
    return np.ascontiguousarray(ids.to_numpy(), dtype=np.int64)


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


def join_key_type(a: pl.DataType, b: pl.DataType) -> type[pl.DataType]:
    """The type two id columns are compared as: Int64 when both hold integers (UInt64: as
    decimal text), else text (train ids read from a CSV file against integer ids elsewhere:
    ``"7"`` is 7, ``"007"`` is not)."""
    if a.is_integer() and b.is_integer() and pl.UInt64 not in (a, b):
        return pl.Int64
    return pl.String


def join_types(a: pl.DataFrame, b: pl.DataFrame, col: str) -> tuple[pl.DataFrame, pl.DataFrame]:
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
    users, keys = join_types(users, keys, user_col)
    keys = keys.join(users, on=user_col, how="semi")
    keys, train = join_types(keys, train, user_col)
    keys, train = join_types(keys, train, item_col)
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


def unify_id_types(
    left: pl.Series, right: pl.Series, what: str, side: str
) -> tuple[pl.Series, pl.Series]:
    """``left`` (from a table) and ``right`` (the model's ids) with one id type."""
    lt, rt = left.dtype, right.dtype
    if lt == rt:
        return left, right
    if lt.is_integer() and rt.is_integer():
        return left.cast(pl.Int64), right.cast(pl.Int64)
    msg = (
        f"{what} ids of {side} and the model's {what}_ids have different types: {side} has "
        f"{lt}, the model {rt}; expected both integers or both strings. {id_type_fix(what)} "
        f"or pass the model's {what}_ids as {'text' if lt == pl.String else 'integers'}."
    )
    raise InputError(msg)


def read_pairs(
    data: Any, role: Literal["exclude", "candidates"], inputs: Inputs, kinds: dict[str, IdType]
) -> pl.DataFrame | None:
    """(user, item) rows of ``exclude`` or per-user ``candidates``: a table, a file or a dict
    ``{user: [items]}`` / ``{user: {item: value}}``; None when there is none."""
    user_col, item_col = inputs.user_col, inputs.item_col
    if isinstance(data, dict):
        rows: list[tuple[Any, Any]] = []
        for user, listed in data.items():
            if isinstance(listed, str | bytes) or not isinstance(
                listed, Sequence | set | np.ndarray | dict
            ):
                msg = (
                    f"{role} must map each user to a list of items (or a dict of items); user "
                    f"{user!r} has {type(listed).__name__}."
                )
                raise InputError(msg)
            rows.extend((user, item) for item in listed)
        if not rows:
            return None
        try:
            frame = pl.DataFrame(rows, schema=[user_col, item_col], orient="row")
        except (TypeError, ValueError, OverflowError) as exc:
            msg = (
                f"{role} ids must be integers or strings, one type for users and one for "
                f"items; could not read them ({exc})."
            )
            raise InputError(msg) from None
    else:
        check_exists(data, role)
        frame = inputs.read(data, role, "__receval_value")
        for col, what in ((user_col, "user"), (item_col, "item")):
            if col not in frame.columns:
                msg = (
                    f"{role} is missing column {col!r} (columns found: {frame.columns}); "
                    f"expected the {what} ids there (user_col= / item_col= name them)."
                )
                raise InputError(msg)
    if "__receval_value" not in frame.columns:
        frame = frame.with_columns(pl.lit(0.0).alias("__receval_value"))
    checked = check_frame(
        frame, role, id_cols=[user_col, item_col], value_col="__receval_value",
        value_name="value", fix="", allow_empty=True,
    )  # fmt: skip
    if checked.height == 0:
        return None
    return cast_model_ids(checked.select(user_col, item_col), role, kinds, [user_col, item_col])


def cast_model_ids(
    frame: pl.DataFrame, role: Role, kinds: dict[str, IdType], cols: list[str]
) -> pl.DataFrame:
    """The id columns ``cols`` (user, item) cast as ``id_type`` asks (:func:`cast_ids`)."""
    return cast_ids(
        frame, role, {c: kinds[w] for c, w in zip(cols, ("user", "item"), strict=False)}
    )


def read_unified(
    data: Any,
    role: Literal["exclude", "candidates"],
    inputs: Inputs,
    kinds: dict[str, IdType],
    users: pl.Series,
    items: pl.Series,
) -> pl.DataFrame | None:
    """``exclude`` or per-user ``candidates`` read (:func:`read_pairs`), their ids typed as
    ``users`` and ``items`` (repeated rows kept: harmless); None when absent, or when an
    ``exclude`` is empty. Empty candidates are no rows: no user has a candidate."""
    if data is None:
        return None
    pairs = read_pairs(data, role, inputs, kinds)
    user_col, item_col = inputs.user_col, inputs.item_col
    if pairs is None:  # empty
        if role == "exclude":
            return None
        return pl.DataFrame({user_col: users.clear(), item_col: items.clear()})
    pu, _ = unify_id_types(pairs[user_col], users, "user", role)
    pi, _ = unify_id_types(pairs[item_col], items, "item", role)
    frame = pl.DataFrame({user_col: pu, item_col: pi})  # repeated rows: harmless, kept
    if role == "candidates":
        missing = match_users(frame[item_col], items) < 0
        if missing.any():
            msg = (
                f"candidates has {int(missing.sum())} row(s) whose item is not in the model's "
                f"item_ids; expected catalog items. First offending rows:\n"
                f"{show_rows(frame, pl.Series(missing), frame.columns)}"
            )
            raise InputError(msg)
    return frame


def read_truth(
    truth: Any,
    inputs: Inputs,
    kinds: dict[str, IdType],
    relevance_col: str | None,
    *,
    check_repeats: bool = True,
) -> tuple[pl.DataFrame, str, bool]:
    """Truth read and checked for a model source: relevance 1 where no column gives it, ids
    cast by ``kinds``, no repeated (user, item) row (``check_repeats=False``: checked later,
    by :func:`setup_model`). Returns (truth, its relevance column, whether the input had
    one)."""
    user_col, item_col = inputs.user_col, inputs.item_col
    rel_col = relevance_col or "relevance"
    t_raw = inputs.read(truth, "truth", rel_col)
    has_relevance = relevance_col is not None or rel_col in t_raw.columns
    if not has_relevance:  # the caller's caller is evaluate, whose caller is the user's code
        warn_unused_relevance(t_raw.columns, [user_col, item_col], stacklevel=5)
        if t_raw.height:
            t_raw = t_raw.with_columns(pl.lit(1.0).alias(rel_col))
    t_frame = check_frame(
        t_raw, "truth", id_cols=[user_col, item_col], value_col=rel_col, value_name="relevance",
        fix="pass relevance_col= to name the relevance column, or leave it out (every row then "
        "has relevance 1).",
    )  # fmt: skip
    t_frame = cast_model_ids(t_frame, "truth", kinds, [user_col, item_col])
    if check_repeats:
        raise_truth_repeats(t_frame, user_col, item_col)
    return t_frame, rel_col, has_relevance


def raise_truth_repeats(t_frame: pl.DataFrame, user_col: str, item_col: str) -> None:
    """An error for repeated (user, item) rows of truth, if any (a Polars query)."""
    dup = t_frame.select(pl.struct(user_col, item_col).is_duplicated()).to_series()
    if dup.any():
        msg = (
            f"truth has {int(dup.sum())} duplicate (user, item) row(s); expected each item at "
            f"most once per user. First offending rows:\n{show_rows(t_frame, dup, t_frame.columns)}"
        )
        raise InputError(msg)
