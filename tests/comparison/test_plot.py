"""receval.plot: headless figures with the expected artists; saving writes the image."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_curve

import receval
from receval import InputError
from receval.engines.local import labelled_rows

TRUTH = {"u1": {"a": 1, "b": 2, "c": 0}, "u2": {"d": 1}, "u3": {"e": 1}}
RUNS = {
    "m1": {"u1": {"a": 0.9, "x": 0.5, "b": 0.5, "c": 0.1}, "u2": {"d": 0.7, "y": 0.2}},
    "m2": {"u1": {"x": 0.9, "a": 0.4}, "u2": {"y": 0.8, "d": 0.3}, "u3": {"e": 0.6}},
}
PNG = b"\x89PNG\r\n\x1a\n"


def _labels(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Recommended rows labelled by hand from TRUTH (relevance >= 1)."""
    rows = [
        (1 if TRUTH.get(u, {}).get(i, 0) >= 1 else 0, s)
        for u, items in RUNS[name].items()
        for i, s in items.items()
    ]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=float)


def test_import_receval_does_not_import_matplotlib() -> None:
    code = "import sys, receval; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_headless_without_display(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MPLBACKEND")}
    code = (
        "import receval\n"
        f"truth = {TRUTH!r}\nruns = {RUNS!r}\n"
        f"receval.plot.metric_at_k(truth, runs, 'ndcg', ks=3, path={str(tmp_path / 'a.png')!r})\n"
        f"receval.plot.roc(truth, runs, path={str(tmp_path / 'b.png')!r})\n"
        "import sys; print('matplotlib.pyplot' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "False"  # no pyplot, no GUI backend
    assert (tmp_path / "a.png").read_bytes().startswith(PNG)
    assert (tmp_path / "b.png").read_bytes().startswith(PNG)


def on_polyline(x: np.ndarray, y: np.ndarray, px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """Whether each point (px, py) lies on the polyline (x, y); both coordinates are
    nondecreasing along it (a ROC curve), so the points at one x form one vertical run."""
    lo = np.searchsorted(x, px, side="left")
    hi = np.searchsorted(x, px, side="right")
    present = hi > lo  # px is a vertex abscissa: within that vertical run
    in_run = (y[np.minimum(lo, x.size - 1)] - 1e-12 <= py) & (
        py <= y[np.maximum(hi - 1, 0)] + 1e-12
    )
    a = np.clip(lo - 1, 0, x.size - 2)  # otherwise strictly inside the segment a -> a + 1
    t = (px - x[a]) / np.where(x[a + 1] > x[a], x[a + 1] - x[a], 1.0)
    inside = np.abs(y[a] + t * (y[a + 1] - y[a]) - py) < 1e-9
    return np.where(present, in_run, inside)


def test_roc_draws_only_the_corners_of_a_long_curve() -> None:
    """A run with many distinct scores is drawn with the corners of its curve only, and every
    point of the full curve lies on the drawn polyline."""
    rng = np.random.default_rng(0)
    n = 20_000
    truth = pl.DataFrame({"user": np.arange(n) // 100, "item": np.arange(n) % 100,
                          "relevance": (rng.random(n) < 0.3).astype(np.float64)})  # fmt: skip
    recs = truth.select("user", "item", score=pl.Series(rng.random(n)))
    fig = receval.plot.roc(truth, {"m": recs})
    line = fig.axes[0].get_lines()[0]
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    y_true, scores, _ = labelled_rows(truth, recs)
    fpr, tpr, _ = receval.roc_curve(y_true, scores)
    assert x.size < fpr.size  # 20,001 points in the curve, fewer drawn
    assert on_polyline(x, y, fpr, tpr).all()


def test_roc_matches_sklearn_and_saves_png(tmp_path: Path) -> None:
    fig = receval.plot.roc(TRUTH, RUNS, path=tmp_path / "roc.png")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 3
    labels = [line.get_label() for line in lines]
    assert labels[2] == "chance"
    for line, name in zip(lines[:2], RUNS, strict=True):
        y, s = _labels(name)
        # every point of scikit-learn's full curve lies on the drawn polyline
        fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
        x, yy = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        assert x[0] == yy[0] == 0 and x[-1] == yy[-1] == 1
        assert on_polyline(x, yy, fpr, tpr).all()
        from sklearn.metrics import roc_auc_score

        assert line.get_label() == f"{name} (AUC = {roc_auc_score(y, s):.4f})"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == labels
    assert ax.get_xlabel() == "false positive rate" and ax.get_title() == "ROC curve"
    assert (tmp_path / "roc.png").read_bytes().startswith(PNG)


def test_pr_matches_sklearn() -> None:
    fig = receval.plot.pr(TRUTH, RUNS, title=None)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2 and fig.axes[0].get_title() == ""
    for line, name in zip(lines, RUNS, strict=True):
        y, s = _labels(name)
        precision, recall, _ = precision_recall_curve(y, s)
        np.testing.assert_allclose(line.get_xdata(), recall)
        np.testing.assert_allclose(line.get_ydata(), precision)
        assert line.get_drawstyle() == "steps-post"
        assert line.get_label() == f"{name} (AP = {average_precision_score(y, s):.4f})"


def test_metric_at_k_values_equal_evaluate(tmp_path: Path) -> None:
    fig = receval.plot.metric_at_k(TRUTH, RUNS, "ndcg(gain=exp)", ks=[4, 1, 2], ties="first")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "ndcg(gain=exp)@K"
    for line, name in zip(ax.get_lines(), RUNS, strict=True):
        assert line.get_xdata().tolist() == [1, 2, 4]
        res = receval.evaluate(TRUTH, RUNS[name], [f"ndcg(gain=exp)@{k}" for k in (1, 2, 4)],
                               ties="first")  # fmt: skip
        assert line.get_ydata().tolist() == list(res.means.values())
    fig = receval.plot.metric_at_k(TRUTH, RUNS, path=tmp_path / "k.svg")
    assert len(fig.axes[0].get_lines()[0].get_xdata()) == 10
    ticks = receval.plot.metric_at_k(TRUTH, RUNS, ks=3).axes[0].get_xticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)  # K is whole
    assert (tmp_path / "k.svg").read_text().lstrip().startswith("<?xml")


def test_per_user_box_and_violin(tmp_path: Path) -> None:
    cmp = receval.compare(TRUTH, RUNS, ["mrr", "ndcg@3"], n_resamples=100)
    fig = receval.plot.per_user(cmp, "mrr", path=tmp_path / "pu.png")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["m1", "m2"]
    assert ax.get_ylabel() == "mrr per user"
    # one box per model: medians are lines at each model's median per-user value
    medians = [
        line.get_ydata()[0]
        for line in ax.get_lines()
        if line.get_color() in ("C1", "#ff7f0e") and len(line.get_xdata()) == 2
    ]
    want = [float(np.median(r.per_user["mrr"].drop_nulls())) for r in cmp.results.values()]
    assert medians == pytest.approx(want)
    assert (tmp_path / "pu.png").read_bytes().startswith(PNG)
    fig = receval.plot.per_user(cmp.results, "ndcg@3", kind="violin")
    assert len(fig.axes[0].collections) >= 2  # one body per model (+ the mean/extrema lines)


def test_intervals_plot() -> None:
    cmp = receval.compare(TRUTH, RUNS, ["mrr", "ndcg@3"], n_resamples=100)
    fig = receval.plot.intervals(cmp)
    assert [ax.get_title() for ax in fig.axes] == ["mrr", "ndcg@3"]
    fig = receval.plot.intervals(cmp, metrics=["MRR"], title="t")
    assert len(fig.axes) == 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: receval.plot.metric_at_k(TRUTH, RUNS, "ndcg@10"),
         r"metric must be a metric with a cutoff, given without @K \(e.g. 'ndcg'\); got 'ndcg@10'"),
        (lambda: receval.plot.metric_at_k(TRUTH, RUNS, "r_precision"),
         r"metric must be a metric with a cutoff"),
        (lambda: receval.plot.metric_at_k(TRUTH, RUNS, ks=0),
         r"ks must be an integer N >= 1 or a non-empty list of integers >= 1; got 0"),
        (lambda: receval.plot.metric_at_k(TRUTH, RUNS, ks=[2, -1]), r"ks must be an integer"),
        (lambda: receval.plot.roc(TRUTH, {}), r"runs must be a non-empty mapping"),
        (lambda: receval.plot.per_user({}, "mrr"), r"source must be a Comparison or a non-empty"),
        (lambda: receval.plot.per_user(
            {"m": receval.evaluate(TRUTH, RUNS["m1"], "mrr")}, "ndcg@3"),
         r"ndcg@3 has no per-user values in 'm'"),
        (lambda: receval.plot.per_user(
            {"m": receval.evaluate(TRUTH, RUNS["m1"], "mrr")}, "mrr", kind="bar"),  # type: ignore[arg-type]
         r"kind must be one of box, violin; got 'bar'"),
        (lambda: receval.plot.roc(TRUTH, RUNS, path="x.xyz"),
         r"path 'x.xyz': cannot tell the image format from the suffix"),
    ],
)  # fmt: skip
def test_errors(call: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()  # type: ignore[operator]
