"""receval.audit_split on hand-made leaky splits (exact counts, warnings) and against the
brute-force audit of tests/helpers/split_reference.py; the bad input of split and audit."""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import polars as pl
import pytest

import receval
from helpers import split_reference as ref
from receval import InputError, LeakageWarning


def audit(train: pl.DataFrame, test: pl.DataFrame, **kwargs: object) -> receval.SplitAudit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeakageWarning)
        return receval.audit_split(train, test, **kwargs)  # type: ignore[arg-type]


def frame(rows: list[tuple[object, object, object]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["user", "item", "timestamp"], orient="row")


# --- the leakage cases of docs/protocol.md, by hand --------------------------------------------


def test_per_user_temporal_split_lets_the_future_in() -> None:
    # each user's last interaction is test; ann's (t=2) precedes bob's training (t=5, 6)
    train = frame([("ann", 1, 1), ("bob", 2, 5), ("bob", 3, 6)])
    test = frame([("ann", 4, 2), ("bob", 1, 7)])
    with pytest.warns(LeakageWarning, match=r"1 test rows \(50.0%\) are earlier than the latest"):
        a = receval.audit_split(train, test)
    assert a["test_before_train_end"] == 1 and a.share("test_before_train_end") == 0.5
    assert a["train_after_test_start"] == 2 and a.share("train_after_test_start") == 2 / 3
    assert a["test_before_user_train_end"] == 0
    assert a.warnings == tuple(a.warnings) and len(a.warnings) == 1


def test_own_future_in_training() -> None:
    train = frame([("ann", 1, 1), ("ann", 2, 9)])
    test = frame([("ann", 3, 5)])
    a = audit(train, test)
    assert a["test_before_user_train_end"] == 1
    assert any("the user's own future" in w for w in a.warnings)


def test_ties_across_the_split_warn_when_the_tie_break_is_unknown() -> None:
    # ann's items 1 and 2 share t=3; a split broke the tie by item id: 1 in train, 2 in test
    train = frame([("ann", 0, 1), ("ann", 1, 3), ("bob", 5, 1)])
    test = frame([("ann", 2, 3), ("bob", 6, 2)])
    a = audit(train, test)
    assert (a["ties_at_user_cut"], a["ties_at_global_cut"]) == (1, 1)
    assert any("tie-break decided their side" in w and "20%" in w for w in a.warnings)


def test_pairs_in_train_and_cold_and_relevance() -> None:
    train = frame([("ann", 1, 1), ("ann", 2, 2), ("bob", 1, 1)])
    test = frame([("ann", 1, 5), ("cat", 1, 5), ("bob", 9, 5), ("bob", 8, 6)]).with_columns(
        rating=pl.Series([5, 2, 1, 3])
    )
    a = audit(train, test, relevance_col="rating", relevance_threshold=4)
    assert a["test_pairs_in_train"] == 1
    assert (a["cold_test_users"], a.share("cold_test_users")) == (1, 1 / 3)
    assert (a["cold_test_items"], a["cold_item_test_rows"]) == (2, 2)
    assert a["test_users_without_relevant"] == 2  # cat (2) and bob (1, 3); ann has a 5
    assert a["train_users_without_test"] == 0
    assert any("from memory" in w for w in a.warnings)
    assert audit(train, test)["test_users_without_relevant"] == 0  # no relevance_col


def test_validation_is_audited_against_train() -> None:
    train = frame([("ann", 1, 1), ("bob", 2, 8)])
    val = frame([("ann", 3, 2)])
    test = frame([("ann", 4, 9), ("bob", 5, 9)])
    a = audit(train, test, validation=val)
    assert a["test_before_train_end"] == 0
    assert a["validation.test_before_train_end"] == 1
    assert any(w.startswith("1 validation rows") for w in a.warnings)


def test_no_time_column_skips_the_time_checks() -> None:
    train = pl.DataFrame({"user": [1, 2], "item": [1, 2]})
    test = pl.DataFrame({"user": [1], "item": [3]})
    a = audit(train, test)
    assert a["test_before_train_end"] is None and a.share("test_before_train_end") is None
    assert a["cold_test_items"] == 1
    assert any("time checks skipped" in n for n in a.notes)


def test_warn_false_and_no_leak_no_warning() -> None:
    train = frame([("ann", 1, 1), ("bob", 2, 2)])
    test = frame([("ann", 4, 3), ("bob", 1, 4)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = receval.audit_split(train, test)
        assert not a.warnings
        leaky = receval.audit_split(test, train, warn=False)  # reversed: leaks, silently
    assert leaky.warnings and leaky["test_before_train_end"] == 2


def test_datetime_and_mixed_int_widths() -> None:
    day = dt.datetime(2024, 1, 1)
    train = pl.DataFrame(
        {"user": pl.Series([1, 2], dtype=pl.Int32), "item": [1, 2],
         "timestamp": [day, day + dt.timedelta(days=3)]}
    )  # fmt: skip
    test = pl.DataFrame({"user": [1], "item": [2], "timestamp": [day + dt.timedelta(days=1)]})
    a = audit(train, test)
    assert a["test_before_train_end"] == 1 and a["cold_test_items"] == 0


def test_audit_matches_reference_on_random_splits() -> None:
    rng = np.random.default_rng(11)
    for _ in range(25):
        rows = ref.random_rows(rng, int(rng.integers(2, 60)), 5, 8, 6)
        side = rng.random(rows.height) < 0.6
        train, test = rows.filter(pl.Series(side)), rows.filter(~pl.Series(side))
        if not train.height or not test.height:
            continue
        relevant = list(rng.random(test.height) < 0.5)
        test = test.with_columns(rel=pl.Series(relevant).cast(pl.Int64))
        a = audit(train, test, relevance_col="rel")
        expected = ref.audit(ref.as_rows(train), ref.as_rows(test), relevant)
        found = {c: a[c] for c in expected}
        assert found == expected


# --- bad input -------------------------------------------------------------------------------

DATA = pl.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 3, 4], "timestamp": [1, 2, 3, 4]})


