"""Tests of the seeded interaction generator, receval.datasets.make_interactions."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from typing import Any

import numba
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.examples import examples
from receval.datasets import Interactions, make_interactions, make_train


@pytest.fixture(scope="module")
def data() -> Interactions:
    return make_interactions(20_000, seed=7)


def _assert_valid(data: Interactions, *, n_users: int, n_recs: int, n_items: int) -> None:
    truth, recs = data.truth, data.recs
    assert truth.columns == ["user", "item", "relevance"]
    assert recs.columns == ["user", "item", "score"]
    assert truth.n_unique(["user", "item"]) == truth.height
    assert recs.n_unique(["user", "item"]) == recs.height
    assert truth.null_count().sum_horizontal().item() == 0
    assert recs.null_count().sum_horizontal().item() == 0
    assert truth["user"].n_unique() == n_users
    assert truth["item"].is_between(0, n_items - 1).all()
    assert recs["item"].is_between(0, n_items - 1).all()
    assert recs.group_by("user").len()["len"].max() <= n_recs  # type: ignore[operator]
    # Grouped by user: every user's rows are one contiguous run, users ascending.
    runs = recs["user"].rle()
    assert runs.len() == recs["user"].n_unique()
    assert runs.struct.field("value").is_sorted()
    assert truth["user"].is_sorted()
    assert set(truth["relevance"].unique()) <= {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}


def test_columns_and_dtypes(data: Interactions) -> None:
    assert data.truth.schema == pl.Schema(
        {"user": pl.Int64, "item": pl.Int64, "relevance": pl.Float64}
    )
    assert data.recs.schema == pl.Schema({"user": pl.Int64, "item": pl.Int64, "score": pl.Float64})


def test_valid(data: Interactions) -> None:
    _assert_valid(data, n_users=20_000, n_recs=100, n_items=10_000)


def test_interactions_is_frozen(data: Interactions) -> None:
    with pytest.raises(AttributeError):
        data.truth = data.recs  # type: ignore[misc]


def test_deterministic() -> None:
    a = make_interactions(5000, seed=3)
    b = make_interactions(5000, seed=3)
    c = make_interactions(5000, seed=4)
    assert a.truth.equals(b.truth)
    assert a.recs.equals(b.recs)
    assert not a.recs.equals(c.recs)
    assert not a.truth.equals(c.truth)


def test_independent_of_thread_count() -> None:
    before = numba.get_num_threads()
    a = make_interactions(10_000, seed=5)
    try:
        numba.set_num_threads(1)
        b = make_interactions(10_000, seed=5)
    finally:
        numba.set_num_threads(before)
    assert a.truth.equals(b.truth)
    assert a.recs.equals(b.recs)


def _digest(*frames: pl.DataFrame) -> str:
    """The first 16 hex digits of a SHA-256 of the frames' names, dtypes and values."""
    h = hashlib.sha256()
    for frame in frames:
        for series in frame.get_columns():
            h.update(f"{series.name}:{series.dtype}:{series.len()}".encode())
            if series.dtype == pl.String:
                h.update("\n".join(series.to_list()).encode())
            else:
                h.update(np.ascontiguousarray(series.to_numpy()).tobytes())
    return h.hexdigest()[:16]


# Recorded from commit 20d6b72, whose generators were prange kernels: running the chunks on
# Python threads (and any later change) must give the very same data.
_RECORDED = [
    ({"n_users": 1, "seed": 0}, "a0112bcc8bc63bdd"),
    ({"n_users": 5000, "seed": 3}, "d80d587488bda764"),
    (
        {"n_users": 3000, "n_recs": 20, "n_items": 25, "seed": 11, "score_decimals": None,
         "graded": False},
        "49428a22a4c21337",
    ),
    (
        {"n_users": 2500, "n_recs": 1, "signal": 0.0, "seed": 2, "mean_relevant": 3.0},
        "42b1f4d62ab046c8",
    ),
    (
        {"n_users": 4200, "ids": "str", "seed": 9, "short_list_fraction": 0.3,
         "missing_recs_fraction": 0.1, "extra_recs_users_fraction": 0.2, "signal": 2.5},
        "aa0531299a93cb50",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "digest"), _RECORDED)
def test_same_data_as_recorded(kwargs: dict[str, Any], digest: str) -> None:
    data = make_interactions(**kwargs)
    assert _digest(data.truth, data.recs) == digest


def test_make_train_same_as_recorded() -> None:
    assert _digest(make_train(3000, seed=5)) == "207ad679ed4126c9"


