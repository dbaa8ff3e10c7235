"""Pipes, FIFOs and devices given as a command's input or output path: refused clearly, before
any work; never replaced (an output is written to a new file that replaces the path), never
waited on (a FIFO without a writer blocks whoever opens it), never called "does not exist"."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from receval.cli import app

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
runner = CliRunner()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    truth, recs = tmp_path / "truth.parquet", tmp_path / "recs.parquet"
    pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3]}).write_parquet(truth)
    pl.DataFrame({"user": [1, 2], "item": [1, 4], "score": [0.5, 0.2]}).write_parquet(recs)
    fifo = tmp_path / "fifo.parquet"
    os.mkfifo(fifo)
    return {"truth": truth, "recs": recs, "fifo": fifo, "root": tmp_path}


def _one_line_error(args: list[str | Path]) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def _still_a_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.stat(path).st_mode)


def test_per_user_at_a_fifo_is_refused_and_the_fifo_kept(files: dict[str, Path]) -> None:
    line = _one_line_error(["evaluate", "--truth", files["truth"], "--recs", files["recs"],
                            "-m", "mrr", "--per-user", files["fifo"]])  # fmt: skip
    assert "--per-user" in line and "is a pipe (a FIFO), not a regular file" in line
    assert _still_a_fifo(files["fifo"])


@pytest.mark.parametrize("command", ["compare", "report", "topk"])
def test_outputs_at_a_fifo_are_refused(files: dict[str, Path], command: str) -> None:
    fifo = files["root"] / "out.html"
    os.mkfifo(fifo)
    if command == "topk":
        import numpy as np

        np.save(files["root"] / "U.npy", np.ones((2, 2)))
        np.save(files["root"] / "I.npy", np.ones((5, 2)))
        fifo = files["root"] / "top.parquet"
        os.mkfifo(fifo)
        args: list[str | Path] = ["topk", "--user-factors", files["root"] / "U.npy",
                                  "--item-factors", files["root"] / "I.npy", "-k", "2", "-o",
                                  fifo]  # fmt: skip
    else:
        args = [command, "--truth", files["truth"], "--run", f"a={files['recs']}", "-o", fifo,
                "--no-progress"]  # fmt: skip
    line = _one_line_error(args)
    assert "--output" in line and "is a pipe (a FIFO)" in line
    assert _still_a_fifo(fifo)


@pytest.mark.parametrize("option", ["--truth", "--recs", "--train"])
def test_an_input_fifo_is_named_a_fifo_not_missing(files: dict[str, Path], option: str) -> None:
    given = {"--truth": files["truth"], "--recs": files["recs"], option: files["fifo"]}
    args: list[str | Path] = ["evaluate", "-m", "mrr"]
    for flag, path in given.items():
        args += [flag, path]
    line = _one_line_error(args)
    assert f"{option} '{files['fifo']}' is a pipe (a FIFO), not a regular file" in line
    assert "does not exist" not in line


def test_split_and_audit_name_a_fifo(files: dict[str, Path]) -> None:
    line = _one_line_error(["split", files["fifo"], "--method", "random", "--out-dir",
                            files["root"] / "out"])  # fmt: skip
    assert "INPUT" in line and "is a pipe (a FIFO)" in line
    line = _one_line_error(["audit", files["truth"], files["fifo"]])
    assert "TEST" in line and "is a pipe (a FIFO)" in line


@pytest.mark.parametrize("command", ["evaluate", "compare", "split"])
def test_config_at_a_fifo_is_refused_without_blocking(files: dict[str, Path], command: str) -> None:
    # opening a FIFO for reading waits for a writer: the command hung. In a real process, under
    # a timeout (a hang fails the test instead of stopping the suite)
    script = ("import sys; from receval.cli import main; "
              "sys.argv = ['receval', *sys.argv[1:]]; main()")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", script, command, "--config", str(files["fifo"])],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"--config '{files['fifo']}' is a pipe (a FIFO), not a regular file" in done.stderr


def test_a_device_output_is_refused(files: dict[str, Path]) -> None:
    # --per-user /dev/null: the atomic write would replace the device node (or fail) after the
    # whole evaluation; refused before any work
    null = Path(os.devnull)
    if not null.exists():
        pytest.skip("no /dev/null")
    args = ["evaluate", "--truth", str(files["truth"]), "--recs", str(files["recs"]), "-m",
            "mrr", "--per-user", str(null)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "is a character device, not a regular file" in result.stderr
