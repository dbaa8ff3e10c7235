"""The Spark engine on a real local Spark: its results equal the local engine's, and its errors.

Every registered metric runs through ``engine="spark"`` (Spark DataFrames, repartitioned at
random so that nothing leans on partition order; ``ties="first"`` on a DataFrame built in
order) and the result must equal ``engine="local"`` on the same data to the last bit: means,
``per_user``, counts, details and settings (``assert_same`` of tests/helpers/shard.py, whose data
this module shares with test_shard.py). Then: the ``partitions=`` option, files read by Spark,
bad input, executors that cannot import a module, a missing pyspark, global metrics on 20k tied
rows and the command line.

pyspark is a test dependency: a missing pyspark fails this module, it is never skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from pyspark.sql import DataFrame as SparkFrame
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

import receval
import receval.engines.spark
from helpers.shard import DATA, assert_same, family_metrics, groups
from receval import InputError
from receval.cli import app

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def to_spark(spark: SparkSession, frame: pl.DataFrame, partitions: int | None = 5) -> SparkFrame:
    """A Spark DataFrame of ``frame`` with the same column types (NaN stays NaN), built in row
    order, then repartitioned at random into ``partitions`` (None keeps the order)."""
    ddl = {pl.Int64: "bigint", pl.String: "string", pl.Float64: "double"}
    types = ", ".join(
        f"`{name}` {'array<double>' if dtype == pl.List(pl.Float64) else ddl[dtype]}"
        for name, dtype in frame.schema.items()
    )
    out = spark.createDataFrame(frame.rows(), schema=types)
    return out if partitions is None else out.repartition(partitions)


def run_both(
    spark: SparkSession,
    truth: pl.DataFrame,
    recs: pl.DataFrame,
    metrics: list[str],
    *,
    repartition: int | None = 5,
    spark_items: bool = False,
    **options: Any,
) -> tuple[receval.Result, receval.Result]:
    """(Spark result, local result): Spark gets Spark DataFrames (train too; items when
    ``spark_items``) repartitioned into ``repartition`` (None: built in order), the local
    engine the Polars frames."""
    local = receval.evaluate(truth, recs, metrics, **options)
    remote = dict(options)
    if "train" in remote:
        remote["train"] = to_spark(spark, remote["train"], repartition)
    if spark_items and "items" in remote:
        remote["items"] = to_spark(spark, remote["items"], repartition)
    got = receval.evaluate(
        to_spark(spark, truth, repartition), to_spark(spark, recs, repartition), metrics, **remote
    )
    return got, local


def check(spark: SparkSession, group: str, ids: str, **options: Any) -> None:
    truth, recs, metrics, extra = groups(DATA[ids])[group]
    got, want = run_both(spark, truth, recs, metrics, **extra, **options)
    assert_same(got, want)


# ------------------------------------------------------------------------------ parity


def test_to_spark_keeps_types_and_order(spark: SparkSession) -> None:
    items = DATA["str"]["items"]
    assert [tuple(r) for r in to_spark(spark, items, None).collect()] == items.rows()
    recs = DATA["int"]["recs"]
    df = to_spark(spark, recs, None)
    assert dict(df.dtypes) == {"user": "bigint", "item": "bigint", "score": "double"}
    assert [tuple(r) for r in df.collect()] == recs.rows()


@pytest.mark.parametrize("ties", ["expected", "trec", "optimistic"])
@pytest.mark.parametrize("ids", ["int", "str"])
def test_ranking(spark: SparkSession, ids: str, ties: str) -> None:
    check(spark, "ranking", ids, ties=ties)


@pytest.mark.parametrize("ids", ["int", "str"])
def test_ties_first_on_a_frame_built_in_order(spark: SparkSession, ids: str) -> None:
    check(spark, "ranking", ids, ties="first", repartition=None)
    check(spark, "beyond_cosine", ids, ties="first", repartition=None)


@pytest.mark.parametrize("ids", ["int", "str"])
def test_classification(spark: SparkSession, ids: str) -> None:
    check(spark, "classification", ids)


@pytest.mark.parametrize("no_recs", ["zero", "skip"])
@pytest.mark.parametrize("ids", ["int", "str"])
def test_rating(spark: SparkSession, ids: str, no_recs: str) -> None:
    check(spark, "rating", ids, no_recs=no_recs)


@pytest.mark.parametrize(
    ("ids", "ties"), [("int", "expected"), ("str", "trec"), ("int", "pessimistic")]
)
def test_beyond_with_local_items(spark: SparkSession, ids: str, ties: str) -> None:
    check(spark, "beyond_cosine", ids, ties=ties)


@pytest.mark.parametrize("ids", ["int", "str"])
def test_beyond_with_spark_items(spark: SparkSession, ids: str) -> None:
    check(spark, "beyond_jaccard", ids, spark_items=True)
    check(spark, "beyond_cosine", ids, spark_items=True, ties="trec")


GROUP_EXPOSURE = [
    "exposure_share(by=genre, group=g1)@3",
    "exposure_disparity(by=genre, group=g1, reference=g2)@2",
    "exposure_gap(by=genre, group=g2, attention=log)",
    "exposure_gini(by=genre, patience=0.8)@5",
    "exposure_entropy(by=genre)@3",
    "group_coverage(by=genre)@1",
]


@pytest.mark.parametrize("ties", ["expected", "first"])
def test_group_exposure_with_an_item_without_a_group(spark: SparkSession, ties: str) -> None:
    """The group-exposure states (exact sums per group) merge to the local engine's bits; an
    item without a genre is left out and counted the same way."""
    data = DATA["int"]
    first = data["items"]["item"][0]
    items = data["items"].with_columns(
        pl.when(pl.col("item") == first).then(None).otherwise(pl.col("genre")).alias("genre")
    )
    # ties="first" follows input order: the frame is then built in order, not repartitioned
    repartition = 5 if ties == "expected" else None
    got, want = run_both(
        spark, data["truth"], data["recs"], GROUP_EXPOSURE, repartition=repartition,
        items=items, ties=ties,
    )  # fmt: skip
    assert_same(got, want)
    assert want.details[GROUP_EXPOSURE[0]]["items_without_group"] == 1
    assert want.details[GROUP_EXPOSURE[0]]["exposure_without_group"] > 0


def test_no_recs_skip(spark: SparkSession) -> None:
    data = DATA["str"]
    metrics = [*family_metrics("ranking"), *family_metrics("classification")]
    got, want = run_both(spark, data["truth"], data["recs"], metrics, no_recs="skip")
    assert_same(got, want)


def test_no_recs_raise(spark: SparkSession) -> None:
    data = DATA["int"]
    metrics = family_metrics("ranking")
    with pytest.raises(InputError) as local:
        receval.evaluate(data["truth"], data["recs"], metrics, no_recs="raise")
    with pytest.raises(InputError) as remote:
        receval.evaluate(
            to_spark(spark, data["truth"]), to_spark(spark, data["recs"]), metrics,
            no_recs="raise",
        )  # fmt: skip
    what = "evaluated user(s) have no recommendations (no_recs='raise')"
    assert what in str(local.value)
    assert what in str(remote.value)
    # without such users, raise is zero
    truth = data["truth"].join(data["recs"].select("user").unique(), on="user", how="semi")
    got, want = run_both(spark, truth, data["recs"], metrics, no_recs="raise")
    assert_same(got, want)


@pytest.mark.parametrize("ids", ["int", "str"])
def test_rank_column(spark: SparkSession, ids: str) -> None:
    data = DATA[ids]
    recs = (
        data["recs"]
        .with_columns(
            pl.col("score").rank("dense", descending=True).over("user").cast(pl.Int64).alias("rank")
        )
        .drop("score")
    )
    got, want = run_both(
        spark, data["truth"], recs, family_metrics("ranking"), rank_col="rank", ties="trec"
    )
    assert_same(got, want)


def test_parquet_paths(spark: SparkSession, tmp_path: Path) -> None:
    data = DATA["str"]
    paths = {}
    for name in ("truth", "recs", "train"):
        paths[name] = str(tmp_path / f"{name}.parquet")
        data[name].write_parquet(paths[name])
    metrics = [*family_metrics("ranking"), "coverage@5", "novelty@5", "gini"]
    want = receval.evaluate(
        data["truth"], data["recs"], metrics, train=data["train"], items=data["items"]
    )
    got = receval.evaluate(
        paths["truth"], paths["recs"], metrics, train=paths["train"], items=data["items"],
        engine="spark", spark=spark,
    )  # fmt: skip
    assert_same(got, want)


def test_local_frames_with_engine_spark(spark: SparkSession) -> None:
    data = DATA["int"]
    metrics = [*family_metrics("ranking", ks=(10,)), "auc", "gauc", "coverage@10"]
    want = receval.evaluate(data["truth"], data["recs"], metrics)
    got = receval.evaluate(data["truth"], data["recs"], metrics, engine="spark", spark=spark)
    assert_same(got, want)
    # engine="spark" takes the active session by default; pandas frames convert too
    got = receval.evaluate(data["truth"].to_pandas(), data["recs"], metrics, engine="spark")
    assert_same(got, want)
    # engine="auto" runs Spark when either input is a Spark DataFrame
    got = receval.evaluate(to_spark(spark, data["truth"]), data["recs"], metrics)
    assert_same(got, want)


@pytest.mark.parametrize("partitions", [1, 7])
def test_partitions(spark: SparkSession, partitions: int) -> None:
    data = DATA["str"]
    metrics = [
        *family_metrics("ranking", ks=(5,)),
        *family_metrics("classification"),
        *family_metrics("beyond", ks=(5,)),
    ]
    options = {"train": data["train"], "items": data["items"], "item_features": "vec"}
    want = receval.evaluate(data["truth"], data["recs"], metrics, **options)
    got = receval.evaluate(
        to_spark(spark, data["truth"]), to_spark(spark, data["recs"]), metrics,
        partitions=partitions, **options,
    )  # fmt: skip
    assert_same(got, want)


# ----------------------------------------------------------------------------- at scale


def scale_data() -> tuple[pl.DataFrame, pl.DataFrame]:
    """2000 users x 10 recs (20k rows) on 400 items, 11 distinct scores: heavy ties."""
    rng = np.random.default_rng(7)
    n_users, n_recs, n_items = 2000, 10, 400
    users = np.repeat(np.arange(n_users), n_recs)
    items = np.concatenate([rng.choice(n_items, n_recs, replace=False) for _ in range(n_users)])
    scores = rng.integers(0, 11, users.size) / 10
    recs = pl.DataFrame({"user": users, "item": items, "score": scores})
    # truth: about 4 of the listed items per user (relevance 0..2) and 2 unlisted ones
    listed = recs.filter(pl.Series(rng.random(users.size) < 0.4))
    extra = pl.DataFrame(
        {
            "user": np.repeat(np.arange(n_users), 2),
            "item": n_items + rng.integers(0, 50, 2 * n_users),
        }
    ).unique(["user", "item"])
    truth = pl.concat([listed.select("user", "item"), extra], how="vertical").with_columns(
        pl.Series("relevance", rng.integers(0, 3, listed.height + extra.height) * 1.0)
    )
    return truth, recs


def test_global_metrics_at_scale(spark: SparkSession) -> None:
    truth, recs = scale_data()
    assert recs.height == 20_000
    metrics = [
        *("auc", "average_precision", "auc(rel=2)", "gauc", "logloss", "accuracy"),
        *("coverage", "coverage@3", "gini@5", "gini", "entropy@3", "entropy"),
    ]
    want = receval.evaluate(truth, recs, metrics)
    got = receval.evaluate(
        to_spark(spark, truth, 7), to_spark(spark, recs, 7), metrics, partitions=7
    )
    assert_same(got, want)


# ------------------------------------------------------------------------------- errors


def test_missing_column(spark: SparkSession) -> None:
    data = DATA["int"]
    truth, recs = to_spark(spark, data["truth"]), to_spark(spark, data["recs"])
    with pytest.raises(InputError, match=r"recs is missing column 'score'"):
        receval.evaluate(truth, recs.drop("score"), ["ndcg@10"])
    with pytest.raises(InputError, match=r"truth is missing column 'item'"):
        receval.evaluate(truth.drop("item"), recs, ["ndcg@10"])
    with pytest.raises(InputError, match=r"recs is missing column 'rank'"):
        receval.evaluate(truth, recs, ["ndcg@10"], rank_col="rank")


def test_bad_metric_and_options_fail_before_any_job(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = DATA["int"]
    truth, recs = to_spark(spark, data["truth"]), to_spark(spark, data["recs"])

    def no_job(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("no Spark job may run before the request is checked")

    monkeypatch.setattr(receval.engines.spark, "check_executors", no_job)
    monkeypatch.setattr(receval.engines.spark, "_as_spark", no_job)
    with pytest.raises(
        receval.MetricError, match=r"unknown metric 'ndgc' in 'ndgc@10'; did you mean 'ndcg'"
    ):
        receval.evaluate(truth, recs, ["ndgc@10"])
    with pytest.raises(InputError, match=r"ties must be one of"):
        receval.evaluate(truth, recs, ["ndcg@10"], ties="random")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"relevance_threshold must be a finite number > 0"):
        receval.evaluate(truth, recs, ["ndcg@10"], relevance_threshold=0)


def test_nan_score(spark: SparkSession) -> None:
    recs = DATA["int"]["recs"]
    bad = recs.with_columns(
        pl.when(pl.int_range(pl.len()) == 7).then(float("nan")).otherwise(pl.col("score"))
        .alias("score")
    )  # fmt: skip
    df = to_spark(spark, bad)
    assert df.filter(F.isnan("score")).count() == 1  # a NaN, not a null
    want = "recs has 1 NaN value(s) in column 'score'"
    with pytest.raises(InputError) as local:
        receval.evaluate(DATA["int"]["truth"], bad, ["ndcg@10"])
    assert want in str(local.value)
    with pytest.raises(InputError) as remote:
        receval.evaluate(to_spark(spark, DATA["int"]["truth"]), df, ["ndcg@10"])
    assert want in str(remote.value)


@pytest.mark.parametrize("role", ["truth", "recs"])
def test_duplicate_rows(spark: SparkSession, role: str) -> None:
    data = dict(DATA["str"])
    data[role] = pl.concat([data[role], data[role].slice(3, 1)])
    want = f"{role} has 2 duplicate (user, item) row(s)"
    with pytest.raises(InputError) as local:
        receval.evaluate(data["truth"], data["recs"], ["ndcg@10"])
    assert want in str(local.value)
    with pytest.raises(InputError) as remote:
        receval.evaluate(to_spark(spark, data["truth"]), to_spark(spark, data["recs"]), ["ndcg@10"])
    assert want in str(remote.value)
    assert "duplicate" in str(remote.value)


def test_check_executors(spark: SparkSession, tmp_path: Path, monkeypatch: Any) -> None:
    receval.engines.spark.check_executors(spark)  # receval itself is importable there
    name = "receval_only_on_the_driver"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # this process only: not the executors
    __import__(name)
    with pytest.raises(receval.EngineError, match=name):
        receval.engines.spark.check_executors(spark, module=name)
    assert issubclass(receval.EngineError, receval.RecevalError)


def test_import_receval_does_not_import_pyspark() -> None:
    code = textwrap.dedent(
        """
        import sys
        import receval
        assert not [m for m in sys.modules if m.split(".")[0] == "pyspark"], "on import"
        res = receval.evaluate({1: {1: 1}}, {1: {1: 0.5, 2: 0.2}}, ["ndcg@2", "auc"])
        assert res["ndcg@2"] == 1.0
        assert not [m for m in sys.modules if m.split(".")[0] == "pyspark"], "on evaluate"
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr


