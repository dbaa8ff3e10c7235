"""``receval split`` and ``receval audit``: files written, the audit printed, config keys,
errors (exit code 2) and --fail-on-leak (exit code 3)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval.cli import app

runner = CliRunner()

DATA = pl.DataFrame(
    {
        "user": [1, 1, 1, 2, 2, 2, 3, 3],
        "item": [1, 2, 3, 1, 2, 4, 5, 6],
        "timestamp": [1, 2, 3, 4, 5, 6, 7, 8],
        "rating": [5, 3, 4, 1, 2, 5, 3, 3],
    }
)


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "inter.parquet"
    DATA.write_parquet(path)
    return path


def test_split_writes_parts_and_prints_the_audit(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = cli(
        "split", data, "--method", "temporal_user", "--n", "1", "--validation-n", "1",
        "--out-dir", out,
    )  # fmt: skip
    assert code == 0, stderr
    with pytest.warns(receval.LeakageWarning):
        expected = receval.split(DATA, "temporal_user", n=1, validation_n=1)
    for name, frame in (("train", expected.train), ("test", expected.test)):
        assert_frame_equal(pl.read_parquet(out / f"{name}.parquet"), frame)
    assert expected.validation is not None
    assert_frame_equal(pl.read_parquet(out / "validation.parquet"), expected.validation)
    assert "leakage audit" in stdout and "test_before_train_end" in stdout
    assert "validation.test_before_train_end" in stdout
    assert "warning: 2 test rows" in stderr and "global time overlap" in stderr
    assert "wrote 4 files" in stderr
    doc = json.loads((out / "split.json").read_text())
    assert doc["method"] == "temporal_user" and doc["settings"]["n"] == 1


def test_split_kfold_files_and_json(data: Path, tmp_path: Path) -> None:
    code, stdout, _ = cli(
        "split", data, "--method", "kfold_user", "--k", "3", "-n", "1", "--out-dir",
        tmp_path / "k", "--format", "json",
    )  # fmt: skip
    assert code == 0
    doc = json.loads(stdout)
    assert doc["counts"]["test"] == 3 and len(doc["files"]) == 7
    assert {row["fold"] for row in doc["audit"]} == {0, 1, 2}
    tests = [pl.read_parquet(tmp_path / "k" / f"fold_{i}_test.parquet") for i in range(3)]
    assert sorted(pl.concat(tests)["user"].to_list()) == [1, 2, 3]


def test_split_global_cutoff_no_leak_and_config(data: Path, tmp_path: Path) -> None:
    config = tmp_path / "split.toml"
    config.write_text(
        f'input = "{data.name}"\nout_dir = "cfg"\nmethod = "temporal_global"\ncutoff = 4\n'
        'seed = 3\nduplicates = "raise"\n'
    )
    code, _, stderr = cli("split", "--config", config, "--fail-on-leak")
    assert code == 0, stderr
    assert "warning" not in stderr
    train = pl.read_parquet(tmp_path / "cfg" / "train.parquet")
    assert train["timestamp"].to_list() == [1, 2, 3]
    # a flag overrides the config file
    code, _, _ = cli("split", "--config", config, "--cutoff", "6")
    assert pl.read_parquet(tmp_path / "cfg" / "train.parquet").height == 5


def test_split_errors_exit_2(data: Path, tmp_path: Path) -> None:
    code, _, stderr = cli("split", data, "--method", "temporal_global", "--cutoff", "99",
                          "--out-dir", tmp_path)  # fmt: skip
    assert code == 2 and "cutoff 99 is outside the data's time range" in stderr
    code, _, stderr = cli("split", data, "--method", "temporal_user", "--out-dir", tmp_path)
    assert code == 2 and "needs n or fraction" in stderr
    code, _, stderr = cli("split", data, "--method", "random", "--n", "1")
    assert code == 2 and "missing --out-dir" in stderr
    code, _, stderr = cli("split", data, "--method", "random", "--n", "1", "--out-dir",
                          data.parent, "--fraction", "0.5")  # fmt: skip
    assert code == 2 and "give n or fraction, not both" in stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('method = "random"\nn = "one"\n')
    code, _, stderr = cli("split", data, "--config", bad, "--out-dir", tmp_path)
    assert code == 2 and "n must be an integer; got 'one'" in stderr


def test_split_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    path = tmp_path / "train.parquet"
    DATA.write_parquet(path)
    code, _, stderr = cli("split", path, "--method", "random", "-n", "2", "--out-dir", tmp_path)
    assert code == 2 and "would replace that input" in stderr


def test_audit_command(data: Path, tmp_path: Path) -> None:
    train, test = tmp_path / "train.parquet", tmp_path / "test.parquet"
    DATA.filter(pl.col("timestamp") % 2 == 0).write_parquet(train)
    DATA.filter(pl.col("timestamp") % 2 == 1).write_parquet(test)
    code, stdout, stderr = cli("audit", train, test, "--relevance-col", "rating",
                               "--relevance-threshold", "4")  # fmt: skip
    assert code == 0
    assert "test_before_train_end" in stdout and "warning:" in stderr
    code, _, stderr = cli("audit", train, test, "--fail-on-leak")
    assert code == 3 and "leak(s) found" in stderr
    code, stdout, _ = cli("audit", train, train, "--format", "json")
    assert json.loads(stdout)["audit"][5] == {
        "check": "test_pairs_in_train", "count": 4, "share": 1.0, "of": "test rows",
    }  # fmt: skip
    code, _, stderr = cli("audit", train, tmp_path / "missing.parquet")
    assert code == 2 and "does not exist" in stderr
