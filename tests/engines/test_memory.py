"""Large scratch arrays (receval.kernels.memory): allocation, release on another thread, and
the waits that keep the peak and fork() as they were."""

from __future__ import annotations

import mmap
import os
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import receval
from receval.kernels import memory as M

MIB = 1 << 20


def rss() -> int:
    """This process's resident memory in bytes (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


class SlowToDrop:
    """An object whose release takes a while and is recorded."""

    def __init__(self, seconds: float, log: list[str]) -> None:
        self.seconds = seconds
        self.log = log

    def __del__(self) -> None:
        time.sleep(self.seconds)
        self.log.append("dropped")


@pytest.mark.parametrize("n", [0, 1, 1000, M.MAPPED_MIN // 8 - 1, M.MAPPED_MIN // 8, 5_000_000])
def test_uninitialised_arrays(n: int) -> None:
    a = M.uninitialised(n)
    assert a.dtype == np.int64 and a.shape == (n,)
    assert a.flags.writeable and a.flags.c_contiguous
    a[:] = np.arange(n)
    assert int(a.sum()) == n * (n - 1) // 2
    mapped = isinstance(a.base, memoryview) and isinstance(a.base.obj, mmap.mmap)
    assert mapped == (M._CAN_MAP and 8 * n >= M.MAPPED_MIN)


def test_release_drops_the_last_references() -> None:
    a = M.uninitialised(4_000_000)
    gone = weakref.ref(a)
    held = [a, {"other": a[:10]}]
    del a
    M.release_later(held)
    M.wait_released()
    assert held == [] and gone() is None


@pytest.mark.skipif(not Path("/proc/self/statm").is_file(), reason="resident memory from /proc")
@pytest.mark.skipif(not M._CAN_MAP, reason="no anonymous memory maps here")
def test_released_maps_go_back_to_the_os() -> None:
    a = M.uninitialised(64 * MIB // 8)
    a[:] = 1  # every page touched
    before = rss()
    held = [a]
    del a
    M.release_later(held)
    M.wait_released()
    assert before - rss() >= 48 * MIB


def test_large_allocation_and_wait_come_after_every_release() -> None:
    log: list[str] = []
    M.release_later([SlowToDrop(0.3, log)])
    M.uninitialised(M.MAPPED_MIN // 8)  # a large array: the release finishes first
    assert log == ["dropped"]
    M.release_later([SlowToDrop(0.3, log)])
    M.wait_released()
    assert log == ["dropped", "dropped"]


def test_the_caller_goes_on_while_the_release_runs() -> None:
    log: list[str] = []
    start = time.perf_counter()
    M.release_later([SlowToDrop(0.5, log)])
    assert time.perf_counter() - start < 0.4 and log == []
    M.wait_released()
    assert log == ["dropped"]


def test_release_of_nothing_starts_no_thread() -> None:
    M.release_later([])
    assert not any(t.name == "receval-release" for t in threading.enumerate())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork()")
def test_fork_waits_for_every_release() -> None:
    log: list[str] = []
    M.release_later([SlowToDrop(0.3, log)])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing pending, the parent's release done before the fork
        os.close(read)
        os.write(write, f"{len(M._STATE.pending)} {len(log)}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        seen = f.read()
    os.waitpid(pid, 0)
    assert seen == "0 1" and log == ["dropped"]


def test_evaluate_hands_its_layout_to_a_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "MAPPED_MIN", 1 << 20)  # recs columns of 2.4 MB: memory maps
    rng = np.random.default_rng(3)
    n = 300_000
    recs = pl.DataFrame(
        {
            "user": rng.integers(0, 3_000, n),
            "item": rng.integers(0, 10**5, n),
            "score": rng.random(n),
        }
    ).unique(["user", "item"])
    truth = recs.sample(fraction=0.05, seed=1).select("user", "item")
    M.wait_released()
    first = receval.evaluate(truth, recs, ["ndcg@10", "recall@20"])
    assert [t.name for t in M._STATE.pending] == ["receval-release"]  # the layout's release
    M.wait_released()
    assert M._STATE.pending == []
    again = receval.evaluate(truth, recs, ["ndcg@10", "recall@20"])
    M.wait_released()
    assert first.means == again.means
    monkeypatch.setattr(M, "MAPPED_MIN", 1 << 62)  # no memory maps: the same result
    assert receval.evaluate(truth, recs, ["ndcg@10", "recall@20"]).means == first.means
