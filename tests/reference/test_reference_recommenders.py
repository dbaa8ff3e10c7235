"""receval's ``unexpectedness``, ``serendipity``, ``diversity`` and ``coverage`` against
Microsoft Recommenders' own ``recommenders.evaluation.python_evaluation`` (issue 16;
docs/serendipity.md, docs/beyond.md).

The names map as docs/serendipity.md says: ``user_serendipity`` with every item relevant (its
default ``col_relevance=None``) is ``unexpectedness``; with ``col_relevance`` the 0/1 truth
relevance it is ``serendipity``; ``user_diversity`` is ``diversity`` (1 - the mean pairwise
cosine); ``catalog_coverage`` (distinct recommended items over distinct train items) is
``coverage`` with train's items as the item table. Similarity is the cosine of item feature
vectors (``item_sim_measure="item_feature_vector"``). Recommenders scores every row of
``reco_df``, so receval's metrics run without ``@K``.

Recommenders 1.2.1 requires a long list of packages for its models (transformers, jupyter,
lightgbm, ...) that ``python_evaluation`` never imports; it runs in a virtual environment of
its own, built once per test session from the package registry with ``--no-deps`` and the
three packages that module imports, pinned (a pandas 3 copy-on-write would turn its in-place
``fillna`` into a no-op).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import receval
from helpers import side_env

_PACKAGES = (["--no-deps", "recommenders==1.2.1"],
             ["numpy==2.4.6", "pandas==2.3.3", "scikit-learn==1.9.1"])  # fmt: skip

_SCRIPT = """
import json, sys
import numpy as np
import pandas as pd
from recommenders.evaluation import python_evaluation as pe
data = json.load(open(sys.argv[1]))
train = pd.DataFrame(data["train"], columns=["userID", "itemID"])
reco = pd.DataFrame(data["reco"], columns=["userID", "itemID", "rel"])
feats = pd.DataFrame({"itemID": list(data["features"]),
                      "features": [np.array(v) for v in data["features"].values()]})
feats["itemID"] = feats["itemID"].astype(int)
sim = dict(item_feature_df=feats, item_sim_measure="item_feature_vector")
def per_user(frame, col):
    return {str(u): float(v) for u, v in zip(frame["userID"], frame[col])}
out = {
    "unexpectedness": per_user(pe.user_serendipity(train, reco[["userID", "itemID"]], **sim),
                               "user_serendipity"),
    "unexpectedness_mean": float(pe.serendipity(train, reco[["userID", "itemID"]], **sim)),
    "serendipity": per_user(pe.user_serendipity(train, reco, col_relevance="rel", **sim),
                            "user_serendipity"),
    "serendipity_mean": float(pe.serendipity(train, reco, col_relevance="rel", **sim)),
    "diversity": per_user(pe.user_diversity(train, reco, **sim), "user_diversity"),
    "diversity_mean": float(pe.diversity(train, reco, **sim)),
    "coverage": float(pe.catalog_coverage(train, reco)),
}
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def recommenders_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with Microsoft Recommenders' evaluation module."""
    return side_env.build(tmp_path_factory.mktemp("recommenders-venv"), _PACKAGES)


def _case(seed: int) -> dict[str, Any]:
    """Users with train history (a few without), recs disjoint from each user's train items
    (Recommenders refuses the overlap), lists of 1 to 8 items (a list of 1 has no diversity),
    0/1 relevance, and 4-dimensional feature vectors of either sign."""
    rng = random.Random(seed)
    items = list(range(30))
    features = {i: [rng.uniform(-1, 1) for _ in range(4)] for i in items}
    train: list[list[int]] = []
    reco: list[list[int]] = []
    for u in range(25):
        history = rng.sample(items, rng.randint(1, 6))
        train += [[u, i] for i in history]
        if u % 7 == 6:
            continue  # a train user without recs
        rest = [i for i in items if i not in history]
        reco += [[u, i, rng.choice([0, 1])] for i in rng.sample(rest, rng.randint(1, 8))]
    reco += [[100, 0, 1], [100, 1, 0]]  # a recs user without train history: no value
    return {"train": train, "reco": reco, "features": features}


def _ours(case: dict[str, Any]) -> receval.Result:
    reco = case["reco"]
    recs = pl.DataFrame(
        {"user": [r[0] for r in reco], "item": [r[1] for r in reco],
         "score": [float(len(reco) - j) for j in range(len(reco))]}  # tie-free, any order
    )  # fmt: skip
    truth = pl.DataFrame(
        {"user": [r[0] for r in reco if r[2]], "item": [r[1] for r in reco if r[2]]}
    )
    train = pl.DataFrame(case["train"], schema=["user", "item"], orient="row")
    in_train = sorted({i for _, i in case["train"]})
    items = pl.DataFrame(
        {"item": in_train, "v": [case["features"][i] for i in in_train]},
        schema={"item": pl.Int64, "v": pl.List(pl.Float64)},
    )
    return receval.evaluate(
        truth, recs, ["unexpectedness", "serendipity", "diversity", "coverage"], train=train,
        items=items, item_features="v",
    )  # fmt: skip


@pytest.mark.slow  # builds a side environment: CI runs it after the README's tests
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_recommenders(recommenders_python: Path, tmp_path: Path, seed: int) -> None:
    case = _case(seed)
    in_train = {i for _, i in case["train"]}
    case["reco"] = [r for r in case["reco"] if r[1] in in_train]  # coverage's catalog: train
    theirs = side_env.run(recommenders_python, _SCRIPT, case, tmp_path)
    ours = _ours(case)
    for name in ("unexpectedness", "serendipity", "diversity"):
        col = ours.per_user.select("user", name).drop_nulls()
        mine = {str(u): v for u, v in col.iter_rows()}
        assert mine.keys() == theirs[name].keys(), name
        assert len(mine) >= 15, name  # most users have a value: the comparison is not empty
        for user, value in theirs[name].items():
            assert math.isclose(mine[user], value, rel_tol=1e-12, abs_tol=1e-12), (name, user)
        assert ours[name] == pytest.approx(theirs[f"{name}_mean"], rel=1e-12, abs=1e-12)
    assert "100" not in theirs["serendipity"]  # no train history: no value on either side
    assert ours["coverage"] == pytest.approx(theirs["coverage"], rel=1e-15)
