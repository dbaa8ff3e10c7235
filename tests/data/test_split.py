"""receval.split: every method against the brute-force reference of tests/helpers/
split_reference.py (exact rows, on data full of ties and repeated pairs), and the properties
that make a split a split: the parts partition the input, no pair in both, temporal order,
folds disjoint and covering, the same split whatever the row order."""

from __future__ import annotations

import datetime as dt
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import receval
from helpers import split_reference as ref
from receval import InputError, LeakageWarning
from receval.data.audit import CHECKS

CODES = {-1: ref.DROPPED, 0: ref.TRAIN, 1: ref.TEST, 2: ref.VALIDATION}


def quiet_split(*args: object, **kwargs: object) -> receval.Split:
    """receval.split with its leakage warnings recorded (tested apart)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeakageWarning)
        return receval.split(*args, **kwargs)  # type: ignore[arg-type]


def parts(s: receval.Split) -> list[str]:
    return [CODES[c] for c in s.part.to_list()]


def datasets(count: int = 12) -> list[pl.DataFrame]:
    rng = np.random.default_rng(7)
    out = []
    for j in range(count):
        n_rows = int(rng.integers(1, 80))
        out.append(ref.random_rows(rng, n_rows, n_users=1 + j % 6, n_items=12, n_times=6))
    return out


def keep_first(frame: pl.DataFrame, seed: int, last: bool = False) -> list[bool]:
    return ref.dedupe(ref.as_rows(frame), ref.keys(frame, seed), last=last, by_time=True)


# --- per-user methods ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "options", "by_time"),
    [
        ("temporal_user", {"n": 1}, True),
        ("temporal_user", {"n": 2}, True),
        ("temporal_user", {"fraction": 0.3}, True),
        ("temporal_user", {"fraction": 0.5, "validation_n": 1}, True),
        ("temporal_user", {"n": 1, "ties": "together"}, True),
        ("temporal_user", {"n": 2, "validation_fraction": 0.25, "ties": "together"}, True),
        ("temporal_user", {"n": 2, "short_users": "drop"}, True),
        ("leave_one_out", {}, True),
        ("leave_one_out", {"validation_n": 1}, True),
        ("leave_one_out", {"by": "random"}, False),
        ("random_user", {"n": 2}, False),
        ("random_user", {"fraction": 0.4, "validation_fraction": 0.2}, False),
    ],
)
@pytest.mark.parametrize("duplicates", ["first", "keep"])
def test_per_user_methods_match_reference(
    method: str, options: dict[str, object], by_time: bool, duplicates: str
) -> None:
    for seed, frame in enumerate(datasets()):
        s = quiet_split(frame, method, seed=seed, duplicates=duplicates, **options)
        rows, key = ref.as_rows(frame), ref.keys(frame, seed)
        keep = keep_first(frame, seed) if duplicates == "first" else None
        expected = ref.holdout(
            rows, key, by_time=by_time,
            n=1 if method == "leave_one_out" else options.get("n"),  # type: ignore[arg-type]
            fraction=options.get("fraction"),  # type: ignore[arg-type]
            validation_n=options.get("validation_n"),  # type: ignore[arg-type]
            validation_fraction=options.get("validation_fraction"),  # type: ignore[arg-type]
            together=options.get("ties") == "together",
            short=str(options.get("short_users", "train")), keep=keep,
        )  # fmt: skip
        assert parts(s) == expected, (method, options, seed)


def test_temporal_user_exact_rows_by_hand() -> None:
    # ann: t 1, 2, 3, 3 (a tie at the end); bob: t 5, 4 (input order is not time order)
    frame = pl.DataFrame(
        {
            "user": ["ann", "ann", "ann", "ann", "bob", "bob"],
            "item": [10, 11, 12, 13, 20, 21],
            "timestamp": [1, 2, 3, 3, 5, 4],
        }
    )
    s = quiet_split(frame, "temporal_user", n=1, ties="together")
    assert s.test.rows() == [("ann", 12, 3), ("ann", 13, 3), ("bob", 20, 5)]
    assert s.train.rows() == [("ann", 10, 1), ("ann", 11, 2), ("bob", 21, 4)]
    s = quiet_split(frame, "temporal_user", n=1, validation_n=1)
    assert s.validation is not None
    # ann's 12 and 13 tie at t=3: one is test, the other validation (by the seeded key)
    assert sorted(s.test.rows() + s.validation.rows()) == [("ann", 12, 3), ("ann", 13, 3)]
    assert s.audit["short_users_kept_in_train"] == 1  # bob: 1 test + 1 validation, no train
    assert s.train.rows() == [("ann", 10, 1), ("ann", 11, 2), ("bob", 20, 5), ("bob", 21, 4)]
    # bob's 2 of 2 would leave no train row: a short user, kept in train and counted
    s = quiet_split(frame, "temporal_user", n=2)
    assert s.test.rows() == [("ann", 12, 3), ("ann", 13, 3)]
    assert (
        s.audit["short_users_kept_in_train"] == 1
        and s.audit.share("short_users_kept_in_train") == 0.5
    )


def test_ties_are_not_broken_by_item_id() -> None:
    # 400 users, each with two items at the same time: leave-one-out by time picks one of the
    # two by the seeded hash, so the larger item id is the test item about half the time
    users = np.repeat(np.arange(400), 2)
    items = np.tile([1, 2], 400)
    frame = pl.DataFrame({"user": users, "item": items, "timestamp": np.zeros(800, np.int64)})
    s = quiet_split(frame, "leave_one_out")
    share = (s.test["item"] == 2).mean()
    assert isinstance(share, float) and 0.4 < share < 0.6
    assert s.audit["ties_at_user_cut"] == 400
    assert any("seeded hash" in n for n in s.audit.notes)
    # the same seed gives the same choice; another seed another
    again = quiet_split(frame.reverse(), "leave_one_out")
    assert_frame_equal(again.test.sort("user"), s.test.sort("user"))
    other = quiet_split(frame, "leave_one_out", seed=1)
    assert not other.test.sort("user").equals(s.test.sort("user"))


def test_short_users_raise_names_them() -> None:
    frame = pl.DataFrame({"user": ["a", "a", "b"], "item": [1, 2, 3], "timestamp": [1, 2, 3]})
    with pytest.raises(InputError, match=r"1 user\(s\) have too few .* e\.g\. \['b'\]"):
        quiet_split(frame, "leave_one_out", short_users="raise")
    s = quiet_split(frame, "leave_one_out", short_users="drop")
    assert s.counts() == {"train": 1, "test": 1, "validation": 0, "dropped": 1}
    assert s.audit["short_users_dropped"] == 1 and s.audit.share("short_users_dropped") == 0.5


def test_fraction_is_the_decimal_fraction() -> None:
    # 0.29 * 100 is 28.999999999999996 in floating point; the split takes 29
    frame = pl.DataFrame({"user": [1] * 100, "item": range(100), "timestamp": range(100)})
    s = quiet_split(frame, "temporal_user", fraction=0.29)
    assert s.test.height == 29
    assert s.test["timestamp"].to_list() == list(range(71, 100))


# --- global methods --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"fraction": 0.3},
        {"fraction": 0.5, "ties": "together"},
        {"fraction": 0.4, "validation_fraction": 0.2},
        {"cutoff": 3},
        {"cutoff": 3, "validation_cutoff": 2},
        {"cutoff": 3, "validation_fraction": 0.1},
        {"cutoff": 2, "end": 5},
        {"cutoff": 2.5},
    ],
)
def test_temporal_global_matches_reference(options: dict[str, object]) -> None:
    for seed, frame in enumerate(datasets()):
        rows, key = ref.as_rows(frame), ref.keys(frame, seed)
        keep = keep_first(frame, seed)
        end = options.get("end")
        if end is not None:  # rows at or after end removed first, then duplicates
            keep = [k and r[2] < end for k, r in zip(keep, rows, strict=True)]  # type: ignore[operator]
            sub = [r for r in range(len(rows)) if rows[r][2] < end]  # type: ignore[operator]
            first = ref.dedupe(
                [rows[r] for r in sub], [key[r] for r in sub], last=False, by_time=True
            )
            keep = [False] * len(rows)
            for r, k in zip(sub, first, strict=True):
                keep[r] = k
        kept = [r for r in range(len(rows)) if keep[r]]
        times = [rows[r][2] for r in kept]
        cutoff = options.get("cutoff")
        if cutoff is not None and not (min(times) < cutoff <= max(times)):  # type: ignore[operator]
            with pytest.raises(InputError, match="outside the data's time range"):
                quiet_split(frame, "temporal_global", seed=seed, **options)
            continue
        m = len(kept)
        together = options.get("ties") == "together"
        if cutoff is not None:
            test = {r for r in kept if rows[r][2] >= cutoff}  # type: ignore[operator]
        else:
            c = ref.size(None, options["fraction"], m)  # type: ignore[arg-type]
            if c == 0:
                with pytest.raises(InputError, match="no test"):
                    quiet_split(frame, "temporal_global", seed=seed, **options)
                continue
            test = ref.global_last(rows, key, by_time=True, c=c, together=together, among=kept)
        rest = [r for r in kept if r not in test]
        val: set[int] = set()
        if options.get("validation_cutoff") is not None:
            vc = options["validation_cutoff"]
            rest_times = [rows[r][2] for r in rest]
            if not rest_times or not (min(rest_times) < vc <= max(rest_times)):  # type: ignore[operator]
                with pytest.raises(InputError, match="validation_cutoff"):
                    quiet_split(frame, "temporal_global", seed=seed, **options)
                continue
            val = {r for r in rest if rows[r][2] >= vc}  # type: ignore[operator]
        elif options.get("validation_fraction") is not None:
            cv = ref.size(None, options["validation_fraction"], m)  # type: ignore[arg-type]
            if cv == 0 or cv >= len(rest):
                with pytest.raises(InputError, match="validation leaves"):
                    quiet_split(frame, "temporal_global", seed=seed, **options)
                continue
            val = ref.global_last(rows, key, by_time=True, c=cv, together=together, among=rest)
        if not rest or len(rest) == len(val):
            with pytest.raises(InputError):
                quiet_split(frame, "temporal_global", seed=seed, **options)
            continue
        s = quiet_split(frame, "temporal_global", seed=seed, **options)
        expected = [
            ref.TEST if r in test else ref.VALIDATION if r in val else ref.TRAIN if keep[r]
            else ref.DROPPED
            for r in range(len(rows))
        ]  # fmt: skip
        assert parts(s) == expected, (options, seed)


@pytest.mark.parametrize("options", [{"fraction": 0.25}, {"n": 5}, {"n": 3, "validation_n": 2}])
def test_random_matches_reference(options: dict[str, object]) -> None:
    for seed, frame in enumerate(datasets()):
        rows, key = ref.as_rows(frame), ref.keys(frame, seed)
        keep = keep_first(frame, seed)
        kept = [r for r in range(len(rows)) if keep[r]]
        c = ref.size(options.get("n"), options.get("fraction"), len(kept))  # type: ignore[arg-type]
        cv = ref.size(options.get("validation_n"), None, len(kept))  # type: ignore[arg-type]
        if c == 0 or c + cv >= len(kept):
            with pytest.raises(InputError):
                quiet_split(frame, "random", seed=seed, **options)
            continue
        test = ref.global_last(rows, key, by_time=False, c=c, among=kept)
        rest = [r for r in kept if r not in test]
        val = ref.global_last(rows, key, by_time=False, c=cv, among=rest) if cv else set()
        s = quiet_split(frame, "random", seed=seed, **options)
        expected = [
            ref.TEST if r in test else ref.VALIDATION if r in val else ref.TRAIN if keep[r]
            else ref.DROPPED
            for r in range(len(rows))
        ]  # fmt: skip
        assert parts(s) == expected


def test_temporal_global_with_dates_and_text_bounds() -> None:
    days = [dt.date(2024, 1, d) for d in (1, 2, 3, 4, 5)]
    frame = pl.DataFrame({"user": [1, 1, 2, 2, 3], "item": [1, 2, 3, 4, 5], "timestamp": days})
    s = quiet_split(frame, "temporal_global", cutoff="2024-01-03", end=dt.date(2024, 1, 5))
    assert s.test["timestamp"].to_list() == days[2:4]
    assert s.audit["rows_at_or_after_end_removed"] == 1
    stamps = frame.with_columns(pl.col("timestamp").cast(pl.Datetime("ns", "UTC")))
    s = quiet_split(stamps, "temporal_global", cutoff="2024-01-04 00:00")
    assert s.test.height == 2
    with pytest.raises(InputError, match=r"cutoff \(a bound on column 'timestamp', Date\) must"):
        quiet_split(frame, "temporal_global", cutoff=3)


def test_float_timestamps_order_exactly() -> None:
    frame = pl.DataFrame(
        {
            "user": [1, 1, 1, 2, 2],
            "item": [1, 2, 3, 4, 5],
            "timestamp": [-2.5, -0.0, 1e-300, 0.0, -1.0],
        }
    )
    s = quiet_split(frame, "temporal_global", cutoff=0.0)  # -0.0 is 0.0: in test
    assert s.train["timestamp"].to_list() == [-2.5, -1.0]
    s = quiet_split(frame, "temporal_user", n=1)
    assert sorted(s.test["timestamp"].to_list()) == [0.0, 1e-300]


# --- k-fold ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [{"k": 3, "n": 1}, {"k": 2, "fraction": 0.5}, {"k": 4, "n": 2, "by": "time"}],
)
def test_kfold_matches_reference_and_folds_partition(options: dict[str, object]) -> None:
    for seed, frame in enumerate(datasets()):
        k = int(options["k"])  # type: ignore[call-overload]
        rows, key = ref.as_rows(frame), ref.keys(frame, seed)
        keep = keep_first(frame, seed)
        users = {rows[r][0] for r in range(len(rows)) if keep[r]}
        if len(users) < k:
            with pytest.raises(InputError, match=r"k \(\d\) must be at most the number of users"):
                quiet_split(frame, "kfold_user", seed=seed, **options)
            continue
        s = quiet_split(frame, "kfold_user", seed=seed, **options)
        held = ref.holdout(
            rows, key, by_time=options.get("by") == "time", n=options.get("n"),  # type: ignore[arg-type]
            fraction=options.get("fraction"), keep=keep,  # type: ignore[arg-type]
        )  # fmt: skip
        fold_of = ref.folds(sorted(users), ref.user_hash(pl.Series(sorted(users)), seed), k)
        assert len(s.folds) == k
        covered = [0] * len(rows)
        for f, fold in enumerate(s.folds):
            expected = [
                ref.DROPPED if h == ref.DROPPED
                else ref.TEST if h == ref.TEST and fold_of[rows[r][0]] == f
                else ref.TRAIN
                for r, h in enumerate(held)
            ]  # fmt: skip
            assert parts(fold) == expected
            for r, p in enumerate(expected):
                covered[r] += p == ref.TEST
            # each fold: train and test partition the kept rows
            assert fold.train.height + fold.test.height == sum(keep)
        # folds disjoint and covering: every held-out row in exactly one fold's test
        assert covered == [int(h == ref.TEST) for h in held]
        assert s.test.height == held.count(ref.TEST)
        assert sorted(s.test["fold"].to_list()) == sorted(
            fold_of[rows[r][0]] for r, h in enumerate(held) if h == ref.TEST
        )
        # folds of users differ in size by one at most
        sizes = np.bincount(list(fold_of.values()), minlength=k)
        assert sizes.max() - sizes.min() <= 1


# --- preprocessing: duplicates, k-core, cold rows ---------------------------------------------


@pytest.mark.parametrize("policy", ["first", "last"])
def test_duplicates_match_reference(policy: str) -> None:
    for seed, frame in enumerate(datasets()):
        s = quiet_split(frame, "leave_one_out", seed=seed, duplicates=policy)
        expected = keep_first(frame, seed, last=policy == "last")
        assert [p != ref.DROPPED for p in parts(s)] == expected
        assert s.audit["duplicate_rows_removed"] == expected.count(False)


def big_users(seed: int) -> pl.DataFrame:
    """Two users with thousands of rows (large hash tables, long chains of repeated items)
    among 2,500 users of one to three rows (more than one chunk of users), text ids."""
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([[2_000, 3_000], rng.integers(1, 4, 2_500)])
    users = np.repeat(np.arange(sizes.shape[0]), sizes)
    rng.shuffle(users)
    n = users.shape[0]
    return pl.DataFrame(
        {
            "user": pl.Series(users).cast(pl.String) + "u",
            "item": rng.integers(0, 300, n) * 7 - 1_000,
            "timestamp": rng.integers(0, 40, n),
        }
    )


@pytest.mark.parametrize("policy", ["first", "last"])
def test_long_users_match_reference(policy: str) -> None:
    frame = big_users(5)
    rows, key = ref.as_rows(frame), ref.keys(frame, 3)
    keep = ref.dedupe(rows, key, last=policy == "last", by_time=True)
    s = quiet_split(frame, "temporal_user", fraction=0.3, ties="together", seed=3,
                    duplicates=policy)  # fmt: skip
    expected = ref.holdout(rows, key, by_time=True, fraction=0.3, together=True, keep=keep)
    assert parts(s) == expected
    assert 0 < keep.count(False) == s.audit["duplicate_rows_removed"]
    train = [r for r, p in zip(rows, expected, strict=True) if p == ref.TRAIN]
    test = [r for r, p in zip(rows, expected, strict=True) if p == ref.TEST]
    assert {c: s.audit[c] for c in CHECKS} == ref.audit(train, test, [True] * len(test))


def test_duplicates_raise_and_keep() -> None:
    frame = pl.DataFrame({"user": [1, 1, 1, 2], "item": [5, 5, 6, 5], "timestamp": [1, 2, 3, 4]})
    with pytest.raises(InputError, match=r"1 repeated \(user, item\) row\(s\).*\n  row 0: user=1"):
        quiet_split(frame, "leave_one_out", duplicates="raise")
    later = frame.with_columns(timestamp=pl.Series([1, 3, 2, 4]))  # (1, 5) at t=1 and t=3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # duplicates="first" keeps (1, 5) at t=1 only: no leak
        s = receval.split(later, "temporal_global", cutoff=3)
    assert s.audit["test_pairs_in_train"] == 0 and s.audit["duplicate_rows_removed"] == 1
    with pytest.warns(LeakageWarning, match="repeat a \\(user, item\\) pair that is in train"):
        s = receval.split(later, "temporal_global", cutoff=3, duplicates="keep")
    assert s.audit["test_pairs_in_train"] == 1
    assert s.test.rows() == [(1, 5, 3), (2, 5, 4)]


@pytest.mark.parametrize(("min_user", "min_item"), [(3, 1), (1, 3), (3, 2), (4, 4)])
def test_kcore_matches_reference(min_user: int, min_item: int) -> None:
    for seed, frame in enumerate(datasets()):
        rows = ref.as_rows(frame)
        keep = ref.kcore(rows, keep_first(frame, seed), min_user, min_item)
        if not any(keep):
            with pytest.raises(InputError, match="removes every interaction"):
                quiet_split(frame, "random_user", n=1, seed=seed, min_user_interactions=min_user,
                            min_item_interactions=min_item)  # fmt: skip
            continue
        s = quiet_split(
            frame, "random_user", n=1, seed=seed, min_user_interactions=min_user,
            min_item_interactions=min_item,
        )  # fmt: skip
        assert [p != ref.DROPPED for p in parts(s)] == keep
        before = keep_first(frame, seed)
        assert s.audit["kcore_rows_removed"] == sum(before) - sum(keep)
        users_before = {row[0] for row, k in zip(rows, before, strict=True) if k}
        users_after = {row[0] for row, k in zip(rows, keep, strict=True) if k}
        assert s.audit["kcore_users_removed"] == len(users_before) - len(users_after)


def test_drop_cold_counts_and_removes() -> None:
    frame = pl.DataFrame(
        {"user": [1, 1, 2, 3], "item": [10, 11, 12, 10], "timestamp": [1, 2, 3, 4]}
    )
    # test (t >= 3): user 2 and user 3 are cold; item 12 is cold
    s = quiet_split(frame, "temporal_global", cutoff=3)
    assert (s.audit["cold_test_users"], s.audit["cold_test_items"]) == (2, 1)
    s = quiet_split(frame, "temporal_global", cutoff=3, drop_cold="items")
    assert s.test.rows() == [(3, 10, 4)]
    assert s.audit["cold_test_rows_dropped"] == 1 and s.audit["cold_test_items"] == 0
    s = quiet_split(frame, "temporal_global", cutoff=3, drop_cold="users")
    assert s.test.height == 0 and s.audit["cold_test_rows_dropped"] == 2


# --- properties ------------------------------------------------------------------------------

METHODS = [
    ("temporal_global", {"fraction": 0.3}),
    ("temporal_user", {"fraction": 0.3, "validation_n": 1}),
    ("leave_one_out", {}),
    ("random_user", {"n": 2}),
    ("random", {"fraction": 0.2, "validation_fraction": 0.1}),
    ("kfold_user", {"k": 3, "n": 1}),
]


@pytest.mark.parametrize(("method", "options"), METHODS)
def test_parts_partition_the_input_whatever_the_row_order(
    method: str, options: dict[str, object]
) -> None:
    rng = np.random.default_rng(3)
    frame = ref.random_rows(rng, 3000, n_users=150, n_items=300, n_times=50).with_columns(
        rating=pl.Series(rng.integers(1, 6, 3000))
    )
    s = quiet_split(frame, method, **options)
    pieces = [s.train, s.test.drop("fold", strict=False)]
    if s.validation is not None:
        pieces.append(s.validation)
    union = pl.concat(pieces)
    kept = frame.filter(s.part != -1)
    assert_frame_equal(union.sort(union.columns), kept.sort(kept.columns))
    audit = s.folds[0].audit if s.folds else s.audit
    assert s.counts()["dropped"] == audit["duplicate_rows_removed"]
    # no (user, item) pair in two parts (duplicates="first")
    pairs = [set(p.select("user", "item").iter_rows()) for p in pieces]
    assert not (pairs[0] & pairs[1])
    # the input's row order changes nothing: same parts, rows in input order
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=11)
    t = quiet_split(shuffled, method, **options)
    assert_frame_equal(t.train.sort(t.train.columns), s.train.sort(s.train.columns))
    assert_frame_equal(t.test.sort(t.test.columns), s.test.sort(s.test.columns))
    # and the same split in every run
    assert quiet_split(frame, method, **options).part.equals(s.part)


@pytest.mark.parametrize(("method", "options"), METHODS[:3])
def test_temporal_order_is_respected(method: str, options: dict[str, object]) -> None:
    rng = np.random.default_rng(5)
    frame = ref.random_rows(rng, 2000, n_users=100, n_items=500, n_times=10**6)
    s = quiet_split(frame, method, **options)
    if method == "temporal_global":
        assert s.train["timestamp"].max() <= s.test["timestamp"].min()  # type: ignore[operator]
        assert s.audit["test_before_train_end"] == 0
    last = s.train.group_by("user").agg(pl.col("timestamp").max().alias("last"))
    joined = s.test.join(last, on="user")
    assert (joined["timestamp"] >= joined["last"]).all()
    assert s.audit["test_before_user_train_end"] == 0


# --- inputs and outputs ------------------------------------------------------------------------


def test_sources_pandas_parquet_csv(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"uid": ["a", "a", "b", "b"], "iid": [1, 2, 3, 4], "ts": [1, 2, 3, 4], "r": [5, 3, 4, 1]}
    )
    options = {"user_col": "uid", "item_col": "iid", "time_col": "ts"}
    s = quiet_split(frame, "leave_one_out", **options)
    assert s.test.columns == ["uid", "iid", "ts", "r"]
    p = quiet_split(frame.to_pandas(), "leave_one_out", **options)
    assert_frame_equal(p.test, s.test)
    frame.write_parquet(tmp_path / "x.parquet")
    q = quiet_split(tmp_path / "x.parquet", "leave_one_out", **options)
    assert_frame_equal(q.test, s.test)
    frame.write_csv(tmp_path / "x.csv")
    c = quiet_split(str(tmp_path / "x.csv"), "leave_one_out", **options)
    assert c.test["ts"].to_list() == [2.0, 4.0]  # CSV timestamps are read as numbers
    assert isinstance(pd.DataFrame(), pd.DataFrame)


def test_write_parquet_files(tmp_path: Path) -> None:
    frame = pl.DataFrame({"user": [1, 1, 2, 2, 2], "item": [1, 2, 1, 2, 3], "timestamp": range(5)})
    s = quiet_split(frame, "temporal_user", n=1, validation_n=1)
    written = s.write(tmp_path / "out")
    assert [p.name for p in written] == [
        "train.parquet", "test.parquet", "validation.parquet", "split.json",
    ]  # fmt: skip
    assert_frame_equal(pl.read_parquet(tmp_path / "out" / "test.parquet"), s.test)
    assert "audit" in (tmp_path / "out" / "split.json").read_text()
    k = quiet_split(frame, "kfold_user", k=2, n=1)
    names = [p.name for p in k.write(tmp_path / "k")]
    assert names[:2] == ["fold_0_train.parquet", "fold_0_test.parquet"] and len(names) == 5
    assert not list(tmp_path.glob("**/.*.tmp"))


def test_repr_and_audit_lookup() -> None:
    frame = pl.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 3, 4], "timestamp": [1, 2, 3, 4]})
    s = quiet_split(frame, "temporal_global", cutoff=3)
    assert repr(s) == "Split(method='temporal_global', train=2, test=2, warnings=0)"
    with pytest.raises(KeyError, match="no check 'nope'"):
        s.audit["nope"]
    assert s.settings["cutoff"] == 3 and s.settings["seed"] == 0
    assert "cold_test_users" in str(s.audit)


def test_leak_warnings_are_leakage_warnings() -> None:
    frame = pl.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 3, 4], "timestamp": [1, 2, 3, 4]})
    with pytest.warns(LeakageWarning, match="global time overlap"):
        s = receval.split(frame, "leave_one_out")
    assert s.audit.warnings and "global time overlap" in s.audit.warnings[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        receval.split(frame, "temporal_global", cutoff=3)  # no leak: no warning


# --- the audit has the same rows whatever the options -------------------------------------

SPLITTER_ROWS = [
    "rows_at_or_after_end_removed", "duplicate_rows_removed", "kcore_rows_removed",
    "kcore_users_removed", "kcore_items_removed", "short_users_kept_in_train",
    "short_users_dropped", "cold_test_rows_dropped", "cold_validation_rows_dropped",
]  # fmt: skip


def _rows_of(s: receval.Split) -> list[str]:
    return s.audit.table["check"].to_list()


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("temporal_user", {"n": 1}),
        ("temporal_user", {"n": 1, "validation_n": 1}),
        ("leave_one_out", {}),
        ("random_user", {"fraction": 0.5}),
        ("random", {"n": 4}),
        ("temporal_global", {"fraction": 0.3}),
        ("temporal_global", {"cutoff": 20, "end": 30}),
        ("kfold_user", {"k": 2, "n": 1}),
    ],
)
def test_audit_rows_do_not_depend_on_the_options(method: str, options: dict[str, object]) -> None:
    # duplicates='keep' used to leave out duplicate_rows_removed (a KeyError), and every
    # removal row was there only when its step ran
    rng = np.random.default_rng(3)  # 12 users, 8 items, repeated pairs, ties in time
    data = pl.DataFrame({"user": np.repeat(np.arange(12), 6), "item": rng.integers(0, 8, 72),
                         "timestamp": rng.integers(0, 40, 72)})  # fmt: skip
    table = None
    for duplicates in ("first", "last", "keep"):
        for drop_cold in ("none", "both"):
            for mins in (1, 2):
                s = quiet_split(
                    data, method, duplicates=duplicates, drop_cold=drop_cold,
                    min_user_interactions=mins, min_item_interactions=mins, **options,
                )  # fmt: skip
                audits = [f.audit for f in s.folds] or [s.audit]
                for audit in audits:
                    rows = audit.table["check"].to_list()
                    table = table or rows
                    assert rows == table, (duplicates, drop_cold, mins)
                    for check in SPLITTER_ROWS:
                        assert isinstance(audit[check], int)
                    assert rows[-len(SPLITTER_ROWS) :] == SPLITTER_ROWS
                one = audits[0]  # a k-fold split's own audit has one row per fold
                if duplicates == "keep":
                    assert one["duplicate_rows_removed"] == 0
                if mins == 1:
                    assert one["kcore_rows_removed"] == 0
                if drop_cold == "none":
                    assert one["cold_test_rows_dropped"] == 0
                if "end" not in options:
                    assert one["rows_at_or_after_end_removed"] == 0
    assert table is not None
    assert ("validation.cold_test_users" in table) == ("validation_n" in options)


def test_duplicates_keep_and_raise_count_no_removed_row() -> None:
    data = pl.DataFrame({"user": [1, 1, 1, 2, 2], "item": [5, 5, 6, 5, 7],
                         "timestamp": [1, 2, 3, 4, 5]})  # fmt: skip
    kept = quiet_split(data, "leave_one_out", duplicates="keep")
    assert kept.audit["duplicate_rows_removed"] == 0
    assert kept.audit.share("duplicate_rows_removed") == 0
    once = data.unique(["user", "item"], keep="first", maintain_order=True)
    raised = quiet_split(once, "leave_one_out", duplicates="raise")
    assert raised.audit["duplicate_rows_removed"] == 0
    assert quiet_split(data, "leave_one_out").audit["duplicate_rows_removed"] == 1


# --- found by the generated robustness suite (tests/engines/test_robustness.py) ---------------

ROBUST = pl.DataFrame(
    {"user": [0, 0, 0, 1, 1, 1], "item": [1, 2, 3, 1, 2, 4], "timestamp": [1, 2, 3, 4, 5, 6],
     "rating": [1.0, 2, 3, 4, 5, 1]}
)  # fmt: skip


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("temporal_user", {"n": 10**30}),
        ("temporal_user", {"n": 1, "validation_n": 10**30}),
        ("random", {"n": 2**63}),
    ],
)
def test_a_holdout_beyond_int64_is_every_row(method: str, options: dict[str, object]) -> None:
    # n=10**30 raised OverflowError from NumPy; a holdout larger than every user's rows is
    # what n=10**9 is: every user short (kept in train), or no train row left for random
    if method == "random":
        with pytest.raises(InputError, match=r"n leaves no train row: 6 of the 6"):
            receval.split(ROBUST, method, **options)  # type: ignore[arg-type]
        return
    same = {k: (10**9 if v != 1 else v) for k, v in options.items()}
    got = quiet_split(ROBUST, method, **options)
    want = quiet_split(ROBUST, method, **same)
    assert got.part.to_list() == want.part.to_list()
    assert got.audit.table.equals(want.audit.table)


@pytest.mark.parametrize("value", [10**400, -(10**400), 10**30], ids=["1e400", "-1e400", "1e30"])
def test_fraction_too_large_for_a_float_is_an_input_error(value: int) -> None:
    # float(10**400) raised OverflowError
    with pytest.raises(InputError, match=r"fraction must be a number in \(0, 1\), exclusive"):
        receval.split(ROBUST, "random", fraction=value)


def test_numpy_integer_sizes_are_integers() -> None:
    # n=np.int64(1) was refused ("must be an integer") while fraction took NumPy floats and
    # seed NumPy integers
    got = quiet_split(
        ROBUST, "kfold_user", n=np.int64(1), k=np.int32(2), min_user_interactions=np.uint8(1),
        min_item_interactions=np.int16(1),
    )  # fmt: skip
    want = quiet_split(ROBUST, "kfold_user", n=1, k=2)
    assert got.part.to_list() == want.part.to_list()
    assert type(got.settings["n"]) is int and type(got.settings["k"]) is int  # split.json: 1
    with pytest.raises(InputError, match=r"validation_n must be an integer >= 1; got True"):
        receval.split(ROBUST, "temporal_user", n=1, validation_n=True)


@pytest.mark.parametrize(
    ("data", "options", "match"),
    [
        (ROBUST, {"relevance_col": "rel"},
         r"interactions is missing column 'rel' \(relevance_col\); columns found: \['user', "),
        (ROBUST, {"relevance_col": 3}, r"relevance_col must be a column name .*; got 3"),
        (ROBUST, {"relevance_col": "user"},
         r"user_col and relevance_col both name column 'user' of interactions"),
        (ROBUST.with_columns(pl.col("rating").cast(pl.String)), {"relevance_col": "rating"},
         r"interactions column 'rating' \(relevance_col\) must be numeric; got String"),
        (ROBUST.with_columns(rating=pl.Series([True] * 6)), {"relevance_col": "rating"},
         r"must be numeric; got Boolean"),
        (ROBUST, {"relevance_col": "rating", "relevance_threshold": "x"},
         r"relevance_threshold must be a finite number > 0; got 'x'"),
        (ROBUST, {"relevance_col": "rating", "relevance_threshold": math.nan},
         r"relevance_threshold must be a finite number > 0; got nan"),
        (ROBUST, {"relevance_threshold": 10**400},
         r"relevance_threshold must be a finite number > 0; got 1000"),
        (ROBUST, {"relevance_threshold": None}, r"relevance_threshold must be a finite number"),
        (ROBUST, {"relevance_threshold": True}, r"relevance_threshold must be a finite number"),
    ],
)  # fmt: skip
def test_relevance_options_are_checked(
    data: pl.DataFrame, options: dict[str, object], match: str
) -> None:
    # a missing or non-numeric relevance_col was ignored (every row relevant: a silent wrong
    # test_users_without_relevant) or raised Polars' InvalidOperationError; a bad threshold
    # a TypeError. split and audit_split take them alike.
    with pytest.raises(InputError, match=match):
        receval.split(data, "leave_one_out", **options)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=match.replace("interactions", "test")):
        receval.audit_split(data, data, **options)  # type: ignore[arg-type]


def test_relevance_of_a_numeric_column_counts() -> None:
    s = quiet_split(ROBUST, "leave_one_out", relevance_col="rating", relevance_threshold=2)
    # test rows: user 0's t=3 (rating 3), user 1's t=6 (rating 1): one user without relevant
    assert s.audit["test_users_without_relevant"] == 1
    again = receval.audit_split(s.train, s.test, relevance_col="rating", relevance_threshold=2,
                                warn=False)  # fmt: skip
    assert again["test_users_without_relevant"] == 1
    ints = ROBUST.with_columns(pl.col("rating").cast(pl.UInt8))
    s = quiet_split(ints, "leave_one_out", relevance_col="rating", relevance_threshold=np.int64(2))
    assert s.audit["test_users_without_relevant"] == 1


def test_audit_validation_needs_the_relevance_column_too() -> None:
    # a validation part without relevance_col counted every row relevant, silently
    with pytest.raises(InputError, match=r"validation is missing column 'rating'"):
        receval.audit_split(ROBUST, ROBUST, validation=ROBUST.drop("rating"),
                            relevance_col="rating")  # fmt: skip


def test_audit_warn_must_be_a_bool() -> None:
    with pytest.raises(InputError, match=r"warn must be True or False; got 'no'"):
        receval.audit_split(ROBUST, ROBUST, warn="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("suffix", [".qrels", ".trec"])
def test_trec_files_are_not_interactions(tmp_path: Path, suffix: str) -> None:
    # a qrels file was read as a run ("recs file ... is not a TREC run") for split, and as
    # qrels whose relevance became the train part's timestamps for audit_split: silently
    path = tmp_path / f"interactions{suffix}"
    path.write_text("1 0 5 1\n1 0 6 2\n2 0 5 3\n")
    match = rf"interactions file {str(path)!r} reads as TREC.*no timestamp"
    with pytest.raises(InputError, match=match):
        receval.split(path, "random", n=1)
    with pytest.raises(InputError, match=match.replace("interactions file", "train file")):
        receval.audit_split(path, ROBUST)
    csv = tmp_path / "interactions.csv"
    ROBUST.write_csv(csv)
    with pytest.raises(InputError, match=r"reads as TREC \(input_format='trec'\)"):
        receval.split(csv, "random", n=1, input_format="trec")
