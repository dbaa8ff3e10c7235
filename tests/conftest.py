"""Fixtures shared by the test folders."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local Spark session (2 cores) for one test module, stopped after it. 4 shuffle
    partitions: Spark's default of 200 costs ~50 ms of Python worker per task."""
    from receval.engines.spark import session  # pyspark is imported only by the Spark tests

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session("local[2]", **{"spark.sql.shuffle.partitions": "4"})
    yield spark
    spark.stop()
