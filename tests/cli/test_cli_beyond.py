"""The beyond-accuracy metrics from the command line: --train, --items, --item-features
(one vector column, or categorical columns separated by commas) and a config file."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval.cli import app
from receval.datasets import make_interactions, make_items, make_train

runner = CliRunner()
METRICS = ["coverage@10", "gini@10", "entropy@10", "novelty@10", "arp@10", "long_tail@10",
           "ils@10", "diversity@10"]  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("beyond_cli")
    data = make_interactions(60, n_items=200, n_recs=15, seed=4)
    paths = {
        "truth": folder / "truth.parquet",
        "recs": folder / "recs.parquet",
        "train": folder / "train.csv",
        "items": folder / "items.parquet",
    }
    data.truth.write_parquet(paths["truth"])
    data.recs.write_parquet(paths["recs"])
    make_train(80, n_items=200, seed=4).write_csv(paths["train"])
    make_items(200, dim=8, seed=4).write_parquet(paths["items"])
    return paths


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def base_args(files: dict[str, Path], metrics: list[str]) -> list[str | Path]:
    args: list[str | Path] = ["evaluate", "--truth", files["truth"], "--recs", files["recs"]]
    for m in metrics:
        args += ["-m", m]
    return args


@pytest.mark.parametrize(("flag", "feature"), [("embedding", "embedding"),
                                               ("genres,year", ["genres", "year"])])  # fmt: skip
def test_flags_match_the_library(files: dict[str, Path], flag: str, feature: object) -> None:
    args = [*base_args(files, METRICS), "--train", files["train"], "--items", files["items"],
            "--item-features", flag, "--format", "json", "--id-type", "int"]  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    doc = json.loads(out)
    lib = receval.evaluate(files["truth"], files["recs"], METRICS, train=files["train"],
                           items=files["items"], item_features=feature, id_type="int")  # fmt: skip
    assert doc == json.loads(lib.to_json())
    assert doc["details"]["coverage@10"]["catalog"] == "items"
    assert doc["details"]["ils@10"]["similarity"] == (
        "cosine" if flag == "embedding" else "jaccard"
    )


def test_single_categorical_column_flag(files: dict[str, Path]) -> None:
    args = [*base_args(files, ["ils@5"]), "--items", files["items"], "--item-features", "genre",
            "--format", "json"]  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    lib = receval.evaluate(files["truth"], files["recs"], "ils@5", items=files["items"],
                           item_features="genre")  # fmt: skip
    assert json.loads(out)["metrics"]["ils@5"] == lib["ils@5"]


def test_config_file(files: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(
        f'truth = "{files["truth"]}"\nrecs = "{files["recs"]}"\n'
        f"metrics = {json.dumps(METRICS)}\n"
        f'train = "{files["train"]}"\nitems = "{files["items"]}"\n'
        'item_features = ["genres", "year"]\nformat = "json"\nid_type = "item=int"\n'
    )  # train.csv: text ids unless id_type says otherwise
    code, out, err = cli("evaluate", "--config", config)
    assert code == 0, err
    lib = receval.evaluate(files["truth"], files["recs"], METRICS, train=files["train"],
                           items=files["items"], item_features=["genres", "year"],
                           id_type="item=int")  # fmt: skip
    assert json.loads(out) == json.loads(lib.to_json())


def test_per_user_file(files: dict[str, Path], tmp_path: Path) -> None:
    out_path = tmp_path / "per_user.parquet"
    args = [*base_args(files, ["novelty@10", "ndcg@10"]), "--train", files["train"],
            "--per-user", out_path, "--format", "json", "--id-type", "int"]  # fmt: skip
    code, _, err = cli(*args)
    assert code == 0, err
    frame = pl.read_parquet(out_path)
    recs_users = pl.read_parquet(files["recs"])["user"].unique()
    novelty = frame.filter(pl.col("novelty@10").is_not_null())["user"]
    assert sorted(novelty.to_list()) == sorted(recs_users.to_list())


def test_missing_train_is_a_clear_error(files: dict[str, Path]) -> None:
    code, out, err = cli(*base_args(files, ["novelty@10"]))
    assert code == 2
    assert out == ""
    assert "novelty@10 needs item popularity from training interactions; pass train=" in err
    assert "--train on the command line" in err


def test_missing_items_is_a_clear_error(files: dict[str, Path]) -> None:
    code, _, err = cli(*base_args(files, ["ils@10"]), "--item-features", "embedding")
    assert code == 2
    assert "pass items=" in err
    assert "--items on the command line" in err
