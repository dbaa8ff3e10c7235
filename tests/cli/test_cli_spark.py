"""``receval evaluate --engine spark``: the same JSON as the local engine, and clear errors.

The Spark runs share one module-scoped ``local[2]`` session (built through
``receval.engines.spark.session``); the command line's session is that active one. pyspark is a test
dependency: without it the Spark tests fail, they are not skipped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval.cli import app
from receval.datasets import make_interactions, make_train

runner = CliRunner()

RANKING = ["ndcg@10", "map@100", "mrr", "recall@20", "precision@5", "hit_rate@10"]
MIXED = ["ndcg@10", "auc", "gauc", "coverage@10", "novelty@10", "gini@10"]


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # ties (2 decimals), users without recs, recs users not in truth, short lists
    folder = tmp_path_factory.mktemp("cli_spark")
    data = make_interactions(300, n_items=400, n_recs=30, seed=3)
    paths = {name: folder / f"{name}.parquet" for name in ("truth", "recs", "train")}
    data.truth.write_parquet(paths["truth"])
    data.recs.write_parquet(paths["recs"])
    make_train(300, n_items=400, seed=4).write_parquet(paths["train"])
    return paths


def run_both(
    files: dict[str, Path], tmp_path: Path, flags: list[str], spark_flags: list[str]
) -> tuple[Any, Any]:
    """The JSON documents and per-user frames of a local run and a Spark run."""
    docs, frames = [], []
    for engine, extra in (("local", []), ("spark", spark_flags)):
        per_user = tmp_path / f"{engine}.parquet"
        code, out, err = cli(
            "evaluate", "--truth", files["truth"], "--recs", files["recs"], "--format", "json",
            "--per-user", per_user, "--engine", engine, *flags, *extra,
        )  # fmt: skip
        assert code == 0, err
        docs.append(json.loads(out))
        frames.append(pl.read_parquet(per_user))
    return docs, frames


@pytest.mark.parametrize(
    ("metrics", "flags", "spark_flags", "options"),
    [
        (RANKING, [], [], {}),
        (RANKING, ["--ties", "trec"], ["--partitions", "3"], {"ties": "trec"}),
        (MIXED, ["--train", "TRAIN"], ["--spark-master", "local[2]"], {"train": "TRAIN"}),
    ],
    ids=["ranking", "trec-3-partitions", "pointwise-and-beyond"],
)
def test_spark_json_equals_local(
    spark: Any,
    files: dict[str, Path],
    tmp_path: Path,
    metrics: list[str],
    flags: list[str],
    spark_flags: list[str],
    options: dict[str, Any],
) -> None:
    flags = [str(files["train"]) if a == "TRAIN" else a for a in flags]
    options = {k: files["train"] if v == "TRAIN" else v for k, v in options.items()}
    flags += [a for m in metrics for a in ("-m", m)]
    (local, remote), (local_users, remote_users) = run_both(files, tmp_path, flags, spark_flags)
    assert remote == local  # means bit for bit (JSON writes floats with repr), counts, details
    assert_frame_equal(remote_users, local_users)
    assert local["counts"]["evaluated"] > 0
    lib = receval.evaluate(files["truth"], files["recs"], metrics, **options)
    assert local == json.loads(lib.to_json())


def test_engine_spark_without_pyspark(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # every pyspark module unimportable, and receval.engines.spark imported afresh
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.delitem(sys.modules, "receval.engines.spark", raising=False)
    monkeypatch.delattr(receval.engines, "spark", raising=False)
    code, out, err = cli(
        "evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "ndcg@10",
        "--engine", "spark",
    )  # fmt: skip
    assert code == 2
    assert "receval[spark]" in err
    assert out == ""


@pytest.mark.parametrize("extra", [["--partitions", "4"], ["--spark-master", "local[2]"]])
def test_spark_options_need_engine_spark(files: dict[str, Path], extra: list[str]) -> None:
    code, _, err = cli(
        "evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "mrr", *extra
    )
    assert code == 2
    assert "--engine spark" in err


def test_partitions_must_be_positive(files: dict[str, Path]) -> None:
    code, _, err = cli(
        "evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "mrr",
        "--engine", "spark", "--partitions", "0",
    )  # fmt: skip
    assert code == 2
    assert "--partitions" in err


def test_spark_master_is_handed_to_the_session(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # sc:// (Spark Connect) and cluster masters reach receval.engines.spark.session as given
    import receval.engines.spark

    seen: list[str] = []

    def fake_session(master: str = "local[*]", **conf: str) -> Any:
        seen.append(master)
        raise receval.EngineError("no Spark in this test")

    monkeypatch.setattr(receval.engines.spark, "session", fake_session)
    for given, expected in (
        (["--spark-master", "sc://host:15002"], "sc://host:15002"),
        ([], "local[*]"),
    ):
        code, _, err = cli(
            "evaluate", "--truth", files["truth"], "--recs", files["recs"], "-m", "mrr",
            "--engine", "spark", *given,
        )  # fmt: skip
        assert code == 2
        assert "no Spark in this test" in err
        assert seen[-1] == expected
