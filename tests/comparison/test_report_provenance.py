"""Reports of a Comparison (issue 18, point 9): the metric@K curves of ``to_html`` in Python,
the provenance of the HTML and Markdown reports, and the legend of the intervals plot."""

from __future__ import annotations

import html
import platform
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import receval
import receval.comparison.curves
import receval.comparison.report
from receval.cli import app

WHEN = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
DATE = "2024-05-06T07:08:09Z"
IMAGE = "data:image/png;base64,"


@pytest.fixture(autouse=True)
def _clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(receval.comparison.report, "utc_now", lambda: WHEN)


@pytest.fixture(scope="module")
def data() -> receval.datasets.Interactions:
    from receval.datasets import make_interactions

    return make_interactions(100, n_recs=15, seed=0)


def _shuffled(recs: pl.DataFrame) -> pl.DataFrame:
    return recs.with_columns(pl.col("score").shuffle(seed=1).over("user"))


def _curves(cmp: receval.Comparison) -> receval.comparison.data.ReportCurves:
    curves = receval.comparison.curves.report_curves(cmp)
    assert curves is not None
    return curves


def _captions(text: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", text)]


# ---------------------------------------------------------------------------------- curves


def test_to_html_adds_metric_at_k_curves(
    data: receval.datasets.Interactions, tmp_path: Path
) -> None:
    runs = {"model": data.recs, "shuffled": _shuffled(data.recs)}
    cmp = receval.compare(data.truth, runs, ["ndcg@10", "mrr"], n_resamples=100)
    text = cmp.to_html(tmp_path / "r.html").read_text()
    # intervals, per-user ndcg@10 and mrr, then the ndcg@K curve (mrr has no cutoff)
    assert text.count(IMAGE) == 4
    assert _captions(text) == [
        "Means with bootstrap intervals", "Per-user values: ndcg@10", "Per-user values: mrr",
        "ndcg@K, K = 1..10",
    ]  # fmt: skip
    text = cmp.to_html(tmp_path / "r.html", curves=False).read_text()
    assert text.count(IMAGE) == 3 and "ndcg@K" not in text
    text = cmp.to_html(tmp_path / "r.html", plots=False).read_text()  # no plot at all
    assert text.count(IMAGE) == 0


def test_curves_are_the_metric_at_k_of_the_inputs(data: receval.datasets.Interactions) -> None:
    """The curves come from the comparison's own inputs and evaluate options (here a tie
    policy), as receval.plot.metric_at_k draws them; the inputs are kept, not copied."""
    runs = {"model": data.recs, "shuffled": _shuffled(data.recs)}
    cmp = receval.compare(
        data.truth, runs, ["recall@5", "recall@3", "auc"], n_resamples=50, ties="first"
    )
    inputs = cmp.inputs
    assert inputs is not None
    assert inputs["truth"] is data.truth and inputs["runs"]["model"] is data.recs
    assert inputs["options"] == {"ties": "first"}
    figures = receval.comparison.report.curve_figures(_curves(cmp))
    assert list(figures) == ["recall@K, K = 1..5", "ROC curves"]  # one curve per base metric
    expected = receval.plot.metric_at_k(data.truth, runs, "recall", ks=5, ties="first")
    got = figures["recall@K, K = 1..5"].axes[0].get_lines()
    want = expected.axes[0].get_lines()
    assert [line.get_ydata().tolist() for line in got] == [
        line.get_ydata().tolist() for line in want
    ]


def test_cli_report_uses_to_html_curves(
    data: receval.datasets.Interactions, tmp_path: Path
) -> None:
    """receval report and Comparison.to_html write the same file (one code path)."""
    truth, a, b = tmp_path / "truth.parquet", tmp_path / "a.parquet", tmp_path / "b.parquet"
    data.truth.write_parquet(truth)
    data.recs.write_parquet(a)
    _shuffled(data.recs).write_parquet(b)
    args = ["report", "--truth", str(truth), "--run", f"pop={a}", "--run", f"knn={b}",
            "-m", "ndcg@5", "--resamples", "80", "-o", str(tmp_path / "cli.html"),
            "--no-progress"]  # fmt: skip
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    cmp = receval.compare(truth, {"pop": a, "knn": b}, ["ndcg@5"], n_resamples=80)
    cmp.to_html(tmp_path / "py.html")
    assert (tmp_path / "cli.html").read_text() == (tmp_path / "py.html").read_text()
    assert "ndcg@K, K = 1..5" in (tmp_path / "py.html").read_text()


# ------------------------------------------------------------------------------ provenance


def _versions() -> list[tuple[str, str]]:
    return [("receval", receval.__version__), ("Python", platform.python_version()),
            ("Polars", pl.__version__), ("date", DATE)]  # fmt: skip


def test_provenance_of_objects(data: receval.datasets.Interactions, tmp_path: Path) -> None:
    truth = {u: {"a": 2, "b": 1} for u in range(1, 9)}
    pop = {u: {"x": 0.9, "a": 0.8, "b": 0.1} for u in range(1, 9)}
    cmp = receval.compare(
        truth, {"pop": pop, "frame": data.recs.head(1234), "lazy": data.recs.lazy()}, "mrr",
        relevance_threshold=2, no_recs="skip", id_type="str", test="randomization",
        correction="bh", alpha=0.1, confidence=0.9, ci="percentile", n_resamples=500,
        n_permutations=999, seed=7,
    )  # fmt: skip
    facts = [
        ("truth", "dict, 8 users"),
        ("run pop", "dict, 8 users"),
        ("run frame", "polars DataFrame, 1,234 rows"),
        ("run lazy", "polars LazyFrame"),
        ("ties", "expected"),
        ("relevance threshold", "2"),
        ("no-recs policy", "skip"),
        ("id_type", "str"),
        ("test", "Fisher randomization test, two-sided, 999 sign flips, seed 7"),
        ("correction", "Benjamini-Hochberg"),
        ("alpha", "0.1"),
        ("bootstrap", "90% percentile interval, 500 user-level resamples, seed 7"),
        *_versions(),
    ]
    assert receval.comparison.report.provenance(cmp) == facts
    md = cmp.to_markdown()
    block = "\n".join(["Provenance:", "", *[f"- {k}: {v}" for k, v in facts]]) + "\n"
    assert md.endswith("\n\n" + block)
    text = cmp.to_html(tmp_path / "r.html", plots=False).read_text()
    rows = "".join(f'<tr><th scope="row">{k}</th><td>{v}</td></tr>' for k, v in facts)
    assert f'<h2>Provenance</h2><table id="provenance"><tbody>{rows}</tbody></table>' in text


def test_provenance_of_paths(data: receval.datasets.Interactions, tmp_path: Path) -> None:
    truth, a = tmp_path / "truth.parquet", tmp_path / "a.parquet"
    data.truth.write_parquet(truth)
    data.recs.write_parquet(a)
    cmp = receval.compare(str(truth), {"a": a, "b": data.recs.to_pandas()}, "ndcg@3",
                          n_resamples=100, ties="trec")  # fmt: skip
    facts = dict(receval.comparison.report.provenance(cmp))
    assert facts["truth"] == str(truth) and facts["run a"] == str(a)
    assert facts["run b"] == f"pandas DataFrame, {data.recs.height:,} rows"
    assert facts["ties"] == "trec" and "id_type" not in facts
    assert facts["test"] == "paired t test, two-sided" and facts["correction"] == "Holm"
    assert facts["alpha"] == "0.05"
    assert facts["bootstrap"] == "95% BCa interval, 100 user-level resamples, seed 0"
    assert facts["date"] == DATE


def test_provenance_lists_train_and_items(tmp_path: Path) -> None:
    """train and items change what is measured (coverage, novelty, the training items a
    model's lists leave out), so the provenance names them beside exclude (issue 29)."""
    import numpy as np

    truth = pl.DataFrame({"user": [0, 1, 2, 3], "item": [1, 2, 3, 4]})
    seen = pl.DataFrame({"user": [0, 1, 2, 3], "item": [0, 0, 5, 5]})
    train = tmp_path / "train.parquet"
    seen.write_parquet(train)
    rng = np.random.default_rng(0)
    model = receval.FactorModel(rng.normal(size=(4, 2)), rng.normal(size=(6, 2)))
    cmp = receval.compare(
        truth, {"a": model}, ["ndcg@3", "coverage@3"], n_resamples=30,
        train=train, items=pl.DataFrame({"item": range(6)}), exclude=seen,
    )  # fmt: skip
    facts = receval.comparison.report.provenance(cmp)
    labels = [label for label, _ in facts]
    assert labels[labels.index("run a") + 1 : labels.index("run a") + 4] == [
        "train", "items", "exclude",
    ]  # fmt: skip
    got = dict(facts)
    assert got["train"] == str(train) and got["items"] == "polars DataFrame, 6 rows"
    assert got["exclude"] == "polars DataFrame, 4 rows"
    assert f"- train: {train}" in cmp.to_markdown()


def test_date_is_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    paris = datetime(2024, 5, 6, 9, 8, 9, tzinfo=timezone(timedelta(hours=2)))
    monkeypatch.setattr(receval.comparison.report, "utc_now", lambda: paris)
    cmp = receval.compare({"u": {"a": 1}}, {"m": {"u": {"a": 1.0}}}, "mrr", n_resamples=10)
    assert dict(receval.comparison.report.provenance(cmp))["date"] == DATE
    assert receval.comparison.report.utc_now() is paris
    monkeypatch.undo()
    now = receval.comparison.report.utc_now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)


