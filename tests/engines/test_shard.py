"""The distributed engine simulated in Python (``receval.engines.shard.evaluate_sharded``) equals
``receval.evaluate`` exactly, for every registered metric.

``evaluate_sharded`` splits the users into ``n_shards`` at random, evaluates each shard with the
local kernels and merges the shards with the code the Spark engine uses. Its result must be the
local result to the last bit: means (NaN where local is NaN), the ``per_user`` frame, counts,
details and settings. Spark itself is tested in test_spark.py, which reuses the data and the
comparison (tests/helpers/shard.py).

The data has ties in scores (five distinct values), short lists, users with no relevant item,
truth users without recs, recs users not in truth, graded relevance 0..3, a train table (with
repeated rows, users outside truth and items never trained on) and an item table with an 8-d
vector column and a genre column (plus catalog items never recommended). Rating metrics run on
a separate table whose scores are predicted ratings.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from helpers.examples import examples
from helpers.shard import (
    DATA,
    TIES,
    assert_same,
    family_metrics,
    frame,
    groups,
)
from receval import InputError
from receval.engines.shard import evaluate_sharded

# Undefined ratios (NaN), rows without a prediction, ils without pairs: warnings, not errors.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_groups_cover_the_registry() -> None:
    names = {
        receval.parse_metric(m).name
        for _, _, metrics, _ in groups(DATA["int"]).values()
        for m in metrics
    }
    assert names == {s.name for s in receval.list_metrics()}


def test_the_data_has_what_it_claims() -> None:
    data = DATA["int"]
    truth, recs = data["truth"], data["recs"]
    t_users, r_users = set(truth["user"]), set(recs["user"])
    assert t_users - r_users, "no truth user without recs"
    assert r_users - t_users, "no recs user outside truth"
    best = truth.group_by("user").agg(pl.col("relevance").max())
    assert (best["relevance"] == 0).any(), "no user without a relevant item"
    assert set(truth["relevance"]) == {0.0, 1.0, 2.0, 3.0}
    assert recs.n_unique(["user", "score"]) < recs.height, "no ties"
    lengths = recs.group_by("user").len()["len"]
    assert lengths.min() == 1 and lengths.max() == 12  # type: ignore[operator]
    assert set(recs["item"]) <= set(data["items"]["item"])
    assert set(data["items"]["item"]) - set(recs["item"]), "every catalog item recommended"
    assert set(recs["item"]) - set(data["train"]["item"]), "every item trained on"
    preds = data["predictions"]
    assert data["ratings"].join(preds, on=["user", "item"], how="anti").height
    assert preds.join(data["ratings"], on="user", how="anti").height


# ------------------------------------------------------------------------------ the tests


def both(
    truth: Any, recs: Any, metrics: list[str], n_shards: int, seed: int = 0, **options: Any
) -> tuple[receval.Result, receval.Result]:
    local = receval.evaluate(truth, recs, metrics, **options)
    sharded = evaluate_sharded(truth, recs, metrics, n_shards=n_shards, seed=seed, **options)
    return sharded, local


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("no_recs", ["zero", "skip"])
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("n_shards", [1, 3, 7])
def test_sharded_equals_local(n_shards: int, ties: str, no_recs: str, ids: str) -> None:
    for name, (truth, recs, metrics, options) in groups(DATA[ids]).items():
        if name in ("classification", "rating") and ties != "expected":
            continue  # rows, not ranked lists: ties change nothing there
        sharded, local = both(
            truth, recs, metrics, n_shards, seed=n_shards, ties=ties, no_recs=no_recs, **options
        )
        try:
            assert_same(sharded, local)
        except AssertionError as exc:
            raise AssertionError(f"group {name}: {exc}") from exc


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shard_seed_never_matters(seed: int) -> None:
    truth, recs, metrics, options = groups(DATA["str"])["ranking"]
    sharded, local = both(truth, recs, metrics, 4, seed=seed, **options)
    assert_same(sharded, local)


@pytest.mark.parametrize("ties", TIES)
def test_rank_column(ties: str) -> None:
    data = DATA["int"]
    # ranks 1.. in score order (ties keep equal ranks: dense rank of -score)
    recs = (
        data["recs"]
        .with_columns(
            pl.col("score").rank("dense", descending=True).over("user").cast(pl.Int64).alias("rank")
        )
        .drop("score")
    )
    metrics = family_metrics("ranking")
    sharded, local = both(data["truth"], recs, metrics, 3, rank_col="rank", ties=ties)
    assert_same(sharded, local)


def test_relevance_threshold_and_other_columns() -> None:
    data = DATA["str"]
    truth = data["truth"].rename({"user": "u", "item": "i", "relevance": "grade"})
    recs = data["recs"].rename({"user": "u", "item": "i", "score": "s"})
    metrics = [*family_metrics("ranking"), *family_metrics("classification")]
    sharded, local = both(
        truth, recs, metrics, 5, user_col="u", item_col="i", score_col="s",
        relevance_col="grade", relevance_threshold=2,
    )  # fmt: skip
    assert_same(sharded, local)
    assert sharded.per_user.columns[0] == "u"


def test_rating_range_and_no_recs_skip() -> None:
    data = DATA["int"]
    metrics = family_metrics("rating")
    for no_recs in ("zero", "skip"):
        sharded, local = both(
            data["ratings"], data["predictions"], metrics, 6, no_recs=no_recs, rating_range=(0, 6)
        )
        assert_same(sharded, local)


def test_no_recs_raise_raises_in_both() -> None:
    data = DATA["int"]
    metrics = family_metrics("ranking")
    with pytest.raises(InputError, match=r"no_recs='raise'") as local:
        receval.evaluate(data["truth"], data["recs"], metrics, no_recs="raise")
    with pytest.raises(InputError, match=r"no_recs='raise'") as sharded:
        evaluate_sharded(data["truth"], data["recs"], metrics, n_shards=3, no_recs="raise")
    assert "evaluated user(s) have no recommendations" in str(local.value)
    assert "evaluated user(s) have no recommendations" in str(sharded.value)


def test_no_recs_raise_without_missing_users_equals_local() -> None:
    data = DATA["str"]
    truth = data["truth"].join(data["recs"].select("user").unique(), on="user", how="semi")
    for name in ("ranking", "classification", "beyond_cosine"):
        _, recs, metrics, options = groups(data)[name]
        sharded, local = both(truth, recs, metrics, 3, no_recs="raise", **options)
        assert_same(sharded, local)


# --------------------------------------------------------------------- degenerate sharding


def tiny() -> dict[str, pl.DataFrame]:
    """Five users: one with truth and recs, two truth-only, two recs-only."""
    truth = pl.DataFrame(
        {
            "user": [1, 1, 1, 2, 3],
            "item": [10, 11, 12, 10, 13],
            "relevance": [2.0, 0.0, 1.0, 1.0, 3.0],
        }
    )
    recs = pl.DataFrame(
        {
            "user": [1, 1, 1, 4, 4, 5],
            "item": [10, 11, 14, 10, 13, 12],
            "score": [0.5, 0.5, 0.25, 1.0, 0.0, 0.75],
        }
    )
    items = pl.DataFrame(
        {
            "item": [10, 11, 12, 13, 14, 15],
            "vec": [[float(i), 1.0, -1.0, 0.5, 0.0, 2.0, 1.0, float(i % 3)] for i in range(6)],
            "genre": ["g1", "g2", "g1", "g3", "g2", "g1"],
        }
    )
    train = pl.DataFrame({"user": [1, 2, 6, 6], "item": [10, 10, 11, 15]})
    return {"truth": truth, "recs": recs, "items": items, "train": train}


@pytest.mark.parametrize("n_shards", [5, 6, 9, 20])
@pytest.mark.parametrize("seed", range(4))
def test_more_shards_than_users(n_shards: int, seed: int) -> None:
    """Shards with no rows at all, with truth rows only and with recs rows only."""
    data = tiny()
    metrics = [
        *family_metrics("ranking", ks=(None, 2)),
        *family_metrics("classification"),
        *family_metrics("beyond", ks=(None, 2)),
    ]
    for ties in ("expected", "first"):
        for no_recs in ("zero", "skip"):
            sharded, local = both(
                data["truth"], data["recs"], metrics, n_shards, seed=seed, ties=ties,
                no_recs=no_recs, train=data["train"], items=data["items"], item_features="vec",
            )  # fmt: skip
            assert_same(sharded, local)
    ratings = data["truth"].with_columns(pl.col("relevance") + 1)
    sharded, local = both(ratings, data["recs"], family_metrics("rating"), n_shards, seed=seed)
    assert_same(sharded, local)


# --------------------------------------------------------------------- hypothesis property


@st.composite
def small_data(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Up to 8 users on 9 items, integer scores 0..2 / 2 (ties), relevance 0..3; user 0 has a
    relevant and a non-relevant recommended item (so AUC and AP are defined)."""
    truth: list[tuple[int, int, float]] = [(0, 0, 2.0), (0, 1, 0.0)]
    recs: list[tuple[int, int, float]] = [
        (0, 0, draw(st.integers(0, 2)) / 2),
        (0, 1, draw(st.integers(0, 2)) / 2),
    ]
    for u in range(1, draw(st.integers(1, 8))):
        if draw(st.booleans()):
            judged = draw(st.lists(st.integers(0, 8), min_size=1, max_size=5, unique=True))
            truth += [(u, i, float(draw(st.integers(0, 3)))) for i in judged]
        if draw(st.booleans()):
            listed = draw(st.lists(st.integers(0, 8), min_size=1, max_size=6, unique=True))
            recs += [(u, i, draw(st.integers(0, 2)) / 2) for i in listed]
    recs = draw(st.permutations(recs))
    return frame(list(truth), "relevance"), frame(list(recs), "score")


