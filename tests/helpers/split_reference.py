"""Slow, obviously correct references for receval.split and receval.audit_split.

Rows are plain Python tuples; every rule of docs/protocol.md is a loop over them. The one
thing taken from receval is each row's random key (a seeded hash of user, item and time:
``keys``), which the splitters document as their order; everything done with it (sorting,
counting, holding out, folds) is redone here.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from fractions import Fraction

import numpy as np
import polars as pl

from receval.data.interactions import Columns
from receval.data.split import _id_hash, _Work

Row = tuple[Hashable, Hashable, int]  # (user, item, time)
TRAIN, TEST, VALIDATION, DROPPED = "train", "test", "validation", "dropped"


def keys(frame: pl.DataFrame, seed: int, time: bool = True) -> list[int]:
    """Each row's random key, as receval computes it (the documented seeded hash)."""
    columns = Columns("user", "item", "timestamp" if time else None)
    return [int(k) for k in _Work.of(frame, columns, seed).tie]


def user_hash(users: pl.Series, seed: int) -> dict[Hashable, int]:
    """Each user's fold key (a seeded hash of the id)."""
    hashed = pl.select(_id_hash(pl.lit(users), users.dtype, seed, 4)).to_series().to_list()
    return dict(zip(users.to_list(), hashed, strict=True))


def size(n: int | None, fraction: float | None, m: int) -> int:
    """n, or floor(fraction * m) with the fraction read as p/q, q <= 10^6."""
    if n is not None:
        return n
    if fraction is None:
        return 0
    ratio = Fraction(fraction).limit_denominator(10**6)
    return math.floor(ratio * m)


def holdout(
    rows: Sequence[Row],
    key: Sequence[int],
    *,
    by_time: bool,
    n: int | None = None,
    fraction: float | None = None,
    validation_n: int | None = None,
    validation_fraction: float | None = None,
    together: bool = False,
    short: str = "train",
    keep: Sequence[bool] | None = None,
) -> list[str]:
    """The part of each row for the per-user methods."""
    keep = keep if keep is not None else [True] * len(rows)
    out = [DROPPED] * len(rows)
    by_user: dict[Hashable, list[int]] = defaultdict(list)
    for r, row in enumerate(rows):
        if keep[r]:
            by_user[row[0]].append(r)
    for user_rows in by_user.values():

        def order(r: int) -> tuple[int, ...]:
            return (rows[r][2], key[r], r) if by_time else (key[r], r)

        ordered = sorted(user_rows, key=order)
        m = len(ordered)
        n_test = size(n, fraction, m)
        n_val = size(validation_n, validation_fraction, m)
        times = [rows[r][2] for r in ordered]
        first_test = m - n_test
        if together and n_test > 0:
            while first_test > 0 and times[first_test - 1] == times[first_test]:
                first_test -= 1
        first_val = first_test - n_val
        if together and n_val > 0:
            while first_val > 0 and times[first_val - 1] == times[first_val]:
                first_val -= 1
        if n_test == 0 or first_val < 1:
            for r in ordered:
                out[r] = DROPPED if short == "drop" else TRAIN
            continue
        for i, r in enumerate(ordered):
            out[r] = TEST if i >= first_test else VALIDATION if i >= first_val else TRAIN
    return out


def global_last(
    rows: Sequence[Row],
    key: Sequence[int],
    *,
    by_time: bool,
    c: int,
    together: bool = False,
    among: Sequence[int] | None = None,
) -> set[int]:
    """The ``c`` rows (of ``among``) last in (time, key, row) or (key, row) order."""
    among = list(range(len(rows))) if among is None else list(among)

    def order(r: int) -> tuple[int, ...]:
        return (rows[r][2], key[r], r) if by_time else (key[r], r)

    ordered = sorted(among, key=order)
    chosen = ordered[len(ordered) - c :]
    if together and chosen:
        first = rows[chosen[0]][2]
        chosen = [r for r in ordered if rows[r][2] >= first]
    return set(chosen)


