"""The compare, report and plot commands of the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval.cli import app

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from receval.datasets import make_interactions

    root = tmp_path_factory.mktemp("cmp")
    data = make_interactions(300, n_recs=20, seed=0)
    other = data.recs.with_columns(pl.col("score").shuffle(seed=2).alias("score"))
    paths = {"truth": root / "truth.parquet", "a": root / "a.parquet", "b": root / "b.parquet"}
    data.truth.write_parquet(paths["truth"])
    data.recs.write_parquet(paths["a"])
    other.write_parquet(paths["b"])
    return paths


def _base(files: dict[str, Path]) -> list[str]:
    return ["--truth", str(files["truth"]), "--run", f"pop={files['a']}", "--run",
            f"knn={files['b']}"]  # fmt: skip


def test_compare_json_equals_library(files: dict[str, Path]) -> None:
    args = ["compare", *_base(files), "-m", "ndcg@10", "-m", "mrr", "--test", "wilcoxon",
            "--format", "json", "--resamples", "200", "--no-progress"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    cmp = receval.compare(
        files["truth"], {"pop": files["a"], "knn": files["b"]}, ["ndcg@10", "mrr"],
        test="wilcoxon", n_resamples=200,
    )  # fmt: skip
    assert doc == json.loads(cmp.to_json())
    assert doc["baseline"] == "pop" and doc["settings"]["test"] == "wilcoxon"


def test_compare_passes_evaluate_options(files: dict[str, Path], tmp_path: Path) -> None:
    """--train, --no-recs and the other evaluate options reach every run's evaluation."""
    from receval.datasets import make_train

    train = tmp_path / "train.parquet"
    make_train(300, n_items=1000, seed=1).write_parquet(train)
    args = ["compare", *_base(files), "-m", "novelty@10", "-m", "coverage@10", "-m", "mrr",
            "--train", str(train), "--no-recs", "skip", "--format", "json", "--resamples",
            "100", "--no-progress"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    cmp = receval.compare(
        files["truth"], {"pop": files["a"], "knn": files["b"]},
        ["novelty@10", "coverage@10", "mrr"], n_resamples=100, train=train, no_recs="skip",
    )  # fmt: skip
    assert doc == json.loads(cmp.to_json())
    assert cmp.results["pop"].settings["no_recs"] == "skip"
    # without --train the novelty metric names the missing argument
    out = runner.invoke(app, [*args[:9], "--no-progress"])
    assert out.exit_code == 2
    assert "train" in out.output


def test_compare_table_marks_the_best_mean_in_bold(files: dict[str, Path]) -> None:
    from rich.console import Console

    import receval.cli.compare as cc

    cmp = receval.compare(
        files["truth"], {"pop": files["a"], "knn": files["b"]}, ["ndcg@10"], n_resamples=50
    )
    recorder = Console(record=True, width=200, force_terminal=True)
    original = cc._out
    cc._out = recorder
    try:
        cc._print_comparison(cmp, cc.CompareFormat.table)
    finally:
        cc._out = original
    ansi = recorder.export_text(styles=True)
    pop = f"{cmp.cell('pop', 'ndcg@10')['mean']:.4f}"
    knn = f"{cmp.cell('knn', 'ndcg@10')['mean']:.4f}"
    best, other = (pop, knn) if float(pop) > float(knn) else (knn, pop)
    assert f"\x1b[1m{best}\x1b[0m" in ansi  # bold on
    assert f"\x1b[1m{other}" not in ansi


def test_compare_table_and_outputs(files: dict[str, Path], tmp_path: Path) -> None:
    args = ["compare", *_base(files), "-m", "ndcg@10", "--baseline", "knn", "--correction",
            "none", "--resamples", "100", "-o", str(tmp_path / "c.md")]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "receval compare (baseline knn)" in out.stdout
    md = (tmp_path / "c.md").read_text()
    assert md.startswith("| model | ndcg@10 |") and "| knn (baseline) |" in md
    for suffix, start in ((".tex", "% requires"), (".json", "{"), (".csv", "model,metric")):
        path = tmp_path / f"c{suffix}"
        args[-1] = str(path)
        assert runner.invoke(app, args).exit_code == 0
        assert path.read_text().startswith(start)
    for fmt, start in (("markdown", "| model"), ("latex", "% requires"), ("csv", "model,")):
        got = runner.invoke(app, [*args[:-2], "--format", fmt])
        assert got.exit_code == 0 and got.stdout.startswith(start)


def test_report_writes_html(files: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    args = ["report", *_base(files), "-m", "ndcg@10", "--resamples", "100", "-o", str(path),
            "--title", "Offline test"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    html = path.read_text()
    # intervals, per-user values of ndcg@10, and the ndcg@K curve for K = 1..10
    assert "<title>Offline test</title>" in html and html.count("data:image/png;base64,") == 3
    assert "ndcg@K, K = 1..10" in html
    args += ["--no-curves"]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert path.read_text().count("data:image/png;base64,") == 2


def test_report_adds_roc_curves_for_classification_metrics(
    files: dict[str, Path], tmp_path: Path
) -> None:
    path = tmp_path / "report.html"
    args = ["report", *_base(files), "-m", "auc", "-m", "recall@5", "-m", "recall@3",
            "--resamples", "100", "-o", str(path), "--no-progress"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    html = path.read_text()
    assert "ROC curves" in html and "recall@K, K = 1..5" in html
    assert "recall@K, K = 1..3" not in html  # one curve per base metric, at its largest K


@pytest.mark.parametrize("kind", ["roc", "pr", "metric-at-k", "per-user"])
def test_plot_commands(files: dict[str, Path], tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.png"
    extra = {"metric-at-k": ["-m", "recall", "--k", "5"], "per-user": ["-m", "mrr"]}
    args = ["plot", kind, "--truth", str(files["truth"]), "--recs", str(files["a"]),
            "--run", f"other={files['b']}", "-o", str(path), *extra.get(kind, [])]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert path.read_bytes().startswith(PNG)
    assert f"wrote {path}" in out.stdout


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["compare", "--truth", "t.parquet"], "missing --run NAME=PATH"),
        (["compare", "--truth", "t.parquet", "--run", "nope"], "--run must be NAME=PATH"),
        (["compare", "--truth", "t.parquet", "--run", "a=x", "--run", "a=y"],
         "--run names must be unique; 'a' is given twice."),
        (["compare", "--truth", "missing.parquet", "--run", "a=x.parquet"],
         "truth file 'missing.parquet' does not exist."),
    ],
)  # fmt: skip
def test_errors(args: list[str], match: str) -> None:
    out = runner.invoke(app, args)
    assert out.exit_code == 2
    assert match in " ".join(out.output.split())


def test_compare_bad_baseline_and_output(files: dict[str, Path], tmp_path: Path) -> None:
    out = runner.invoke(app, ["compare", *_base(files), "--baseline", "zzz", "--no-progress"])
    assert out.exit_code == 2
    assert "baseline must be one of the runs ('pop', 'knn'); got 'zzz'." in out.output
    out = runner.invoke(
        app, ["compare", *_base(files), "--resamples", "50", "-o", str(tmp_path / "x.doc")]
    )
    assert out.exit_code == 2 and "expected a .md, .tex, .json, .html" in out.output


def test_compare_prints_a_truth_warning_once(tmp_path: Path, files: dict[str, Path]) -> None:
    # truth's unused 'rating' column is one fact about truth: said once, not once per run. In
    # a real process (pytest's own warning filters hide the repeat in process)
    truth = tmp_path / "rated.parquet"
    pl.read_parquet(files["truth"]).rename({"relevance": "rating"}).write_parquet(truth)
    args = ["compare", "--truth", str(truth), "--run", f"pop={files['a']}", "--run",
            f"knn={files['b']}", "--run", f"third={files['a']}", "-m", "mrr@20", "--resamples",
            "50", "--no-progress"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from receval.cli import main; "
         "sys.argv = ['receval', *sys.argv[1:]]; main()", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1, done.stderr
    assert "'rating' look like relevance grades" in warned[0]


# -- factor-model runs (--factors): exact metrics from the command line -------------------------


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import numpy as np

    root = tmp_path_factory.mktemp("factors")
    rng = np.random.default_rng(0)
    n_users, n_items = 60, 80
    truth = pl.DataFrame(
        {"user": rng.integers(0, n_users, 300), "item": rng.integers(0, n_items, 300)}
    )
    truth = truth.unique(maintain_order=True)
    train = pl.DataFrame(
        {"user": rng.integers(0, n_users, 400), "item": rng.integers(0, n_items, 400)}
    )
    train = train.unique(maintain_order=True).join(truth, on=["user", "item"], how="anti")
    paths = {"truth": root / "truth.parquet", "train": root / "train.parquet"}
    truth.write_parquet(paths["truth"])
    train.write_parquet(paths["train"])
    for name, seed in (("als", 1), ("bpr", 2)):
        r = np.random.default_rng(seed)
        paths[f"{name}_u"], paths[f"{name}_i"] = root / f"{name}_u.npy", root / f"{name}_i.npy"
        np.save(paths[f"{name}_u"], r.normal(size=(n_users, 4)))
        np.save(paths[f"{name}_i"], r.normal(size=(n_items, 4)))
    return paths


def _models_library(models: dict[str, Path]) -> dict[str, receval.FactorModel]:
    import numpy as np

    return {
        name: receval.FactorModel(np.load(models[f"{name}_u"]), np.load(models[f"{name}_i"]))
        for name in ("als", "bpr")
    }


def _factor_args(models: dict[str, Path]) -> list[str]:
    return ["--truth", str(models["truth"]),
            "--factors", f"als={models['als_u']},{models['als_i']}",
            "--factors", f"bpr={models['bpr_u']},{models['bpr_i']}"]  # fmt: skip


def test_compare_factor_models_equals_the_library(models: dict[str, Path]) -> None:
    # the models are scored on the whole catalog less train (exclude): mrr is the exact one,
    # not mrr@K of a top-K table
    args = ["compare", *_factor_args(models), "--exclude", str(models["train"]), "-m", "mrr",
            "-m", "ndcg@10", "--format", "json", "--resamples", "100", "--no-progress"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    cmp = receval.compare(models["truth"], _models_library(models), ["mrr", "ndcg@10"],
                          exclude=models["train"], n_resamples=100)  # fmt: skip
    assert doc["rows"] == json.loads(cmp.to_json())["rows"]
    assert doc["models"] == ["als", "bpr"]
    exact = receval.evaluate(models["truth"], _models_library(models)["als"], "mrr",
                             exclude=models["train"])  # fmt: skip
    assert cmp.cell("als", "mrr")["mean"] == exact.means["mrr"]
    assert "lists_cut_at" not in json.dumps(exact.details)


def test_report_takes_factor_models(models: dict[str, Path], tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    args = ["report", *_factor_args(models), "--exclude", str(models["train"]), "-m", "mrr",
            "-m", "ndcg@10", "-o", str(html), "--resamples", "50", "--no-progress",
            "--no-curves"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    text = html.read_text(encoding="utf-8")
    assert "als" in text and "bpr" in text


def test_compare_factor_models_from_a_config(models: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "compare.toml"
    config.write_text(
        f'truth = "{models["truth"]}"\nmetrics = ["mrr"]\nexclude = "{models["train"]}"\n'
        f'n_resamples = 100\nformat = "json"\n[runs]\n'
        f'als = {{ user_factors = "{models["als_u"]}", item_factors = "{models["als_i"]}" }}\n'
        f'bpr = {{ user_factors = "{models["bpr_u"]}", item_factors = "{models["bpr_i"]}" }}\n',
        encoding="utf-8",
    )
    out = runner.invoke(app, ["compare", "--config", str(config), "--no-progress"])
    assert out.exit_code == 0, out.output
    cmp = receval.compare(models["truth"], _models_library(models), "mrr",
                          exclude=models["train"], n_resamples=100)  # fmt: skip
    assert json.loads(out.stdout)["rows"] == json.loads(cmp.to_json())["rows"]


def test_compare_mixes_a_table_and_a_model_without_model_options(
    models: dict[str, Path], tmp_path: Path
) -> None:
    top = receval.topk(_models_library(models)["bpr"], 10, exclude=models["train"])
    table = tmp_path / "bpr_top10.parquet"
    top.write_parquet(table)
    args = ["compare", "--truth", str(models["truth"]), "--run", f"top={table}", "--factors",
            f"als={models['als_u']},{models['als_i']}", "-m", "ndcg@10", "--format", "json",
            "--resamples", "50", "--no-progress"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["models"] == ["top", "als"]  # --run first, then --factors


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--factors", "als=U.npy"], "--factors must be NAME=USER_FACTORS,ITEM_FACTORS"),
        (["--factors", "pop=U.npy,I.npy"], "names must be unique; 'pop' is given twice"),
        (["--exclude", "train.parquet"], "run(s) 'pop' are tables of recommendations"),
        (["--factors", "als=missing_u.npy,missing_i.npy"], "--factors als: --user-factors file"),
    ],
)
def test_compare_factor_errors_are_one_line(
    files: dict[str, Path], models: dict[str, Path], extra: list[str], says: str
) -> None:
    args = ["compare", "--truth", str(models["truth"]), "--run", f"pop={files['a']}", *extra,
            "-m", "mrr", "--no-progress"]  # fmt: skip
    if "--exclude" in extra:
        args += ["--factors", f"als={models['als_u']},{models['als_i']}"]
    out = runner.invoke(app, args)
    assert out.exit_code == 2, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], out.stderr


def test_model_options_need_a_factor_run(files: dict[str, Path], models: dict[str, Path]) -> None:
    out = runner.invoke(app, ["compare", *_base(files), "--exclude", str(models["train"]), "-m",
                              "mrr", "--no-progress"])  # fmt: skip
    assert out.exit_code == 2
    assert "--exclude applies to factor-model runs (--factors NAME=U,I)" in out.stderr


def test_compare_on_common_users(tmp_path: Path) -> None:
    # issue #29 item 6: --users common evaluates each run on the users every run can score
    truth = pl.DataFrame({"user": [0, 0, 1, 2, 3], "item": [1, 2, 2, 0, 1]})
    pop = pl.DataFrame({"user": [0, 1, 2, 3] * 2, "item": [1, 1, 1, 1, 2, 2, 2, 2],
                        "score": [2.0] * 4 + [1.0] * 4})  # fmt: skip
    half = pop.filter(pl.col("user") < 2)
    paths = {}
    for name, frame in {"truth": truth, "pop": pop, "half": half}.items():
        paths[name] = tmp_path / f"{name}.parquet"
        frame.write_parquet(paths[name])
    result = CliRunner().invoke(app, [
        "compare", "--truth", str(paths["truth"]), "--run", f"pop={paths['pop']}",
        "--run", f"half={paths['half']}", "-m", "mrr@2", "--format", "json", "--users", "common",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    want = receval.compare(truth, {"pop": pop, "half": half}, "mrr@2", users="common")
    assert doc["settings"]["users"] == want.settings["users"] == {
        "users": "common", "truth_users": 4, "evaluated": 2, "left_out": 2,
        "left_out_by_run": {"pop": 0, "half": 2},
    }  # fmt: skip
    pop_run = f"pop={paths['pop']}"
    args = ["compare", "--truth", str(paths["truth"]), "--run", pop_run, "-m", "mrr@2"]
    bad = CliRunner().invoke(app, [*args, "--users", "some"])
    assert bad.exit_code == 2 and "users must be one of" in bad.output
