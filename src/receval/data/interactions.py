"""Interaction tables (user, item, timestamp, any other column) for the splitters and the
leakage audit: reading, validation with the exact errors, and the order keys of timestamps.

A timestamp column may hold integers, floats (no NaN), dates, datetimes, durations or times
of day; its *order key* is an int64 per row that orders as the timestamps do (integers as
they are, temporal types by their physical value, floats by their IEEE bits turned into an
order-preserving integer). Bounds given by the caller (a cutoff, an end) are turned into the
same keys, so that every comparison is exact: no timestamp is ever rounded to a float.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.data.io import InputFormat, check_exists, format_of, read_table
from receval.data.layout import Role, check_column_names, show_rows

__all__ = ["Columns", "bound_key", "check_interactions", "read_interactions", "time_key"]

_FLIP = np.int64(0x7FFF_FFFF_FFFF_FFFF)


@dataclass(frozen=True)
class Columns:
    """The column names of an interaction table: ``time`` is None when there is none."""

    user: str
    item: str
    time: str | None

    @property
    def ids(self) -> list[str]:
        """The id columns and the time column, where there is one."""
        return [self.user, self.item, *([self.time] if self.time else [])]


def read_interactions(
    data: Any, name: str, columns: Columns, input_format: InputFormat | None = None
) -> pl.DataFrame:
    """Any source :func:`receval.data.io.read_table` reads (Polars, pandas, Arrow, a Parquet,
    CSV or TSV path), as a Polars DataFrame; the caller's object is never modified.

    From CSV and TSV files, ids are text (as everywhere in receval) and the time column is
    read as numbers (Float64) when every value is one; other columns stay text.
    """
    value = columns.time or "__receval_none"
    role = cast(Role, name)  # read_table names the input in its messages only
    if isinstance(data, str | os.PathLike):
        check_exists(data, role)
        if format_of(Path(data), role, input_format) == "trec":
            given = " (input_format='trec')" if input_format is not None else ""
            msg = (
                f"{name} file {str(data)!r} reads as TREC{given}, a qrels or run file: it has no "
                "timestamp and no interactions table; split and audit_split read Parquet, CSV, "
                "TSV or RecBole .inter files (name the format: input_format='tsv')."
            )
            raise InputError(msg)
    return read_table(
        data, role, user_col=columns.user, item_col=columns.item, value_col=value,
        input_format=input_format,
    )  # fmt: skip


def check_interactions(
    frame: pl.DataFrame, name: str, columns: Columns, *, need_time: bool, allow_empty: bool = False
) -> Columns:
    """Check an interaction table; return its columns (``time`` None when the table has no
    time column and ``need_time`` is false).

    Raises :class:`InputError` on: no rows; a missing id column, or a missing time column when
    ``need_time``; ids that are not integers or strings; nulls in the id or time columns; a
    time column that cannot be ordered (text, booleans, lists: parse text first with
    ``pl.col(c).str.to_datetime()``) or that holds NaN.
    """
    names = {"user_col": columns.user, "item_col": columns.item}
    check_column_names(names | ({"time_col": columns.time} if columns.time else {}), name)
    if frame.height == 0 and not allow_empty:
        msg = f"{name} is empty (0 rows); expected at least one interaction."
        raise InputError(msg)
    for col, option in ((columns.user, "user_col"), (columns.item, "item_col")):
        if col not in frame.columns:
            msg = (
                f"{name} is missing column {col!r} (columns found: {frame.columns}); pass "
                f"{option}= to name the column of {option[:4]} ids."
            )
            raise InputError(msg)
    time = columns.time
    if time is None and need_time:
        msg = f"this split orders {name} by time: time_col= must name the timestamp column."
        raise InputError(msg)
    if time is not None and time not in frame.columns:
        if need_time:
            msg = (
                f"{name} is missing column {time!r} (columns found: {frame.columns}); this "
                "split orders interactions by time: pass time_col= to name the timestamp column."
            )
            raise InputError(msg)
        time = None
    for col in (columns.user, columns.item):
        dtype = frame.schema[col]
        if not (dtype.is_integer() or dtype in (pl.String, pl.Categorical) or dtype == pl.Enum):
            msg = (
                f"{name} column {col!r} holds ids and must be integers or strings; got {dtype}. "
                f"Cast it first, e.g. pl.col({col!r}).cast(pl.Int64)."
            )
            raise InputError(msg)
    shown = [columns.user, columns.item, *([time] if time else [])]
    if time is not None:
        dtype = frame.schema[time]
        if not (dtype.is_integer() or dtype.is_float() or dtype.is_temporal()):
            fix = (
                f"parse it first, e.g. pl.col({time!r}).str.to_datetime()"
                if dtype == pl.String
                else f"cast it first, e.g. pl.col({time!r}).cast(pl.Int64)"
            )
            msg = (
                f"{name} column {time!r} (timestamps) must be integers, floats, dates, "
                f"datetimes or durations, which can be ordered; got {dtype}: {fix}."
            )
            raise InputError(msg)
    nulls = frame.select(shown).null_count().row(0, named=True)
    for col in shown:
        if nulls[col]:
            what = "timestamps" if col == time else "ids"
            msg = (
                f"{name} has {nulls[col]} null value(s) in column {col!r} ({what}); expected "
                f"none. First offending rows:\n{show_rows(frame, pl.col(col).is_null(), shown)}"
            )
            raise InputError(msg)
    if time is not None and frame.schema[time].is_float():
        bad = frame.select(pl.col(time).is_nan().sum()).item()
        if bad:
            msg = (
                f"{name} has {bad} NaN value(s) in column {time!r} (timestamps), which cannot be "
                f"ordered; expected numbers. First offending rows:\n"
                f"{show_rows(frame, pl.col(time).is_nan(), shown)}"
            )
            raise InputError(msg)
    return Columns(columns.user, columns.item, time)


def time_key(series: pl.Series, name: str = "interactions") -> np.ndarray:
    """Per value an int64 that orders as the values do (no null, no NaN; see the module).

    Floats: -0.0 and 0.0 get one key; infinities order first and last.
    """
    dtype = series.dtype
    if dtype.is_float():
        values = series.cast(pl.Float64).to_numpy() + 0.0  # -0.0 becomes 0.0
        bits = values.view(np.int64)
        return np.where(bits < 0, bits ^ _FLIP, bits)
    if dtype.is_temporal():
        series = series.to_physical()
    try:
        out = series.cast(pl.Int64, strict=True)
    except pl.exceptions.PolarsError:
        big = series.filter(series.cast(pl.Int64, strict=False).is_null()).head(3).to_list()
        msg = (
            f"{name} column {series.name!r} (timestamps) has values beyond the int64 range, "
            f"e.g. {big}; rescale them first."
        )
        raise InputError(msg) from None
    return np.ascontiguousarray(out.to_numpy(), dtype=np.int64)


def bound_key(value: object, dtype: pl.DataType, option: str, time_col: str) -> int:
    """The order key of a bound (``cutoff``, ``end``, ...) on a time column of ``dtype``: the
    key ``b`` such that a timestamp ``t`` has ``t >= value`` exactly when ``key(t) >= b``.

    Numbers for numeric columns (a non-integral bound on an integer column is rounded up,
    which keeps ``t >= value``); ``datetime.date`` / ``datetime.datetime`` or ISO text for
    dates and datetimes; ``datetime.timedelta`` for durations; ``datetime.time`` for times.
    Anything else raises :class:`InputError`: Polars would compare a datetime with a number
    silently.
    """
    where = f"{option} (a bound on column {time_col!r}, {dtype})"
    if dtype.is_integer() or dtype.is_float():
        number = _number(value)
        if number is None:
            msg = f"{where} must be a number; got {value!r}."
            raise InputError(msg)
        if dtype.is_float():
            return int(time_key(pl.Series([float(number)]))[0])
        if isinstance(number, float):
            if math.isinf(number):
                msg = f"{where} must be a finite number; got {value!r}."
                raise InputError(msg)
            number = math.ceil(number)
        return max(min(int(number), 2**63 - 1), -(2**63))
    series = _temporal(value, dtype, where)
    return int(time_key(series)[0])


def _number(value: object) -> int | float | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
        return None if math.isnan(number) else number
    return None


def _temporal(value: object, dtype: pl.DataType, where: str) -> pl.Series:
    """``value`` as a one-value Series of the temporal ``dtype``, or :class:`InputError`."""
    expected = {
        pl.Date: "a datetime.date or ISO text such as '2020-01-31'",
        pl.Datetime: "a datetime.datetime, datetime.date or ISO text such as '2020-01-31 12:00'",
        pl.Duration: "a datetime.timedelta",
        pl.Time: "a datetime.time",
    }[dtype.base_type()]
    msg = f"{where} must be {expected}; got {value!r}."
    try:
        if isinstance(value, str):
            text = pl.Series([value.strip()])
            if isinstance(dtype, pl.Datetime):
                return text.str.to_datetime(
                    time_unit=dtype.time_unit, time_zone=dtype.time_zone, strict=True
                )
            if dtype == pl.Date:
                return text.str.to_date(strict=True)
            raise InputError(msg)
        kinds: dict[Any, tuple[type, ...]] = {
            pl.Date: (dt.date,), pl.Datetime: (dt.date,), pl.Duration: (dt.timedelta,),
            pl.Time: (dt.time,),
        }  # fmt: skip
        if not isinstance(value, kinds[dtype.base_type()]):
            raise InputError(msg)
        if dtype == pl.Date and isinstance(value, dt.datetime) and value.time() != dt.time():
            raise InputError(msg + " (a date column: give a date, without a time of day)")
        return pl.Series([value]).cast(dtype, strict=True)
    except pl.exceptions.PolarsError:
        raise InputError(msg) from None
