"""The first-run notice: Numba compilations are seen as they happen, cache hits are not."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from numba import njit
from rich.console import Console

from receval.cli.compile_notice import MESSAGE, compile_notice, watch_compiles


def _fresh_kernel() -> object:
    """A jitted function never compiled before (a new one per call), with a jitted callee."""

    @njit
    def inner(x: np.ndarray) -> float:
        return float(x.sum())

    @njit
    def outer(x: np.ndarray) -> float:
        return inner(x) + 1.0

    return outer


def test_watch_sees_one_stretch_per_compilation_and_nothing_when_compiled() -> None:
    kernel: object = _fresh_kernel()
    calls: list[str] = []
    x = np.arange(3.0)
    with watch_compiles(lambda: calls.append("start"), lambda: calls.append("end")) as watch:
        assert kernel(x) == 4.0  # type: ignore[operator]
    assert watch.compiled
    assert calls == ["start", "end"]  # the callee compiles inside the caller's compilation
    assert watch.depth == 0
    with watch_compiles(lambda: calls.append("again")) as warm:
        assert kernel(x) == 4.0  # type: ignore[operator]
    assert not warm.compiled
    assert calls == ["start", "end"]


def test_cache_hit_in_a_new_process_is_not_a_compilation(tmp_path: Path) -> None:
    (tmp_path / "tiny_kernel.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n"
    )
    script = textwrap.dedent(
        """
        import tiny_kernel
        from receval.cli.compile_notice import watch_compiles

        with watch_compiles() as watch:
            assert tiny_kernel.f(1) == 2
        print(watch.compiled)
        """
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert runs == ["True", "False"]  # compiled and cached, then loaded from the cache


def test_notice_on_a_terminal_only_while_compiling() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=80)
    kernel: object = _fresh_kernel()
    with compile_notice(console):
        kernel(np.arange(2.0))  # type: ignore[operator]
    assert MESSAGE in buf.getvalue()
    warm = io.StringIO()
    with compile_notice(Console(file=warm, force_terminal=True, width=80)):
        kernel(np.arange(2.0))  # type: ignore[operator]
    assert warm.getvalue() == ""


def test_notice_is_one_line_on_stderr_when_not_a_terminal() -> None:
    # redirected output (a log, CI) still learns why the first run is slow: one plain line,
    # said once per console however many blocks compile, and nothing when all is compiled
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False)
    with compile_notice(console):
        _fresh_kernel()(np.arange(2.0))  # type: ignore[operator]
    with compile_notice(console):
        _fresh_kernel()(np.arange(2.0))  # type: ignore[operator]
    assert buf.getvalue() == MESSAGE + "\n"
    warm = io.StringIO()
    kernel: object = _fresh_kernel()
    kernel(np.arange(2.0))  # type: ignore[operator]
    with compile_notice(Console(file=warm, force_terminal=False)):
        kernel(np.arange(2.0))  # type: ignore[operator]
    assert warm.getvalue() == ""
