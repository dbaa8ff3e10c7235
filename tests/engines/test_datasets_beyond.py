"""The generators of beyond-metric inputs: receval.datasets.make_train and make_items."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import receval
from receval import InputError
from receval.datasets import make_interactions, make_items, make_train


def test_make_train_shape_and_long_tail() -> None:
    train = make_train(2000, n_items=3000, mean_items=15, seed=3)
    assert train.columns == ["user", "item"]
    assert train.schema == pl.Schema({"user": pl.Int64, "item": pl.Int64})
    assert train.n_unique(["user", "item"]) == train.height  # distinct pairs
    assert train.equals(train.sort("user", "item"))
    assert train["user"].n_unique() == 2000  # every user has at least one item
    assert train["item"].min() >= 0
    assert train["item"].max() < 3000  # type: ignore[operator]
    pop = np.sort(train["item"].value_counts()["count"].to_numpy())[::-1]
    top_share = pop[: len(pop) // 10].sum() / pop.sum()
    assert top_share > 0.5  # the top 10% of items hold most interactions
    per_user = train.group_by("user").len()["len"]
    assert 8 < per_user.mean() < 16  # type: ignore[operator]


def test_make_train_is_seeded_and_string_ids() -> None:
    a = make_train(300, n_items=100, seed=9)
    assert a.equals(make_train(300, n_items=100, seed=9))
    assert not a.equals(make_train(300, n_items=100, seed=10))
    s = make_train(300, n_items=100, seed=9, ids="str")
    assert s.schema == pl.Schema({"user": pl.String, "item": pl.String})
    assert s.height == a.height
    assert s["item"].str.starts_with("i").all()


def test_make_items_columns_and_genre_structure() -> None:
    items = make_items(600, dim=16, n_genres=6, seed=2)
    assert items.columns == ["item", "embedding", "genre", "genres", "year"]
    assert items["embedding"].dtype == pl.Array(pl.Float32, 16)
    assert items["item"].to_list() == list(range(600))
    assert items.null_count().sum_horizontal().item() == 0
    assert items["year"].is_between(1950, 2024).all()
    first = items["genres"].list.first()
    assert (first == items["genre"]).all()  # genres start with the main genre
    lengths = items["genres"].list.len()
    assert lengths.min() >= 1
    assert lengths.max() <= 3  # type: ignore[operator]
    assert (items["genres"].list.n_unique() == lengths).all()
    vectors = items["embedding"].to_numpy().astype(np.float64)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = unit @ unit.T
    same = items["genre"].to_numpy()[:, None] == items["genre"].to_numpy()[None, :]
    off_diagonal = ~np.eye(600, dtype=bool)
    assert cos[same & off_diagonal].mean() > 0.3
    assert abs(cos[~same].mean()) < 0.2
    assert make_items(50, seed=2, ids="str")["item"][0] == "i0"
    assert make_items(50, seed=2).equals(make_items(50, seed=2))


def test_generators_feed_every_beyond_metric() -> None:
    data = make_interactions(200, n_items=300, n_recs=20, seed=1)
    train = make_train(400, n_items=300, seed=1)
    items = make_items(300, dim=8, seed=1)
    metrics = ["coverage@10", "gini@10", "entropy@10", "novelty@10", "arp@10",
               "long_tail@10", "ils@10", "diversity@10"]  # fmt: skip
    res = receval.evaluate(data.truth, data.recs, metrics, train=train, items=items,
                           item_features="embedding")  # fmt: skip
    assert all(np.isfinite(list(res.means.values())))
    jac = receval.evaluate(data.truth, data.recs, "ils@10", items=items,
                           item_features=["genres", "year"])  # fmt: skip
    assert 0 < jac["ils@10"] < 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: make_train(0), r"^n_users must be an integer >= 1; got 0\.$"),
        (lambda: make_train(5, mean_items=0), r"^mean_items must be a finite number > 0; got 0\.$"),
        (lambda: make_train(5, ids="uuid"), r"^ids must be 'int' or 'str'; got 'uuid'\.$"),
        (lambda: make_items(10, dim=0), r"^dim must be an integer >= 1; got 0\.$"),
        (
            lambda: make_items(10, seed=-1),
            r"^seed must be an integer from 0 to 2\^64 - 1 .*; got -1 \(int\)\.$",
        ),
    ],
)
def test_bad_arguments(call: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()  # type: ignore[operator]
