"""receval in forked processes and in Python threads (src/receval/kernels/pools.py).

A process forked after Polars' thread pool or Numba's GNU OpenMP threads started cannot use
them: receval raises EngineError there instead of hanging. A child of a process that only
imported receval, and spawn children, work. Calls from several threads at once give the
serial results under every Numba threading layer (``workqueue`` aborts on concurrent
launches unless receval serialises them).

Each case runs in its own interpreter, in a session of its own so that a hang (the failure
before the fix) kills the script and its pool's workers after the timeout.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core.dispatcher import Dispatcher

import receval
from receval.kernels import pools as _pools

posix_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
LAYERS = ["default", "workqueue"]  # the default here (omp or tbb) and the fork-safe one

PRELUDE = """
import multiprocessing

import numba
import numpy as np

import receval

TRUTH = {"ann": {"a": 3, "b": 1, "c": 1}, "bob": {"d": 1}, "cat": {"e": 1, "f": 0}}
RECS = {
    "ann": {"b": 0.9, "x": 0.9, "a": 0.5, "y": 0.1},
    "bob": {"z": 0.8, "d": 0.3},
    "cat": {"f": 0.7, "e": 0.2},
}


def evaluate(_):
    res = receval.evaluate(TRUTH, RECS, ["ndcg@3", "mrr", "recall@2", "auc"])
    return [res["ndcg@3"], res["mrr"], res["recall@2"], res["auc"]]


def auc(_):
    return receval.auc(np.array([1, 1, 0, 0, 0]), np.array([0.4, 0.8, 0.2, 0.4, 0.5]))


def in_pool(method, work):
    try:
        with multiprocessing.get_context(method).Pool(2) as pool:
            return pool.map(work, range(2))
    except receval.RecevalError as exc:
        return f"{type(exc).__name__}: {exc}"


def layer():
    try:
        return numba.threading_layer()
    except ValueError:
        return None
"""


def _run(tmp_path: Path, main: str, layer: str = "default", timeout: int = 120) -> list[object]:
    """Run PRELUDE + ``main`` (the body of ``if __name__ == "__main__":``) in a new
    interpreter; return the Python values it printed, one per line."""
    script = tmp_path / "case.py"
    body = textwrap.indent(textwrap.dedent(main), "    ")
    script.write_text(f'{PRELUDE}\n\nif __name__ == "__main__":\n{body}')
    env = {**os.environ, "NUMBA_THREADING_LAYER": layer}
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and its pool's workers
        proc.communicate()
        pytest.fail(f"hung: no result after {timeout} s")
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{err[-3000:]}"
    return [ast.literal_eval(line) for line in out.splitlines()]


def _error(pools: str) -> str:
    return f"EngineError: {_pools.fork_message(pools)}"


def _openmp(layer: object) -> bool:
    """Whether Numba's layer ``layer`` is GNU OpenMP (not fork-safe)."""
    if layer != "omp":
        return False
    omppool = importlib.import_module("numba.np.ufunc.omppool")
    return bool(omppool.openmp_vendor == "GNU")


@posix_only
@pytest.mark.parametrize("layer", LAYERS)
def test_fork_after_use_raises(tmp_path: Path, layer: str) -> None:
    main = """
    print(evaluate(0))
    print(repr(layer()))
    print(repr(in_pool("fork", evaluate)))
    print(evaluate(0))  # the parent still works
    """
    serial, used, child, after = _run(tmp_path, main, layer)
    pools = _pools.POLARS_POOL
    if _openmp(used):
        pools += f" and {_pools.GNU_OPENMP}"
    assert child == _error(pools)
    assert after == serial


@posix_only
def test_fork_after_polars_only_raises(tmp_path: Path) -> None:
    main = """
    import polars as pl
    frame = pl.DataFrame({"a": list(range(1000)), "b": list(range(1000))})
    print(frame.select(pl.col("a").sum(), pl.col("b").max()).row(0))
    print(repr(in_pool("fork", evaluate)))
    """
    _, child = _run(tmp_path, main)
    assert child == _error(_pools.POLARS_POOL)


@posix_only
@pytest.mark.parametrize("layer", LAYERS)
def test_fork_after_kernels_only(tmp_path: Path, layer: str) -> None:
    """NumPy arrays never touch Polars: only Numba's layer decides."""
    main = """
    print(auc(0))
    print(repr(layer()))
    print(repr(in_pool("fork", auc)))
    """
    serial, used, child = _run(tmp_path, main, layer)
    assert serial == 0.75
    assert child == (_error(_pools.GNU_OPENMP) if _openmp(used) else [0.75, 0.75])


