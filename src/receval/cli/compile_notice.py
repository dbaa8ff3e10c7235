"""The command line's notice while Numba compiles receval's kernels (a first run).

Every kernel is compiled on its first call and cached on disk (``cache=True``), so the first
run in a fresh environment spends seconds compiling and later runs load the machine code in
milliseconds. Numba broadcasts a ``numba:compile`` event exactly when it compiles a function:
never when it loads one from the on-disk cache (a hit) or finds it already loaded in the
process. Listening for that event tells, at no cost and without guessing from the cache files
(their names, staleness rules and locations are Numba's internals), when a call is compiling;
:func:`compile_notice` shows a spinner for exactly that time.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from numba.core import event
from rich.console import Console

__all__ = ["MESSAGE", "CompileWatch", "compile_notice", "watch_compiles"]

MESSAGE = "compiling kernels (first run only)"


class CompileWatch(event.Listener):
    """A listener of Numba's ``numba:compile`` events: ``on_start()`` when a compilation starts
    with none under way, ``on_end()`` when the last one under way ends (a kernel compiles its
    callees inside its own compilation); ``compiled`` tells whether any started."""

    def __init__(
        self,
        on_start: Callable[[], object] | None = None,
        on_end: Callable[[], object] | None = None,
    ) -> None:
        self.depth = 0
        self.compiled = False
        self._on_start = on_start
        self._on_end = on_end

    def on_start(self, ev: event.Event) -> None:
        """A compilation starts (Numba holds its compiler lock: one thread at a time)."""
        self.depth += 1
        self.compiled = True
        if self.depth == 1 and self._on_start is not None:
            self._on_start()

    def on_end(self, ev: event.Event) -> None:
        """A compilation ends, compiled or failed."""
        self.depth -= 1
        if self.depth == 0 and self._on_end is not None:
            self._on_end()


@contextmanager
def watch_compiles(
    on_start: Callable[[], object] | None = None, on_end: Callable[[], object] | None = None
) -> Iterator[CompileWatch]:
    """Within the block, call ``on_start`` / ``on_end`` around each stretch of compilation.

    Parameters
    ----------
    on_start, on_end : callable or None
        Called with no argument when Numba starts compiling (none under way) and when it is
        done.

    Yields
    ------
    CompileWatch
        Its ``compiled`` attribute tells, after the block, whether anything was compiled.
    """
    watch = CompileWatch(on_start, on_end)
    with event.install_listener("numba:compile", watch):
        yield watch


_TOLD: weakref.WeakSet[Console] = weakref.WeakSet()  # consoles that printed the plain line


@contextmanager
def compile_notice(console: Console) -> Iterator[None]:
    """While Numba compiles within the block, tell so on ``console``.

    On a terminal: :data:`MESSAGE` with a spinner, transient (it disappears when compiling
    stops). Otherwise (redirected to a file, a pipe, CI logs): :data:`MESSAGE` as one plain
    line when compiling starts, once per console, so a log says why a first run is slow.
    Nothing is shown when no kernel is compiled (a warm run: every kernel is cached).
    """
    if not console.is_terminal:

        def tell() -> None:
            if console not in _TOLD:
                _TOLD.add(console)
                console.print(MESSAGE, markup=False, highlight=False, soft_wrap=True)

        with watch_compiles(tell):
            yield
        return
    status = console.status(MESSAGE, spinner="dots")
    try:
        with watch_compiles(status.start, status.stop):
            yield
    finally:
        status.stop()
