"""receval's thread pools under ``fork`` and under Python threads.

Two pools do receval's work: Polars' (a Rust rayon pool, threads ``polars-0``, ``polars-1``,
...) reads and groups the data, and Numba's threading layer runs the ``prange`` kernels.

**fork.** Neither pool survives ``fork()``, which copies only the calling thread. A process
forked after Polars' pool started hangs for ever at its first parallel Polars operation (the
pool's threads are gone, its queue is not); with Numba's GNU OpenMP layer (``omp``, the
default on Linux without TBB) a process forked after a parallel kernel ran is killed
(SIGTERM) at its first kernel, which a ``multiprocessing`` pool shows as a hang too.
Numba's ``tbb`` and ``workqueue`` layers are fork-safe. An ``os.register_at_fork`` hook
records in the parent, just before each fork, which of these pools are running (Polars'
threads by name in ``/proc/self/task``; elsewhere, whether receval ran at all), and the child
inherits the record; :func:`check_pools`, called where data enters receval
(:func:`receval.data.io.read_table`, :func:`receval.arrays.classification.as_vector`), then raises
:class:`~receval.EngineError` naming the fix before anything can hang. A child of a process
that merely imported receval, spawn and forkserver children, and the parent itself never see
it.

**threads.** Numba's ``workqueue`` layer (used when neither TBB nor OpenMP loads, or with
``NUMBA_THREADING_LAYER=workqueue``) aborts the process when two threads launch parallel
kernels at once. :func:`serialise_kernels` (run once, at the end of ``receval/__init__.py``)
makes every parallel kernel of receval a :class:`SerialisedKernel`: launched under one lock
until the layer in use is known to be thread-safe (``tbb``, ``omp``), then without it.

**chunks on Python threads.** Some loops run their chunks from Python threads instead of a
``prange`` loop (:func:`run_chunks`): a first run compiles such a kernel much faster
(benchmarks/README.md, "Cold start"). The kernel is ``nogil`` and not ``parallel=True``, so it
needs no lock, whatever Numba's threading layer; the threads end before :func:`run_chunks`
returns, so none is left for a fork to lose.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numba
from numba.core.registry import CPUDispatcher
from numba.np.ufunc import threading_layer

from receval._errors import EngineError

__all__ = [
    "SerialisedKernel", "check_pools", "fork_message", "run_chunks", "running_pools",
    "serialise_kernels",
]  # fmt: skip

POLARS_POOL = "Polars' thread pool"
GNU_OPENMP = "Numba's GNU OpenMP threads"

_POLARS_THREAD = re.compile(r"polars-\d+$|async-executor")
"""Names of Polars' worker threads: the rayon pool and the streaming engine's executor."""

_THREADSAFE_LAYERS = ("tbb", "omp")


@dataclass
class _State:
    used: bool = False
    """:func:`check_pools` ran in this process (where thread names cannot be read)."""
    at_fork: str | None = None
    """The pools that were running at this process's latest fork (read by the child)."""
    broken: str | None = None
    """The pools this process inherited dead: set when forked from one running them."""
    threadsafe: bool = False
    """Numba's threading layer in use is known to be thread-safe."""
    launch: threading.Lock = field(default_factory=threading.Lock)


_STATE = _State()


def fork_message(pools: str) -> str:
    """The :class:`~receval.EngineError` message in a process forked after ``pools`` started."""
    return (
        f"receval cannot run in this process: it was forked from a process in which {pools} "
        "had already started, and threads do not survive fork(): this call would hang or be "
        'killed. Start worker processes with the "spawn" or "forkserver" method instead of '
        '"fork" (Linux\'s default before Python 3.14): '
        'multiprocessing.get_context("spawn").Pool(...), or concurrent.futures.'
        'ProcessPoolExecutor(mp_context=multiprocessing.get_context("spawn")); or create the '
        "worker processes before the parent first calls receval (or Polars)."
    )


def check_pools() -> None:
    """Raise :class:`~receval.EngineError` when this process cannot run receval's pools.

    Called where data enters receval, before any Polars operation or kernel launch: in a
    process forked from one whose Polars pool or Numba OpenMP threads were running, the call
    would otherwise hang.

    Raises
    ------
    EngineError
        This process was forked after those pools started; the message names the fix
        (the ``"spawn"`` or ``"forkserver"`` start method).
    """
    _STATE.used = True
    if _STATE.broken is not None:
        raise EngineError(fork_message(_STATE.broken))


