"""One evaluate call across metric families equals the families evaluated one at a time.

``evaluate`` builds the layout once and hands each family's metrics to its part; this module
checks the merge (means in request order, per-user columns joined on the user, details). That
every registered metric runs through the registry-driven common suite is checked in
test_common.py.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import receval
from receval.datasets import make_interactions, make_items, make_train

# the generated truth has rows without a recs row: rating metrics warn that they predict 0 there
pytestmark = pytest.mark.filterwarnings("ignore:.*have no predicted rating:UserWarning")

FAMILIES = {
    "ranking": ["ndcg@10", "recall(rel=2)@20", "mrr"],
    "classification": ["auc", "gauc", "gauc(weight=uniform)", "tpr(threshold=1)"],
    "rating": ["rmse(average=user)", "mae"],
    "beyond": ["coverage@10", "novelty@10", "ils@5", "gini@10"],
}


@pytest.fixture(scope="module", params=["int", "str"])
def data(request: pytest.FixtureRequest) -> dict[str, object]:
    ids = request.param
    inter = make_interactions(400, n_items=300, ids=ids, seed=3)
    return {
        "truth": inter.truth,
        "recs": inter.recs,
        "train": make_train(200, n_items=300, ids=ids, seed=4),
        "items": make_items(300, dim=8, ids=ids, seed=5),
        "item_features": "embedding",
    }


def run(data: dict[str, object], metrics: list[str]) -> receval.Result:
    opts = {k: v for k, v in data.items() if k not in ("truth", "recs")}
    return receval.evaluate(data["truth"], data["recs"], metrics, **opts)  # type: ignore[arg-type]


def test_mixed_request_equals_each_family_alone(data: dict[str, object]) -> None:
    # interleave the families so that request order differs from family order
    request = [m for group in zip(*[v[:2] for v in FAMILIES.values()], strict=True) for m in group]
    request += [m for v in FAMILIES.values() for m in v[2:]]
    mixed = run(data, request)
    assert mixed.metrics == tuple(request)
    assert list(mixed.means) == request

    users: set[object] = set()
    for family, metrics in FAMILIES.items():
        alone = run(data, metrics)
        for m in metrics:
            assert math.isclose(mixed[m], alone[m], rel_tol=0, abs_tol=0), (family, m)
            if m in alone.details:
                assert mixed.details[m] == alone.details[m]
        per = alone.per_user
        users |= set(per["user"].to_list())
        # the mixed frame restricted to this family's users and columns is the family's frame
        cols = [c for c in per.columns if c != "user"]
        got = mixed.per_user.join(per.select("user"), on="user", how="semi").select("user", *cols)
        assert_frame_equal(got, per)
        # users outside the family's frame have null in its columns
        others = mixed.per_user.join(per.select("user"), on="user", how="anti")
        assert others.select(pl.col(cols).is_null().all()).row(0) == tuple([True] * len(cols))

    per_user_cols = [m for m in request if m in mixed.per_user.columns]
    assert mixed.per_user.columns == ["user", *per_user_cols]
    # per-user metrics of every family made it into the frame; global ones did not
    assert {"ndcg@10", "gauc", "rmse(average=user)", "novelty@10"} <= set(per_user_cols)
    assert not {"auc", "mae", "coverage@10", "gini@10"} & set(per_user_cols)
    assert set(mixed.per_user["user"].to_list()) == users
    assert mixed.per_user["user"].is_sorted()
    assert mixed.per_user["user"].is_unique().all()

    doc = mixed.to_dict()
    assert set(doc) == {"metrics", "counts", "settings", "details"}
    assert doc["details"] == mixed.details


def test_family_only_requests_keep_the_counts(data: dict[str, object]) -> None:
    ranking = run(data, FAMILIES["ranking"]).counts
    for family in ("classification", "rating", "beyond"):
        assert run(data, FAMILIES[family]).counts == ranking


def test_global_only_request_has_a_user_column_and_no_rows(data: dict[str, object]) -> None:
    res = run(data, ["auc", "coverage@10"])
    assert res.per_user.columns == ["user"]
    assert res.per_user.height == 0
    assert res.per_user.schema["user"] == data["truth"].schema["user"]  # type: ignore[attr-defined]
