"""A stopped SparkSession is a clear :class:`receval.EngineError`, not pyspark's bare
``AssertionError``: DataFrames of a stopped session, ``spark=`` a stopped session, and
DataFrames of a stopped session handed with a live one.

Its own module: the test stops the run's shared session (the `spark` fixture starts another for
the next test that asks).
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

import receval
from receval import EngineError
from receval.engines.spark import session

TRUTH = pl.DataFrame({"user": [1, 2], "item": [10, 20], "relevance": [1.0, 1.0]})
RECS = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 20], "score": [0.9, 0.5, 0.4]})
STOPPED = r"^the SparkSession (of \w+ )?is stopped \(spark\.stop\(\) was called\); "


def test_a_stopped_session_is_an_engine_error(spark: Any) -> None:
    truth, recs = spark.createDataFrame(TRUTH.to_arrow()), spark.createDataFrame(RECS.to_arrow())
    assert receval.evaluate(truth, recs, ["ndcg@2"]).means["ndcg@2"] == 1.0
    spark.stop()
    with pytest.raises(EngineError, match=STOPPED):
        receval.evaluate(truth, recs, ["ndcg@2"])
    with pytest.raises(EngineError, match=STOPPED):
        receval.evaluate(TRUTH, RECS, ["ndcg@2"], engine="spark", spark=spark)
    fresh = session("local[1]")
    try:
        assert fresh is not spark
        with pytest.raises(EngineError, match=STOPPED) as info:
            receval.evaluate(TRUTH, recs, ["ndcg@2"], spark=fresh)
        assert str(info.value).startswith("the SparkSession of recs is stopped")
        got = receval.evaluate(TRUTH, RECS, ["ndcg@2"], engine="spark", spark=fresh)
        assert got.means["ndcg@2"] == 1.0
    finally:
        fresh.stop()
