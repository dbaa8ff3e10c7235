"""The leakage audit of a train/test split: :func:`audit_split` and :class:`SplitAudit`.

Every splitter of :mod:`receval.data.split` runs it on what it made; it also audits splits
made elsewhere. It counts, and never changes a row: test interactions earlier than training
ones (over all users, and within a user), timestamps tied across the split, test pairs also
in train, cold users and items, test users without a relevant item. Each check is a row of
:attr:`SplitAudit.table` (``check``, ``count``, ``share``, ``of``); the leaks among them are
also :attr:`SplitAudit.warnings`, emitted as :class:`receval.LeakageWarning`. docs/protocol.md
explains each with a worked example.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import polars as pl

from receval._errors import InputError, LeakageWarning
from receval.data.interactions import Columns, check_interactions, read_interactions, time_key
from receval.data.io import InputFormat, check_input_format
from receval.data.layout import (
    IdTypeArg,
    Role,
    cast_ids,
    check_column_names,
    check_id_type,
    user_codes,
)
from receval.kernels.grouping import counting_sort, gather
from receval.kernels.split import TEST, TRAIN, VALIDATION, audit_users

__all__ = [
    "CHECKS", "CodedRows", "SplitAudit", "audit_coded", "audit_frames", "audit_split",
    "check_relevance_col", "check_threshold", "emit", "relevant_rows",
]  # fmt: skip

CHECKS: dict[str, tuple[str, str]] = {
    "test_before_train_end": (
        "test rows earlier than the latest train row (global time overlap)", "test rows"),
    "train_after_test_start": (
        "train rows later than the earliest test row (the future in training)", "train rows"),
    "test_before_user_train_end": (
        "test rows earlier than a train row of the same user", "test rows"),
    "ties_at_global_cut": ("test rows at the time of the latest train row", "test rows"),
    "ties_at_user_cut": (
        "test rows at the time of the same user's latest train row", "test rows"),
    "test_pairs_in_train": ("test rows whose (user, item) pair is in train", "test rows"),
    "cold_test_users": ("test users without a train row", "test users"),
    "cold_test_items": ("test items without a train row", "test items"),
    "cold_item_test_rows": ("test rows whose item has no train row", "test rows"),
    "test_users_without_relevant": (
        "test users without a relevant test row (relevance >= threshold)", "test users"),
    "train_users_without_test": ("train users without a test row", "train users"),
}  # fmt: skip
"""The audit's checks: name -> (what is counted, what the share is of)."""

_TIME_CHECKS = (
    "test_before_train_end", "train_after_test_start", "test_before_user_train_end",
    "ties_at_global_cut", "ties_at_user_cut",
)  # fmt: skip
_SCHEMA = {"check": pl.String, "count": pl.Int64, "share": pl.Float64, "of": pl.String}


