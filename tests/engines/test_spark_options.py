"""The Spark engine's options are checked before any Spark job (issue 19, point 6).

``partitions`` must be an integer >= 1, ``spark`` a SparkSession, and neither means anything
to the local engine; a missing path read by Spark raises the local engine's error, and the
command line turns it into one line on stderr with exit code 2.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import receval
import receval.engines.spark
from helpers.shard import assert_same
from receval import InputError
from receval.cli import app

TRUTH = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "relevance": [1.0, 2.0, 1.0]})
RECS = pl.DataFrame({"user": [1, 1, 2, 2], "item": [11, 12, 10, 13], "score": [0.9, 0.5, 0.4, 0.8]})
METRICS = ["ndcg@2", "recall@1", "auc"]


@pytest.fixture
def no_spark_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any step towards a Spark job (a session, an executor check, a read) fails the test."""

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("no Spark job may run before the options are checked")

    for name in ("session", "check_executors", "_as_spark", "_pyspark"):
        monkeypatch.setattr(receval.engines.spark, name, forbidden)


@pytest.mark.parametrize(
    ("partitions", "shown"),
    [("4", "'4'"), (-1, "-1"), (0, "0"), (True, "True"), (2.5, "2.5"), ([4], "[4]")],
)
@pytest.mark.usefixtures("no_spark_job")
def test_partitions_must_be_an_integer_at_least_one(partitions: Any, shown: str) -> None:
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH, RECS, METRICS, engine="spark", partitions=partitions)
    assert str(info.value) == f"partitions must be an integer >= 1; got {shown}."


@pytest.mark.usefixtures("no_spark_job")
def test_spark_must_be_a_session() -> None:
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH, RECS, METRICS, engine="spark", spark="local[2]")
    assert str(info.value) == "spark must be a SparkSession or None; got str."


@pytest.mark.usefixtures("no_spark_job")
def test_other_options_fail_before_any_job() -> None:
    with pytest.raises(InputError, match=r"^id_type must be one of auto, str, int"):
        receval.evaluate(TRUTH, RECS, METRICS, engine="spark", id_type="long")
    engines = r"^engine must be one of auto, local, spark, stream; got 'Spark'"
    with pytest.raises(InputError, match=engines):
        receval.evaluate(TRUTH, RECS, METRICS, engine="Spark")  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ["local", "auto"])
@pytest.mark.parametrize(("name", "value"), [("partitions", 4), ("spark", None)])
def test_spark_options_need_the_spark_engine(engine: str, name: str, value: Any) -> None:
    if name == "spark":  # a stand-in session: only its type is looked at

        class SparkSession:
            pass

        SparkSession.__module__ = "pyspark.sql.session"
        value = SparkSession()
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH, RECS, METRICS, engine=engine, **{name: value})  # type: ignore[arg-type]
    assert str(info.value) == (
        f"{name} is an option of the Spark engine; pass engine='spark' (or Spark DataFrames as "
        "inputs) to use it, or leave it out: this call runs on the local engine."
    )


# --------------------------------------------------------------------- with a session


def test_numpy_integer_partitions(spark: Any) -> None:
    want = receval.evaluate(TRUTH, RECS, METRICS)
    got = receval.evaluate(
        TRUTH, RECS, METRICS, engine="spark", spark=spark, partitions=np.int64(2)
    )
    assert got.means == want.means
    assert got.per_user.equals(want.per_user)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv"])
def test_missing_path_is_the_local_error(spark: Any, tmp_path: Path, suffix: str) -> None:
    present = tmp_path / "recs.parquet"
    RECS.write_parquet(present)
    missing = tmp_path / f"truth{suffix}"
    with pytest.raises(InputError) as local:
        receval.evaluate(missing, present, METRICS)
    with pytest.raises(InputError) as remote:
        receval.evaluate(missing, present, METRICS, engine="spark", spark=spark)
    assert str(remote.value) == str(local.value) == f"truth file {str(missing)!r} does not exist."
    with pytest.raises(InputError, match=r"^recs file '.*missing\.csv' does not exist\.$"):
        receval.evaluate(present, str(tmp_path / "missing.csv"), "mrr", engine="spark", spark=spark)


def test_unreadable_path_is_an_input_error(spark: Any, tmp_path: Path) -> None:
    broken = tmp_path / "truth.parquet"
    broken.write_text("not parquet")
    with pytest.raises(InputError, match=r"^truth file '.*truth\.parquet' could not be read by "):
        receval.evaluate(broken, RECS, "mrr", engine="spark", spark=spark)


