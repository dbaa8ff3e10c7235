"""What the command line writes: never over an input, atomically, with the permissions a plain
``open()`` gives, and with a one-line error naming the user's path when the operating system
refuses (missing or unwritable folder, full disk, interrupted write). Also the command line's
other one-line errors and warnings (issue 19).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval.cli import app

runner = CliRunner()

TRUTH = pl.DataFrame(
    {"user": ["u1", "u1", "u2", "u3"], "item": ["a", "b", "c", "d"], "relevance": [1.0] * 4}
)
RECS = pl.DataFrame(
    {
        "user": ["u1", "u1", "u2", "u3", "u3"],
        "item": ["a", "x", "c", "y", "d"],
        "score": [0.9, 0.5, 0.4, 0.3, 0.1],
    }
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / f"{name}.parquet" for name in ("truth", "recs", "other", "train")}
    TRUTH.write_parquet(paths["truth"])
    RECS.write_parquet(paths["recs"])
    RECS.with_columns(pl.col("score").reverse()).write_parquet(paths["other"])
    TRUTH.select("user", "item").write_parquet(paths["train"])
    return paths


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _invoke(args: list[str]) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return " ".join(lines)


# -- no output path may be one of the inputs ---------------------------------------------------


def _output_cases(files: dict[str, Path], tmp: Path) -> list[tuple[list[str], Path]]:
    """(command line, input it would overwrite) for every command that writes."""
    t, r, o, tr = files["truth"], files["recs"], files["other"], files["train"]
    html = tmp / "truth_link.html"
    html.symlink_to(t)  # an output with the right suffix that is an input under a link
    png = tmp / "recs_link.png"
    png.symlink_to(r)
    hard = tmp / "hard.parquet"
    os.link(r, hard)  # the same file under another name
    ev = ["evaluate", "--truth", t, "--recs", r, "-m", "ndcg@10"]
    runs = ["--run", f"a={r}", "--run", f"b={o}"]
    return [
        ([*ev, "--per-user", t], t),
        ([*ev, "--per-user", r], r),
        ([*ev, "--per-user", hard], r),
        ([*ev, "--per-user", tmp / "." / "truth.parquet"], t),
        ([*ev, "-m", "novelty@2", "--train", tr, "--per-user", tr], tr),
        (["compare", "--truth", t, *runs, "-m", "mrr", "-o", o], o),
        (["compare", "--truth", t, *runs, "-m", "mrr", "-o", html], t),
        (["report", "--truth", t, *runs, "-m", "mrr", "-o", html], t),
        (["plot", "roc", "--truth", t, "--recs", r, "-o", png], r),
        (["plot", "pr", "--truth", t, "--recs", r, "-o", png], r),
        (["plot", "metric-at-k", "--truth", t, "--recs", r, "--k", "3", "-o", png], r),
        (["plot", "per-user", "--truth", t, "--recs", r, "-o", png], r),
    ]


def test_no_output_replaces_an_input(files: dict[str, Path], tmp_path: Path) -> None:
    before = {p: _digest(p) for p in files.values()}
    for args, victim in _output_cases(files, tmp_path):
        code, _, err = _invoke(args)
        message = _one_line_error(code, err)
        assert "would replace that input" in message, (args, message)
        assert repr(str(victim)) in message, (args, message)
        assert {p: _digest(p) for p in files.values()} == before, args
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_config_per_user_equal_to_truth_is_refused(files: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(
        'truth = "truth.parquet"\nrecs = "recs.parquet"\nmetrics = ["mrr"]\n'
        'per_user = "truth.parquet"\n',
        encoding="utf-8",
    )
    before = _digest(files["truth"])
    code, _, err = _invoke(["evaluate", "--config", config])
    message = _one_line_error(code, err)
    assert f"--per-user {str(tmp_path / 'truth.parquet')!r} is the --truth file" in message
    assert _digest(files["truth"]) == before
    # the config file itself is an input too
    code, _, err = _invoke(["evaluate", "--config", config, "--per-user", tmp_path / "eval.toml"])
    assert "is the --config file" in _one_line_error(code, err)


def test_distinct_output_is_written(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "per_user.parquet"
    ev = ["evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "mrr"]
    code, _, err = _invoke([*ev, "--per-user", out])
    assert code == 0, err
    expected = receval.evaluate(files["truth"], files["recs"], "mrr").per_user
    assert pl.read_parquet(out).equals(expected)


# -- the operating system refuses ---------------------------------------------------------------


def _per_user_args(files: dict[str, Path], out: Path) -> list[object]:
    ev = ["evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "mrr"]
    return [*ev, "--per-user", out]


def test_missing_folder_names_the_users_path(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "missing" / "per_user.parquet"
    code, _, err = _invoke(_per_user_args(files, out))
    message = _one_line_error(code, err)
    assert message == (
        f"error: cannot write {str(out)!r}: the folder {str(out.parent)!r} does not exist."
    )
    assert not out.parent.exists()


def test_output_that_is_a_folder(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "folder.parquet"
    out.mkdir()
    code, _, err = _invoke(_per_user_args(files, out))
    assert _one_line_error(code, err) == (
        f"error: cannot write {str(out)!r}: it is a folder; expected a file path."
    )


@pytest.mark.parametrize("where", ["mkstemp", "replace"])
def test_unwritable_folder(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A folder the process may not write to (mocked: as root, mode bits do not stop writes).
    The old file stays, no temporary file is left, the message names the user's path."""
    out = tmp_path / "per_user.parquet"
    out.write_bytes(b"old")

    def refuse(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(tmp_path / ".hidden.tmp"))

    monkeypatch.setattr(tempfile if where == "mkstemp" else os, where, refuse)
    code, _, err = _invoke(_per_user_args(files, out))
    message = _one_line_error(code, err)
    assert message == (
        f"error: cannot write {str(out)!r}: Permission denied; nothing was written there."
    )
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["per_user.parquet", *(f"{n}.parquet" for n in ("truth", "recs", "other", "train"))]
    )