@dataclass(frozen=True)
class SplitAudit:
    """What a leakage audit found.

    Attributes
    ----------
    table:
        One row per check: ``check`` (its name, :data:`CHECKS`), ``count``, ``share`` (count
        over the size of ``of``; null when that is 0) and ``of`` (what the share is of). The
        checks of a validation part against train are named ``validation.<check>``; a
        splitter adds what it removed (``rows_at_or_after_end_removed``,
        ``duplicate_rows_removed``, the ``kcore_*_removed``, ``short_users_*`` and
        ``cold_*_rows_dropped`` rows), every one of them in every split's audit, 0 where its
        step did not run (docs/protocol.md). A time check is null when a table has no time
        column.
    warnings:
        The leaks found, in words (each also emitted as :class:`receval.LeakageWarning`).
    notes:
        How the split was made (method, tie-break, k-core, ...), where a splitter made it, and
        what the audit could not check.
    """

    table: pl.DataFrame
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def __getitem__(self, check: str) -> int | None:
        """The count of ``check`` (None where it could not be checked)."""
        found = self.table.filter(pl.col("check") == check)
        if found.height == 0:
            msg = f"no check {check!r} in this audit; checks: {', '.join(self.table['check'])}."
            raise KeyError(msg)
        if found.height > 1:
            msg = (
                f"this audit has one {check!r} per fold (a k-fold split): read .table, or the "
                "audit of one fold (split.folds[i].audit)."
            )
            raise KeyError(msg)
        value = found["count"][0]
        return None if value is None else int(value)

    def share(self, check: str) -> float | None:
        """The share of ``check`` (None where it is undefined)."""
        self[check]  # a KeyError for an unknown check
        value = self.table.filter(pl.col("check") == check)["share"][0]
        return None if value is None else float(value)

    def __str__(self) -> str:
        lines = [f"{'check':<40} {'count':>12} {'share':>8}  of"]
        for check, count, share, of in self.table.select(list(_SCHEMA)).iter_rows():
            shown = "-" if count is None else f"{count:,}"
            ratio = "-" if share is None else f"{share:.2%}"
            lines.append(f"{check:<40} {shown:>12} {ratio:>8}  {of}")
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def audit_split(
    train: Any,
    test: Any,
    *,
    validation: Any = None,
    user_col: str = "user",
    item_col: str = "item",
    time_col: str | None = "timestamp",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    input_format: InputFormat | None = None,
    warn: bool = True,
    id_type: IdTypeArg = "auto",
) -> SplitAudit:
    """Audit a train/test split for leakage, however it was made.

    Parameters
    ----------
    train, test:
        The interactions of each part: Polars or pandas DataFrames, Arrow tables, or paths
        to Parquet, CSV or TSV files, with user, item and (optionally) timestamp columns.
    validation:
        A validation part, audited against train as well (checks named ``validation.*``).
    user_col, item_col, time_col:
        Column names. Without a time column in both parts (``time_col=None``, or absent) the
        time checks are null and a note says so.
    relevance_col, relevance_threshold:
        A test row is relevant when ``relevance_col >= relevance_threshold``
        (``test_users_without_relevant``); without ``relevance_col`` every row is relevant.
    input_format:
        The format of file inputs whose suffix does not tell it (``"parquet"``, ``"csv"``,
        ``"tsv"``).
    warn:
        Emit each leak found as a :class:`receval.LeakageWarning` (they are in
        :attr:`SplitAudit.warnings` either way).
    id_type:
        The type of the user and item ids of every part, as :func:`receval.split`'s
        (``"auto"``, ``"str"``, ``"int"`` or a kind by id): ``"int"`` compares a CSV part's
        text ids with a Parquet part's integers.

    Returns
    -------
    SplitAudit
        The table of checks (see :data:`CHECKS`), the warnings and notes.

    Examples
    --------
    A per-user leave-last-out split: each user's test row is their latest, yet ann's test row
    (t=2) is earlier than bob's training rows (t=5, 6): the future is in training.

    >>> import polars as pl, receval, warnings
    >>> train = pl.DataFrame({"user": ["ann", "bob", "bob"], "item": [1, 2, 3],
    ...                       "timestamp": [1, 5, 6]})
    >>> test = pl.DataFrame({"user": ["ann", "bob"], "item": [4, 1], "timestamp": [2, 7]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     audit = receval.audit_split(train, test)
    >>> audit["test_before_train_end"], audit.share("test_before_train_end")
    (1, 0.5)
    >>> audit["test_before_user_train_end"], audit["cold_test_items"]
    (0, 1)
    >>> [type(w.message).__name__ for w in caught]
    ['LeakageWarning']
    """
    formats = check_input_format(input_format)
    kinds = check_id_type(id_type)
    threshold = check_threshold(relevance_threshold)
    if not isinstance(warn, bool | np.bool_):
        msg = f"warn must be True or False; got {warn!r}."
        raise InputError(msg)
    columns = Columns(user_col, item_col, time_col)
    parts: dict[str, pl.DataFrame] = {}
    found: dict[str, Columns] = {}
    sources = {"train": train, "test": test, "validation": validation}
    for name, data in sources.items():
        if data is None:
            continue
        frame = read_interactions(data, name, columns, formats["train"])
        found[name] = check_interactions(frame, name, columns, need_time=False, allow_empty=True)
        role = cast(Role, name)  # cast_ids names the part in its messages only
        parts[name] = cast_ids(frame, role, {user_col: kinds["user"], item_col: kinds["item"]})
    has_time = time_col is not None and all(c.time is not None for c in found.values())
    notes = []
    if time_col is not None and not has_time:
        missing = [n for n, c in found.items() if c.time is None]
        notes.append(
            f"no time column {time_col!r} in {', '.join(missing)}: time checks skipped (pass "
            "time_col= to name it)"
        )
    used = Columns(user_col, item_col, time_col if has_time else None)
    _check_kinds(parts, used)
    for name in ("test", "validation"):  # the parts whose rows may be relevant
        if name in parts:
            check_relevance_col(parts[name], name, found[name], relevance_col)
    audit = audit_frames(
        parts["train"], parts["test"], parts.get("validation"), used,
        relevance=(relevance_col, threshold), ties=None, notes=notes,
    )  # fmt: skip
    if warn:
        emit(audit, stacklevel=3)
    return audit


