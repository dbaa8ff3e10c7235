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
            f"knn={files['b']}", "--run", f"third={files['a']}", "-m", "mrr", "--resamples",
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