HYP_METRICS = [
    *("ndcg@3", "map", "mrr@2", "recall(average=micro)@2", "hit_rate@1", "precision@4"),
    *("ndcg(gain=exp)", "map(denominator=min)@3", "r_precision"),
    *("coverage@2", "gini", "entropy@3", "novelty@2", "arp", "long_tail@3", "ils@3", "diversity"),
    *("auc", "gauc", "average_precision", "logloss", "ppv", "tpr(threshold=1)", "fbeta_score"),
]
HYP_ITEMS = pl.DataFrame(
    {
        "item": list(range(9)),
        "vec": [[math.cos(i), math.sin(i), (i % 3) - 1.0] for i in range(9)],
    }
)
HYP_TRAIN = pl.DataFrame({"user": [i % 4 for i in range(20)], "item": [i % 7 for i in range(20)]})


@settings(max_examples=examples(60), deadline=None)
@given(
    data=small_data(),
    n_shards=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    ties=st.sampled_from(TIES),
    no_recs=st.sampled_from(["zero", "skip"]),
)
def test_property_sharded_equals_local(
    data: tuple[pl.DataFrame, pl.DataFrame], n_shards: int, seed: int, ties: str, no_recs: str
) -> None:
    truth, recs = data
    sharded, local = both(
        truth, recs, HYP_METRICS, n_shards, seed=seed, ties=ties, no_recs=no_recs,
        train=HYP_TRAIN, items=HYP_ITEMS, item_features="vec",
    )  # fmt: skip
    assert_same(sharded, local)
