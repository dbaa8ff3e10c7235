"""The Spark engine on sampled rankings (``sample_col``: several sampled rankings per user,
expected exposure as the mean over a user's samples, Diaz et al. 2020; docs/fairness.md).

The sample column travels with the recs rows through the shuffle by user (truth rows and
train pairs carry a null sample), and each shard splits its users' samples as the local
engine does (:func:`receval.engines.shard.run_shard`). The Result equals the local engine's
bit for bit (``assert_same``: means, per_user, counts, details, settings) for ee_loss,
ee_disparity and ee_relevance, scores and ranks, integer and text ids, 1 and 7 shards,
ties "expected" and "first", on frames built in order: a user's samples are summed in the
order of its rows, so a frame repartitioned at random (another order of a user's rows)
equals the local engine's result to rounding only. Bad sampled rankings raise on an
executor and come back as the local engine's InputError.

pyspark is a test dependency: a missing pyspark fails this module, it is never skipped.
"""

from __future__ import annotations

import random
from typing import Any

import polars as pl
import pytest
from pyspark.sql import DataFrame as SparkFrame
from pyspark.sql import SparkSession

import receval
import receval.engines.spark
from helpers.shard import assert_same
from receval import InputError, MetricError
from receval.engines import spark as engine

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NAMES = ["ee_loss@3", "ee_disparity", "ee_relevance(patience=0.7)@2", "ee_loss(rel=2)"]


def to_spark(spark: SparkSession, frame: pl.DataFrame, partitions: int | None) -> SparkFrame:
    """``frame`` as a Spark DataFrame built in row order (same column types), then
    repartitioned at random into ``partitions`` (None keeps the order)."""
    ddl = {pl.Int64: "bigint", pl.String: "string", pl.Float64: "double"}
    types = ", ".join(f"`{name}` {ddl[dtype]}" for name, dtype in frame.schema.items())
    out = spark.createDataFrame(frame.rows(), schema=types)
    return out if partitions is None else out.repartition(partitions)


