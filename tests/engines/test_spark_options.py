"""The Spark engine's options are checked before any Spark job (issue 19, point 6).

``partitions`` must be an integer >= 1, ``spark`` a SparkSession, and neither means anything
to the local engine; a missing path read by Spark raises the local engine's error, and the
command line turns it into one line on stderr with exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import receval
import receval.engines.spark
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