def emit(audit: SplitAudit, stacklevel: int) -> None:
    """Emit each of ``audit``'s warnings as a :class:`receval.LeakageWarning`."""
    for message in audit.warnings:
        warnings.warn(message, LeakageWarning, stacklevel=stacklevel)


def _check_kinds(parts: dict[str, pl.DataFrame], columns: Columns) -> None:
    """The parts' ids (and timestamps) must be of one kind: integers or strings (numbers or
    one temporal type)."""
    for col, what in ((columns.user, "user ids"), (columns.item, "item ids"), (columns.time, "")):
        if col is None:
            continue
        kinds = {name: _kind(frame.schema[col]) for name, frame in parts.items()}
        if len(set(kinds.values())) > 1:
            shown = ", ".join(f"{n} {parts[n].schema[col]}" for n in kinds)
            fix = (
                "cast one side, e.g. pl.col(c).cast(pl.String)"
                if what
                else "convert both to one type"
            )
            msg = (
                f"column {col!r} ({what or 'timestamps'}) has different types: {shown}; "
                f"expected one kind in every part: {fix}."
            )
            raise InputError(msg)


def _kind(dtype: pl.DataType) -> str:
    if dtype.is_integer() or dtype.is_float():
        return "number"
    if dtype in (pl.String, pl.Categorical) or dtype == pl.Enum:
        return "text"
    return str(dtype.base_type())


def check_threshold(value: object) -> float:
    """``relevance_threshold`` as a float, or :class:`InputError` unless a finite number > 0
    (Python or NumPy; not a bool): evaluate's rule, so that a split's audit and an evaluation
    take the same thresholds."""
    number = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    try:
        threshold = float(cast(float, value)) if number else math.nan
    except OverflowError:  # an int beyond a float's range
        threshold = math.nan
    if not (math.isfinite(threshold) and threshold > 0):
        msg = f"relevance_threshold must be a finite number > 0; got {value!r}."
        raise InputError(msg)
    return threshold


def check_relevance_col(frame: pl.DataFrame, name: str, columns: Columns, col: object) -> None:
    """``relevance_col`` (unless None) must name a numeric column of ``frame`` (the table
    ``name``, checked by :func:`check_interactions`) other than its id and time columns: a
    missing one would count every row relevant, silently."""
    if col is None:
        return
    names = {"user_col": columns.user, "item_col": columns.item}
    check_column_names(
        names | ({"time_col": columns.time} if columns.time else {}) | {"relevance_col": col},
        name,
    )
    assert isinstance(col, str)
    if col not in frame.columns:
        msg = f"{name} is missing column {col!r} (relevance_col); columns found: {frame.columns}."
        raise InputError(msg)
    dtype = frame.schema[col]
    if not (dtype.is_numeric() and dtype != pl.Boolean):
        msg = (
            f"{name} column {col!r} (relevance_col) must be numeric; got {dtype}. Cast it "
            f"first, e.g. pl.col({col!r}).cast(pl.Float64) (a RecBole header: {col}:float)."
        )
        raise InputError(msg)


def _id_types(parts: list[pl.DataFrame], columns: Columns) -> dict[str, pl.DataType]:
    """The one type each id column takes in every part: Int64 for integers (String where a
    part has UInt64 ids, which may not fit Int64), else String."""
    out: dict[str, pl.DataType] = {}
    for col in (columns.user, columns.item):
        dtypes = [frame.schema[col] for frame in parts]
        ints = all(d.is_integer() for d in dtypes) and pl.UInt64 not in dtypes
        out[col] = pl.Int64() if ints else pl.String()
    return out