@pytest.mark.parametrize(
    ("data", "method", "options", "match"),
    [
        (DATA, "nope", {}, r"method must be one of temporal_global, .*; got 'nope'"),
        (DATA, "temporal_user", {"fraction": 0}, r"fraction must be a number in \(0, 1\)"),
        (DATA, "temporal_user", {"fraction": 1.0}, r"fraction must be a number in \(0, 1\)"),
        (DATA, "temporal_user", {"fraction": -0.5}, r"fraction must be a number in \(0, 1\)"),
        (DATA, "temporal_user", {"fraction": "0.5"}, r"fraction must be a number in \(0, 1\)"),
        (DATA, "temporal_user", {"n": 0}, r"n must be an integer >= 1; got 0"),
        (DATA, "temporal_user", {"n": 1.5}, r"n must be an integer >= 1; got 1.5"),
        (DATA, "temporal_user", {}, r"method 'temporal_user' needs n or fraction"),
        (DATA, "temporal_user", {"n": 1, "fraction": 0.5}, r"give n or fraction, not both"),
        (DATA, "temporal_user", {"n": 1, "cutoff": 2}, r"cutoff does not apply to method "),
        (DATA, "random", {"n": 1, "ties": "together"}, r"ties does not apply to method 'random'"),
        (DATA, "leave_one_out", {"by": "random", "ties": "together"}, r"ties applies when"),
        (DATA, "leave_one_out", {"by": "item"}, r"by must be one of time, random"),
        (DATA, "temporal_global", {}, r"needs exactly one of cutoff .* and fraction"),
        (DATA, "temporal_global", {"cutoff": 1}, r"cutoff 1 is outside the data's time range: "
         r"timestamps go from 1 to 4, so train \(before it\) would be empty"),
        (DATA, "temporal_global", {"cutoff": 5}, r"so test \(at or after it\) would be empty"),
        (DATA, "temporal_global", {"cutoff": dt.date(2020, 1, 1)}, r"cutoff .* must be a number"),
        (DATA, "temporal_global", {"cutoff": 3, "end": 0}, r"end 0 removes every interaction"),
        (DATA, "temporal_global", {"fraction": 0.1}, r"fraction leaves no test row: 0 of the 4"),
        (DATA, "temporal_global", {"validation_cutoff": 2, "fraction": 0.5},
         r"validation_cutoff needs cutoff"),
        (DATA, "random", {"n": 4}, r"n leaves no train row: 4 of the 4"),
        (DATA, "kfold_user", {"n": 1, "k": 1}, r"k must be an integer >= 2; got 1"),
        (DATA, "kfold_user", {"n": 1, "k": 3}, r"k \(3\) must be at most the number of users"),
        (DATA, "kfold_user", {}, r"needs n or fraction \(the part of each user held out"),
        (DATA, "random", {"n": 1, "seed": -1}, r"seed must be an integer from 0 to 2\^64 - 1"),
        (DATA, "random", {"n": 1, "duplicates": "drop"}, r"duplicates must be one of first, "),
        (DATA, "random", {"n": 1, "min_user_interactions": 0}, r"min_user_interactions must be"),
        (DATA, "random", {"n": 1, "drop_cold": True}, r"drop_cold must be one of none, users"),
        (DATA.drop("timestamp"), "leave_one_out", {},
         r"missing column 'timestamp' .* this split orders interactions by time: pass time_col="),
        (DATA, "leave_one_out", {"time_col": None}, r"orders interactions by time: time_col="),
        (DATA.drop("user"), "random", {"n": 1}, r"missing column 'user' .* pass user_col="),
        (DATA.with_columns(pl.col("timestamp").cast(pl.String)), "leave_one_out", {},
         r"column 'timestamp' \(timestamps\) must be .* got String: parse it first"),
        (DATA.with_columns(timestamp=pl.Series([1, None, 3, 4])), "leave_one_out", {},
         r"1 null value\(s\) in column 'timestamp' \(timestamps\).*\n  row 1: user=1"),
        (DATA.with_columns(timestamp=pl.Series([1.0, float("nan"), 3, 4])), "leave_one_out", {},
         r"1 NaN value\(s\) in column 'timestamp'.*cannot be ordered"),
        (DATA.with_columns(pl.col("item").cast(pl.Float64)), "random", {"n": 1},
         r"column 'item' holds ids and must be integers or strings; got Float64"),
        (DATA.head(0), "random", {"n": 1}, r"interactions is empty \(0 rows\)"),
        (DATA, "random", {"n": 1, "user_col": "x", "item_col": "x"},
         r"user_col and item_col both name column 'x'"),
    ],
)  # fmt: skip
def test_bad_input(data: pl.DataFrame, method: str, options: dict[str, object], match: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LeakageWarning)
        with pytest.raises(InputError, match=match):
            receval.split(data, method, **options)  # type: ignore[arg-type]


def test_audit_bad_input() -> None:
    train = DATA
    with pytest.raises(InputError, match=r"column 'item' \(item ids\) has different types"):
        audit(train, DATA.with_columns(pl.col("item").cast(pl.String)))
    with pytest.raises(InputError, match=r"column 'timestamp' \(timestamps\) has different"):
        audit(train, DATA.with_columns(pl.col("timestamp").cast(pl.Datetime)))
    with pytest.raises(InputError, match=r"test is missing column 'rel' \(relevance_col\)"):
        audit(train, DATA, relevance_col="rel")
    with pytest.raises(InputError, match=r"test is missing column 'item'"):
        audit(train, DATA.drop("item"))
