"""The Spark engine over Spark Connect: a local Connect server, DataFrames of the Connect
client, and the same Result as the local engine (the engine uses the DataFrame API only).

Runs in a subprocess: a local Connect server starts its own Spark in the process that asks
for it, which must not meet the classic session of tests/engines/test_spark.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # a Spark Connect server: CI runs it after the README's tests

SCRIPT = textwrap.dedent(
    """
    import math, os, sys, warnings
    warnings.simplefilter("ignore")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from polars.testing import assert_frame_equal
    import receval
    from receval import datasets as D

    spark = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    data = D.make_interactions(150, n_items=80, n_recs=15, seed=4)
    train = D.make_train(150, n_items=80, seed=5)
    ts = spark.createDataFrame(data.truth.to_pandas()).repartition(4)
    rs = spark.createDataFrame(data.recs.to_pandas()).repartition(4)
    trs = spark.createDataFrame(train.to_pandas()).repartition(2)
    assert type(ts).__module__.startswith("pyspark.sql.connect"), type(ts)
    metrics = ["ndcg@10", "recall(average=micro)@20", "auc", "average_precision", "gauc",
               "coverage@10", "gini@10", "entropy@10", "novelty@10"]
    local = receval.evaluate(data.truth, data.recs, metrics, train=train)
    remote = receval.evaluate(ts, rs, metrics, train=trs, partitions=3)
    assert list(local.means) == list(remote.means)
    for name, value in local.means.items():
        assert value == remote.means[name], (name, value, remote.means[name])
    assert_frame_equal(local.per_user, remote.per_user, check_exact=True)
    assert local.counts == remote.counts
    assert local.details == remote.details
    try:
        receval.evaluate(ts.drop("score"), rs.drop("score"), ["ndcg@10"])
    except receval.InputError as exc:
        assert "recs is missing column 'score'" in str(exc), exc
    else:
        raise AssertionError("a missing column must raise")
    from pyspark.sql import functions as F
    first = data.recs.row(0, named=True)
    nan_at_first = (F.col("user") == first["user"]) & (F.col("item") == first["item"])
    bad = rs.withColumn(
        "score", F.when(nan_at_first, F.lit(float("nan"))).otherwise(F.col("score"))
    )
    try:
        receval.evaluate(ts, bad, ["ndcg@10"])
    except receval.InputError as exc:
        assert "NaN value(s) in column 'score'" in str(exc), exc
        assert "Spark executor" in str(exc), exc
    else:
        raise AssertionError("a NaN score must raise")
    print("CONNECT-OK")
    spark.stop()
    """
)


def test_spark_connect_equals_local_engine() -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "CONNECT-OK" in done.stdout


MIXED = textwrap.dedent(
    """
    import os, socket, sys, warnings
    warnings.simplefilter("ignore")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    import polars as pl
    from pyspark.sql import SparkSession
    import receval

    with socket.socket() as probe:  # a free port for the Connect server
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    classic = (
        SparkSession.builder.master("local[1]")
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.port", str(port))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    remote = SparkSession.builder.remote(f"sc://localhost:{port}").create()
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 20]})
    recs = pl.DataFrame({"user": [1, 2], "item": [10, 20], "score": [0.5, 0.4]})
    cases = [
        ((remote.createDataFrame(truth.to_pandas()), classic.createDataFrame(recs.to_pandas())),
         {}, "recs is a DataFrame of a classic SparkSession, but truth is one of a Spark Connect"),
        ((classic.createDataFrame(truth.to_pandas()), recs), {"spark": remote},
         "spark is a Spark Connect session, but truth is a DataFrame of a classic SparkSession"),
    ]
    for args, options, start in cases:
        try:
            receval.evaluate(*args, ["ndcg@2"], **options)
        except receval.InputError as exc:
            assert str(exc).startswith(start), exc
        else:
            raise AssertionError(start)
    print("MIXED-OK")
    """
)


def test_spark_connect_and_classic_frames_are_not_mixed() -> None:
    """Frames of a Connect session beside a classic one's (one process, the classic session
    serving Connect): an InputError, not pyspark's bare AssertionError or PySparkTypeError."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", MIXED], check=False, capture_output=True, text=True, env=env,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert "MIXED-OK" in done.stdout