@contextlib.contextmanager
def _small_filesystem(tmp_path: Path) -> Iterator[Path | None]:
    """A 16 KiB tmpfs mounted under ``tmp_path`` (root on Linux), else None."""
    mount = tmp_path / "small"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)],
            capture_output=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False, timeout=30)


def test_full_disk(files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that runs out of space fails with the user's path, keeps the old file and
    leaves no temporary file: on a real 16 KiB filesystem where one can be mounted, else
    with the write mocked to fail as a full disk does."""
    n = 20_000
    big_truth = pl.DataFrame({"user": [f"user{i:06d}" for i in range(n)], "item": ["a"] * n})
    big_recs = big_truth.with_columns(pl.lit(1.0).alias("score"))
    big = {"truth": tmp_path / "big_truth.parquet", "recs": tmp_path / "big_recs.parquet"}
    big_truth.write_parquet(big["truth"])
    big_recs.write_parquet(big["recs"])
    with _small_filesystem(tmp_path) as mount:
        folder = mount if mount is not None else tmp_path
        out = folder / "per_user.csv"
        out.write_bytes(b"old")
        if mount is None:

            def full(self: pl.DataFrame, *args: object, **kwargs: object) -> None:
                raise OSError(28, "No space left on device")

            monkeypatch.setattr(pl.DataFrame, "write_csv", full)
        code, _, err = _invoke(_per_user_args(big, out))
        message = _one_line_error(code, err)
        assert message.startswith(f"error: cannot write {str(out)!r}: "), message
        assert "No space left on device" in message or "os error 28" in message, message
        assert message.endswith("nothing was written there."), message
        assert out.read_bytes() == b"old"
        assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == []


def test_interrupted_write_keeps_the_old_file(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "per_user.parquet"
    out.write_bytes(b"old")

    def interrupted(self: pl.DataFrame, path: object, *args: object, **kwargs: object) -> None:
        Path(str(path)).write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(pl.DataFrame, "write_parquet", interrupted)
    result = runner.invoke(app, [str(a) for a in _per_user_args(files, out)])
    assert result.exit_code != 0
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# -- permissions: as a plain open() would leave them --------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask_022")
def test_written_files_are_readable_by_others(files: dict[str, Path], tmp_path: Path) -> None:
    t, r, o = files["truth"], files["recs"], files["other"]
    runs = ["--run", f"a={r}", "--run", f"b={o}"]
    outputs = {
        "per_user.parquet": ["evaluate", "--truth", t, "--recs", r, "-m", "mrr", "--per-user"],
        "cmp.md": ["compare", "--truth", t, *runs, "-m", "mrr", "--resamples", "50", "-o"],
        "report.html": [
            "report",
            "--truth",
            t,
            *runs,
            "-m",
            "mrr",
            "--resamples",
            "50",
            "--no-curves",
            "-o",
        ],
        "roc.png": ["plot", "roc", "--truth", t, "--recs", r, "-o"],
    }
    for name, args in outputs.items():
        code, _, err = _invoke([*args, tmp_path / name])
        assert code == 0, (name, err)
        assert _mode(tmp_path / name) == 0o644, name
    code, _, err = _invoke(["demo", "--users", "50", "--save", tmp_path / "demo"])
    assert code == 0, err
    for name in ("truth.parquet", "recs.parquet", "train.parquet", "items.parquet"):
        assert _mode(tmp_path / "demo" / name) == 0o644, name


@pytest.mark.usefixtures("umask_022")
def test_replacing_a_file_keeps_its_mode(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "per_user.csv"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o640)
    code, _, err = _invoke(_per_user_args(files, out))
    assert code == 0, err
    assert _mode(out) == 0o640
    assert out.read_text(encoding="utf-8").startswith("user,mrr")


# -- other one-line errors and warnings of the command line -------------------------------------


def test_config_that_is_not_utf8(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_bytes(b'truth = "caf\xe9.parquet"\n')
    code, _, err = _invoke(["evaluate", "--config", config])
    assert _one_line_error(code, err) == (
        f"error: config file {str(config)!r} is not UTF-8 text: byte 0xe9 at offset 12 cannot "
        "be decoded. Save the file as UTF-8."
    )


def test_missing_train_file_is_an_error_even_when_unused(files: dict[str, Path]) -> None:
    missing = files["truth"].parent / "nope.parquet"
    ev = ["evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "mrr"]
    for option in ("--train", "--items"):
        code, _, err = _invoke([*ev, option, missing])
        role = option.lstrip("-")
        assert _one_line_error(code, err) == f"error: {role} file {str(missing)!r} does not exist."
    with pytest.raises(receval.InputError, match=r"^train file '.*nope.parquet' does not exist"):
        receval.evaluate(files["truth"], files["recs"], "mrr", train=missing)


def test_compare_errors_name_the_run(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("user,item,score\nu1,a,1.0\nu1,b,\n", encoding="utf-8")
    runs = ["--run", f"good={files['recs']}", "--run", f"bad={bad}"]
    code, _, err = _invoke(["compare", "--truth", files["truth"], *runs, "-m", "mrr"])
    message = _one_line_error(code, err)
    assert message.startswith("error: run 'bad': recs has 1 null value(s) in column 'score'")
    with pytest.raises(receval.InputError, match=r"^run 'bad': recs has 1 NaN value"):
        receval.compare(
            files["truth"], {"good": files["recs"], "bad": {"u1": {"a": float("nan")}}}, "mrr"
        )


def test_warnings_are_one_line_without_source(files: dict[str, Path]) -> None:
    # no user has a relevant item at rel=5: the metric's mean is NaN, with a warning
    ev = ["evaluate", "--truth", files["truth"], "--recs", files["recs"]]
    code, _, err = _invoke([*ev, "-m", "mrr", "-m", "mrr(rel=5)"])
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["warning: no user is evaluated by mrr(rel=5); its mean is NaN."]


_BUG = """
import sys
import receval.cli
def boom(*args, **kwargs):
    raise RuntimeError("kaboom")
receval.cli.evaluate = boom
sys.argv = ["receval", *sys.argv[1:]]
receval.cli.main()
"""


@pytest.mark.parametrize("debug", [False, True])
def test_unexpected_errors_are_one_line_unless_debug(files: dict[str, Path], debug: bool) -> None:
    args = ["evaluate", "--truth", str(files["truth"]), "--recs", str(files["recs"]), "-m", "mrr"]
    done = subprocess.run(
        [sys.executable, "-c", _BUG, *(["--debug"] if debug else []), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    if debug:
        assert "Traceback" in done.stderr and "RuntimeError: kaboom" in done.stderr
    else:
        assert done.stderr.strip() == (
            "error: unexpected RuntimeError: kaboom (a bug in receval, or an input it does not "
            "check yet; run again with --debug for the traceback and report it)."
        )


def test_pandas_nan_score_is_reported_as_nan() -> None:
    pd = pytest.importorskip("pandas")
    recs = pd.DataFrame({"user": ["u", "u"], "item": ["a", "b"], "score": [1.0, float("nan")]})
    with pytest.raises(receval.InputError) as info:
        receval.evaluate({"u": {"a": 1}}, recs, "mrr")
    assert str(info.value) == (
        "recs has 1 NaN value(s) in column 'score' (score); expected numbers. First offending "
        "rows:\n  row 1: user='u', item='b', score=nan"
    )


def test_internal_columns_never_shown() -> None:
    pd = pytest.importorskip("pandas")
    train = pd.DataFrame({"user": ["u", None], "item": ["a", "b"]})
    with pytest.raises(receval.InputError) as info:
        receval.evaluate({"u": {"a": 1}}, {"u": {"a": 1.0}}, "novelty@1", train=train)
    assert str(info.value) == (
        "train has 1 null value(s) in column 'user'; expected none. First offending rows:\n"
        "  row 1: user=None, item='b'"
    )
    assert "__receval" not in str(info.value)
