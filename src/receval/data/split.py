"""Leakage-safe train/test splits of an interaction table: :func:`split` and :class:`Split`.

Methods: ``temporal_global`` (one cutoff for everyone, by time or by a fraction of the
interactions), ``temporal_user`` (each user's last N or last fraction), ``leave_one_out``
(each user's last, or a random one), ``random_user`` (N or a fraction of each user's, at
random), ``random`` (over all interactions) and ``kfold_user`` (k folds of users, each user's
held-out part in exactly one fold). Every split runs in this order:

1. rows at or after ``end`` are removed (``temporal_global``);
2. repeated (user, item) pairs are kept or reduced to one row (``duplicates``);
3. the k-core: users and items with fewer than ``min_user_interactions`` /
   ``min_item_interactions`` rows are removed, again until none is left (before the split,
   so that the split never changes afterwards);
4. the split;
5. test (and validation) rows whose user or item has no train row are dropped where
   ``drop_cold`` asks, and counted.

Each step's removals are rows of the audit's table, present whatever the options (0 where a
step did not run), so that every split's audit has the same rows; the audit
(:mod:`receval.data.audit`) runs on the result and warns on leakage. Polars reads, filters
and hashes; the users and items get dense codes and the rows are grouped by user once, in
linear time (a counting sort, :mod:`receval.kernels.grouping`), the per-row keys permuted
into that order; the repeated pairs (a hash table per user), each user's order and holdout,
and the audit's checks run in Numba kernels over each user's contiguous rows
(:mod:`receval.kernels.split`); the k-core and ``drop_cold`` count over the codes. No step
sorts all rows or joins on ids.
docs/protocol.md explains the choices.

Randomness and ties: a row's random key is a seeded hash of its (user, item, timestamp), so a
split is the same in every run and whatever the input's row order (rows identical in all three
keep their input order between them); Polars' hash may change between Polars versions.
Timestamps that tie are ordered by that key, never by item id.
"""

from __future__ import annotations

import functools
import json
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal, cast, get_args

import numpy as np
import polars as pl

from receval._errors import InputError, check_choice, check_integer, check_seed
from receval.data.audit import (
    CodedRows,
    SplitAudit,
    audit_coded,
    check_relevance_col,
    check_threshold,
    emit,
    relevant_rows,
)
from receval.data.interactions import (
    Columns,
    bound_key,
    check_interactions,
    read_interactions,
    time_key,
)
from receval.data.io import InputFormat, check_input_format, write_frame, write_text
from receval.data.layout import IdTypeArg, Role, cast_ids, check_id_type, show_rows
from receval.kernels.grouping import gather
from receval.kernels.split import DROPPED, TEST, TRAIN, VALIDATION, compact, dedupe, holdout

__all__ = [
    "DropCold",
    "Duplicates",
    "ShortUsers",
    "Split",
    "SplitMethod",
    "SplitOrder",
    "SplitTies",
    "split",
]

SplitMethod = Literal[
    "temporal_global", "temporal_user", "leave_one_out", "random_user", "random", "kfold_user"
]
SplitTies = Literal["random", "together"]
Duplicates = Literal["first", "last", "keep", "raise"]
ShortUsers = Literal["train", "drop", "raise"]
DropCold = Literal["none", "users", "items", "both"]
SplitOrder = Literal["time", "random"]

_OPTIONS: dict[str, tuple[str, ...]] = {
    "temporal_global": (
        "cutoff", "fraction", "end", "validation_cutoff", "validation_fraction", "ties"),
    "temporal_user": (
        "n", "fraction", "validation_n", "validation_fraction", "ties", "short_users"),
    "leave_one_out": ("by", "validation_n", "ties", "short_users"),
    "random_user": ("n", "fraction", "validation_n", "validation_fraction", "short_users"),
    "random": ("n", "fraction", "validation_n", "validation_fraction"),
    "kfold_user": ("k", "n", "fraction", "by", "ties", "short_users"),
}  # fmt: skip
"""The options each method takes, beyond those every method takes."""
_NONE = (0, 0, 1)  # a holdout of no row (n, p, q)
_SIZES = ("n", "fraction", "k", "validation_n", "validation_fraction")
_INTEGERS = (int, np.integer)
_MOST_ROWS = 2**53
"""A holdout of more rows than this is one of this many: no table has so many, and the
kernels' int64 arithmetic (a user's rows less the test and validation sizes) cannot
overflow."""
_SEED_MIX = (0x5EED_0001, 0x5EED_0002, 0x5EED_0003, 0x5EED_0004, 0x5EED_0005)


