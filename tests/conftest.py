"""Fixtures shared by the test folders."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from helpers.examples import FULL
from helpers.warmup import PARTS

# the README's test command draws few examples (its "quick" default), .ci/run every property
# test again with each test's full number (--hypothesis-profile=full): tests/helpers/examples.py
settings.register_profile("full", max_examples=FULL)
settings.register_profile("quick", max_examples=FULL // 4)
settings.load_profile("quick")


@pytest.fixture(scope="session")
def _spark_sessions() -> Iterator[list[Any]]:
    """The run's local Spark sessions, stopped at its end: one, unless a test stopped it."""
    sessions: list[Any] = []
    yield sessions
    for spark in sessions:
        spark.stop()


@pytest.fixture
def spark(_spark_sessions: list[Any]) -> Any:
    """One local Spark session (2 cores) for every test of the run: starting one costs ~5 s, and
    each module started its own. A test that stops it (tests/engines/test_spark_stopped.py)
    gets it replaced for the next one. 4 shuffle partitions: Spark's default of 200 costs
    ~50 ms of Python worker per task."""
    from receval.engines.spark import _is_stopped, session  # pyspark: the Spark tests only

    if not _spark_sessions or _is_stopped(_spark_sessions[-1]):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        _spark_sessions.append(session("local[2]", **{"spark.sql.shuffle.partitions": "4"}))
    return _spark_sessions[-1]


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


SPARK_GROUP = "spark"  # the xdist group of the tests that run Spark: one worker, one session


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the :data:`CI_ONLY` cases slow and the Hypothesis tests ``property`` (.ci/run runs
    those again under the full profile); put every test that runs Spark in one xdist group, so
    that ``--dist loadgroup`` runs them on one worker with one Spark session."""
    for item in items:
        if item.nodeid in CI_ONLY:
            item.add_marker(pytest.mark.slow)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
        if "spark" in getattr(item, "fixturenames", ()) or "spark" in item.path.name:
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))


WARMUP_FROM = 1000  # tests selected: a whole suite's run compiles first, a few tests do not


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before a run of the whole suite in one process, compile the kernels in two processes
    side by side (tests/helpers/warmup.py): the tests then load the cached machine code. A run
    of fewer than :data:`WARMUP_FROM` tests, an xdist worker (the controller compiled before
    it started), ``--collect-only`` and ``RECEVAL_NO_WARMUP=1`` skip it."""
    config = session.config
    if (
        len(session.items) < WARMUP_FROM
        or hasattr(config, "workerinput")
        or config.option.collectonly
    ):
        return
    _warm_up(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """With xdist (``-n``), the controller compiles the kernels before it starts the workers
    (its own hook runs after this one), which then load them from the cache: the workers
    would each compile them otherwise, on the same cores.

    The workers' OpenMP threads (Numba's threading layer here) wait passively: by default an
    idle one spins on its core for a while after each parallel kernel, which took the other
    worker's core (measured on 2 cores: 187 s for tests/metrics and two engine files, 97 s
    with ``OMP_WAIT_POLICY=PASSIVE``). It changes no result: only how a thread waits."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # the workers inherit it
    if not config.option.collectonly:
        _warm_up(config)


def _warm_up(config: pytest.Config) -> None:
    """Run the warm-up's parts side by side and print what they took; ``RECEVAL_NO_WARMUP=1``
    skips it. A part that fails prints why; its kernels then compile in the tests."""
    if os.environ.get("RECEVAL_NO_WARMUP") == "1":
        return
    tests = Path(__file__).resolve().parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]),
        "NUMBA_NUM_THREADS": "1",  # one core each: the parts run side by side
    }
    start = time.perf_counter()
    parts = [
        subprocess.Popen(
            [sys.executable, "-m", "helpers.warmup", part],
            cwd=tests.parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for part in PARTS
    ]
    lines = []
    for part, process in zip(PARTS, parts, strict=True):
        out, err = process.communicate()
        lines.append(out.strip() or f"warm-up {part}: exit status {process.returncode}")
        if process.returncode or " 0 call(s) failed" not in out:
            lines.append(err.strip()[-2000:])  # what failed: its kernels compile in the tests
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        took = time.perf_counter() - start
        reporter.write_line(f"kernels compiled in {took:.1f} s ({'; '.join(lines)})")
