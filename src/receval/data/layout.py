"""Validation and the canonical layout: flat columns plus per-user offsets.

Polars does everything that moves data here: column checks, null/NaN checks, id type
unification, grouping rows by user (runs of the user column; when a user comes in more than one
run, dense user codes and a linear-time counting sort, :mod:`receval.kernels.grouping`) and item
keys. String item ids become 64-bit hash keys
for the kernel; every match and every duplicate the kernel reports on such keys is verified
exactly against the strings afterwards, with an exact factorisation as the fallback, so a
hash collision can never change a result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Literal, cast, get_args

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.kernels import grouping as G
from receval.kernels.ranking import TEXT_KEY_LIMIT, text_order_keys

__all__ = [
    "FLOAT_EXACT",
    "INTERNAL",
    "Grouped",
    "IdType",
    "IdTypeArg",
    "assignments",
    "cast_ids",
    "check_column_names",
    "check_frame",
    "check_id_type",
    "column_array",
    "column_pieces",
    "exact_item_keys",
    "float_column",
    "group_by_user",
    "id_type_fix",
    "inexact_integers_message",
    "item_key_column",
    "item_keys",
    "not_integer_message",
    "show_rows",
    "sort_by_user",
    "trec_tie_keys",
    "unify_ids",
    "user_codes",
]

Role = Literal["truth", "recs", "train", "items", "exclude", "candidates"]
IdType = Literal["auto", "str", "int"]
IdTypeArg = str | Mapping[str, str]  # a kind, or kinds by id ("user", "item"): check_id_type
_SHOW = 5
INTERNAL = "__receval"  # the prefix of columns receval adds (never shown to users)


@dataclass(frozen=True)
class Grouped:
    """Rows of one input grouped by user: run keys, offsets, and the grouped row order.

    ``source`` is the frame in the caller's row order (also for error messages). ``order``
    gives, for each grouped row, its row in ``source``; None when ``source`` is grouped
    already (then the grouped rows are the source rows). ``keys[g]`` is the user of rows
    ``offsets[g]:offsets[g + 1]``. The grouped frame (:attr:`frame`) and its columns
    (:meth:`column`) are gathered when first asked for; the kernels' arrays are
    :attr:`carried` (moved with the rows by the grouping) or come from the source columns
    through :meth:`take` (a parallel gather, no Polars frame).
    """

    source: pl.DataFrame
    keys: pl.Series
    offsets: np.ndarray
    order: np.ndarray | None = None
    _columns: dict[str, pl.Series] = field(default_factory=dict, compare=False, repr=False)
    carried: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """The arrays given to :func:`group_by_user` (``carry``) in grouped order, by name
    (moved with the rows by the radix grouping, else gathered); :meth:`taken` reads them."""

    @property
    def n_users(self) -> int:
        """Number of users (runs)."""
        return self.keys.len()

    @cached_property
    def frame(self) -> pl.DataFrame:
        """The rows grouped by user (``source``'s columns, rows in :attr:`order`)."""
        if self.order is None:
            return self.source
        return pl.DataFrame([self.column(c) for c in self.source.columns])

    def column(self, name: str) -> pl.Series:
        """Column ``name`` of :attr:`frame` (gathered once, then kept)."""
        if self.order is None:
            return self.source[name]
        found = self._columns.get(name)
        if found is None:
            found = self._gathered(name)
            self._columns[name] = found
        return found

    def _gathered(self, name: str) -> pl.Series:
        series = self.source[name]
        assert self.order is not None
        if name == self.keys.name:  # the user column: each key repeated over its rows
            runs = np.repeat(np.arange(self.n_users, dtype=np.int64), np.diff(self.offsets))
            return self.keys.gather(runs)
        if series.dtype in (pl.Int64, pl.UInt64, pl.Float64) and not series.has_nulls():
            return pl.Series(name, G.gather(series.to_numpy(), self.order), dtype=series.dtype)
        return series.gather(self.order)

    @property
    def nbytes(self) -> int:
        """Bytes this grouping holds: the source frame, offsets and order, the columns
        gathered so far and the carried arrays."""
        total = self.source.estimated_size() + self.keys.estimated_size() + self.offsets.nbytes
        total += self.order.nbytes if self.order is not None else 0
        total += sum(c.estimated_size() for c in self._columns.values())
        return int(total + sum(a.nbytes for a in self.carried.values()))

    def take(self, values: np.ndarray) -> np.ndarray:
        """Per grouped row, the value of its source row (``values``: one per source row, an
        8-byte dtype); ``values`` itself when the source is grouped already."""
        if self.order is None:
            return values
        return G.gather(np.ascontiguousarray(values), self.order)

    def taken(self, name: str, values: Callable[[], np.ndarray]) -> np.ndarray:
        """``carry[name]`` of :func:`group_by_user` in grouped order, or, when the grouping
        was given no such array, :meth:`take` of ``values()``."""
        found = self.carried.get(name)
        return found if found is not None else self.take(values())

    def rows(self, grouped: np.ndarray) -> np.ndarray:
        """The source rows of grouped rows ``grouped``."""
        return grouped if self.order is None else self.order[grouped]


def show_rows(frame: pl.DataFrame, mask: pl.Series | pl.Expr, columns: list[str]) -> str:
    """The first few rows of ``frame`` where ``mask`` holds, one per line with the row index."""
    shown = [c for c in columns if not c.startswith(INTERNAL)]  # never receval's own columns
    rows = frame.with_row_index("row").filter(mask).select("row", *shown).head(_SHOW)
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
        elif dtype == pl.Null and out.height == 0:  # an empty table typed by nothing
            casts.append(pl.col(col).cast(pl.Int64))
        elif not (dtype.is_integer() or dtype == pl.String):
            msg = (
                f"{role} column {col!r} holds ids and must be integers or strings; "
                f"got {dtype}. Cast it first, e.g. pl.col({col!r}).cast(pl.Int64)."
            )
            raise InputError(msg)
    vtype = schema[value_col]
    if vtype == pl.Null and out.height == 0:
        vtype = pl.Float64()
    if not (vtype.is_numeric() and vtype != pl.Boolean):
        msg = f"{role} column {value_col!r} ({value_name}) must be numeric; got {vtype}."
        if vtype == pl.String:  # e.g. a CSV column: show the values that are not numbers
            text = pl.col(value_col)
            bad = text.is_not_null() & text.cast(pl.Float64, strict=False).is_null()
            rows = show_rows(out, bad, columns)
            msg += f" First values that are not numbers:\n{rows}" if rows else ""
        raise InputError(msg)
    if vtype.is_integer():
        _check_exact_integers(out, role, value_col, value_name, columns)
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


def assignments(text: str, msg: str) -> dict[str, str]:
    """``"a=x,b=y"`` as ``{"a": "x", "b": "y"}`` (the text form of options given by key);
    :class:`InputError` with ``msg`` when a part has no ``=`` or a key repeats."""
    pairs: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = (p.strip() for p in part.partition("="))
        if not sep or key in pairs:
            raise InputError(msg)
        pairs[key] = value
    return pairs


def check_id_type(value: object) -> dict[str, IdType]:
    """``id_type`` as ``{"user": kind, "item": kind}``, or :class:`InputError`.

    ``value``: one kind for every id (``"auto"``, ``"str"``, ``"int"``), or kinds by id,
    ``{"item": "int"}`` or as text ``"item=int"`` / ``"user=str,item=int"`` (an id not named
    is ``"auto"``).
    """
    choices = get_args(IdType)
    msg = (
        f"id_type must be one of {', '.join(choices)}, or kinds by id such as "
        f"{{'item': 'int'}} (as text: 'item=int' or 'user=str,item=int'); got {value!r}."
    )
    if isinstance(value, str):
        if value in choices:
            return {"user": cast(IdType, value), "item": cast(IdType, value)}
        value = assignments(value, msg)
    if not isinstance(value, Mapping) or not value:
        raise InputError(msg)
    out: dict[str, IdType] = {"user": "auto", "item": "auto"}
    for key, kind in value.items():
        if key not in out or not isinstance(kind, str) or kind not in choices:
            raise InputError(msg)
        out[key] = cast(IdType, kind)
    return out


def not_integer_message(role: str, col: str, count: int, rows: str) -> str:
    """The error when ``id_type="int"`` meets ids that are not 64-bit integers."""
    return (
        f"{role} has {count} value(s) in column {col!r} that are not 64-bit integers "
        "(id_type 'int' reads these ids as integers); expected integer ids such as 42, or "
        f"id_type='str' (CLI --id-type str) to compare ids as text. First offending rows:\n{rows}"
    )


def cast_ids(frame: pl.DataFrame, role: Role, kinds: Mapping[str, IdType]) -> pl.DataFrame:
    """Give each id column of a checked frame (integers or strings) the type its kind asks
    (``kinds``: column -> kind).

    ``"auto"`` keeps a column; ``"str"`` casts it to String (integers become their decimal
    text); ``"int"`` casts it to Int64 strictly (``"007"`` becomes 7): a value that is not an
    integer in the int64 range raises :class:`InputError` with the first offending rows.
    """
    schema = frame.schema
    columns = []
    for col, kind in kinds.items():
        if kind == "str" and schema[col] != pl.String:
            columns.append(frame[col].cast(pl.String))
        elif kind == "int" and schema[col] != pl.Int64:
            source = frame[col]
            if source.dtype in (pl.Categorical, pl.Enum):
                source = source.cast(pl.String)  # by their text (Polars refuses the cast)
            values = source.cast(pl.Int64, strict=False)
            bad = values.is_null() & frame[col].is_not_null()
            count = int(bad.sum())
            if count:
                rows = show_rows(frame, bad, list(kinds))
                raise InputError(not_integer_message(role, col, count, rows))
            columns.append(values)
    return frame.with_columns(columns) if columns else frame


def id_type_fix(what: str) -> str:
    """How ``id_type`` resolves integer ids on one side and text ids on the other."""
    return (
        f"CSV, TSV and TREC files give text ids: pass id_type='int' (CLI --id-type int) or "
        f"id_type={{'{what}': 'int'}} (--id-type {what}=int) to read ids as integers, or "
        "id_type='str' (--id-type str) to read every id as text,"
    )


def check_column_names(names: Mapping[str, object], table: str) -> None:
    """Column-name options of one input: strings, and no two naming the same column."""
    seen: dict[str, str] = {}
    for option, name in names.items():
        if not isinstance(name, str) or not name:
            msg = f"{option} must be a column name (a non-empty string); got {name!r}."
            raise InputError(msg)
        if name in seen:
            msg = (
                f"{seen[name]} and {option} both name column {name!r} of {table}; each must "
                "name a different column."
            )
            raise InputError(msg)
        seen[name] = option


FLOAT_EXACT = 2**53  # every integer up to this magnitude is exact in float64


def inexact_integers_message(what: str, count: int, fix: str) -> str:
    """The error for integers that float64 cannot hold exactly (distinct values would tie)."""
    return (
        f"{what} has {count} integer value(s) beyond ±2^53 that float64 cannot hold exactly, "
        f"so distinct values would compare equal and silently tie; {fix}"
    )


def _check_exact_integers(
    frame: pl.DataFrame, role: Role, value_col: str, value_name: str, columns: list[str]
) -> None:
    """Refuse integer values that change when they become float64 (beyond 2^53)."""
    col = pl.col(value_col)
    wide = col.cast(pl.Int128)
    inexact = (wide.abs() > FLOAT_EXACT) & (col.cast(pl.Float64).cast(pl.Int128) != wide)
    count = frame.select(inexact.sum()).item()
    if count:
        fix = (
            f"rescale them (subtract the smallest {value_name}, or use ranks) first. First "
            f"offending rows:\n{show_rows(frame, inexact, columns)}"
        )
        raise InputError(
            inexact_integers_message(f"{role} column {value_col!r} ({value_name})", count, fix)
        )


def unify_ids(
    truth: pl.DataFrame, recs: pl.DataFrame, col: str, what: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Give ``col`` one type in both frames: Int64 for integers, String for strings."""
    t, r = truth.schema[col], recs.schema[col]
    if t == r:
        return truth, recs
    if t.is_integer() and r.is_integer():
        # unsigned ids past 2^63 - 1 do not fit Int64: compare both sides by their decimal
        # text instead, which keeps every id distinct (never a wrap-around onto a negative id)
        wide = any(
            frame.schema[col] == pl.UInt64 and (frame[col].max() or 0) > 2**63 - 1  # type: ignore[operator]
            for frame in (truth, recs)
        )
        kind = pl.String if wide else pl.Int64
        return truth.with_columns(pl.col(col).cast(kind)), recs.with_columns(pl.col(col).cast(kind))
    if t == pl.String and r == pl.String:
        return truth, recs
    msg = (
        f"{what} ids of truth and recs have different types: truth column {col!r} is {t}, "
        f"recs column {col!r} is {r}; expected both integers or both strings. {id_type_fix(what)} "
        f"or convert one side, e.g. pl.col({col!r}).cast(pl.String)."
    )
    raise InputError(msg)


def group_by_user(
    frame: pl.DataFrame, user_col: str, carry: Mapping[str, Callable[[], pl.Series]] | None = None
) -> Grouped:
    """Group rows by user, keeping input order within a user, in linear time.

    ``carry``: by name, at most two functions that make columns (Int64, UInt64 or Float64,
    no nulls, one value per row of ``frame``) that the caller needs in grouped order, as
    arrays (:meth:`Grouped.taken`; integers as int64, uint64 ones by their bits): the radix
    grouping moves them with the rows, reading their chunks where they lie, where a gather
    after it would read each row at random.

    Users who each come in one run of rows keep the input's order of users (no row moves);
    otherwise users are ordered by id (ascending, as Polars sorts the column) and the rows
    are grouped by a stable counting sort of dense user codes (:func:`user_codes`,
    :func:`receval.kernels.grouping.counting_sort`), or, for integer ids in a range of at most
    2^24 that are not in long runs, by a two-pass radix grouping of ``id - low`` itself
    (:func:`receval.kernels.grouping.radix_group`: no codes): the same rows, users and order
    as a stable sort by the user column, without the comparison sort.
    """
    makers = dict(carry or {})
    users = frame[user_col]
    n = users.len()
    pieces = _int_bit_pieces(users)  # the column's chunks, without a copy where it can
    if pieces is None:
        return _group_strings(frame, users, user_col, makers)
    n_runs = G.count_runs(pieces)
    if 2 * n_runs <= n:  # long runs: the runs' users suffice to tell and to code
        run_off = G.run_offsets(pieces, n_runs)
        run_users = users.gather(run_off[:-1])
        codes, keys = user_codes(run_users)
        if keys.len() == n_runs:  # every user in one run: grouped already
            return Grouped(frame, run_users.alias(user_col), run_off, carried=_made(makers))
        codes = np.repeat(codes, np.diff(run_off))
    else:
        radix = _radix_grouped(users, pieces, makers)
        if radix is not None:  # integer ids in a small range: no codes
            keys, offsets, order, carried = radix
        else:
            codes, keys = user_codes(users, bits=_int_bits(users))
        if keys.len() == n_runs:
            run_off = G.run_offsets(pieces, n_runs)
            run_keys = users.gather(run_off[:-1]).alias(user_col)
            return Grouped(frame, run_keys, run_off, carried=_made(makers))
        if radix is not None:
            return Grouped(frame, keys.alias(user_col), offsets, order, carried=carried)
    del pieces
    return _counting_grouped(frame, codes, keys, user_col, makers)


_PARALLEL_JOIN_ROWS = 1 << 24
"""Columns in chunks of at least this many rows are joined on every thread
(:func:`receval.kernels.grouping.join_pieces`) rather than by Polars' ``to_numpy``, which
copies the chunks one after the other but into memory its allocator keeps between calls: at
10^7 rows Polars' copy took 10 ms (a fresh array on two threads 23 ms), at 10^8 rows 0.46 s
(on two threads 0.24 s)."""


def column_array(series: pl.Series) -> np.ndarray:
    """An Int64, UInt64 or Float64 column without nulls as one array (int64: uint64 values
    by their bits); no copy when it is in one chunk."""
    if series.n_chunks() > 1 and series.len() >= _PARALLEL_JOIN_ROWS:
        return G.join_pieces(column_pieces(series))
    return _bits(np.ascontiguousarray(series.to_numpy()))


def column_pieces(series: pl.Series) -> list[np.ndarray]:
    """:func:`column_array` chunk by chunk (:data:`receval.kernels.grouping.Pieces`): no copy
    of a chunk of 8-byte numbers without nulls."""
    return [column_array(chunk) for chunk in series.get_chunks()]


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.int64) if values.dtype == np.uint64 else values


def _made(makers: Mapping[str, Callable[[], pl.Series]]) -> dict[str, np.ndarray]:
    """What each of ``makers`` makes, as one array."""
    return {name: column_array(make()) for name, make in makers.items()}


_RUNS_SAMPLE = 1 << 16
"""Rows at the head of a string user column whose runs tell whether to count its runs."""


def _group_strings(
    frame: pl.DataFrame,
    users: pl.Series,
    user_col: str,
    makers: dict[str, Callable[[], pl.Series]],
) -> Grouped:
    """:func:`group_by_user` for string ids (the same rows, users and order).

    When the first rows come in long runs, Polars' ``rle`` of the column gives its runs
    (chunk by chunk: neither a rechunked copy of the strings nor a run id per row), and the
    runs' users alone are told apart and, if one repeats, coded. Otherwise every row is coded
    by the hash of its id, whose runs are the column's runs once the hash is found exact on
    these ids (:func:`_hashed_codes`). Which way only changes the time taken, never the
    result."""
    n = users.len()
    head = users.slice(0, _RUNS_SAMPLE)
    if 2 * head.rle_id().n_unique() <= head.len():  # long runs likely: count them exactly
        runs = users.rle()
        n_runs = runs.len()
        if 2 * n_runs <= n:
            run_off = np.zeros(n_runs + 1, dtype=np.int64)
            np.cumsum(runs.struct.field("len").to_numpy(), out=run_off[1:])
            run_users = runs.struct.field("value").alias(user_col)
            del runs
            if run_users.n_unique() == n_runs:  # every user in one run: grouped already
                return Grouped(frame, run_users, run_off, carried=_made(makers))
            codes, keys = user_codes(run_users)
            codes = np.repeat(codes, np.diff(run_off))
            return _counting_grouped(frame, codes, keys, user_col, makers)
        del runs  # many short runs after all: code every row
    hashes = _string_bits(users)
    codes, keys, exact = _hashed_codes(users, hashes)
    # equal hashes of adjacent rows mean equal ids when the hash is exact on these ids
    runs_of = hashes if exact else _run_ids(users)
    n_runs = G.count_runs(runs_of)
    if keys.len() == n_runs:  # every user in one run: grouped already
        run_off = G.run_offsets(runs_of, n_runs)
        del hashes, runs_of, codes
        run_keys = users.gather(run_off[:-1]).alias(user_col)
        return Grouped(frame, run_keys, run_off, carried=_made(makers))
    del hashes, runs_of
    return _counting_grouped(frame, codes, keys, user_col, makers)


def _counting_grouped(
    frame: pl.DataFrame,
    codes: np.ndarray,
    keys: pl.Series,
    user_col: str,
    makers: dict[str, Callable[[], pl.Series]],
) -> Grouped:
    """Rows grouped by a stable sort of their dense user ``codes`` (``keys[code]``: the
    user), the columns ``makers`` make moved with them: the radix grouping of the codes
    (cut where the user column's chunks are cut, so that the columns are read where they
    lie), or a counting sort and gathers past its range."""
    n = codes.shape[0]
    if keys.len() <= 1 << G.RADIX_MAX_BITS and n < 1 << 32:
        pieces = G.cut(codes, [chunk.len() for chunk in frame[user_col].get_chunks()])
        made = [partial(_pieces_made, make) for make in makers.values()]
        offsets, order, moved = G.radix_group(pieces, 0, max(1, keys.len()), made)
        carried = dict(zip(makers, moved, strict=True))
        return Grouped(
            frame, keys.alias(user_col), offsets[: keys.len() + 1], order, carried=carried
        )
    offsets, order = G.counting_sort(codes, keys.len())
    carried = {name: G.gather(column_array(make()), order) for name, make in makers.items()}
    return Grouped(frame, keys.alias(user_col), offsets, order, carried=carried)


def _radix_grouped(
    ids: pl.Series, pieces: list[np.ndarray], carry: dict[str, Callable[[], pl.Series]]
) -> tuple[pl.Series, np.ndarray, np.ndarray, dict[str, np.ndarray]] | None:
    """Integer ids in a small range (as :func:`user_codes` codes through a table), grouped
    by :func:`receval.kernels.grouping.radix_group` on ``id - low`` itself: ``(keys, offsets,
    order, carried)`` as :func:`group_by_user` needs them (the distinct ids ascending; the
    columns ``carry`` makes, in grouped order, read chunk by chunk); None for other ids.
    ``pieces``: :func:`_int_bit_pieces` of ``ids``."""
    n = ids.len()
    if n == 0 or n >= 1 << 32:
        return None
    low, high = ids.min(), ids.max()
    assert isinstance(low, int) and isinstance(high, int)
    size = high - low + 1
    if size > min(1 << G.RADIX_MAX_BITS, 2 * n + (1 << 20) + 1):
        return None
    makers = [partial(_pieces_made, make) for make in carry.values()]
    full, order, moved = G.radix_group(pieces, _low_bits(low), size, makers)
    found = np.flatnonzero(full[1:] != full[:-1])
    offsets = np.append(full[found], np.int64(n))
    return _range_keys(ids, found, low), offsets, order, dict(zip(carry, moved, strict=True))


def _pieces_made(make: Callable[[], pl.Series]) -> list[np.ndarray]:
    return column_pieces(make())


def _low_bits(low: int) -> int:
    """The smallest id as the int64 that :func:`_int_bits` gives it."""
    return int(np.array([low], dtype=np.uint64 if low >= 0 else np.int64).view(np.int64)[0])


def _range_keys(ids: pl.Series, found: np.ndarray, low: int) -> pl.Series:
    """The ids ``low + found`` (``found``: ascending offsets), with the type of ``ids``."""
    if ids.dtype == pl.UInt64:
        return pl.Series(ids.name, found.astype(np.uint64) + np.uint64(low))
    return pl.Series(ids.name, found + low, dtype=pl.Int64).cast(ids.dtype)


def sort_by_user(frame: pl.DataFrame, user_col: str, row_col: str) -> pl.DataFrame:
    """``frame`` with users ascending and, within a user, ``row_col`` (integers) ascending:
    ``frame.sort(user_col, row_col)`` by a counting sort of user codes and a sort of each
    user's rows (no comparison sort of all rows). Rows equal in both keep their order."""
    codes, keys = user_codes(frame[user_col])
    offsets, order = G.counting_sort(codes, keys.len())
    key = np.ascontiguousarray(frame[row_col].to_numpy(), dtype=np.int64)
    G.sort_within(offsets, order, key)
    grouped = Grouped(frame, keys.alias(user_col), offsets, order)
    return grouped.frame


def _run_ids(users: pl.Series) -> np.ndarray:
    """int64 values whose runs are the runs of equal string ``users`` (Polars' run ids)."""
    return np.ascontiguousarray(users.rle_id().to_numpy(), dtype=np.int64)


def _int_bits(ids: pl.Series) -> np.ndarray | None:
    """Integer ids as int64 (uint64 ids as their bits: distinct ids stay distinct), else
    None."""
    if not ids.dtype.is_integer():
        return None
    if ids.dtype in (pl.Int64, pl.UInt64):
        return column_array(ids)
    return np.ascontiguousarray(ids.to_numpy(), dtype=np.int64)


def _int_bit_pieces(ids: pl.Series) -> list[np.ndarray] | None:
    """:func:`_int_bits` chunk by chunk (no copy of Int64 and UInt64 chunks), else None."""
    if not ids.dtype.is_integer():
        return None
    if ids.dtype in (pl.Int64, pl.UInt64):
        return column_pieces(ids)
    return [np.ascontiguousarray(c.to_numpy(), dtype=np.int64) for c in ids.get_chunks()]


_USER_HASH_SEED = 0x6E0D
"""Seed of the 64-bit hash that codes string user ids (every code is checked exactly)."""


def user_codes(ids: pl.Series, *, bits: np.ndarray | None = None) -> tuple[np.ndarray, pl.Series]:
    """Dense codes of ids (no nulls) in the order Polars sorts them: ``(codes, keys)`` with
    ``keys`` the distinct ids sorted ascending and ``keys[codes[i]] == ids[i]``.

    Integer ids whose range is at most about twice their number are coded through a table of
    that range (no hashing or sorting of rows). Other ids go through a hash table of their
    distinct values, and only those are sorted: integer ids are their own keys; string ids
    are keyed by a 64-bit hash, and every row's id is then compared with its code's id, so a
    hash collision falls back to an exact coding and can never merge two users. ``bits``:
    :func:`_int_bits` of ``ids`` when already made.
    """
    n = ids.len()
    if bits is None:
        bits = _int_bits(ids)
    if bits is not None and n:
        low, high = ids.min(), ids.max()
        assert isinstance(low, int) and isinstance(high, int)
        if high - low <= 2 * n + (1 << 20):
            codes, present = G.range_codes(bits, _low_bits(low), high - low + 1)
            return codes, _range_keys(ids, np.flatnonzero(present), low)
    if bits is not None:
        return _table_codes(ids, bits)
    codes, keys, _ = _hashed_codes(ids, _string_bits(ids))
    return codes, keys


def _table_codes(ids: pl.Series, bits: np.ndarray) -> tuple[np.ndarray, pl.Series]:
    """:func:`user_codes` through a hash table of the distinct ``bits`` (one int64 per id,
    equal ids equal bits)."""
    first = pl.Series(bits).arg_unique().to_numpy()
    distinct = ids.gather(first)
    by_id = distinct.arg_sort().to_numpy()
    codes = G.table_codes(bits, np.ascontiguousarray(bits[first[by_id]]))
    return codes, distinct.gather(by_id)


def _hashed_codes(ids: pl.Series, hashes: np.ndarray) -> tuple[np.ndarray, pl.Series, bool]:
    """:func:`user_codes` of string ``ids`` keyed by their ``hashes`` (:func:`_string_bits`),
    and whether those hashes are exact on them (distinct ids, distinct hashes): when two
    distinct ids share a hash, an exact coding instead."""
    codes, keys = _table_codes(ids, hashes)
    if not bool((keys.gather(codes) == ids).all()):
        codes, keys = _exact_codes(ids)  # two distinct ids share a hash
        return codes, keys, False
    return codes, keys, True


def _string_bits(ids: pl.Series) -> np.ndarray:
    """A 64-bit hash of each string id, as int64 (equal ids, equal hashes)."""
    return np.ascontiguousarray(ids.hash(seed=_USER_HASH_SEED).to_numpy()).view(np.int64)


def _exact_codes(ids: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """:func:`user_codes` without hashing: the distinct ids sorted, then joined back."""
    keys = ids.unique().sort()
    table = pl.DataFrame({"k": keys, "c": pl.int_range(keys.len(), dtype=pl.Int64, eager=True)})
    joined = pl.DataFrame({"k": ids}).join(table, on="k", how="left", maintain_order="left")
    return np.ascontiguousarray(joined["c"].to_numpy(), dtype=np.int64), keys


def item_keys(series: pl.Series) -> np.ndarray:
    """int64 keys of item ids: the ids themselves, or a 64-bit hash of string ids."""
    return column_array(item_key_column(series))


def item_key_column(series: pl.Series) -> pl.Series:
    """:func:`item_keys` as a column (Int64, or UInt64 read by its bits), chunked as
    ``series`` where no conversion is needed."""
    if series.dtype == pl.String:
        return series.hash(seed=0x5EC)
    if series.dtype in (pl.Int64, pl.UInt64):
        return series
    return pl.Series(series.name, np.ascontiguousarray(series.to_numpy(), dtype=np.int64))


def float_column(series: pl.Series) -> pl.Series:
    """A numeric column as Float64 (as NumPy converts it), chunked as ``series`` when it is
    Float64 already."""
    if series.dtype == pl.Float64:
        return series
    return pl.Series(series.name, np.ascontiguousarray(series.to_numpy(), dtype=np.float64))


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
