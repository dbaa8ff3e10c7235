"""``receval evaluate --sampling`` (and the config key ``sampling``): the same numbers as
``evaluate(..., sampling=receval.Sampling.parse(text))``, and a clear error for bad text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
from typer.testing import CliRunner

import receval
from receval.cli import app

runner = CliRunner()


def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    users, items = rng.normal(size=(40, 4)), rng.normal(size=(300, 4))
    np.save(tmp_path / "U.npy", users)
    np.save(tmp_path / "I.npy", items)
    truth = pl.DataFrame({"user": np.arange(40), "item": rng.integers(0, 300, 40)})
    truth.write_parquet(tmp_path / "truth.parquet")
    return {"U": tmp_path / "U.npy", "I": tmp_path / "I.npy", "truth": tmp_path / "truth.parquet"}


def test_sampling_flag_and_config(tmp_path: Path) -> None:
    f = files(tmp_path)
    base = ["evaluate", "--truth", str(f["truth"]), "--user-factors", str(f["U"]),
            "--item-factors", str(f["I"]), "-m", "ndcg@10", "--format", "json"]  # fmt: skip
    result = runner.invoke(app, [*base, "--sampling", "bias_variance(50, seed=3)"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["metrics"]
    model = receval.FactorModel(np.load(f["U"]), np.load(f["I"]))
    want = receval.evaluate(
        pl.read_parquet(f["truth"]), model, ["ndcg@10"],
        sampling=receval.Sampling(50, seed=3, correction="bias_variance"),
    ).means  # fmt: skip
    assert got == want
    config = tmp_path / "c.toml"
    config.write_text('sampling = "bias_variance(50, seed=3)"\n')
    result = runner.invoke(app, [*base, "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"] == want
    result = runner.invoke(app, [*base, "--sampling", "magic(50)"])
    assert result.exit_code != 0
    assert "a sampling must read estimator(m" in result.output