def dedupe(rows: Sequence[Row], key: Sequence[int], *, last: bool, by_time: bool) -> list[bool]:
    """Keep the first (last) row of each (user, item) pair in (time, key, row) order."""
    best: dict[tuple[Hashable, Hashable], int] = {}
    for r, (u, i, t) in enumerate(rows):
        order = (t, key[r], r) if by_time else (key[r], r)
        pair = (u, i)
        if pair not in best:
            best[pair] = r
            continue
        b = best[pair]
        other = (rows[b][2], key[b], b) if by_time else (key[b], b)
        if (order > other) if last else (order < other):
            best[pair] = r
    chosen = set(best.values())
    return [r in chosen for r in range(len(rows))]


def kcore(rows: Sequence[Row], keep: list[bool], min_user: int, min_item: int) -> list[bool]:
    """Remove users and items with too few kept rows until none is left."""
    keep = list(keep)
    while True:
        users = Counter(rows[r][0] for r in range(len(rows)) if keep[r])
        items = Counter(rows[r][1] for r in range(len(rows)) if keep[r])
        bad = [
            r
            for r in range(len(rows))
            if keep[r] and (users[rows[r][0]] < min_user or items[rows[r][1]] < min_item)
        ]
        if not bad:
            return keep
        for r in bad:
            keep[r] = False


def folds(users: Sequence[Hashable], hashed: dict[Hashable, int], k: int) -> dict[Hashable, int]:
    """Users dealt into k folds in the order of (hash, id)."""
    ordered = sorted(set(users), key=lambda u: (hashed[u], u))
    return {u: i % k for i, u in enumerate(ordered)}


def audit(
    train: Sequence[Row], test: Sequence[Row], relevant: Sequence[bool] | None = None
) -> dict[str, int]:
    """Every check of the audit, counted row by row."""
    out: dict[str, int] = {}
    if train and test:
        last = max(t for _, _, t in train)
        first = min(t for _, _, t in test)
        user_last: dict[Hashable, int] = {}
        for u, _, t in train:
            user_last[u] = max(t, user_last.get(u, t))
        out["test_before_train_end"] = sum(t < last for _, _, t in test)
        out["train_after_test_start"] = sum(t > first for _, _, t in train)
        out["test_before_user_train_end"] = sum(
            u in user_last and t < user_last[u] for u, _, t in test
        )
        out["ties_at_global_cut"] = sum(t == last for _, _, t in test)
        out["ties_at_user_cut"] = sum(u in user_last and t == user_last[u] for u, _, t in test)
    pairs = {(u, i) for u, i, _ in train}
    train_users = {u for u, _, _ in train}
    train_items = {i for _, i, _ in train}
    test_users = {u for u, _, _ in test}
    out["test_pairs_in_train"] = sum((u, i) in pairs for u, i, _ in test)
    out["cold_test_users"] = len(test_users - train_users)
    out["cold_test_items"] = len({i for _, i, _ in test} - train_items)
    out["cold_item_test_rows"] = sum(i not in train_items for _, i, _ in test)
    if relevant is None:
        out["test_users_without_relevant"] = 0
    else:
        has = {u for (u, _, _), rel in zip(test, relevant, strict=True) if rel}
        out["test_users_without_relevant"] = len(test_users - has)
    out["train_users_without_test"] = len(train_users - test_users)
    return out


def random_rows(
    rng: np.random.Generator, n_rows: int, n_users: int, n_items: int, n_times: int
) -> pl.DataFrame:
    """Interactions with many ties in time (few distinct times) and repeated pairs."""
    return pl.DataFrame(
        {
            "user": rng.integers(0, n_users, n_rows),
            "item": rng.integers(0, n_items, n_rows),
            "timestamp": rng.integers(0, n_times, n_rows),
        }
    )


def as_rows(frame: pl.DataFrame) -> list[Row]:
    return list(frame.select("user", "item", "timestamp").iter_rows())