@dataclass(frozen=True)
class CodedRows:
    """The rows of an interaction table as codes, for the audit's linear passes.

    ``users``: per row a dense user code, ``user_keys[code]`` its id; ``rows`` grouped by
    user (``rows[offsets[u]:offsets[u + 1]]``, input order within a user); ``items``: per row
    a dense item code in ``[0, n_items)`` (both codes int32 where they fit).
    ``grouped_items`` and ``grouped_time``: the item codes (int64) and the time order keys
    (:func:`receval.data.interactions.time_key`; None without a time column) in the order of
    ``rows`` (the grouped arrays of :mod:`receval.kernels.split`).
    """

    users: np.ndarray
    user_keys: pl.Series
    offsets: np.ndarray
    rows: np.ndarray
    items: np.ndarray
    n_items: int
    grouped_items: np.ndarray
    grouped_time: np.ndarray | None

    @staticmethod
    def of(users: pl.Series, items: pl.Series, time: np.ndarray | None) -> CodedRows:
        """Dense codes of the ids (integers or text; categoricals by their text) and the rows
        grouped by user by a counting sort, all in linear time."""
        # each int64 array narrowed as soon as it is used: a lower peak of memory
        codes, user_keys = user_codes(_codable(users))
        offsets, rows = counting_sort(codes, user_keys.len())
        user_codes_ = _narrow(codes, user_keys.len())
        codes, item_keys = user_codes(_codable(items))
        grouped_items = gather(codes, rows)
        item_codes = _narrow(codes, item_keys.len())
        del codes
        grouped_time = None if time is None else gather(time, rows)
        return CodedRows(
            user_codes_, user_keys, offsets, rows, item_codes, item_keys.len(), grouped_items,
            grouped_time,
        )  # fmt: skip


def _narrow(codes: np.ndarray, size: int) -> np.ndarray:
    """Codes in ``[0, size)`` as int32 where they fit (half the memory)."""
    return codes.astype(np.int32) if size < 2**31 else codes


def _codable(ids: pl.Series) -> pl.Series:
    """Ids as :func:`receval.data.layout.user_codes` takes them: integers, or text."""
    if ids.dtype.is_integer() or ids.dtype == pl.String:
        return ids
    return ids.cast(pl.String)


def _rows(
    coded: CodedRows, part: np.ndarray, side: int, relevant: np.ndarray
) -> list[tuple[str, int | None, int]]:
    """(check, count, size of what the share is of) for each check of the rows of ``part``
    ``side`` against the train rows: two passes over each user's rows
    (:func:`receval.kernels.split.audit_users`)."""
    rows_ = coded.rows
    time = coded.grouped_time
    found = audit_users(
        coded.offsets, part[rows_], side, coded.grouped_items, coded.n_items,
        time if time is not None else np.zeros(rows_.shape[0], dtype=np.int64),
        relevant[rows_],
    )  # fmt: skip
    n_train, n_test = found["train_rows"], found["test_rows"]
    has_time = time is not None and n_train > 0 and n_test > 0
    n_test_users = found["test_users"]
    sizes = {
        "test_before_train_end": n_test, "train_after_test_start": n_train,
        "test_before_user_train_end": n_test, "ties_at_global_cut": n_test,
        "ties_at_user_cut": n_test, "test_pairs_in_train": n_test,
        "cold_test_users": n_test_users, "cold_test_items": found["test_items"],
        "cold_item_test_rows": n_test, "test_users_without_relevant": n_test_users,
        "train_users_without_test": found["train_users"],
    }  # fmt: skip
    rows: list[tuple[str, int | None, int]] = []
    for check, size in sizes.items():
        if check in _TIME_CHECKS and not has_time:
            # no time column: unknown; an empty part: nothing overlaps
            rows.append((check, None if coded.grouped_time is None else 0, size))
        else:
            rows.append((check, found[check], size))
    return rows


def audit_frames(
    train: pl.DataFrame,
    test: pl.DataFrame,
    validation: pl.DataFrame | None,
    columns: Columns,
    *,
    relevance: tuple[str | None, float] = (None, 1),
    ties: str | None,
    notes: list[str] | None = None,
) -> SplitAudit:
    """The audit of checked frames (:func:`audit_split`): their rows coded together
    (:class:`CodedRows`), then :func:`audit_coded`. ``ties`` as there."""
    frames = [train, test, *([validation] if validation is not None else [])]
    types = _id_types(frames, columns)
    users = pl.concat([f[columns.user].cast(types[columns.user]) for f in frames])
    items = pl.concat([f[columns.item].cast(types[columns.item]) for f in frames])
    time = None
    if columns.time is not None:
        time = np.concatenate([time_key(f[columns.time]) for f in frames])
    codes = [TRAIN, TEST, VALIDATION][: len(frames)]
    part = np.repeat(np.array(codes, dtype=np.int8), [f.height for f in frames])
    relevant = np.concatenate(
        [np.zeros(train.height, dtype=np.bool_)] + [relevant_rows(f, relevance) for f in frames[1:]]
    )
    coded = CodedRows.of(users, items, time)
    return audit_coded(
        coded, part, relevant, validation=validation is not None, ties=ties, notes=notes
    )