def sampled_case(
    str_ids: bool, by_rank: bool, seed: int = 5
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(truth, recs, items, train): 120 users with 1 to 4 samples of 1 to 6 items each
    (tied scores or ranks), rows of the users and samples interleaved; graded truth, recs
    users without truth, truth users without recs, items of the catalog in no row."""
    rng = random.Random(seed)
    rows, truth = [], []
    for u in range(120):
        length = rng.randint(1, 6)
        for s in range(rng.randint(1, 4)):
            for j, item in enumerate(rng.sample(range(30), length)):
                tied = float(rng.randint(0, 3))
                order = float(j // 2 + 1) if by_rank else tied  # ranks tie two by two
                rows.append((u, item, f"s{s}" if str_ids else s, order))
        truth += [(u, i, rng.randint(1, 2)) for i in rng.sample(range(30), rng.randint(0, 3))]
    truth += [(500, 1, 1), (501, 2, 2)]  # truth users without recs
    rng.shuffle(rows)
    order_col = "rank" if by_rank else "score"
    recs = pl.DataFrame(rows, schema=["user", "item", "sample", order_col], orient="row")
    t = pl.DataFrame(truth, schema=["user", "item", "relevance"], orient="row")
    t = t.with_columns(pl.col("relevance").cast(pl.Float64))
    items = pl.DataFrame({"item": range(35)})
    pairs = [(u % 60, u % 33) for u in range(200)]  # repeated pairs; recs items among them
    train = pl.DataFrame(pairs, schema=["user", "item"], orient="row")
    if str_ids:
        recs = recs.with_columns(pl.col("user", "item").cast(pl.String))
        t = t.with_columns(pl.col("user", "item").cast(pl.String))
        items = items.with_columns(pl.col("item").cast(pl.String))
        train = train.with_columns(pl.col("user", "item").cast(pl.String))
    return t, recs, items, train


def test_the_case_has_ties_and_interleaved_samples() -> None:
    _, recs, _, _ = sampled_case(False, False)
    per_user = recs.group_by("user").agg(pl.col("sample").n_unique().alias("n"))
    assert per_user["n"].max() > 1  # several samples per user
    assert recs.unique(["user", "item"]).height < recs.height  # items in several samples
    assert recs.unique(["user", "sample", "score"]).height < recs.height  # ties
    # rows of one user's samples interleaved with other users' rows
    assert (recs["user"].diff().fill_null(0) != 0).sum() > 120


@pytest.mark.parametrize("by_rank", [False, True])
@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("ties", ["expected", "first"])
def test_equals_the_local_engine(spark: SparkSession, ties: str, ids: str, by_rank: bool) -> None:
    t, recs, items, _ = sampled_case(ids == "str", by_rank)
    options: dict[str, Any] = {"ties": ties, "sample_col": "sample", "items": items}
    if by_rank:
        options["rank_col"] = "rank"
    want = receval.evaluate(t, recs, NAMES, **options)
    # a user's rows in input order (the order its samples are summed in): frames built in order
    truth_df, recs_df = to_spark(spark, t, None), to_spark(spark, recs, None)
    for partitions in (1, 7):
        got = receval.evaluate(truth_df, recs_df, NAMES, partitions=partitions, **options)
        assert_same(got, want)
    assert want.counts.evaluated > 0 and want.per_user.height == 120


def test_repartitioned_at_random_equals_to_rounding(spark: SparkSession) -> None:
    """Rows repartitioned at random: another order of each user's rows, so its samples are
    summed in another order; per-user values equal the local engine's to rounding (and
    exactly, the local engine's on the rows in the order Spark read them)."""
    t, recs, items, _ = sampled_case(True, False)
    options: dict[str, Any] = {"sample_col": "sample", "items": items}
    want = receval.evaluate(t, recs, NAMES, **options)
    got = receval.evaluate(to_spark(spark, t, 5), to_spark(spark, recs, 5), NAMES, **options)
    assert got.counts == want.counts
    assert got.per_user["user"].to_list() == want.per_user["user"].to_list()
    for name in want.means:
        col = receval.parse_metric(name).canonical
        assert got[name] == pytest.approx(want[name], rel=1e-13, abs=1e-15)
        assert got.per_user[col].to_list() == pytest.approx(
            want.per_user[col].to_list(), rel=1e-13, abs=1e-15
        )


def test_one_sample_equals_the_deterministic_metric(spark: SparkSession) -> None:
    """A sample column with one value: the deterministic metric's result, on Spark too."""
    t, recs, items, _ = sampled_case(False, False)
    one = recs.filter(pl.col("sample") == 0).with_columns(sample=pl.lit(0, dtype=pl.Int64))
    det = receval.evaluate(t, one.drop("sample"), NAMES, items=items)
    got = receval.evaluate(
        to_spark(spark, t, 3), to_spark(spark, one, 3), NAMES, items=items, sample_col="sample"
    )
    assert_same(got, det)


@pytest.mark.parametrize("train_kind", ["local", "spark"])
def test_catalog_from_the_data_and_train(spark: SparkSession, train_kind: str) -> None:
    """Without items= (the catalog: truth and recs items) and with train=: the in-train count
    counts each (user, item) pair of the sampled rankings once, as the local engine does."""
    t, recs, _, train = sampled_case(True, False, seed=9)
    options: dict[str, Any] = {"sample_col": "sample", "train": train}
    want = receval.evaluate(t, recs, NAMES, **options)
    assert want.counts.recs_in_train is not None and want.counts.recs_in_train > 0
    if train_kind == "spark":
        options["train"] = to_spark(spark, train, 2)
    got = receval.evaluate(
        to_spark(spark, t, None), to_spark(spark, recs, None), NAMES, partitions=7, **options
    )
    assert_same(got, want)
    assert got.counts.recs_in_train == want.counts.recs_in_train


def test_evaluate_spark_takes_sample_col(spark: SparkSession) -> None:
    t, recs, items, _ = sampled_case(False, True)
    want = receval.evaluate(t, recs, NAMES, items=items, rank_col="rank", sample_col="sample")
    got = engine.evaluate_spark(
        to_spark(spark, t, None), to_spark(spark, recs, None), NAMES, items=items, rank_col="rank",
        sample_col="sample", partitions=3,
    )  # fmt: skip
    assert_same(got, want)


# ------------------------------------------------------------------------------ bad input


def bad_frame() -> pl.DataFrame:
    return pl.DataFrame({"user": ["u", "u", "u", "v"], "item": ["a", "b", "a", "a"],
                         "sample": [1, 1, 2, 1], "score": [0.9, 0.5, 0.4, 0.3]})  # fmt: skip


TRUTH = pl.DataFrame({"user": ["u", "v"], "item": ["a", "a"]})


def both_raise(spark: SparkSession, recs: pl.DataFrame, **options: Any) -> tuple[str, str]:
    """The local error's text and the Spark engine's (an InputError both)."""
    with pytest.raises(InputError) as local:
        receval.evaluate(TRUTH, recs, "ee_loss", sample_col="sample", **options)
    with pytest.raises(InputError) as remote:
        receval.evaluate(
            to_spark(spark, TRUTH, None), to_spark(spark, recs, None), "ee_loss",
            sample_col="sample", partitions=1, **options,
        )  # fmt: skip
    return str(local.value), str(remote.value)


def test_item_twice_in_a_sample_is_an_input_error(spark: SparkSession) -> None:
    recs = bad_frame().with_columns(item=pl.Series(["a", "a", "a", "a"]))
    local, remote = both_raise(spark, recs)
    assert "appears twice in the same sample" in local
    assert "row 0: user='u', item='a', sample=1" in local
    assert remote.startswith(local)  # one shard of every row, in order: the same rows
    assert "raised on a Spark executor" in remote


def test_samples_of_different_lengths_are_an_input_error(spark: SparkSession) -> None:
    local, remote = both_raise(spark, bad_frame())
    assert "'u' (1 to 2 items)" in local
    assert remote.startswith(local)


def test_null_sample_is_an_input_error(spark: SparkSession) -> None:
    recs = bad_frame().filter(pl.col("sample") == 1).with_columns(sample=pl.Series([1, None, 1]))
    local, remote = both_raise(spark, recs)
    assert "null value(s) in column 'sample'" in local
    assert "null value(s) in column 'sample'" in remote


def test_other_metrics_fail_before_any_job(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metric other than ee_*, or sampling=, raise before any Spark job."""
    recs = to_spark(spark, bad_frame().filter(pl.col("sample") == 1), None)
    truth = to_spark(spark, TRUTH, None)

    def no_job(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("no Spark job may run before the request is checked")

    monkeypatch.setattr(receval.engines.spark, "check_executors", no_job)
    monkeypatch.setattr(receval.engines.spark, "_as_spark", no_job)
    monkeypatch.setattr(receval.engines.spark, "_shard_task", no_job)
    with pytest.raises(MetricError, match=r"not \['ndcg@10'\]"):
        receval.evaluate(truth, recs, ["ee_loss", "ndcg@10"], sample_col="sample")
    with pytest.raises(MetricError, match=r"not \['ndcg@10'\]"):
        engine.evaluate_spark(truth, recs, ["ee_loss", "ndcg@10"], sample_col="sample")
    with pytest.raises(InputError, match=r"not with sampling="):
        receval.evaluate(truth, recs, "ee_loss", sample_col="sample",
                         sampling=receval.Sampling(10))  # fmt: skip


def test_missing_or_float_sample_column_runs_no_shard(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_shard(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the sample column is checked before the shards run")

    monkeypatch.setattr(receval.engines.spark, "_shard_task", no_shard)
    recs = to_spark(spark, bad_frame().filter(pl.col("sample") == 1), None)
    with pytest.raises(InputError, match=r"recs is missing column 'draw' \(sample_col"):
        receval.evaluate(to_spark(spark, TRUTH, None), recs, "ee_loss", sample_col="draw")
    floats = to_spark(spark, bad_frame().with_columns(pl.col("sample").cast(pl.Float64)), None)
    with pytest.raises(InputError, match=r"column 'sample' holds ids and must be integers or str"):
        receval.evaluate(to_spark(spark, TRUTH, None), floats, "ee_loss", sample_col="sample")
