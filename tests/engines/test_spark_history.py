"""The Spark engine's metrics that read each user's train items (``needs_history``:
miscalibration, unexpectedness, serendipity; pop_serendipity, which reads train's popularity,
runs beside them): train's (user, item) pairs
travel with truth and recs through the shuffle by user (side 2 of the frame the shards read),
so each shard holds only its users' history and nothing of train's pairs is shipped with the
shard function; the Result equals the local engine's bit for bit, train given as a Spark
DataFrame or as a local frame.

pyspark is a test dependency: a missing pyspark fails this module, it is never skipped.
"""

from __future__ import annotations

import pickle
from typing import Any

import polars as pl
import pytest
from pyspark.sql import SparkSession

import receval
import receval.engines.spark
from helpers.shard import DATA, SIMILARITY, assert_same, family_metrics
from receval.engines import spark as engine

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

HISTORY = tuple(s.name for s in receval.list_metrics() if s.needs_history)
TESTED = (*HISTORY, "pop_serendipity")


def history_metrics(similarity: bool) -> list[str]:
    chosen = [m for m in family_metrics("beyond") if m.startswith(TESTED)]
    return [m for m in chosen if m.startswith(SIMILARITY) == similarity]


def test_every_history_metric_is_covered() -> None:
    assert set(HISTORY) == {"miscalibration", "unexpectedness", "serendipity"}
    names = {m.split("@")[0].split("(")[0] for m in history_metrics(True) + history_metrics(False)}
    assert names == set(TESTED)


@pytest.mark.parametrize("train_kind", ["spark", "local"])
@pytest.mark.parametrize("ids", ["int", "str"])
def test_history_metrics_equal_the_local_engine(
    spark: SparkSession, ids: str, train_kind: str
) -> None:
    data = DATA[ids]
    base = {"train": data["train"], "items": data["items"]}
    for features, metrics in (("vec", history_metrics(True)), (["genre"], history_metrics(True))):
        calls = [({**base, "item_features": features}, metrics)]
        if features == "vec":
            calls.append((base, history_metrics(False)))
        for options, chosen in calls:
            want = receval.evaluate(data["truth"], data["recs"], chosen, **options)
            remote = dict(options)
            if train_kind == "spark":
                remote["train"] = spark.createDataFrame(data["train"].to_arrow()).repartition(3)
            got = receval.evaluate(
                spark.createDataFrame(data["truth"].to_arrow()).repartition(5),
                spark.createDataFrame(data["recs"].to_arrow()).repartition(5),
                chosen, partitions=7, **remote,
            )  # fmt: skip
            assert_same(got, want)


def test_train_users_of_another_id_type(spark: SparkSession) -> None:
    """Integer users, train users as text: "7" is user 7 (as the local engine compares them),
    "007" and "x" are no user; the history frame keeps only the pairs that can match."""
    data = DATA["int"]
    train = data["train"].with_columns(pl.col("user").cast(pl.String))
    odd = pl.DataFrame(
        {"user": ["007", "x", " 4"], "item": train["item"].head(3)}, schema=train.schema
    )
    train = pl.concat([train, odd])
    metrics = history_metrics(False)
    options = {"train": train, "items": data["items"]}
    want = receval.evaluate(data["truth"], data["recs"], metrics, **options)
    for given in (train, spark.createDataFrame(train.to_arrow())):
        got = receval.evaluate(
            spark.createDataFrame(data["truth"].to_arrow()),
            spark.createDataFrame(data["recs"].to_arrow()),
            metrics, **{**options, "train": given},
        )  # fmt: skip
        assert_same(got, want)


def test_the_shard_function_does_not_grow_with_train(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pickled shard function (what Spark ships to every task) is the same size for a
    train of 150 and of 15,000 pairs over the same items: the history is not in it."""
    data = DATA["int"]
    shipped: list[int] = []
    task = engine._shard_task

    def spy(spec: Any, *args: Any) -> Any:
        assert spec.context.history is not None and spec.context.history.height == 0
        fn = task(spec, *args)
        shipped.append(len(pickle.dumps(spec)))
        return fn

    monkeypatch.setattr(engine, "_shard_task", spy)
    small = data["train"]
    items = small["item"].unique().sort()
    n = 15_000
    big = pl.DataFrame(
        {"user": [u % 3000 for u in range(n)], "item": [items[u % items.len()] for u in range(n)]}
    )
    assert set(big["item"]) == set(items)
    metrics = history_metrics(False)
    sizes = {}
    for name, train in (("small", small), ("big", big)):
        shipped.clear()
        want = receval.evaluate(data["truth"], data["recs"], metrics, train=train,
                                items=data["items"])  # fmt: skip
        got = receval.evaluate(
            spark.createDataFrame(data["truth"].to_arrow()),
            spark.createDataFrame(data["recs"].to_arrow()),
            metrics, train=spark.createDataFrame(train.to_arrow()), items=data["items"],
        )  # fmt: skip
        assert_same(got, want)
        assert len(shipped) == 1
        sizes[name] = shipped[0]
    assert sizes["big"] <= sizes["small"] + 512, sizes