def relevant_rows(frame: pl.DataFrame, relevance: tuple[str | None, float]) -> np.ndarray:
    """Per row of ``frame``, whether it is relevant: ``relevance_col >= threshold`` (a null
    is not), every row without a relevance column."""
    col, threshold = relevance
    if col is None or col not in frame.columns:
        return np.ones(frame.height, dtype=np.bool_)
    relevant = (frame[col].cast(pl.Float64) >= threshold).fill_null(False)
    return np.ascontiguousarray(relevant.to_numpy(), dtype=np.bool_)


def audit_coded(
    coded: CodedRows,
    part: np.ndarray,
    relevant: np.ndarray,
    *,
    validation: bool,
    ties: str | None,
    notes: list[str] | None = None,
    extra: list[tuple[str, int | None, int, str]] | None = None,
) -> SplitAudit:
    """The audit of a split given as codes: per row its ``part``
    (:data:`receval.kernels.split.TRAIN`, ``TEST``, ``VALIDATION``, ``DROPPED``: ignored)
    and whether it is ``relevant``; the test rows, and with ``validation`` the validation
    rows, checked against the train rows (the splitters call it on what they made).

    ``ties``: how the splitter broke ties in time, in words (None: unknown, so ties across
    the split are a warning). ``extra``: rows ``(check, count, size, of)`` appended to the
    table (what a splitter removed).
    """
    records: list[tuple[str, int | None, float | None, str]] = []
    warned: list[str] = []
    sides = [("", TEST)] + ([("validation.", VALIDATION)] if validation else [])
    for prefix, side in sides:
        rows = _rows(coded, part, side, relevant)
        for check, count, size in rows:
            share = None if count is None or size == 0 else count / size
            records.append((prefix + check, count, share, CHECKS[check][1]))
        warned += _warnings(dict((c, (n, s)) for c, n, s in rows), prefix, ties)
    for check, count, size, of in extra or []:
        share = None if count is None or size == 0 else count / size
        records.append((check, count, share, of))
    table = pl.DataFrame(records, schema=_SCHEMA, orient="row")
    return SplitAudit(table, tuple(warned), tuple([*(notes or []), *_tie_note(ties)]))


def _tie_note(ties: str | None) -> list[str]:
    return [] if ties is None else [f"ties in time: {ties}"]


def _warnings(rows: dict[str, tuple[int | None, int]], prefix: str, ties: str | None) -> list[str]:
    """The leaks among the counts of one part, in words."""
    part = "validation" if prefix else "test"
    out = []

    def count(check: str) -> tuple[int, str]:
        n, size = rows[check]
        return (n or 0), (f"{(n or 0) / size:.1%}" if size else "-")

    n, share = count("test_before_train_end")
    if n:
        out.append(
            f"{n:,} {part} rows ({share}) are earlier than the latest train row: training holds "
            "interactions from after them (global time overlap), so a model learns from the "
            "future of other users' test interactions. One cutoff time for every user "
            "(method='temporal_global') has no overlap; see docs/protocol.md."
        )
    n, share = count("test_before_user_train_end")
    if n:
        out.append(
            f"{n:,} {part} rows ({share}) are earlier than a train row of the same user: the "
            "user's own future is in training."
        )
    if ties is None:
        tied = [(c, *count(c)) for c in ("ties_at_user_cut", "ties_at_global_cut")]
        for check, n, share in tied:
            if n:
                where = "the same user's" if check == "ties_at_user_cut" else "the"
                out.append(
                    f"{n:,} {part} rows ({share}) have the timestamp of {where} latest train "
                    "row: a tie-break decided their side. A tie-break by item id order is "
                    "reported to inflate NDCG by about 20%; use a seeded random tie-break or "
                    "keep ties together (receval.split(ties=...))."
                )
                break
    n, share = count("test_pairs_in_train")
    if n:
        out.append(
            f"{n:,} {part} rows ({share}) repeat a (user, item) pair that is in train: a model "
            "can score them from memory (receval.split(duplicates='first') keeps one row per "
            "pair)."
        )
    return out