@dataclass(frozen=True, eq=False)
class Split:
    """A split of an interaction table, made by :func:`split`.

    ``train``, ``test`` and ``validation`` (None unless asked) are Polars DataFrames with the
    input's columns, rows in input order. For ``kfold_user``, ``folds`` holds one
    :class:`Split` per fold (each its own train and test, and audit); ``test`` is then every
    fold's test rows with a ``fold`` column, and ``train`` the rows that are in no fold's test.
    Each frame is made from the input when first asked for, then kept.

    ``audit`` is the leakage audit (:class:`receval.SplitAudit`) of the split; ``settings``
    the options it was made with.
    """

    method: str
    settings: Mapping[str, object]
    audit: SplitAudit
    frame: pl.DataFrame = field(repr=False)
    part: pl.Series = field(repr=False)
    fold: pl.Series | None = field(default=None, repr=False)
    fold_parts: tuple[tuple[pl.Series, SplitAudit], ...] = field(default=(), repr=False)
    _cache: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)

    def _take(self, code: int) -> pl.DataFrame:
        key = str(code)
        if key not in self._cache:
            mask = self.part == code
            out = self.frame.filter(mask)
            if code == TEST and self.fold is not None:
                out = out.with_columns(self.fold.filter(mask).alias("fold"))
            self._cache[key] = out
        return self._cache[key]

    @property
    def train(self) -> pl.DataFrame:
        """The training interactions."""
        return self._take(TRAIN)

    @property
    def test(self) -> pl.DataFrame:
        """The test interactions (k-fold: every fold's, with a ``fold`` column)."""
        return self._take(TEST)

    @property
    def validation(self) -> pl.DataFrame | None:
        """The validation interactions, None unless asked."""
        return self._take(VALIDATION) if self.settings.get("validation") else None

    @property
    def folds(self) -> tuple[Split, ...]:
        """One :class:`Split` per fold (``kfold_user``); empty for the other methods. Each
        call makes new objects, so that a fold's frames are freed with it."""
        settings = {**self.settings, "validation": False}
        return tuple(
            Split(f"{self.method}[{i}]", settings, audit, self.frame, part)
            for i, (part, audit) in enumerate(self.fold_parts)
        )

    def counts(self) -> dict[str, int]:
        """Rows in each part (and dropped)."""
        codes = {"train": TRAIN, "test": TEST, "validation": VALIDATION, "dropped": DROPPED}
        return {name: int((self.part == code).sum()) for name, code in codes.items()}

    def write(self, folder: str | os.PathLike[str]) -> list[Path]:
        """Write the parts as Parquet files into ``folder`` (made if missing), each
        atomically (a temporary file renamed): ``train.parquet``, ``test.parquet`` and
        ``validation.parquet`` where asked; for ``kfold_user`` ``fold_{i}_train.parquet`` and
        ``fold_{i}_test.parquet`` instead. Also ``split.json``: the method, settings, the
        audit's table, warnings and notes. Returns the paths written."""
        out = Path(folder)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot make the folder {str(out)!r}: {exc.strerror or exc}."
            raise InputError(msg) from None
        written: list[Path] = []
        if self.fold_parts:
            for i, fold in enumerate(self.folds):
                for name, frame in (("train", fold.train), ("test", fold.test)):
                    written.append(out / f"fold_{i}_{name}.parquet")
                    write_frame(frame, written[-1])
        else:
            parts = [("train", self.train), ("test", self.test)]
            if self.validation is not None:
                parts.append(("validation", self.validation))
            for name, frame in parts:
                written.append(out / f"{name}.parquet")
                write_frame(frame, written[-1])
        doc = {
            "method": self.method,
            "settings": {k: _jsonable(v) for k, v in self.settings.items()},
            "audit": self.audit.table.to_dicts(),
            "warnings": list(self.audit.warnings),
            "notes": list(self.audit.notes),
        }
        written.append(out / "split.json")
        write_text(json.dumps(doc, indent=2) + "\n", written[-1])
        return written

    def __repr__(self) -> str:
        counts = self.counts()
        shown = ", ".join(f"{k}={v:,}" for k, v in counts.items() if v or k in ("train", "test"))
        folds = f", folds={len(self.fold_parts)}" if self.fold_parts else ""
        return f"Split(method={self.method!r}, {shown}{folds}, warnings={len(self.audit.warnings)})"


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def split(
    interactions: Any,
    method: SplitMethod,
    *,
    n: int | None = None,
    fraction: float | None = None,
    cutoff: object = None,
    end: object = None,
    k: int | None = None,
    by: SplitOrder | None = None,
    validation_n: int | None = None,
    validation_fraction: float | None = None,
    validation_cutoff: object = None,
    user_col: str = "user",
    item_col: str = "item",
    time_col: str | None = "timestamp",
    seed: int = 0,
    ties: SplitTies | None = None,
    duplicates: Duplicates = "first",
    min_user_interactions: int = 1,
    min_item_interactions: int = 1,
    short_users: ShortUsers | None = None,
    drop_cold: DropCold = "none",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    input_format: InputFormat | None = None,
    id_type: IdTypeArg = "auto",
) -> Split:
    """Split an interaction table into train and test (and validation), seeded and
    deterministic, and audit the result for leakage.

    Parameters
    ----------
    interactions:
        A Polars or pandas DataFrame, an Arrow table, or a path to a Parquet, CSV or TSV file,
        with a user, an item and (for the methods that order by time) a timestamp column; other
        columns (a rating, ...) are kept.
    method:
        ``"temporal_global"``: test is every interaction at or after ``cutoff`` (a time), or
        the last ``fraction`` of all interactions by time; ``end`` drops the interactions at or
        after it first; ``validation_cutoff`` / ``validation_fraction`` take the validation
        part just before test. ``"temporal_user"``: each user's last ``n`` or last ``fraction``
        of their interactions. ``"leave_one_out"``: each user's last (``by="time"``, default)
        or a random one (``by="random"``). ``"random_user"``: ``n`` or a ``fraction`` of each
        user's interactions at random. ``"random"``: ``n`` or a ``fraction`` of all
        interactions at random. ``"kfold_user"``: users in ``k`` folds (default 5) of equal
        size (±1); each user's held-out part (``n`` or ``fraction``, random or by time with
        ``by``) is the test part of their fold, and train everywhere else.
    n, fraction:
        The holdout: ``n`` rows (>= 1), or ``fraction`` in (0, 1) of the rows, rounded down
        (``fraction`` is read as the nearest ratio p/q with q <= 10^6, so 0.29 of 100 is 29).
        Per user for the per-user methods, of all interactions for ``random`` and
        ``temporal_global``.
    cutoff, end, validation_cutoff:
        Times (``temporal_global``), as the time column holds them (numbers, dates,
        datetimes; ISO text for dates and datetimes): test is ``cutoff <= t < end``,
        validation ``validation_cutoff <= t < cutoff``. ``cutoff`` must leave rows on both
        sides.
    validation_n, validation_fraction:
        A validation part, taken just before the test part in the same order (for ``random``:
        the next rows at random); ``validation_fraction`` is of the same rows as ``fraction``.
    user_col, item_col, time_col:
        Column names; ``time_col`` may be absent for the random methods (the audit then
        skips its time checks).
    seed:
        The seed of the random keys, an integer from 0 to 2^64 - 1 (a bool, a float or a
        larger number is an :class:`InputError`): the same seed, the same split, whatever the
        input's row order.
    ties:
        Timestamps tied at a user's (or the global) cut: ``"random"`` (default) orders them by
        the seeded key, so the cut may separate them (the audit counts them); ``"together"``
        puts every row tied with the first test row in test (a user's test part may then hold
        more than ``n``). A ``cutoff`` time never separates ties.
    duplicates:
        Repeated (user, item) pairs: ``"first"`` (default) keeps each pair's first row (by
        time, then the seeded key; without time, a seeded random row), ``"last"`` its last,
        ``"keep"`` every row (a pair may then be both in train and test: the audit counts it
        and warns), ``"raise"`` an :class:`InputError` naming them.
    min_user_interactions, min_item_interactions:
        The k-core applied before the split: users and items with fewer rows are removed,
        repeatedly until every user and item left has enough (counted in the audit).
    short_users:
        A user with too few rows for the holdout (no test row, or no train row left; with a
        fraction, floor(fraction x rows) = 0): ``"train"`` (default) keeps them wholly in
        train, ``"drop"`` removes them, ``"raise"`` is an :class:`InputError`. Counted in the
        audit (``short_users``).
    drop_cold:
        Remove test and validation rows whose user (``"users"``), item (``"items"``) or either
        (``"both"``) has no train row, after the split, counted; ``"none"`` (default) keeps
        them (the audit counts the cold ones).
    relevance_col, relevance_threshold:
        For the audit's count of test users without a relevant row.
    input_format:
        The format of a file whose suffix does not tell it.
    id_type:
        The type of the user and item ids, as :func:`receval.evaluate`'s: ``"auto"`` keeps
        a typed source's and reads CSV, TSV and RecBole files' ids as text (``"007"`` stays
        ``"007"``); ``"str"`` makes every id text; ``"int"`` makes every id a 64-bit integer
        (``"007"`` becomes 7; a value that is not an integer raises); or a kind by id,
        ``{"item": "int"}`` (``"item=int"``). The parts hold the ids so typed.

    Returns
    -------
    Split
        ``.train``, ``.test``, ``.validation``, ``.folds`` (k-fold), ``.audit``,
        ``.settings``; ``.write(folder)`` writes Parquet files. Leaks found by the audit are
        also emitted as :class:`receval.LeakageWarning`.

    Raises
    ------
    InputError
        Missing columns, nulls, timestamps that cannot be ordered, an option out of its
        domain or not taken by the method, a cutoff outside the data's time range.

    Examples
    --------
    >>> import polars as pl, receval, warnings
    >>> data = pl.DataFrame({
    ...     "user": ["a", "a", "a", "b", "b", "b"],
    ...     "item": [1, 2, 3, 1, 2, 4],
    ...     "timestamp": [1, 2, 3, 4, 5, 6],
    ... })
    >>> s = receval.split(data, "temporal_global", cutoff=3)
    >>> s.train["timestamp"].to_list(), s.test["timestamp"].to_list()
    ([1, 2], [3, 4, 5, 6])
    >>> s.audit["test_before_train_end"], s.audit["cold_test_items"]  # items 3 and 4
    (0, 2)

    Each user's last interaction: a's (t=3) is earlier than b's training rows, which the audit
    reports (and warns about) as a global time overlap.

    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     s = receval.split(data, "leave_one_out")
    >>> s.test.sort("user")["timestamp"].to_list(), s.audit["test_before_train_end"]
    ([3, 6], 1)
    >>> type(caught[0].message).__name__
    'LeakageWarning'
    """
    check_choice("method", method, _OPTIONS, more=" (receval.split)")
    given = {
        "n": n, "fraction": fraction, "cutoff": cutoff, "end": end, "k": k, "by": by,
        "validation_n": validation_n, "validation_fraction": validation_fraction,
        "validation_cutoff": validation_cutoff, "ties": ties, "short_users": short_users,
    }  # fmt: skip
    # NumPy numbers as the Python numbers they hold: the checks, the settings and split.json
    # then read np.int64(1) as 1 (a bound keeps its type: it is compared with the time column)
    given = {
        k_: v.item() if isinstance(v, np.integer | np.floating) and k_ in _SIZES else v
        for k_, v in given.items()
    }
    plan = _plan(method, given)
    seed = check_seed(seed)
    check_choice("duplicates", duplicates, get_args(Duplicates))
    check_choice("drop_cold", drop_cold, get_args(DropCold))
    mins = (
        check_integer("min_user_interactions", min_user_interactions, 1, kinds=_INTEGERS),
        check_integer("min_item_interactions", min_item_interactions, 1, kinds=_INTEGERS),
    )
    fmt = check_input_format(input_format)["train"]
    kinds = check_id_type(id_type)
    threshold = check_threshold(relevance_threshold)
    columns = Columns(user_col, item_col, time_col)
    frame = read_interactions(interactions, "interactions", columns, fmt)
    columns = check_interactions(frame, "interactions", columns, need_time=plan.by_time)
    check_relevance_col(frame, "interactions", columns, relevance_col)
    ids = {user_col: kinds["user"], item_col: kinds["item"]}
    frame = cast_ids(frame, cast(Role, "interactions"), ids)  # the role: named in messages
    work = _Work.of(frame, columns, seed, by_row=method in ("temporal_global", "random"))
    extra: list[tuple[str, int | None, int, str]] = []
    notes = [plan.describe()]
    _remove_after_end(work, end, extra)
    _dedupe(work, duplicates, extra, notes)
    _kcore(work, mins, extra, notes)
    settings: dict[str, object] = {
        "method": method, **{k_: v for k_, v in given.items() if v is not None},
        "by": plan.order, "ties": plan.ties, "k": plan.k, "short_users": plan.short,
        "seed": seed, "duplicates": duplicates, "min_user_interactions": mins[0],
        "min_item_interactions": mins[1], "drop_cold": drop_cold,
        "validation": plan.validation is not None, "time_col": columns.time,
        **({"id_type": id_type} if id_type != "auto" else {}),
    }  # fmt: skip
    relevance = (relevance_col, threshold)
    if method == "kfold_user":
        result = _kfold(work, plan, drop_cold, relevance, extra, notes, settings)
    else:
        part = _split_part(work, plan, extra)
        result = _finish(work, plan, part, drop_cold, relevance, extra, notes, settings)
    emit(result.audit, stacklevel=3)
    return result


