"""Reports of a Comparison: Markdown, LaTeX, JSON and the HTML file opened in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

import receval

TRUTH = {f"u{i}": {"a": 1, "b": 1} for i in range(12)}


def _model(hit_first: int, hit_second: int) -> dict[str, dict[str, float]]:
    """User i ranks a first when i % hit_first == 0, b second when i % hit_second == 0."""
    return {
        f"u{i}": {
            "a": 0.9 if i % hit_first == 0 else 0.1,
            "x": 0.5,
            "b": 0.4 if i % hit_second == 0 else 0.05,
            "y": 0.3,
        }
        for i in range(12)
    }


GOOD, MID, BAD = _model(1, 2), _model(2, 3), _model(5, 4)
RUNS = {"pop_ty": BAD, "mid": MID, "good": GOOD}
METRICS = ["ndcg@2", "precision@1", "recall(average=micro)@2"]


@pytest.fixture(scope="module")
def cmp() -> receval.Comparison:
    return receval.compare(TRUTH, RUNS, METRICS, n_resamples=300)


def test_markdown(cmp: receval.Comparison) -> None:
    md = cmp.to_markdown()
    lines = md.splitlines()
    assert lines[0] == "| model | ndcg@2 | precision@1 | recall(average=micro)@2 |"
    assert lines[1] == "| --- | ---: | ---: | ---: |"
    good = cmp.cell("good", "ndcg@2")
    assert good["significant"] is True
    # best in bold, interval, significance mark
    low, high = good["ci_low"], good["ci_high"]
    assert lines[4].startswith(f"| good | **{good['mean']:.4f}** [{low:.4f}, {high:.4f}] \\* |")
    base = cmp.cell("pop_ty", "ndcg@2")
    assert lines[2].startswith(f"| pop_ty (baseline) | {base['mean']:.4f} [{base['ci_low']:.4f}, ")
    assert "Tests against pop_ty:" in md
    assert f"| good | ndcg@2 | {good['p_value']:.4f} | {good['p_adjusted']:.4f} | yes |" in md
    assert "recall(average=micro)@2 (all models): mean is not a plain average" in md
    assert "Holm correction across all 4 comparisons" in md


def test_markdown_lower_is_better_bold() -> None:
    from receval.comparison.report import best_models

    class Fake:
        metric_specs = (receval.parse_metric("mrr"),)
        table = pl.DataFrame({"model": ["a", "b"], "metric": ["mrr", "mrr"], "mean": [0.2, 0.1]})

    assert best_models(Fake()) == {"mrr": {"a"}}  # type: ignore[arg-type]
    spec = receval.parse_metric("mrr")
    lower = receval.Metric(
        receval.MetricSpec(**{**spec.spec.__dict__, "higher_is_better": False}), (), None
    )
    Fake.metric_specs = (lower,)
    assert best_models(Fake()) == {"mrr": {"b"}}  # type: ignore[arg-type]


def test_latex(cmp: receval.Comparison) -> None:
    tex = cmp.to_latex()
    assert r"\begin{tabular}{lrrr}" in tex and r"\toprule" in tex and r"\bottomrule" in tex
    assert r"Model & ndcg@2 & precision@1 & recall(average=micro)@2 \\" in tex
    base = [f"{cmp.cell('pop_ty', m)['mean']:.4f}" for m in METRICS]
    # the micro recall has no interval or test: marked with a dagger (docs/compare.md)
    assert rf"pop\_ty (baseline) & {base[0]} & {base[1]} & {base[2]}$^{{\dagger}}$ \\" in tex
    good = [f"{cmp.cell('good', m)['mean']:.4f}" for m in METRICS]
    assert (
        rf"good & \textbf{{{good[0]}}}$^{{*}}$ & \textbf{{{good[1]}}}$^{{*}}$ & "
        rf"\textbf{{{good[2]}}}$^{{\dagger}}$ \\"
    ) in tex
    assert r"\multicolumn{4}{l}{\footnotesize $^{*}$ paired t test against pop\_ty, Holm" in tex
    with_ci = cmp.to_latex(ci=True, digits=2)
    g = cmp.cell("good", "ndcg@2")
    low, high = g["ci_low"], g["ci_high"]
    cell = rf"\textbf{{{g['mean']:.2f}}}$^{{*}}$ {{\scriptsize [{low:.2f}, {high:.2f}]}}"
    assert cell in with_ci
    assert "Brackets: 95\\% BCa bootstrap interval." in with_ci


def test_json(cmp: receval.Comparison) -> None:
    doc = json.loads(cmp.to_json())
    assert doc["baseline"] == "pop_ty" and doc["models"] == ["pop_ty", "mid", "good"]
    assert doc["metrics"] == METRICS
    assert len(doc["rows"]) == 9
    assert doc["rows"][0]["p_value"] is None
    assert doc["settings"]["test"] == "paired_t"
    assert doc["counts"]["good"]["evaluated"] == 12
    assert pl.DataFrame(doc["rows"], schema=cmp.table.schema).equals(cmp.table)


def test_repr(cmp: receval.Comparison) -> None:
    text = repr(cmp)
    assert text.startswith("Comparison(\n  model")
    g = cmp.cell("good", "ndcg@2")
    assert re.search(
        rf"\n  good +{g['mean']:.4f} \[{g['ci_low']:.4f}, {g['ci_high']:.4f}\] \*", text
    )


def _chromium() -> str:
    """The headless browser, or a skip that says how to get it (a failure where
    RECEVAL_REQUIRE_BROWSER=1, as .ci/run sets it)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    reason = (
        "no chromium on PATH: the HTML report is not opened in a real browser. Install it "
        "(Debian: apt-get install -y chromium) to run this check; .ci/run does, and sets "
        "RECEVAL_REQUIRE_BROWSER=1 so that a missing browser fails there."
    )
    if os.environ.get("RECEVAL_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


_CHECK = """<script>
window.addEventListener('load', function () {
  var out = document.createElement('pre');
  out.id = 'receval-checks';
  out.textContent = JSON.stringify({
    images: Array.from(document.images).map(function (i) {
      return [i.complete, i.naturalWidth, i.naturalHeight, i.alt];
    }),
    cells: Array.from(document.querySelectorAll('#means td')).map(function (td) {
      return [td.dataset.model, td.dataset.metric, td.innerText.trim()];
    }),
    bold: Array.from(document.querySelectorAll('#means td strong')).length,
    tests: document.querySelectorAll('#tests tbody tr').length,
    width: document.querySelector('#means').getBoundingClientRect().width
  });
  document.body.appendChild(out);
});
</script>"""


def _render(path: Path, tmp_path: Path) -> dict[str, object]:
    html = path.read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", _CHECK + "</body>"), encoding="utf-8")
    proc = subprocess.run(
        [
            _chromium(), "--headless", "--no-sandbox", "--disable-gpu",
            "--virtual-time-budget=10000", "--dump-dom", probe.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    found = re.search(r'<pre id="receval-checks">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"no checks in the dumped DOM; stderr: {proc.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_html_self_contained_and_renders_in_chromium(
    cmp: receval.Comparison, tmp_path: Path
) -> None:
    path = cmp.to_html(tmp_path / "report.html", title="My <models>")
    assert path == tmp_path / "report.html"
    html = path.read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert "<title>My &lt;models&gt;</title>" in html
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary left
    checks = _render(path, tmp_path)
    images = checks["images"]
    assert isinstance(images, list)
    # intervals plot + one per-user plot per metric with intervals (2) + metric@K curves (3)
    assert [i[3] for i in images] == [
        "Means with bootstrap intervals", "Per-user values: ndcg@2", "Per-user values: precision@1",
        "ndcg@K, K = 1..2", "precision@K, K = 1..1", "recall(average=micro)@K, K = 1..2",
    ]  # fmt: skip
    assert all(i[0] and i[1] > 100 and i[2] > 100 for i in images), images
    cells = checks["cells"]
    assert isinstance(cells, list) and len(cells) == 9
    assert cells[0][:2] == ["pop_ty", "ndcg@2"]
    base, good = cmp.cell("pop_ty", "ndcg@2"), cmp.cell("good", "ndcg@2")
    assert cells[0][2] == f"{base['mean']:.4f} [{base['ci_low']:.4f}, {base['ci_high']:.4f}]"
    assert cells[6][2].startswith(f"{good['mean']:.4f}*")  # significant
    assert checks["bold"] == 3
    assert checks["tests"] == 4
    assert isinstance(checks["width"], float | int) and checks["width"] > 100


def test_html_without_plots_and_with_extra_figure(cmp: receval.Comparison, tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    path = cmp.to_html(tmp_path / "r.html", plots=False, figures={"extra": fig})
    checks = _render(path, tmp_path)
    assert [i[3] for i in checks["images"]] == ["extra"]  # type: ignore[union-attr]
    with pytest.raises(receval.InputError, match=r"expected an .html path"):
        cmp.to_html(tmp_path / "r.txt")
    with pytest.raises(receval.InputError, match=r"folder .* does not exist"):
        cmp.to_html(tmp_path / "nope" / "r.html")


def test_repr_html(cmp: receval.Comparison) -> None:
    html = cmp._repr_html_()
    assert '<table id="means">' in html and '<table id="tests">' in html
