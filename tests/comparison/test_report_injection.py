"""Hostile names in the reports (issue 29, item 8): model names, segment labels, paths and
titles are text, never markup. Markdown is rendered by a real CommonMark parser (raw HTML on,
GFM tables), the HTML report is parsed, the figures' texts are checked as matplotlib draws
them, and the LaTeX has no control character and no cell that changes the table's shape."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

import receval

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "a\\|b",
    "two\nlines",
    "*em* _u_ `c` ~~s~~ __b__",
    "$x^2$",
    "$$",
    "&lt;b&gt; &amp;",
    "[y]",
]
TRUTH = {u: {"a": 1, "b": 1} for u in range(8)}


def _run(j: int) -> dict[int, dict[str, float]]:
    return {u: {"a": 0.9 if (u + j) % 3 else 0.1, "x": 0.5, "b": 0.2 + j / 100} for u in range(8)}


@pytest.fixture(scope="module")
def cmp(tmp_path_factory: pytest.TempPathFactory) -> receval.Comparison:
    import polars as pl

    folder = tmp_path_factory.mktemp("t")
    # no [ ] in the name: the Parquet reader globs (reported, not this suite's matter)
    path = folder / "<script>x<img src=x onerror=alert(1)> &amp; `c` (javascript:1).parquet"
    pl.DataFrame(
        {"user": [u for u in TRUTH for _ in "ab"], "item": ["a", "b"] * len(TRUTH)}
    ).write_parquet(path)
    runs = {name: _run(j) for j, name in enumerate(HOSTILE)}
    segments = {u: HOSTILE[u % 4] for u in TRUTH}
    return receval.compare(
        str(path), runs, ["ndcg@2", "mrr", "coverage@2"], n_resamples=50, segments=segments
    )


def _shown(name: str) -> str:
    """A name as every report shows it: its line breaks (control characters) as spaces."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", " ", name)


def _cells(rendered: str) -> list[list[list[str]]]:
    """The tables of rendered HTML: rows of cell texts (tags stripped, unescaped)."""
    tables = []
    for table in re.findall(r"<table>(.*?)</table>", rendered, flags=re.S):
        rows = []
        for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
            cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)
            rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells])
        tables.append(rows)
    return tables


def test_markdown_names_are_text(cmp: receval.Comparison) -> None:
    text = cmp.to_markdown()
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)
    tags = set(re.findall(r"<([a-z0-9]+)", rendered))
    # only the tags of the report's own structure: no script, img, link, emphasis, code
    assert tags <= {"table", "thead", "tbody", "tr", "th", "td", "p", "strong", "ul", "li"}, tags
    means, tests, by_segment = _cells(rendered)
    assert [row[0] for row in means[1:]] == [
        _shown(n) + (" (baseline)" if n == cmp.baseline else "") for n in HOSTILE
    ]
    for table in (means, tests, by_segment):  # every row has the header's columns
        assert {len(row) for row in table} == {len(table[0])}, table
    assert [row[0] for row in tests[1:]] == [_shown(n) for n in HOSTILE[1:] for _ in range(2)]
    assert {row[1] for row in by_segment[1:]} == {_shown(n) for n in HOSTILE[:4]}
    assert f"truth: {_shown(str(cmp.inputs['truth']))}" in html.unescape(rendered)  # type: ignore[index]
    assert f"Tests against {_shown(HOSTILE[0])}:" in html.unescape(rendered)


def test_latex_names_are_text() -> None:
    names = ["[x] & y", "*z", "nul\x00 esc\x1b[31m", "para\n\nbreak", "tab\there", "a\\b{c}$%#^_~"]
    runs = {name: _run(j) for j, name in enumerate(names)}
    tex = receval.compare(TRUTH, runs, ["ndcg@2", "mrr"], n_resamples=50).to_latex(ci=True)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", tex), repr(tex)
    assert "\n\n" not in tex
    lines = tex.splitlines()
    start = lines.index(r"\midrule") + 1
    rows = lines[start : start + len(names)]
    for row in rows:  # three cells: no unescaped & (a backslash before & escapes it)
        assert len(re.findall(r"(?<!\\)&", row)) == 2, row
        assert row[0] not in "[*", row  # would be an argument of the previous row's \\
    assert rows[0].startswith(r"{[}x{]} \& y (baseline) & ")
    assert rows[2].startswith("nul  esc {[}31m & ")
    assert rows[5].startswith(
        r"a\textbackslash{}b\{c\}\$\%\#\textasciicircum{}\_\textasciitilde{} & "
    )


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]


def test_html_names_are_text_and_figures_draw(cmp: receval.Comparison, tmp_path: Path) -> None:
    """The HTML report escapes every name, path and title, and its figures draw `$$` and
    `$x^2$` names (mathtext raised or drew math)."""
    out = cmp.to_html(tmp_path / "r.html", title="<script>t</script> $$")
    text = out.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    assert "script" not in parser.tags and parser.handlers == []
    assert parser.tags <= {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "table", "thead", "tbody",
        "tr", "th", "td", "span", "strong", "sup", "p", "div", "figure", "img", "figcaption",
        "ul", "li",
    }, parser.tags  # fmt: skip
    assert html.escape(str(cmp.inputs["truth"])) in text  # type: ignore[index]
    assert text.count("data:image/png;base64,") >= 5


def _drawn(fig: Any) -> list[str]:
    """Every text of ``fig`` as matplotlib draws it (after its math parsing), drawing it."""
    fig.canvas.draw()
    out = []
    for t in fig.findobj(lambda a: hasattr(a, "_preprocess_math")):
        shown, math = t._preprocess_math(t.get_text())
        assert math is False, t.get_text()
        out.append(shown)
    return out


def test_plot_labels_are_literal(cmp: receval.Comparison) -> None:
    runs = {"$x^2$": _run(0), "$$": _run(1), "_hidden": _run(2), "a\\$b": _run(3)}
    fig = receval.plot.metric_at_k(TRUTH, runs, "ndcg", ks=2, title="$t$")
    drawn = _drawn(fig)
    assert {"$x^2$", "$$", "_hidden", "a\\$b", "$t$"} <= set(drawn), drawn
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(legend) == 4  # a name starting with _ is not dropped from the legend
    small = receval.compare(TRUTH, runs, ["ndcg@2", "gauc"], n_resamples=30)
    for fig in (receval.plot.per_user(small, "ndcg@2"), receval.plot.intervals(small)):
        assert {"$x^2$", "$$", "a\\$b"} <= set(_drawn(fig))
    drawn = _drawn(receval.plot.segments(cmp, "segment"))
    assert {"$x^2$", "$$"} <= set(drawn) and "by segment: segment" in drawn
    import polars as pl

    frame = pl.DataFrame({"user": [0, 0, 1, 1], "item": ["a", "x", "b", "x"],
                          "score": [0.9, 0.1, 0.2, 0.8]})  # fmt: skip
    for plot in (receval.plot.roc, receval.plot.pr):
        fig = plot(TRUTH, {"$$": frame, "$x^2$": frame, "_u": frame})
        drawn = _drawn(fig)
        assert any(d.startswith("$$ (") for d in drawn) and any(d.startswith("_u (") for d in drawn)
