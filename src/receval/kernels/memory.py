"""Large scratch arrays: where they come from, and how they go back.

**Allocation.** :func:`uninitialised` gives an int64 array without writing to it. Small ones
come from Numba (``np.empty`` inside a kernel): NumPy asks Linux for transparent huge pages
for large arrays, and with THP defrag on ``madvise`` the first writes to a fresh 10^8-row
array then stalled 1-3 s in page compaction on the development machine (the same as
:func:`receval.data.datasets._outputs`). Large ones (from :data:`MAPPED_MIN` bytes, where
the OS offers anonymous maps) are anonymous memory maps of their own, which never ask for
huge pages either.

**Release.** Handing a large array back to the OS (``munmap``) costs about 0.07 ms per MiB
here: 0.37 s for what one ``evaluate`` of 10^8 shuffled rows holds. NumPy and Numba free
their memory while holding the GIL, but a memory map is unmapped without it. So an engine
that is done with its layout passes it to :func:`release_later`: a thread drops the last
references, the maps go back to the OS there, and the caller has its result at once. The
work is the same, on another core. Peak memory does not grow: the next large allocation, a
``fork()`` and :func:`wait_released` first wait until every release has finished.
"""

from __future__ import annotations

import mmap
import os
import threading
from typing import Any

import numpy as np
from numba import njit

__all__ = ["MAPPED_MIN", "release_later", "uninitialised", "wait_released"]

MAPPED_MIN = 1 << 26
"""Arrays of at least this many bytes are memory maps of their own (64 MiB: above the 32 MiB
up to which glibc's malloc may keep freed memory for the next allocation, without new pages)."""

_CAN_MAP = hasattr(mmap, "MAP_ANONYMOUS") and hasattr(mmap, "MAP_PRIVATE")


class _Releases:
    """The release threads started and not yet waited for, under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[threading.Thread] = []


_STATE = _Releases()


@njit(cache=True)
def _numba_empty(n: int) -> np.ndarray:
    return np.empty(n, dtype=np.int64)


def uninitialised(n: int) -> np.ndarray:
    """An uninitialised (in practice: zero pages, not yet touched) int64 array of ``n``
    values, writable and C-contiguous."""
    if not _CAN_MAP or 8 * n < MAPPED_MIN:
        return _numba_empty(n)
    wait_released()  # what the last call held is back with the OS first: no higher peak
    try:
        mapped = mmap.mmap(-1, 8 * n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError:  # no map this large (limits): Numba's allocator, or its MemoryError
        return _numba_empty(n)
    return np.frombuffer(mapped, dtype=np.int64, count=n)


def release_later(held: list[Any]) -> None:
    """Drop the references in ``held`` (emptied) on a thread of its own, so that the memory
    maps they hold go back to the OS while the caller goes on; the caller must hold no other
    reference to them (``del`` its names first)."""
    if not held:
        return
    thread = threading.Thread(target=held.clear, name="receval-release", daemon=True)
    with _STATE.lock:
        _STATE.pending = [t for t in _STATE.pending if t.is_alive()]
        thread.start()
        _STATE.pending.append(thread)


def wait_released() -> None:
    """Return once every :func:`release_later` so far has finished."""
    with _STATE.lock:
        waiting, _STATE.pending = _STATE.pending, []
    for thread in waiting:
        if thread.is_alive() and thread is not threading.current_thread():
            thread.join()


def _after_fork_in_child() -> None:
    _STATE.lock = threading.Lock()  # the parent's threads are not in the child
    _STATE.pending = []


if hasattr(os, "register_at_fork"):  # no release half done in a child
    os.register_at_fork(before=wait_released, after_in_child=_after_fork_in_child)