def test_cli_missing_path_with_engine_spark(spark: Any, tmp_path: Path) -> None:
    recs = tmp_path / "recs.parquet"
    RECS.write_parquet(recs)
    missing = tmp_path / "truth.parquet"
    args = ["evaluate", "--truth", str(missing), "--recs", str(recs), "-m", "mrr"]
    runner = CliRunner()
    for engine in ("local", "spark"):
        result = runner.invoke(app, [*args, "--engine", engine])
        assert result.exit_code == 2, (engine, result.output)
        assert result.stdout == ""
        assert result.stderr == f"error: truth file {str(missing)!r} does not exist.\n", engine


# ------------------------------------------------- scores that float64 cannot hold (issue 1)

BIG = 2**53


def _spark_pair(spark: Any, scores: list[Any], score_type: str, rel_type: str = "double") -> Any:
    """Truth (user 1 likes item 10, user 2 item 20) and recs scored by ``scores`` (items 10,
    11, 20, 21 in turn) as Spark frames whose value columns have the given Spark types."""
    one = 1 if rel_type == "bigint" else 1.0
    truth = spark.createDataFrame(
        [(1, 10, one), (2, 20, one)], f"user bigint, item bigint, relevance {rel_type}"
    )
    rows = [
        (u, i, s) for (u, i), s in zip([(1, 10), (1, 11), (2, 20), (2, 21)], scores, strict=True)
    ]
    recs = spark.createDataFrame(rows, f"user bigint, item bigint, score {score_type}")
    return truth, recs


def _local_pair(scores: list[int]) -> tuple[pl.DataFrame, pl.DataFrame]:
    truth = pl.DataFrame({"user": [1, 2], "item": [10, 20], "relevance": [1.0, 1.0]})
    recs = pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 20, 21], "score": scores})
    return truth, recs


def _before_rows(text: str) -> str:
    return text.split("First offending rows:", maxsplit=1)[0]


def test_long_scores_beyond_2_53_are_the_local_error(spark: Any) -> None:
    """LongType scores that tie in float64 (2^53 + 1 and 2^53) are refused as the local
    engine refuses Int64 ones, with its message: never a silent tie."""
    scores = [BIG + 1, BIG, 3, 2**63 - 1]
    with pytest.raises(InputError) as local:
        receval.evaluate(*_local_pair(scores), ["ndcg@1"])
    with pytest.raises(InputError) as remote:
        receval.evaluate(*_spark_pair(spark, scores, "bigint"), ["ndcg@1"])
    assert type(remote.value) is type(local.value)
    assert _before_rows(str(remote.value)) == _before_rows(str(local.value))
    assert "has 2 integer value(s) beyond ±2^53" in str(remote.value)
    assert "score=9007199254740993" in str(remote.value)  # an offending row is shown
    assert "score=9223372036854775807" in str(remote.value)


def test_long_relevance_beyond_2_53_is_refused(spark: Any) -> None:
    truth, recs = _spark_pair(spark, [0.5, 0.2, 0.3, 0.1], "double", rel_type="bigint")
    truth = truth.union(spark.createDataFrame([(1, 11, BIG + 1)], truth.schema))
    with pytest.raises(InputError, match=r"^truth column 'relevance' \(relevance\) has 1 integer"):
        receval.evaluate(truth, recs, ["ndcg@1"])


def test_long_scores_within_2_53_equal_the_local_engine(spark: Any) -> None:
    scores = [BIG, BIG - 1, -BIG, 2**62]  # 2^62 is exact in float64
    want = receval.evaluate(*_local_pair(scores), ["ndcg@1", "auc", "mrr"])
    got = receval.evaluate(*_spark_pair(spark, scores, "bigint"), ["ndcg@1", "auc", "mrr"])
    assert_same(got, want)


