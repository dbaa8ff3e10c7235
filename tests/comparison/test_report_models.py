"""Reports and plots of comparisons whose runs are models (receval.FactorModel): the HTML report
with its curves, every plot function, gauc's cells and the intervals figure's layout."""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import receval
import receval.comparison.curves
import receval.comparison.report

N_USERS, N_ITEMS = 30, 40


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(N_ITEMS, 4))
    ids = {"user_ids": np.arange(N_USERS), "item_ids": np.arange(N_ITEMS)}
    models = {
        "mf": receval.FactorModel(rng.normal(size=(N_USERS, 4)), v, **ids),
        "mf2": receval.FactorModel(rng.normal(size=(N_USERS, 4)), v, **ids),
    }
    truth = {u: {int(i): 1 for i in rng.choice(N_ITEMS, 3, replace=False)} for u in range(N_USERS)}
    return {"truth": truth, "models": models}


@pytest.fixture(scope="module")
def cmp(setup: dict[str, Any]) -> receval.Comparison:
    return receval.compare(setup["truth"], setup["models"], ["gauc", "ndcg@10"], n_resamples=100)


def _captions(text: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", text)]


def test_to_html_with_model_runs(cmp: receval.Comparison, tmp_path: Path) -> None:
    """The defaults (plots and curves) work when the runs are models and gauc is compared:
    the ROC curves, which a model cannot give exactly, are left out and the report says so."""
    text = cmp.to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert _captions(text) == [
        "Means with bootstrap intervals", "Per-user values: ndcg@10", "ndcg@K, K = 1..10",
    ]  # fmt: skip
    left_out = re.search(r'<p class="left-out">(.*?)</p>', text)
    assert left_out, text[-3000:]
    said = html.unescape(left_out.group(1))
    assert said.startswith("Left out: the ROC curves of mf and mf2 (model sources):")
    assert "gauc" in said and "receval.topk" in said


def test_roc_of_table_runs_beside_model_runs(setup: dict[str, Any], tmp_path: Path) -> None:
    """A recommendations table keeps its ROC curve; only the model runs are left out."""
    table = receval.topk(setup["models"]["mf"], 10)
    runs = {"top10": table, "mf2": setup["models"]["mf2"]}
    cmp = receval.compare(setup["truth"], runs, ["gauc", "ndcg@5"], n_resamples=50)
    curves = receval.comparison.curves.report_curves(cmp)
    assert curves is not None and curves.models == ("mf2",)
    figures = receval.comparison.report.curve_figures(curves)
    assert list(figures) == ["ndcg@K, K = 1..5", "ROC curves"]
    labels = [t.get_text() for t in figures["ROC curves"].axes[0].get_legend().get_texts()]
    assert [label.split(" (")[0] for label in labels] == ["top10", "chance"]
    text = cmp.to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    said = html.unescape(re.findall(r'<p class="left-out">(.*?)</p>', text)[0])
    assert said.startswith("Left out: the ROC curve of mf2 (model source):")


def test_every_plot_function_on_model_runs(setup: dict[str, Any], cmp: receval.Comparison) -> None:
    truth, models = setup["truth"], setup["models"]
    for plot in (receval.plot.roc, receval.plot.pr):
        with pytest.raises(receval.InputError, match=r"run 'mf' is a model source \(Factor"):
            plot(truth, models)
    fig = receval.plot.metric_at_k(truth, models, "ndcg", ks=3)
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["mf", "mf2"]
    want = [receval.evaluate(truth, models["mf"], f"ndcg@{k}")[f"ndcg@{k}"] for k in (1, 2, 3)]
    assert fig.axes[0].get_lines()[0].get_ydata().tolist() == want
    for key in ("gauc", "ndcg@10"):
        fig = receval.plot.per_user(cmp, key)
        assert len(fig.axes) == 1
    assert len(receval.plot.intervals(cmp).axes) == 2
    with pytest.raises(receval.InputError, match="no segments"):
        receval.plot.segments(cmp, "segment")
    segmented = receval.compare(
        truth, models, ["gauc", "ndcg@10"], n_resamples=50,
        segments={u: "odd" if u % 2 else "even" for u in range(N_USERS)},
    )  # fmt: skip
    fig = receval.plot.segments(segmented, "segment")
    assert [ax.get_title() for ax in fig.axes] == ["gauc", "ndcg@10"]


def test_gauc_cells_say_why_they_have_no_interval(cmp: receval.Comparison) -> None:
    """gauc's default weight (impressions) makes its mean a weighted one: no interval and no
    test, which the means table itself marks in every format (not only a note), naming the
    spelling that is tested."""
    row = cmp.cell("mf2", "gauc")
    assert row["ci_low"] is None and row["p_value"] is None
    mean = f"{row['mean']:.4f}"
    why = (
        "\u2020: mean only, no interval or test: gauc (its mean weighs the users by "
        "weight=impressions; gauc(weight=uniform), the plain mean over users, gets both)."
    )
    md = cmp.to_markdown()
    assert md.splitlines()[3].startswith(f"| mf2 | {mean} \u2020 | "), md
    assert why in md
    latex = cmp.to_latex()
    assert f"mf2 & {mean}$^{{\\dagger}}$ & " in latex
    assert "$^{\\dagger}$: mean only, no interval or test: gauc" in latex
    assert "\u2020" not in latex  # pdflatex without a Unicode font stays happy
    fragment = cmp._repr_html_()
    assert f'{mean}</span><sup class="untested">\u2020</sup>' in fragment
    assert html.escape(why) in fragment
    assert f"{mean} \u2020" in repr(cmp) and why in repr(cmp)
    # the ndcg column has its interval and no mark
    assert "\u2020" not in md.splitlines()[3].split("|")[3]
    # the spelling named there does get both, and no mark
    assert cmp.inputs is not None
    uniform = receval.compare(
        cmp.inputs["truth"], cmp.inputs["runs"], ["gauc(weight=uniform)"], n_resamples=100
    )
    got = uniform.cell("mf2", "gauc(weight=uniform)")
    assert got["ci_low"] is not None and got["p_value"] is not None
    assert "\u2020" not in uniform.to_markdown() and "\u2020" not in repr(uniform)


def test_global_metric_cells_marked(setup: dict[str, Any]) -> None:
    """A metric without per-user values (coverage) is marked the same way, with its reason."""
    cmp = receval.compare(setup["truth"], setup["models"], ["coverage@5", "ndcg@5"], n_resamples=30)
    md = cmp.to_markdown()
    assert "\u2020: mean only, no interval or test: coverage@5 (no per-user values)." in md
    rows = md.splitlines()[2:4]
    assert all(r.split("|")[2].strip().endswith("\u2020") for r in rows), rows
    assert receval.comparison.report.untested(cmp) == {"coverage@5": "no per-user values"}


def test_intervals_of_eight_metrics_wrap(setup: dict[str, Any]) -> None:
    """Eight metrics in a grid of at most three panels a row, each wide enough to read."""
    metrics = ["ndcg@10", "ndcg@5", "recall@10", "recall@5", "precision@10", "mrr", "map@10",
               "gauc(weight=uniform)"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = receval.compare(setup["truth"], setup["models"], metrics, n_resamples=30)
    fig = receval.plot.intervals(cmp)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == metrics
    rows = sorted({round(ax.get_position().y0, 3) for ax in panels}, reverse=True)
    columns = sorted({round(ax.get_position().x0, 3) for ax in panels})
    assert len(rows) == 3 and len(columns) == 3
    width, height = fig.get_size_inches()
    assert width <= 11.0 and height >= 4.0
    fig.canvas.draw()  # the model names are on the first panel of every row
    firsts = [ax for ax in panels if round(ax.get_position().x0, 3) == columns[0]]
    for ax in firsts:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["mf", "mf2"]