def test_str_ids_match_int_ids() -> None:
    ints = make_interactions(500, seed=2)
    strs = make_interactions(500, seed=2, ids="str")
    assert strs.truth.schema == pl.Schema(
        {"user": pl.String, "item": pl.String, "relevance": pl.Float64}
    )
    assert strs.recs.schema == pl.Schema(
        {"user": pl.String, "item": pl.String, "score": pl.Float64}
    )
    for frame, expected in ((strs.truth, ints.truth), (strs.recs, ints.recs)):
        assert frame["user"].str.starts_with("u").all()
        assert frame["item"].str.starts_with("i").all()
        back = frame.with_columns(
            pl.col("user").str.slice(1).cast(pl.Int64), pl.col("item").str.slice(1).cast(pl.Int64)
        )
        assert back.equals(expected)


def test_user_fractions(data: Interactions) -> None:
    n_users = 20_000
    truth_users = set(data.truth["user"].unique())
    recs_users = set(data.recs["user"].unique())
    assert truth_users == set(range(n_users))
    assert len(truth_users - recs_users) == round(0.02 * n_users)  # missing_recs_fraction
    assert recs_users - truth_users == set(range(n_users, n_users + round(0.01 * n_users)))
    lengths = data.recs.group_by("user").len()["len"]
    n_short = (lengths < 100).sum()
    # 5% of truth users plus about 5% of the 200 extra users.
    assert round(0.05 * n_users) <= n_short <= round(0.05 * n_users) + 40
    zero_users = (
        data.truth.group_by("user").agg(pl.col("relevance").max()).filter(pl.col("relevance") == 0)
    )
    assert zero_users.height == round(0.01 * n_users)


def test_fractions_zero_and_one() -> None:
    none_missing = make_interactions(
        1000, short_list_fraction=0, missing_recs_fraction=0, extra_recs_users_fraction=0
    )
    assert none_missing.recs["user"].n_unique() == 1000
    assert (none_missing.recs.group_by("user").len()["len"] == 100).all()
    all_missing = make_interactions(100, short_list_fraction=0, missing_recs_fraction=1)
    assert all_missing.recs.height == 100 * 1  # only the one extra user has recs
    all_short = make_interactions(100, short_list_fraction=1, missing_recs_fraction=0)
    assert (all_short.recs.group_by("user").len()["len"] < 100).all()


def test_activity_heavy_tailed(data: Interactions) -> None:
    per_user = data.truth.group_by("user").len()["len"]
    assert per_user.min() == 1
    assert 9.0 < per_user.mean() < 11.0  # type: ignore[operator]
    assert per_user.median() < per_user.mean()  # type: ignore[operator]
    assert per_user.max() > 100  # type: ignore[operator]


def test_graded_relevance_skewed_low(data: Interactions) -> None:
    rel = data.truth.filter(pl.col("relevance") > 0)["relevance"]
    counts = [(rel == g).sum() for g in range(1, 6)]
    assert counts == sorted(counts, reverse=True)
    assert counts[0] > 0.3 * rel.len()
    assert counts[4] > 0


def test_ungraded_changes_only_relevance() -> None:
    graded = make_interactions(2000, seed=9)
    binary = make_interactions(2000, seed=9, graded=False)
    assert binary.recs.equals(graded.recs)
    assert binary.truth.select("user", "item").equals(graded.truth.select("user", "item"))
    assert set(binary.truth["relevance"].unique()) == {0.0, 1.0}
    assert ((binary.truth["relevance"] == 0) == (graded.truth["relevance"] == 0)).all()


def test_power_law_popularity(data: Interactions) -> None:
    n_items = 10_000
    top = n_items // 100
    for frame in (data.truth, data.recs):
        counts = frame["item"].value_counts(sort=True)["count"]
        share = float(counts.head(top).sum()) / float(counts.sum())
        assert share > 0.25, share  # uniform popularity would give 0.01
        # Zipf of exponent ~1: log frequency falls linearly in log rank with slope ~-1
        # (away from the head, which lists of 100 distinct items saturate in recs).
        ranks = np.arange(50, 2000)
        slope = np.polyfit(np.log(ranks + 1), np.log(counts.to_numpy()[ranks]), 1)[0]
        assert -1.3 < slope < -0.7, slope


def test_popular_items_are_not_small_ids(data: Interactions) -> None:
    top = data.truth["item"].value_counts(sort=True)["item"].head(100)
    assert top.max() > 1000  # type: ignore[operator]


def test_ties(data: Interactions) -> None:
    per_user = data.recs.group_by("user").agg((pl.len() - pl.col("score").n_unique()).alias("tied"))
    assert per_user["tied"].mean() > 1  # type: ignore[operator]
    assert (data.recs["score"] * 100).round(6).equals((data.recs["score"] * 100).round(0))


def test_no_ties_at_full_precision() -> None:
    recs = make_interactions(1000, score_decimals=None).recs
    assert recs.n_unique(["user", "score"]) == recs.height


def test_not_sorted_by_score(data: Interactions) -> None:
    sorted_users = data.recs.group_by("user").agg(
        pl.col("score").is_sorted(descending=True).alias("desc")
    )
    assert sorted_users["desc"].mean() < 0.05  # type: ignore[operator]