def test_engine_spark_without_pyspark(monkeypatch: Any) -> None:
    """pyspark made unimportable in this process (every cached pyspark module too)."""
    for name in [m for m in sys.modules if m.split(".")[0] == "pyspark"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    for name in [m for m in sys.modules if m.startswith("receval.engines.spark")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(receval.engines, "spark", raising=False)
    data = DATA["int"]
    with pytest.raises(receval.EngineError, match=r"receval\[spark\]"):
        receval.evaluate(data["truth"], data["recs"], ["ndcg@10"], engine="spark")


def test_engine_spark_without_pyspark_in_a_fresh_process() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pyspark"] = None
        import receval
        try:
            receval.evaluate({1: {1: 1}}, {1: {1: 0.5}}, ["ndcg"], engine="spark")
        except receval.EngineError as exc:
            assert "receval[spark]" in str(exc), str(exc)
        else:
            raise AssertionError("no EngineError")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------- command line


def test_cli_engine_spark(spark: SparkSession, tmp_path: Path) -> None:
    data = DATA["str"]
    truth, recs = tmp_path / "t.parquet", tmp_path / "r.parquet"
    data["truth"].write_parquet(truth)
    data["recs"].write_parquet(recs)
    runner = CliRunner()
    args = ["evaluate", "--truth", str(truth), "--recs", str(recs), "-m", "ndcg@10"]
    args += ["-m", "map(denominator=min)@5", "--format", "json"]
    local = runner.invoke(app, args)
    assert local.exit_code == 0, local.output
    remote = runner.invoke(app, [*args, "--engine", "spark", "--partitions", "3"])
    assert remote.exit_code == 0, remote.output
    want, got = json.loads(local.stdout), json.loads(remote.stdout)
    assert got["metrics"] == want["metrics"]
    assert got == want
