"""Pointwise metrics on the command line: ``receval evaluate -m auc -m rmse --format json``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import polars as pl
import pytest
from sklearn import metrics as skm
from typer.testing import CliRunner

import receval
from receval.cli import app

runner = CliRunner()

# u1 rates a 4, b 2, c 5; u2 rates d 1, e 3 (e has no prediction); u3 only in recs
TRUTH = pl.DataFrame(
    {
        "user": ["u1", "u1", "u1", "u2", "u2"],
        "item": ["a", "b", "c", "d", "e"],
        "relevance": [4.0, 2.0, 5.0, 1.0, 3.0],
    }
)
RECS = pl.DataFrame(
    {
        "user": ["u1", "u1", "u1", "u1", "u2", "u3"],
        "item": ["a", "b", "c", "x", "d", "a"],
        "score": [3.5, 2.5, 4.0, 1.0, 2.0, 3.0],
    }
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    truth, recs = tmp_path / "truth.parquet", tmp_path / "recs.csv"
    TRUTH.write_parquet(truth)
    RECS.write_csv(recs)
    return truth, recs


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_auc_and_rmse_as_json(files: tuple[Path, Path]) -> None:
    truth, recs = files
    args = ["evaluate", "--truth", truth, "--recs", recs, "-m", "auc(rel=4)", "-m", "rmse"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e has no prediction: predicted as 0
        code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    # classification rows: the recs rows, relevant when relevance >= 4 (a, c)
    y = [1, 0, 1, 0, 0, 0]
    assert doc["metrics"]["auc(rel=4)"] == pytest.approx(skm.roc_auc_score(y, RECS["score"]))
    # rating rows: truth rows, e predicted 0 (no_recs zero)
    want = skm.root_mean_squared_error([4, 2, 5, 1, 3], [3.5, 2.5, 4.0, 2.0, 0.0])
    assert doc["metrics"]["rmse"] == pytest.approx(want, rel=1e-12)
    assert doc["details"]["rmse"]["missing_predictions"] == 1
    assert doc["details"]["auc(rel=4)"]["positives"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lib = receval.evaluate(truth, recs, ["auc(rel=4)", "rmse"])
    assert doc == json.loads(lib.to_json())


def test_rating_range_flag(files: tuple[Path, Path]) -> None:
    truth, recs = files
    base = ["evaluate", "--truth", truth, "--recs", recs, "-m", "nmae", "--no-recs", "skip"]
    code, out, err = cli(*base, "--rating-range", "0", "10", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    mae = skm.mean_absolute_error([4, 2, 5, 1], [3.5, 2.5, 4.0, 2.0])
    assert doc["metrics"]["nmae"] == pytest.approx(mae / 10, rel=1e-12)
    assert doc["details"]["nmae"]["rating_range"] == [0.0, 10.0]
    code, out, _ = cli(*base, "--format", "json")  # read from truth: 1..5
    assert json.loads(out)["metrics"]["nmae"] == pytest.approx(mae / 4, rel=1e-12)


def test_pointwise_error_exits_with_message(files: tuple[Path, Path]) -> None:
    truth, recs = files
    code, _, err = cli("evaluate", "--truth", truth, "--recs", recs, "-m", "logloss")
    assert code != 0
    assert "logloss needs probabilities: recs column 'score' has 5 score(s) outside [0, 1]" in err


def test_rating_range_in_a_config_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    truth, recs = files
    config = tmp_path / "eval.toml"
    config.write_text(
        f'truth = "{truth}"\nrecs = "{recs}"\nmetrics = ["nmae"]\nno_recs = "skip"\n'
        'rating_range = [0, 10]\nformat = "json"\n'
    )
    code, out, err = cli("evaluate", "--config", config)
    assert code == 0, err
    mae = skm.mean_absolute_error([4, 2, 5, 1], [3.5, 2.5, 4.0, 2.0])
    assert json.loads(out)["metrics"]["nmae"] == pytest.approx(mae / 10, rel=1e-12)
    # the flag overrides the file
    code, out, err = cli("evaluate", "--config", config, "--rating-range", "1", "5")
    assert code == 0, err
    assert json.loads(out)["metrics"]["nmae"] == pytest.approx(mae / 4, rel=1e-12)


@pytest.mark.parametrize("value", ["[1]", "[1, 2, 3]", '["a", 5]', "5", "[true, 5]"])
def test_bad_rating_range_in_a_config_file(
    files: tuple[Path, Path], tmp_path: Path, value: str
) -> None:
    truth, recs = files
    config = tmp_path / "eval.toml"
    config.write_text(
        f'truth = "{truth}"\nrecs = "{recs}"\nmetrics = ["nmae"]\nrating_range = {value}\n'
    )
    code, _, err = cli("evaluate", "--config", config)
    assert code == 2
    assert "rating_range must be two numbers [r_min, r_max]; got" in err