def test_decimal_scores_finer_than_float64_are_refused(spark: Any) -> None:
    """A DECIMAL(38, 20) score whose digits float64 cannot keep would tie with its neighbour."""
    fine = [
        Decimal("0.12345678901234567891"),
        Decimal("0.12345678901234567892"),
        Decimal(1),
        Decimal(2),
    ]
    with pytest.raises(InputError) as info:
        receval.evaluate(*_spark_pair(spark, fine, "decimal(38,20)"), ["ndcg@1"])
    text = str(info.value)
    assert text.startswith(
        "recs column 'score' (score) has 2 decimal(38,20) value(s) that float64 cannot hold"
    ), text
    assert "score=Decimal('0.12345678901234567891')" in text
    # DECIMAL(38, 0): the integer rule (2^63 - 1 becomes 2^63 in float64)
    integers = [Decimal(BIG + 1), Decimal(BIG), Decimal(2**63 - 1), Decimal(4)]
    with pytest.raises(InputError, match=r"has 2 integer value\(s\) beyond ±2\^53"):
        receval.evaluate(*_spark_pair(spark, integers, "decimal(38,0)"), ["ndcg@1"])


def test_decimal_scores_that_float64_holds_equal_the_local_engine(spark: Any) -> None:
    scores = [Decimal("0.1"), Decimal("0.25"), Decimal("123.4567"), Decimal(2**60)]
    want = receval.evaluate(*_local_pair([float(s) for s in scores]), ["ndcg@1", "auc", "mrr"])  # type: ignore[list-item]
    got = receval.evaluate(*_spark_pair(spark, scores, "decimal(38,4)"), ["ndcg@1", "auc", "mrr"])
    assert_same(got, want)


# ------------------------------------------------------- partitions past the users (issue 3)


def test_partitions_are_capped_at_the_number_of_users(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """partitions=10**6 on 12 users runs 12 shards (not a million tasks) and gives the
    result of partitions=2 bit for bit; partitions past Spark's int range too."""
    used: list[int] = []
    finish = receval.engines.spark._finish

    def spy(
        spark: Any, spec: Any, out: Any, columns: Any, user_type: Any, partitions: int, *a: Any
    ) -> Any:
        used.append(partitions)
        return finish(spark, spec, out, columns, user_type, partitions, *a)

    monkeypatch.setattr(receval.engines.spark, "_finish", spy)
    users = np.repeat(np.arange(12), 3)
    truth = pl.DataFrame({"user": users, "item": np.tile([1, 2, 3], 12), "relevance": 1.0})
    recs = pl.DataFrame(
        {"user": users, "item": np.tile([1, 4, 2], 12), "score": np.tile([0.5, 0.9, 0.1], 12)}
    )
    metrics = ["ndcg@2", "auc", "coverage"]
    want = receval.evaluate(truth, recs, metrics, engine="spark", spark=spark, partitions=2)
    for many in (10**6, 2**40):
        got = receval.evaluate(truth, recs, metrics, engine="spark", spark=spark, partitions=many)
        assert_same(got, want)
    assert used == [2, 12, 12]
    assert_same(want, receval.evaluate(truth, recs, metrics))


# ------------------------------------------------------------ the session's settings (issue 4)


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Session:
    """A stand-in for a Spark Connect session: a conf and no SparkContext."""

    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)

    @property
    def sparkContext(self) -> Any:
        raise RuntimeError("no SparkContext on a Connect client")


def test_session_settings_that_are_not_integers_fall_back_to_defaults() -> None:
    """Databricks sets spark.sql.shuffle.partitions to "auto"; a Connect client may have a
    spark.default.parallelism that is not a number: the defaults apply, never a ValueError."""
    odd = _Session({"spark.sql.shuffle.partitions": "auto", "spark.default.parallelism": "x"})
    assert receval.engines.spark._cores(odd) == 1
    assert receval.engines.spark._most_partitions(odd) == 200
    zero = _Session({"spark.sql.shuffle.partitions": "0", "spark.default.parallelism": "-3"})
    assert receval.engines.spark._cores(zero) == 1
    assert receval.engines.spark._most_partitions(zero) == 200


# ------------------------------------------------- Spark frames the engine cannot read (issue 8)


def test_an_empty_spark_train_is_the_local_error(spark: Any) -> None:
    """An empty train is refused as the local engine refuses it, whichever metric reads it:
    never novelty -inf from an empty popularity, nor a silent recs_in_train of 0."""
    truth, recs = spark.createDataFrame(TRUTH.to_arrow()), spark.createDataFrame(RECS.to_arrow())
    with pytest.raises(InputError) as local:
        receval.evaluate(TRUTH, RECS, ["novelty@2"], train=TRUTH.head(0))
    for metrics in (["novelty@2"], ["ndcg@2"]):
        with pytest.raises(InputError) as remote:
            receval.evaluate(truth, recs, metrics, train=truth.limit(0))
        assert str(remote.value) == str(local.value), metrics


