"""receval's ``ndcg_k`` and ``ndcg`` against RecTools' own ``NDCG`` (issue 18).

RecTools' NDCG divides by the DCG of K relevant items (``divide_by_achievable=False``, its
default): receval's ``ndcg_k@K``. With ``divide_by_achievable=True`` it is receval's
``ndcg@K`` on binary relevance. RecTools pins numpy < 2, so it runs in a virtual environment
of its own, built once per test session from the package registry; the lists are tie-free
ranks, whose order every tool reads the same way.
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

KS = (1, 3, 10)

_SCRIPT = """
import json, sys
import pandas as pd
from rectools.metrics import NDCG, calc_metrics
data = json.load(open(sys.argv[1]))
reco = pd.DataFrame(data["reco"], columns=["user_id", "item_id", "rank"])
inter = pd.DataFrame(data["truth"], columns=["user_id", "item_id"])
inter["weight"] = 1.0
inter["datetime"] = pd.Timestamp("2026-01-01")
metrics = {}
for k in data["ks"]:
    metrics[f"plain@{k}"] = NDCG(k=k)
    metrics[f"achievable@{k}"] = NDCG(k=k, divide_by_achievable=True)
print(json.dumps(calc_metrics(metrics, reco=reco, interactions=inter)))
"""


def test_hand_worked_example() -> None:
    """u has a and b relevant, list a, x, b: DCG@3 = 1 + 1/2; K = 3 relevant items would give
    1 + 1/log2(3) + 1/2; v (c relevant, list y, c) with K = 3: (1/log2(3)) over the same."""
    truth = {"u": {"a": 1, "b": 1}, "v": {"c": 1}}
    recs = {"u": {"a": 0.9, "x": 0.8, "b": 0.7}, "v": {"y": 0.5, "c": 0.4}}
    ideal3 = 1 + 1 / math.log2(3) + 1 / 2
    res = receval.evaluate(truth, recs, ["ndcg_k@3", "rectools_ndcg@1", "ndcg_k"])
    assert res.per_user.filter(pl.col("user") == "u")["ndcg_k@3"].item() == pytest.approx(
        1.5 / ideal3, rel=1e-15
    )
    assert res["ndcg_k@3"] == pytest.approx((1.5 / ideal3 + (1 / math.log2(3)) / ideal3) / 2)
    assert res["ndcg_k@1"] == 0.5  # u's first item is relevant, v's is not
    # without @K, K is the list's length: 3 for u, 2 for v
    v_ideal = 1 + 1 / math.log2(3)
    assert res["ndcg_k"] == pytest.approx((1.5 / ideal3 + (1 / math.log2(3)) / v_ideal) / 2)


def test_k_beyond_the_limit_is_refused() -> None:
    with pytest.raises(receval.MetricError, match=r"^`k` of ndcg_k must be at most 10,000,000"):
        receval.evaluate({"u": {"a": 1}}, {"u": {"a": 1.0}}, "ndcg_k@10000001")


@pytest.fixture(scope="session")
def rectools_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with RecTools (numpy < 2), built from the package registry."""
    return side_env.build(tmp_path_factory.mktemp("rectools-venv"), [["rectools==0.19.0"]])


def _case(seed: int) -> tuple[list[list[object]], list[list[object]]]:
    rng = random.Random(seed)
    truth: list[list[object]] = []
    reco: list[list[object]] = []
    for u in range(60):
        items = rng.sample(range(40), 15)
        for item in items[: rng.randint(1, 6)]:
            truth.append([u, item])
        for rank, item in enumerate(rng.sample(range(40), rng.randint(1, 12)), start=1):
            reco.append([u, item, rank])
    return truth, reco


@pytest.mark.slow  # builds a side environment: CI runs it after the README's tests
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_rectools(rectools_python: Path, tmp_path: Path, seed: int) -> None:
    truth, reco = _case(seed)
    case = {"truth": truth, "reco": reco, "ks": list(KS)}
    theirs = side_env.run(rectools_python, _SCRIPT, case, tmp_path)
    t = pl.DataFrame(truth, schema=["user", "item"], orient="row")
    r = pl.DataFrame(reco, schema=["user", "item", "rank"], orient="row")
    ours = receval.evaluate(t, r, [f"ndcg_k@{k}" for k in KS] + [f"ndcg@{k}" for k in KS],
                            rank_col="rank")  # fmt: skip
    for k in KS:
        assert ours[f"ndcg_k@{k}"] == pytest.approx(theirs[f"plain@{k}"], rel=1e-12, abs=1e-12)
        assert ours[f"ndcg@{k}"] == pytest.approx(theirs[f"achievable@{k}"], rel=1e-12)


# ------------------------------------------------------------- Serendipity (pop_serendipity)

_SERENDIPITY = """
import json, sys
import pandas as pd
from rectools.metrics import Serendipity, calc_metrics
data = json.load(open(sys.argv[1]))
reco = pd.DataFrame(data["reco"], columns=["user_id", "item_id", "rank"])
inter = pd.DataFrame(data["truth"], columns=["user_id", "item_id"])
inter["weight"] = 1.0
inter["datetime"] = pd.Timestamp("2026-01-01")
prev = pd.DataFrame(data["train"], columns=["user_id", "item_id"])
prev["weight"] = 1.0
prev["datetime"] = pd.Timestamp("2025-01-01")
metrics = {f"serendipity@{k}": Serendipity(k=k) for k in data["ks"]}
out = {}
for name, metric in metrics.items():
    per_user = metric.calc_per_user(reco, inter, prev, data["catalog"])
    out[name] = {str(u): float(v) for u, v in per_user.items()}
print(json.dumps(out))
"""


def _serendipity_case(seed: int) -> dict[str, list[Any]]:
    """Tie-free ranks; train without repeated (user, item) rows (RecTools counts rows)."""
    rng = random.Random(seed)
    truth, reco = _case(seed)
    train = sorted({(rng.randrange(80), rng.randrange(35)) for _ in range(400)})
    return {"truth": truth, "reco": reco, "train": [list(p) for p in train],
            "catalog": list(range(45))}  # fmt: skip


@pytest.mark.slow  # builds a side environment: CI runs it after the README's tests
@pytest.mark.parametrize("seed", [0, 1])
def test_pop_serendipity_equals_rectools(rectools_python: Path, tmp_path: Path, seed: int) -> None:
    case = _serendipity_case(seed)
    theirs = side_env.run(rectools_python, _SERENDIPITY, {**case, "ks": list(KS)}, tmp_path)
    ours = receval.evaluate(
        pl.DataFrame(case["truth"], schema=["user", "item"], orient="row"),
        pl.DataFrame(case["reco"], schema=["user", "item", "rank"], orient="row"),
        [f"pop_serendipity@{k}" for k in KS], rank_col="rank",
        train=pl.DataFrame(case["train"], schema=["user", "item"], orient="row"),
        items=pl.DataFrame({"item": case["catalog"]}),
    )  # fmt: skip
    for k in KS:
        got = per_user_values(ours, f"pop_serendipity@{k}")
        want = theirs[f"serendipity@{k}"]
        assert set(got) == set(want)
        for user, value in want.items():
            assert got[user] == pytest.approx(value, rel=1e-12, abs=1e-15), (k, user)


def per_user_values(res: receval.Result, name: str) -> dict[str, float]:
    frame = res.per_user.select("user", name)
    return {str(u): v for u, v in frame.iter_rows()}