def _hit_rate_at_10(data: Interactions) -> float:
    top = (
        data.recs.sort(["user", "score"], descending=[False, True])
        .group_by("user", maintain_order=True)
        .head(10)
    )
    relevant = data.truth.filter(pl.col("relevance") >= 1)
    hits = top.join(relevant, on=["user", "item"]).select("user").unique().height
    return hits / relevant["user"].n_unique()


def test_signal_improves_ranking() -> None:
    rates = [_hit_rate_at_10(make_interactions(3000, signal=s, seed=1)) for s in (0, 1, 3)]
    assert rates[0] < rates[1] < rates[2]


def test_higher_grades_recommended_more(data: Interactions) -> None:
    joined = data.truth.join(data.recs, on=["user", "item"], how="left")
    by_grade = (
        joined.filter(pl.col("relevance") > 0)
        .group_by("relevance")
        .agg(pl.col("score").is_not_null().mean().alias("recommended"))
        .sort("relevance")["recommended"]
    )
    assert by_grade.is_sorted()
    assert by_grade[-1] > by_grade[0] + 0.1


def test_tiny() -> None:
    one = make_interactions(1)
    _assert_valid(one, n_users=1, n_recs=100, n_items=1000)
    assert one.recs["user"].unique().to_list() == [0]
    assert one.recs.height == 100


def test_lists_as_long_as_the_catalogue() -> None:
    data = make_interactions(300, n_items=8, n_recs=8, mean_relevant=6, seed=11)
    _assert_valid(data, n_users=300, n_recs=8, n_items=8)
    lengths = data.recs.group_by("user").len()
    assert lengths["len"].max() == 8
    assert data.truth.group_by("user").len()["len"].max() <= 8  # type: ignore[operator]


def test_n_recs_above_catalogue_is_capped() -> None:
    data = make_interactions(10, n_items=3, n_recs=50, short_list_fraction=0)
    assert (data.recs.group_by("user").len()["len"] == 3).all()


@settings(max_examples=examples(40), deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "n_users": st.integers(1, 60),
            "n_items": st.integers(1, 40),
            "n_recs": st.integers(1, 40),
            "mean_relevant": st.floats(1, 20),
            "score_decimals": st.one_of(st.none(), st.integers(0, 3)),
            "signal": st.floats(0, 5),
            "short_list_fraction": st.floats(0, 0.5),
            "missing_recs_fraction": st.floats(0, 0.5),
            "extra_recs_users_fraction": st.floats(0, 1),
            "seed": st.integers(0, 2**32),
        }
    )
)
def test_invariants(params: dict[str, Any]) -> None:
    data = make_interactions(**params)
    n_items = params["n_items"]
    _assert_valid(
        data,
        n_users=params["n_users"],
        n_recs=min(params["n_recs"], n_items),
        n_items=n_items,
    )


def test_scales_to_100k_users_quickly() -> None:
    make_interactions(10)  # compiled kernels loaded
    start = time.perf_counter()
    data = make_interactions(100_000)
    elapsed = time.perf_counter() - start
    assert data.recs.height > 9_000_000
    assert elapsed < 30, elapsed


def _bad_arguments() -> Iterator[tuple[dict[str, object], str]]:
    yield {"n_users": 0}, "n_users must be an integer >= 1; got 0"
    yield {"n_users": 1.5}, "n_users must be an integer"
    yield {"n_items": 0}, "n_items must be an integer >= 1 or None; got 0"
    yield {"n_recs": 0}, "n_recs must be an integer >= 1; got 0"
    yield {"mean_relevant": 0.5}, "mean_relevant must be a finite number >= 1; got 0.5"
    yield {"mean_relevant": float("nan")}, "mean_relevant must be a finite number"
    yield {"score_decimals": -1}, "score_decimals must be an integer >= 0 or None; got -1"
    yield {"short_list_fraction": 1.5}, r"short_list_fraction must be in \[0, 1\]; got 1.5"
    yield {"missing_recs_fraction": -0.1}, r"missing_recs_fraction must be in \[0, 1\]"
    yield {"extra_recs_users_fraction": 2}, r"extra_recs_users_fraction must be in \[0, 1\]"
    yield (
        {"short_list_fraction": 0.6, "missing_recs_fraction": 0.6},
        r"short_list_fraction \+ missing_recs_fraction must be <= 1",
    )
    yield {"signal": -1.0}, "signal must be a finite number >= 0; got -1.0"
    yield {"ids": "uuid"}, "ids must be one of 'int', 'str'; got 'uuid'"
    yield {"seed": -1}, r"seed must be an integer from 0 to 2\^64 - 1 .*; got -1 \(int\)"


@pytest.mark.parametrize(("kwargs", "match"), list(_bad_arguments()))
def test_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        make_interactions(**kwargs)  # type: ignore[arg-type]
    assert type(info.value).__name__ == "InputError"