@dataclass(frozen=True)
class _Plan:
    """A method's checked options."""

    method: str
    test: tuple[int, int, int]  # (n, p, q): n rows, or floor(p * m / q)
    validation: tuple[int, int, int] | None
    cutoff: object
    validation_cutoff: object
    order: SplitOrder
    ties: SplitTies | None
    k: int | None
    short: ShortUsers | None

    @property
    def by_time(self) -> bool:
        return self.order == "time"

    def describe(self) -> str:
        """The split in words (a note of the audit)."""
        n, p, q = self.test
        size = f"{n}" if n else f"{p}/{q}"
        if self.method == "temporal_global":
            if self.cutoff is not None:
                return f"temporal_global: test is every interaction at or after {self.cutoff!r}"
            return f"temporal_global: test is the last {size} of all interactions by time"
        if self.method == "random":
            return f"random: test is {size} of all interactions, chosen by a seeded hash"
        order = "last {} by time" if self.by_time else "{} at random (seeded hash)"
        held = order.format(size if self.method != "leave_one_out" else "interaction")
        if self.method == "kfold_user":
            return (
                f"kfold_user: {self.k} folds of users (seeded hash); each user's {held} is the "
                "test part of their fold"
            )
        return f"{self.method}: each user's {held} in test"


def _plan(method: str, given: dict[str, Any]) -> _Plan:
    """Check the method's options (InputError for one it does not take, or out of domain)."""
    allowed = _OPTIONS[method]
    for name, value in given.items():
        if value is not None and name not in allowed:
            takers = [m for m, names in _OPTIONS.items() if name in names]
            msg = (
                f"{name} does not apply to method {method!r} (it takes {', '.join(allowed)}); "
                f"{name} is an option of {', '.join(takers)}."
            )
            raise InputError(msg)
    order: SplitOrder = "time"
    if given["by"] is not None:
        check_choice("by", given["by"], get_args(SplitOrder))
        order = given["by"]
    elif method == "kfold_user" or method in ("random", "random_user"):
        order = "random"
    ties = given["ties"]
    if ties is not None:
        check_choice("ties", ties, get_args(SplitTies))
        if order != "time":
            msg = f"ties applies when a split orders by time (by='time'); got by={order!r}."
            raise InputError(msg)
    elif order == "time":
        ties = "random"
    short = given["short_users"]
    if short is not None:
        check_choice("short_users", short, get_args(ShortUsers))
    elif method not in ("random", "temporal_global"):
        short = "train"
    k = None
    if method == "kfold_user":
        k = check_integer("k", 5 if given["k"] is None else given["k"], 2)
    test = _size(given, "n", "fraction")
    validation = _size(given, "validation_n", "validation_fraction")
    if method == "leave_one_out":
        test = (1, 0, 1)
    cutoff = given["cutoff"]
    if method == "temporal_global":
        if (cutoff is None) == (test == _NONE):
            msg = (
                "temporal_global needs exactly one of cutoff (a time: test is every interaction "
                "at or after it) and fraction (the last fraction of interactions by time); got "
                f"cutoff={cutoff!r}, fraction={given['fraction']!r}."
            )
            raise InputError(msg)
        if given["validation_cutoff"] is not None:
            if validation != _NONE:
                msg = "give validation_cutoff or validation_fraction, not both."
                raise InputError(msg)
            if cutoff is None:
                msg = (
                    "validation_cutoff needs cutoff (validation is validation_cutoff <= t < "
                    "cutoff)."
                )
                raise InputError(msg)
    elif test == _NONE and method != "leave_one_out":
        what = "n or fraction (the part of each user held out in their fold)"
        if method in ("temporal_user", "random_user"):
            what = "n or fraction (how many of each user's interactions go to test)"
        if method == "random":
            what = "n or fraction (how many interactions go to test)"
        msg = f"method {method!r} needs {what}."
        raise InputError(msg)
    has_validation = validation != _NONE or given["validation_cutoff"] is not None
    return _Plan(
        method, test, validation if has_validation else None, cutoff,
        given["validation_cutoff"], order, ties, k, short,
    )  # fmt: skip


