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

import warnings
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from receval._errors import InputError, LeakageWarning
from receval.data.interactions import Columns, check_interactions, read_interactions, time_key
from receval.data.io import InputFormat, check_input_format

__all__ = ["CHECKS", "SplitAudit", "audit_frames", "audit_split", "emit"]

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
        splitter adds what it removed (``kcore_rows_removed``, ``duplicate_rows_removed``,
        ...). A time check is null when a table has no time column.
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
    columns = Columns(user_col, item_col, time_col)
    parts: dict[str, pl.DataFrame] = {}
    found: dict[str, Columns] = {}
    sources = {"train": train, "test": test, "validation": validation}
    for name, data in sources.items():
        if data is None:
            continue
        frame = read_interactions(data, name, columns, formats["train"])
        found[name] = check_interactions(frame, name, columns, need_time=False, allow_empty=True)
        parts[name] = frame
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
    if relevance_col is not None:
        _check_relevance(parts["test"], relevance_col)
    audit = audit_frames(
        parts["train"], parts["test"], parts.get("validation"), used,
        relevance=(relevance_col, relevance_threshold), ties=None, notes=notes,
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


def _check_relevance(test: pl.DataFrame, col: str) -> None:
    if col not in test.columns:
        msg = f"test is missing column {col!r} (relevance_col); columns found: {test.columns}."
        raise InputError(msg)
    dtype = test.schema[col]
    if not (dtype.is_numeric() and dtype != pl.Boolean):
        msg = f"test column {col!r} (relevance_col) must be numeric; got {dtype}."
        raise InputError(msg)


def _id_types(parts: list[pl.DataFrame], columns: Columns) -> dict[str, pl.DataType]:
    """The one type each id column takes in every part for the joins: Int64 for integers
    (String where a part has UInt64 ids, which may not fit Int64), else String."""
    out: dict[str, pl.DataType] = {}
    for col in (columns.user, columns.item):
        dtypes = [frame.schema[col] for frame in parts]
        ints = all(d.is_integer() for d in dtypes) and pl.UInt64 not in dtypes
        out[col] = pl.Int64() if ints else pl.String()
    return out


def _ids(frame: pl.DataFrame, columns: Columns, types: dict[str, pl.DataType]) -> pl.DataFrame:
    """The id columns in the types of :func:`_id_types`, and the time column as its order key
    (one int64 per row, ``__time``: every type compares exactly)."""
    exprs: list[pl.Expr | pl.Series] = [pl.col(c).cast(t) for c, t in types.items()]
    if columns.time is not None:
        exprs.append(pl.Series("__time", time_key(frame[columns.time])))
    return frame.select(exprs)


def _rows(
    train: pl.DataFrame, test: pl.DataFrame, columns: Columns, relevant: pl.Series | None
) -> list[tuple[str, int | None, int]]:
    """(check, count, size of what the share is of) for each check of ``test`` against
    ``train`` (both as :func:`_ids` returns them). One lazy query per count, run together
    (:func:`polars.collect_all`), so that the passes over train run in parallel and share
    their common parts."""
    u, i = columns.user, columns.item
    n_train, n_test = train.height, test.height
    has_time = columns.time is not None and n_train > 0 and n_test > 0
    tr = train.lazy()
    te = test.lazy().with_columns(
        (relevant if relevant is not None else pl.repeat(True, n_test)).alias("__rel")
    )
    if has_time:
        train_users = tr.group_by(u).agg(pl.col("__time").max().alias("__last"))
    else:
        train_users = tr.select(u).unique()
    test_users = te.group_by(u).agg(pl.col("__rel").any())
    train_items = tr.select(i).unique()
    queries = {
        "test_users": test_users.select(pl.len()),
        "train_users": train_users.select(pl.len()),
        "test_items": te.select(pl.col(i).n_unique()),
        "test_pairs_in_train": te.join(tr.select(u, i), on=[u, i], how="semi").select(pl.len()),
        "cold_test_users": test_users.join(train_users, on=u, how="anti").select(pl.len()),
        "cold_test_items": te.select(i)
        .unique()
        .join(train_items, on=i, how="anti")
        .select(pl.len()),
        "cold_item_test_rows": te.join(train_items, on=i, how="anti").select(pl.len()),
        "test_users_without_relevant": test_users.select((~pl.col("__rel")).sum()),
        "train_users_without_test": train_users.join(test_users, on=u, how="anti").select(pl.len()),
    }
    if has_time:
        last_train = train["__time"].max()
        first_test = test["__time"].min()
        joined = te.select(u, "__time").join(train_users, on=u, how="left")
        queries["time"] = joined.select(
            (pl.col("__time") < last_train).sum().alias("test_before_train_end"),
            (pl.col("__time") < pl.col("__last")).sum().alias("test_before_user_train_end"),
            (pl.col("__time") == last_train).sum().alias("ties_at_global_cut"),
            (pl.col("__time") == pl.col("__last")).sum().alias("ties_at_user_cut"),
        )
        queries["train_after_test_start"] = tr.select((pl.col("__time") > first_test).sum())
    frames = dict(zip(queries, pl.collect_all(list(queries.values())), strict=True))
    found = {name: int(frame.item()) for name, frame in frames.items() if name != "time"}
    if "time" in frames:
        found.update({k: int(v) for k, v in frames["time"].row(0, named=True).items()})
    n_test_users, n_train_users = found["test_users"], found["train_users"]
    sizes = {
        "test_before_train_end": n_test, "train_after_test_start": n_train,
        "test_before_user_train_end": n_test, "ties_at_global_cut": n_test,
        "ties_at_user_cut": n_test, "test_pairs_in_train": n_test,
        "cold_test_users": n_test_users, "cold_test_items": found["test_items"],
        "cold_item_test_rows": n_test, "test_users_without_relevant": n_test_users,
        "train_users_without_test": n_train_users,
    }  # fmt: skip
    rows: list[tuple[str, int | None, int]] = []
    for check, size in sizes.items():
        if check in _TIME_CHECKS and not has_time:
            # no time column: unknown; an empty part: nothing overlaps
            rows.append((check, None if columns.time is None else 0, size))
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
    extra: list[tuple[str, int | None, int, str]] | None = None,
) -> SplitAudit:
    """The audit of checked frames (the splitters call it on what they made).

    ``ties``: how the splitter broke ties in time, in words (None: unknown, so ties across
    the split are a warning). ``extra``: rows ``(check, count, size, of)`` appended to the
    table (what a splitter removed).
    """
    relevance_col, threshold = relevance
    types = _id_types([train, test, *([validation] if validation is not None else [])], columns)
    train_ids = _ids(train, columns, types)
    records: list[tuple[str, int | None, float | None, str]] = []
    warned: list[str] = []
    pairs = [("", test)] + ([("validation.", validation)] if validation is not None else [])
    for prefix, part in pairs:
        relevant = None
        if relevance_col is not None and relevance_col in part.columns:
            relevant = part[relevance_col].cast(pl.Float64) >= threshold
        rows = _rows(train_ids, _ids(part, columns, types), columns, relevant)
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