def test_comparison_without_inputs() -> None:
    """A Comparison built directly has no inputs: no curves, inputs 'not recorded'."""
    cmp = receval.compare({"u": {"a": 1}}, {"m": {"u": {"a": 1.0}}}, "ndcg@3", n_resamples=10)
    bare = receval.Comparison(cmp.table, cmp.results, cmp.baseline, cmp.metric_specs, cmp.settings)
    assert bare.inputs is None and receval.comparison.curves.report_curves(bare) is None
    facts = dict(receval.comparison.report.provenance(bare))
    assert facts["truth"] == "not recorded" and facts["run m"] == "not recorded"


# ------------------------------------------------------------------------ intervals legend


def test_intervals_legend_explains_the_colours() -> None:
    truth = {f"u{i}": {"a": 1, "b": 1} for i in range(12)}
    good = {f"u{i}": {"a": 0.9, "x": 0.5, "b": 0.4} for i in range(12)}
    mid = {f"u{i}": {"a": 0.9 if i % 2 else 0.1, "x": 0.5, "b": 0.05} for i in range(12)}
    bad = {f"u{i}": {"x": 0.9, "a": 0.5 if i % 5 else 0.95, "b": 0.1} for i in range(12)}
    cmp = receval.compare(truth, {"bad": bad, "mid": mid, "good": good}, "ndcg@2",
                          n_resamples=100, alpha=0.01)  # fmt: skip
    assert cmp.cell("good", "ndcg@2")["significant"] is True
    assert cmp.cell("mid", "ndcg@2")["significant"] is False
    fig = receval.plot.intervals(cmp)
    assert len(fig.legends) == 1
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [
        "baseline: bad (mean dashed)", "significant (adjusted p <= 0.01)", "not significant",
    ]  # fmt: skip
    # each point has its legend entry's colour
    colours = [h.get_markerfacecolor() for h in legend.legend_handles]
    drawn = [line.get_color() for line in fig.axes[0].get_lines() if line.get_marker() == "o"]
    assert drawn == colours[:1] + colours[2:3] + colours[1:2]  # bad, mid, good
    # a metric without per-user values adds "no test"
    fig = receval.plot.intervals(receval.compare(truth, {"bad": bad, "good": good},
                                                 ["ndcg@2", "auc"], n_resamples=50))  # fmt: skip
    assert [t.get_text() for t in fig.legends[0].get_texts()][-1] == "no test"