def _size(given: dict[str, Any], n_name: str, f_name: str) -> tuple[int, int, int]:
    """``(n, p, q)`` of a holdout given as a count or a fraction (not both)."""
    n, f = given[n_name], given[f_name]
    if n is not None and f is not None:
        msg = f"give {n_name} or {f_name}, not both; got {n_name}={n!r}, {f_name}={f!r}."
        raise InputError(msg)
    if n is not None:
        return (min(check_integer(n_name, n, 1), _MOST_ROWS), 0, 1)
    if f is None:
        return _NONE
    number = isinstance(f, int | float) and not isinstance(f, bool)
    if not number or not 0 < f < 1:  # not float(f): an int beyond a float's range
        msg = f"{f_name} must be a number in (0, 1), exclusive; got {f!r}."
        raise InputError(msg)
    ratio = Fraction(float(f)).limit_denominator(10**6)
    if not 0 < ratio < 1:  # within 10^-12 of 0 or 1
        msg = f"{f_name} must be a number in (0, 1), exclusive; got {f!r}."
        raise InputError(msg)
    return (0, ratio.numerator, ratio.denominator)


@dataclass
class _Work:
    """The table being split: its checked columns, per row the time order key and the
    seeded random key, which rows are still kept, and its rows as codes (dense user and item
    codes, the rows grouped by user: :class:`receval.data.audit.CodedRows`)."""

    frame: pl.DataFrame
    columns: Columns
    seed: int
    # per row in input order (empty unless of(by_row=True): the per-user methods read only
    # the grouped copies below)
    time: np.ndarray  # int64 order keys (zeros without a time column)
    tie: np.ndarray  # int64 seeded hash of (user, item, time)
    keep: np.ndarray
    coded: CodedRows
    grouped_time: np.ndarray  # time and tie as grouped arrays (in the order of coded.rows)
    grouped_tie: np.ndarray

    @staticmethod
    def of(frame: pl.DataFrame, columns: Columns, seed: int, *, by_row: bool = True) -> _Work:
        """The table's keys and codes; ``by_row``: keep ``time`` and ``tie`` in input order
        too (the global methods), else only grouped (less memory)."""
        height = frame.height
        time = (
            time_key(frame[columns.time])
            if columns.time is not None
            else np.zeros(height, dtype=np.int64)
        )
        # the keys' hashes in one query, so that Polars computes them in parallel
        keys = [_id_hash(pl.col(columns.user), frame[columns.user].dtype, seed, 0),
                _id_hash(pl.col(columns.item), frame[columns.item].dtype, seed, 1)]  # fmt: skip
        if columns.time is not None:
            keys.append(pl.lit(pl.Series(time)).hash(seed=_mix(seed, 2)))
        mixed = functools.reduce(operator.xor, keys).hash(seed=_mix(seed, 3))
        tie = frame.select(mixed.alias("tie")).to_series().to_numpy().view(np.int64)
        coded = CodedRows.of(
            frame[columns.user], frame[columns.item], time if columns.time is not None else None
        )
        grouped_time = coded.grouped_time
        if grouped_time is None:
            grouped_time = time if by_row else np.zeros(height, dtype=np.int64)
        grouped_tie = gather(tie, coded.rows)
        if not by_row:
            time = tie = np.empty(0, dtype=np.int64)
        return _Work(
            frame, columns, seed, time, tie, np.ones(height, dtype=np.bool_), coded,
            grouped_time, grouped_tie,
        )  # fmt: skip

    @property
    def groups(self) -> tuple[pl.Series, np.ndarray, np.ndarray]:
        """(user keys, offsets, rows): user ``g``'s row indices, in input order, are
        ``rows[offsets[g]:offsets[g + 1]]`` (users ascending by id; their order plays no part
        in any result)."""
        return self.coded.user_keys, self.coded.offsets, self.coded.rows

    def kept_per_user(self) -> np.ndarray:
        """Per user (:attr:`groups`' order), how many of their rows are kept."""
        n_users = self.coded.offsets.shape[0] - 1
        return np.bincount(self.coded.users[self.keep], minlength=n_users)

    def kept_groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, rows, time, tie): the grouped arrays (:mod:`receval.kernels.split`) of
        the kept rows, :attr:`groups`' users."""
        coded = self.coded
        keep = self.keep[coded.rows]
        return compact(coded.offsets, keep, coded.rows, self.grouped_time, self.grouped_tie)

    def holdout(
        self, plan: _Plan, validation: tuple[int, int, int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`receval.kernels.split.holdout` of the kept rows: (part, short)."""
        return holdout(
            *self.kept_groups(), self.frame.height, plan.test, validation,
            by_time=plan.by_time, together=plan.ties == "together",
            drop_short=plan.short == "drop",
        )  # fmt: skip

    def user_of_row(self) -> np.ndarray:
        """Per row, its user's index in :attr:`groups`."""
        return self.coded.users


def _mix(seed: int, i: int) -> int:
    """The hash seed of key ``i`` under ``seed`` (one stream per key)."""
    return (seed * 0x9E37_79B9 + _SEED_MIX[i]) % (2**64)


def _id_hash(ids: pl.Expr, dtype: pl.DataType, seed: int, i: int) -> pl.Expr:
    """A seeded hash of ids of type ``dtype``: integers as Int64 (so Int32 and Int64 ids
    hash alike), text as String (categoricals by their text)."""
    if dtype.is_integer():
        if dtype != pl.UInt64:
            ids = ids.cast(pl.Int64)
    elif dtype != pl.String:
        ids = ids.cast(pl.String)
    return ids.hash(seed=_mix(seed, i))


def _remove_after_end(
    work: _Work, end: object, extra: list[tuple[str, int | None, int, str]]
) -> None:
    if end is None:
        extra.append(("rows_at_or_after_end_removed", 0, work.frame.height, "input rows"))
        return
    time = work.columns.time
    assert time is not None  # temporal_global needs a time column
    key = bound_key(end, work.frame.schema[time], "end", time)
    before = work.keep.copy()
    work.keep &= work.time < key
    removed = int(before.sum() - work.keep.sum())
    extra.append(("rows_at_or_after_end_removed", removed, work.frame.height, "input rows"))
    if not work.keep.any():
        msg = f"end {end!r} removes every interaction (the earliest is {_shown_min(work)})."
        raise InputError(msg)


def _shown_min(work: _Work) -> str:
    time = work.columns.time
    return repr(work.frame[time].min()) if time else "-"


def _dedupe(
    work: _Work, policy: str, extra: list[tuple[str, int | None, int, str]], notes: list[str]
) -> None:
    if policy == "keep":
        notes.append("duplicates: every row of a repeated (user, item) pair kept")
        extra.append(("duplicate_rows_removed", 0, work.frame.height, "input rows"))
        return
    _, offsets, rows = work.groups
    by_time = work.columns.time is not None
    keep = work.keep[rows]
    dropped = dedupe(
        offsets, work.coded.grouped_items, work.grouped_time, work.grouped_tie,
        policy == "last", keep,
    )  # fmt: skip
    if policy != "raise":
        work.keep[rows] = keep
    if policy == "raise":
        notes.append("duplicates: none (duplicates='raise')")
        if dropped:
            u, i = work.columns.user, work.columns.item
            mask = (
                pl.Series(work.keep)
                & work.frame.select(pl.struct(u, i).is_duplicated()).to_series()
            )
            msg = (
                f"interactions has {dropped} repeated (user, item) row(s) (duplicates='raise'); "
                "duplicates='first' or 'last' keeps one row of each pair, 'keep' every row. "
                f"First repeated rows:\n{show_rows(work.frame, mask, work.columns.ids)}"
            )
            raise InputError(msg)
        extra.append(("duplicate_rows_removed", 0, work.frame.height, "input rows"))
        return
    which = "first" if policy == "first" else "last"
    order = "by time, then the seeded key" if by_time else "by the seeded key"
    notes.append(f"duplicates: the {which} row of each (user, item) pair kept ({order})")
    extra.append(("duplicate_rows_removed", dropped, work.frame.height, "input rows"))


def _kcore(
    work: _Work,
    mins: tuple[int, int],
    extra: list[tuple[str, int | None, int, str]],
    notes: list[str],
) -> None:
    min_user, min_item = mins
    users = work.user_of_row()
    items = work.coded.items
    n_users = work.coded.offsets.shape[0] - 1
    n_items = work.coded.n_items
    before = work.keep.copy()
    rounds = 0
    while min_user > 1 or min_item > 1:
        bad = np.zeros_like(work.keep)
        if min_user > 1:
            counts = np.bincount(users[work.keep], minlength=n_users)
            bad |= counts[users] < min_user
        if min_item > 1:
            counts = np.bincount(items[work.keep], minlength=n_items)
            bad |= counts[items] < min_item
        bad &= work.keep
        if not bad.any():
            break
        work.keep &= ~bad
        rounds += 1

    def present(codes: np.ndarray, mask: np.ndarray, size: int) -> int:
        return int(np.count_nonzero(np.bincount(codes[mask], minlength=size)))

    n_before = int(before.sum())
    users_before = present(users, before, n_users)
    items_before = present(items, before, n_items)
    extra += [
        ("kcore_rows_removed", n_before - int(work.keep.sum()), n_before,
         "rows before the k-core"),
        ("kcore_users_removed", users_before - present(users, work.keep, n_users),
         users_before, "users before the k-core"),
        ("kcore_items_removed", items_before - present(items, work.keep, n_items),
         items_before, "items before the k-core"),
    ]  # fmt: skip
    if min_user <= 1 and min_item <= 1:
        return  # no k-core: the rows above count 0
    notes.append(
        f"k-core before the split: users >= {min_user} and items >= {min_item} rows, "
        f"{rounds} round(s) of removal"
    )
    if not work.keep.any():
        msg = (
            f"the k-core (min_user_interactions={min_user}, min_item_interactions={min_item}) "
            "removes every interaction; lower them."
        )
        raise InputError(msg)


def _count(size: tuple[int, int, int], m: int) -> int:
    """The rows of ``m`` that a holdout ``(n, p, q)`` takes (at most ``m``)."""
    n, p, q = size
    return min(n, m) if n else (p * m) // q


def _last(
    primary: np.ndarray, secondary: np.ndarray | None, rows: np.ndarray, c: int, together: bool
) -> np.ndarray:
    """The ``c`` rows of ``rows`` (ascending indices) that come last in the order of
    (primary, secondary, row); ``together``: with every row whose primary key ties with the
    first of them."""
    m = rows.shape[0]
    if c >= m:
        return rows
    keys = primary[rows]
    threshold = np.partition(keys, m - c)[m - c]
    if together:
        out: np.ndarray = rows[keys >= threshold]
        return out
    above = rows[keys > threshold]
    at = rows[keys == threshold]
    need = c - above.shape[0]
    if secondary is None:
        chosen = at[at.shape[0] - need :]
    else:
        order = np.lexsort((at, secondary[at]))
        chosen = at[order[order.shape[0] - need :]]
    return np.sort(np.concatenate([above, chosen]))


def _split_part(
    work: _Work, plan: _Plan, extra: list[tuple[str, int | None, int, str]]
) -> np.ndarray:
    """The part of every row (kernels.split codes) for every method but k-fold."""
    if plan.method in ("temporal_global", "random"):
        # no per-user holdout, so no short user: the rows are there, at 0
        _short_rows(extra, 0, plan.short, int((work.kept_per_user() > 0).sum()))
        return _global_part(work, plan)
    part, short = work.holdout(plan, plan.validation or _NONE)
    _short_users(work, plan, short, extra)
    return part


def _short_users(
    work: _Work, plan: _Plan, short: np.ndarray, extra: list[tuple[str, int | None, int, str]]
) -> None:
    n_short = int(short.sum())
    users, _, _ = work.groups
    kept_users = work.kept_per_user() > 0
    if plan.short == "raise" and n_short:
        shown = users.filter(pl.Series(short)).head(5).to_list()
        msg = (
            f"{n_short} user(s) have too few interactions for the holdout (no test row, or no "
            f"train row left; short_users='raise'), e.g. {shown}; short_users='train' keeps "
            "them in train, 'drop' removes them, min_user_interactions= filters them first."
        )
        raise InputError(msg)
    _short_rows(extra, n_short, plan.short, int(kept_users.sum()))


def _short_rows(
    extra: list[tuple[str, int | None, int, str]], n_short: int, policy: str | None, size: int
) -> None:
    """The audit's two rows of short users: those of the policy not taken count 0."""
    dropped = policy == "drop"
    extra += [
        ("short_users_kept_in_train", 0 if dropped else n_short, size, "users"),
        ("short_users_dropped", n_short if dropped else 0, size, "users"),
    ]


def _global_part(work: _Work, plan: _Plan) -> np.ndarray:
    part = np.full(work.frame.height, DROPPED, dtype=np.int8)
    kept = np.flatnonzero(work.keep)
    m = kept.shape[0]
    if plan.method == "random":
        primary, secondary, together = work.tie, None, False
    else:
        primary, secondary, together = work.time, work.tie, plan.ties == "together"
    if plan.cutoff is not None:
        time = work.columns.time
        assert time is not None
        dtype = work.frame.schema[time]
        key = bound_key(plan.cutoff, dtype, "cutoff", time)
        _check_cutoff(work, kept, key, plan.cutoff, "cutoff")
        test = kept[work.time[kept] >= key]
    else:
        c = _count(plan.test, m)
        if c == 0 or c >= m:
            what = "n" if plan.test[0] else "fraction"
            msg = (
                f"{what} leaves {'no test' if c == 0 else 'no train'} row: {c} of the {m} "
                "interactions split would be test."
            )
            raise InputError(msg)
        test = _last(primary, secondary, kept, c, together)
    part[kept] = TRAIN
    part[test] = TEST
    if plan.validation is not None:
        rest = np.flatnonzero(part == TRAIN)
        if plan.validation_cutoff is not None:
            time = work.columns.time
            assert time is not None
            key = bound_key(
                plan.validation_cutoff, work.frame.schema[time], "validation_cutoff", time
            )
            _check_cutoff(work, rest, key, plan.validation_cutoff, "validation_cutoff")
            val = rest[work.time[rest] >= key]
        else:
            c = _count(plan.validation, m)
            if c == 0 or c >= rest.shape[0]:
                msg = (
                    f"validation leaves {'no validation' if c == 0 else 'no train'} row: {c} of "
                    f"the {rest.shape[0]} rows before test would be validation."
                )
                raise InputError(msg)
            val = _last(primary, secondary, rest, c, together)
        part[val] = VALIDATION
    if not (part == TRAIN).any() or not (part == TEST).any():
        side = "train" if not (part == TRAIN).any() else "test"
        msg = f"the split leaves {side} empty."
        raise InputError(msg)
    return part


def _check_cutoff(work: _Work, rows: np.ndarray, key: int, value: object, option: str) -> None:
    """A cutoff must leave rows on both sides."""
    time = work.columns.time
    assert time is not None
    keys = work.time[rows]
    if keys.size and keys.min() < key <= keys.max():
        return
    values = work.frame[time].gather(pl.Series(rows))
    low, high = values.min(), values.max()
    side = "train (before it)" if keys.size == 0 or key <= keys.min() else "test (at or after it)"
    if option == "validation_cutoff":
        side = side.replace("test", "validation").replace("before it", "before it")
    msg = (
        f"{option} {value!r} is outside the data's time range: timestamps go from {low!r} to "
        f"{high!r}, so {side} would be empty; expected {low!r} < {option} <= {high!r}."
    )
    raise InputError(msg)


def _drop_cold(
    work: _Work, part: np.ndarray, policy: str, extra: list[tuple[str, int | None, int, str]]
) -> np.ndarray:
    """``part`` with the test and validation rows whose user or item (``policy``) has no
    train row dropped; the counts appended to ``extra``."""
    coded = work.coded
    train = part == TRAIN
    cold = np.zeros(part.shape[0], dtype=np.bool_)
    if policy in ("users", "both"):
        n_users = coded.offsets.shape[0] - 1
        cold |= (np.bincount(coded.users[train], minlength=n_users) == 0)[coded.users]
    if policy in ("items", "both"):
        cold |= (np.bincount(coded.items[train], minlength=coded.n_items) == 0)[coded.items]
    out = part.copy()
    for code, name in ((TEST, "test"), (VALIDATION, "validation")):
        in_part = part == code  # "none", or no validation part: the rows count 0
        mask = in_part & cold
        extra.append(
            (f"cold_{name}_rows_dropped", int(mask.sum()), int(in_part.sum()), f"{name} rows")
        )
        out[mask] = DROPPED
    return out


def _ties_note(plan: _Plan, seed: int) -> str:
    if plan.order != "time":
        return "the split does not order by time, so ties in time play no part"
    if plan.cutoff is not None:
        return "a cutoff time puts every row at the cutoff in test: no tie is separated"
    if plan.ties == "together":
        return "kept together: every row tied with the first test row is in test"
    return (
        f"ordered by a seeded hash of (user, item, timestamp) (seed {seed}), never by item id; "
        "the cut may separate them (counted in ties_at_*)"
    )


def _finish(
    work: _Work,
    plan: _Plan,
    part: np.ndarray,
    drop_cold: str,
    relevance: tuple[str | None, float],
    extra: list[tuple[str, int | None, int, str]],
    notes: list[str],
    settings: dict[str, object],
) -> Split:
    extra = list(extra)
    part = _drop_cold(work, part, drop_cold, extra)
    audit = audit_coded(
        work.coded, part, relevant_rows(work.frame, relevance),
        validation=plan.validation is not None, ties=_ties_note(plan, work.seed), notes=notes,
        extra=extra,
    )  # fmt: skip
    return Split(plan.method, settings, audit, work.frame, pl.Series("part", part))


def _kfold(
    work: _Work,
    plan: _Plan,
    drop_cold: str,
    relevance: tuple[str | None, float],
    extra: list[tuple[str, int | None, int, str]],
    notes: list[str],
    settings: dict[str, object],
) -> Split:
    assert plan.k is not None
    users, _, _ = work.groups
    present = work.kept_per_user() > 0
    n_users = int(present.sum())
    if plan.k > n_users:
        msg = f"k ({plan.k}) must be at most the number of users ({n_users})."
        raise InputError(msg)
    part, short = work.holdout(plan, _NONE)
    _short_users(work, plan, short, extra)
    # folds of users: the users in the order of a seeded hash of their id, dealt in turn
    order = (
        pl.DataFrame({"u": users, "g": np.arange(users.len()), "p": present})
        .filter(pl.col("p"))
        .with_columns(h=_id_hash(pl.col("u"), users.dtype, work.seed, 4))
        .sort(["h", "u"])
    )
    fold_of_user = np.full(users.len(), -1, dtype=np.int64)
    fold_of_user[order["g"].to_numpy()] = np.arange(order.height) % plan.k
    fold_row = np.where(part == TEST, fold_of_user[work.user_of_row()], -1)
    fold_parts = []
    tables = []
    warned: list[str] = []
    ties = _ties_note(plan, work.seed)
    relevant = relevant_rows(work.frame, relevance)
    for f in range(plan.k):
        fold_extra = list(extra)
        fpart = np.where(part == DROPPED, DROPPED, np.where(fold_row == f, TEST, TRAIN))
        fpart = _drop_cold(work, fpart.astype(np.int8), drop_cold, fold_extra)
        codes = pl.Series("part", fpart)
        audit = audit_coded(
            work.coded, fpart, relevant, validation=False, ties=ties, notes=notes,
            extra=fold_extra,
        )  # fmt: skip
        fold_parts.append((codes, audit))
        tables.append(audit.table.select(pl.lit(f, dtype=pl.Int32).alias("fold"), pl.all()))
        warned += [f"fold {f}: {w}" for w in audit.warnings]
    in_test = np.zeros(part.shape[0], dtype=np.bool_)
    for codes, _ in fold_parts:
        in_test |= (codes == TEST).to_numpy()
    top = np.where(part == DROPPED, DROPPED, np.where(in_test, TEST, TRAIN)).astype(np.int8)
    fold = pl.Series("fold", fold_row, dtype=pl.Int32)
    audit = SplitAudit(pl.concat(tables), tuple(warned), tuple([*notes, f"ties in time: {ties}"]))
    return Split(plan.method, settings, audit, work.frame, pl.Series("part", top), fold,
                 tuple(fold_parts))  # fmt: skip