def running_pools() -> str | None:
    """The pools running in this process that a forked child could not use, in words, or
    None when a child forked now could run receval."""
    if _STATE.broken is not None:
        return _STATE.broken
    names = _thread_names()
    polars = _STATE.used if names is None else any(_POLARS_THREAD.match(n) for n in names)
    pools = [POLARS_POOL] if polars else []
    if _gnu_openmp_started():
        pools.append(GNU_OPENMP)
    return " and ".join(pools) or None


def _thread_names() -> list[str] | None:
    """The names of this process's threads, or None where ``/proc`` cannot tell."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    names = []
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm", encoding="utf-8", errors="replace") as f:
                names.append(f.read().strip())
        except OSError:  # the thread ended meanwhile
            continue
    return names


def _layer() -> str | None:
    """Numba's threading layer in use, or None before the first parallel kernel."""
    try:
        return str(threading_layer())
    except ValueError:
        return None


def _gnu_openmp_started() -> bool:
    """Whether Numba's threading layer is GNU OpenMP (fork-unsafe) and has started."""
    if _layer() != "omp":
        return False
    omppool = importlib.import_module("numba.np.ufunc.omppool")
    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


def _before_fork() -> None:
    try:
        _STATE.at_fork = running_pools()
    except Exception:  # a hook must never break fork(); the child then runs unguarded
        _STATE.at_fork = None


def _after_fork_in_child() -> None:
    _STATE.broken = _STATE.at_fork
    _STATE.launch = threading.Lock()  # a lock held by another thread at fork stays held


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


class SerialisedKernel(CPUDispatcher):
    """A ``parallel=True`` kernel launched from Python under receval's launch lock until
    Numba's threading layer in use is known to be thread-safe; then without it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _STATE.threadsafe:
            return super().__call__(*args, **kwargs)
        with _STATE.launch:
            out = super().__call__(*args, **kwargs)
            _STATE.threadsafe = _layer() in _THREADSAFE_LAYERS
        return out


def serialise_kernels() -> None:
    """Make every ``parallel=True`` kernel of receval's imported modules a
    :class:`SerialisedKernel` (in place, so that every reference to it sees the change;
    compiled code and caches are kept). ``receval/__init__.py`` calls it last, once every
    module is imported (a test checks that no parallel kernel is left out)."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "receval" or name.startswith("receval.")):
            continue
        for value in vars(module).values():
            if type(value) is CPUDispatcher and value.targetoptions.get("parallel"):
                value.__class__ = SerialisedKernel


def run_chunks(kernel: Callable[..., object], n_chunks: int, *args: Any) -> None:
    """Call ``kernel(chunk, *args)`` for ``chunk = 0 .. n_chunks - 1`` on Python threads.

    ``kernel`` must be an ``@njit(nogil=True)`` function, not ``parallel=True``, whose chunks
    write disjoint parts of the outputs (or the same value to one place). As many threads as
    :func:`numba.get_num_threads` (``numba.set_num_threads`` is respected), the calling thread
    one of them; each takes the next chunk when done with one (no queue of tasks: a chunk costs
    one kernel call). A chunk's exception is raised here, once the other threads have stopped.
    """
    workers = min(numba.get_num_threads(), n_chunks)
    if workers <= 1:
        for chunk in range(n_chunks):
            kernel(chunk, *args)
        return
    chunks = iter(range(n_chunks))
    lock = threading.Lock()
    failed = threading.Event()

    def work() -> None:
        while not failed.is_set():
            with lock:
                chunk = next(chunks, None)
            if chunk is None:
                return
            try:
                kernel(chunk, *args)
            except BaseException:
                failed.set()  # the other threads stop at their next chunk
                raise

    with ThreadPoolExecutor(workers - 1, thread_name_prefix="receval-chunks") as pool:
        helpers = [pool.submit(work) for _ in range(workers - 1)]
        try:
            work()
        finally:
            for helper in helpers:
                helper.result()  # waits; raises a helper's exception