def test_ambiguous_spark_columns_are_an_input_error(spark: Any) -> None:
    """Two columns under a name the engine reads (Spark compares names without case by
    default) are InputError naming the input and the column, not Spark's AnalysisException
    or Polars' DuplicateError; a duplicate the engine does not read is left alone."""
    truth, recs = spark.createDataFrame(TRUTH.to_arrow()), spark.createDataFrame(RECS.to_arrow())
    twice = recs.selectExpr("user", "item", "score", "score * 2 AS Score")
    with pytest.raises(InputError) as info:
        receval.evaluate(truth, twice, ["ndcg@2"])
    assert str(info.value) == (
        "recs has 2 columns named 'score' (columns found: ['user', 'item', 'score', 'Score']; "
        "Spark compares names without case unless spark.sql.caseSensitive is true); "
        "expected one: rename or drop the others first."
    )
    train = truth.selectExpr("user", "item", "relevance AS item")
    with pytest.raises(InputError, match=r"^train has 2 columns named 'item' \(columns found"):
        receval.evaluate(truth, recs, ["novelty@2"], train=train)
    items = truth.selectExpr("item", "user AS item")
    with pytest.raises(InputError, match=r"^items has 2 columns named 'item' \(columns found"):
        receval.evaluate(truth, recs, ["coverage@2"], items=items)
    unused = recs.selectExpr("user", "item", "score", "1 AS x", "2 AS x")
    assert (
        receval.evaluate(truth, unused, ["ndcg@2"]).means
        == receval.evaluate(TRUTH, RECS, ["ndcg@2"]).means
    )


def _stand_ins(connect: bool) -> tuple[type, type]:
    """A SparkSession class and a DataFrame class that the engine takes for pyspark's own,
    classic or Spark Connect (only their modules, names and ``sparkSession`` are looked at
    before the check under test)."""
    where = "pyspark.sql.connect" if connect else "pyspark.sql"
    session = type("SparkSession", (), {"__module__": f"{where}.session"})

    def init(self: Any, owner: Any) -> None:
        self.sparkSession = owner

    frame = type("DataFrame", (), {"__module__": f"{where}.dataframe", "__init__": init})
    return session, frame


def test_inputs_of_spark_connect_and_classic_sessions_are_not_mixed() -> None:
    """A Spark Connect DataFrame beside a classic one (or another Connect session's, or with
    ``spark=`` of the other kind) is an InputError naming both inputs; pyspark would fail with
    a bare AssertionError or "Argument `col` should be Column or str, got Column"."""
    connect_session, connect_frame = _stand_ins(connect=True)
    classic_session, classic_frame = _stand_ins(connect=False)
    remote, local = connect_session(), classic_session()
    one = "a Spark evaluation runs in one session: build every Spark input (and spark=) in it."
    with pytest.raises(InputError) as info:
        receval.evaluate(connect_frame(remote), classic_frame(local), ["ndcg@2"])
    assert str(info.value) == (
        "recs is a DataFrame of a classic SparkSession, but truth is one of a Spark Connect "
        f"session; {one}"
    )
    with pytest.raises(InputError) as info:
        receval.evaluate(connect_frame(remote), connect_frame(connect_session()), ["ndcg@2"])
    assert str(info.value) == (
        f"recs is a DataFrame of another Spark Connect session than truth's; {one}"
    )
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH, connect_frame(remote), ["ndcg@2"], train=classic_frame(local))
    assert str(info.value).startswith("train is a DataFrame of a classic SparkSession, but recs")
    with pytest.raises(InputError) as info:
        receval.evaluate(connect_frame(remote), RECS, ["ndcg@2"], spark=local)
    assert str(info.value) == (
        "spark is a classic SparkSession, but truth is a DataFrame of a Spark Connect session; "
        f"{one}"
    )
    with pytest.raises(InputError) as info:
        receval.evaluate(connect_frame(remote), RECS, ["ndcg@2"], spark=connect_session())
    assert str(info.value) == f"spark is another Spark Connect session than truth's; {one}"


def test_frames_of_classic_sessions_of_one_spark_context_mix(spark: Any) -> None:
    """Classic sessions share the process's SparkContext, so their frames combine."""
    truth = spark.newSession().createDataFrame(TRUTH.to_arrow())
    recs = spark.createDataFrame(RECS.to_arrow())
    assert (
        receval.evaluate(truth, recs, METRICS).means == receval.evaluate(TRUTH, RECS, METRICS).means
    )