@posix_only
def test_fork_after_import_works(tmp_path: Path) -> None:
    main = """
    print(repr(in_pool("fork", evaluate)))
    print(evaluate(0))
    """
    child, serial = _run(tmp_path, main)
    assert child == [serial, serial]


def test_spawn_after_use_works(tmp_path: Path) -> None:
    main = """
    print(evaluate(0))
    print(repr(in_pool("spawn", evaluate)))
    """
    serial, child = _run(tmp_path, main)
    assert child == [serial, serial]


@pytest.mark.parametrize("layer", LAYERS)
def test_threads_equal_serial(tmp_path: Path, layer: str) -> None:
    main = """
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    from receval.datasets import make_interactions

    warnings.simplefilter("ignore")
    data = make_interactions(2_000, seed=0)
    sets = [
        ["ndcg@10", "map", "auc"],
        ["recall@20", "gauc", "mrr"],
        ["auc", "average_precision", "precision@5", "coverage@10"],
        ["ndcg@5", "hit_rate@10", "arhr@10"],
    ]

    def run(i):
        res = receval.evaluate(data.truth, data.recs, sets[i % 4])
        return [res[m] for m in sets[i % 4]]

    serial = [run(i) for i in range(20)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(run, range(20)))
    print(threaded == serial)
    print(repr(layer()))
    """
    equal, used = _run(tmp_path, main, layer)
    assert equal is True
    assert layer in ("default", used)


# ------------------------------------------------------------------------------ in process


def test_every_parallel_kernel_is_serialised() -> None:
    """Every parallel kernel of every module is serialised (a module that receval/__init__.py
    does not import would be left out)."""
    found = []
    for info in pkgutil.walk_packages(receval.__path__, "receval."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and value.targetoptions.get("parallel"):
                found.append((info.name, name, type(value) is _pools.SerialisedKernel))
    assert found
    assert [f for f in found if not f[2]] == []


def test_a_forked_child_refuses_every_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both call sites (tables and arrays) raise before any work."""
    monkeypatch.setattr(_pools._STATE, "broken", _pools.POLARS_POOL)
    message = _pools.fork_message(_pools.POLARS_POOL)
    with pytest.raises(receval.EngineError) as exc:
        receval.evaluate({"u": {"a": 1}}, {"u": {"a": 1.0}}, "ndcg@10")
    assert str(exc.value) == message
    with pytest.raises(receval.EngineError) as exc:
        receval.auc(np.array([1, 0]), np.array([0.9, 0.1]))
    assert str(exc.value) == message
    monkeypatch.undo()
    assert receval.auc(np.array([1, 0]), np.array([0.9, 0.1])) == 1.0


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="thread names from /proc")
def test_running_pools_sees_polars() -> None:
    receval.evaluate({"u": {"a": 1}}, {"u": {"a": 1.0}}, "ndcg@10")
    assert (_pools.running_pools() or "").startswith(_pools.POLARS_POOL)


# ------------------------------------------------------------ chunks on Python threads


@numba.njit(nogil=True)
def _square_chunk(chunk: int, out: np.ndarray) -> None:
    if chunk == 13:
        raise ValueError("chunk 13")
    out[chunk] = chunk * chunk


def test_run_chunks_calls_each_chunk_once() -> None:
    for n_chunks in (0, 1, 2, 13):  # chunks 0 .. 12
        out = np.full(14, -1, dtype=np.int64)
        _pools.run_chunks(_square_chunk, n_chunks, out)
        assert out.tolist() == [c * c for c in range(n_chunks)] + [-1] * (14 - n_chunks)


def test_run_chunks_raises_a_chunks_exception() -> None:
    with pytest.raises(ValueError, match="chunk 13"):
        _pools.run_chunks(_square_chunk, 100, np.zeros(100, dtype=np.int64))


def test_run_chunks_on_one_thread_starts_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """With numba.set_num_threads(1), or a single chunk, the calling thread does the work."""
    started: list[object] = []
    monkeypatch.setattr(_pools, "ThreadPoolExecutor", lambda *a, **k: started.append(a))
    out = np.zeros(5, dtype=np.int64)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        _pools.run_chunks(_square_chunk, 5, out)
    finally:
        numba.set_num_threads(before)
    assert out.tolist() == [0, 1, 4, 9, 16]
    _pools.run_chunks(_square_chunk, 1, out)
    assert started == []
