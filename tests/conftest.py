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


CI_ONLY = frozenset(
    {
        # variants of the slowest cases (4-7 s each); their siblings stay in the README's
        # test command, these run in CI's slow stage (`pytest -m slow`), so that the command
        # stays under 15 minutes in a clean clone, where every kernel compiles first
        "tests/engines/test_stream_sorted.py::test_sorted_files_skip_the_partition_pass[3KiB-expected-str]",
        "tests/engines/test_stream_sorted.py::test_sorted_files_skip_the_partition_pass[3KiB-expected-int]",
        "tests/engines/test_stream_sorted.py::test_sorted_files_skip_the_partition_pass[3KiB-first-str]",
        "tests/engines/test_stream_sorted.py::test_sorted_files_skip_the_partition_pass[3KiB-first-int]",
        "tests/engines/test_spark.py::test_beyond_with_spark_items[str]",
        "tests/engines/test_spark.py::test_partitions[7]",
        "tests/engines/test_spark.py::test_ties_first_on_a_frame_built_in_order[str]",
        "tests/engines/test_spark_history.py::test_history_metrics_equal_the_local_engine[str-spark]",
        "tests/cli/test_cli_spark.py::test_spark_json_equals_local[pointwise-and-beyond]",
        "tests/engines/test_stream.py::test_stream_engine_on_parquet_files_equals_evaluate[2KiB-trec]",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the :data:`CI_ONLY` cases slow."""
    for item in items:
        if item.nodeid in CI_ONLY:
            item.add_marker(pytest.mark.slow)
