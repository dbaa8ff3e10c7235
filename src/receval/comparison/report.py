"""Reports of a :class:`~receval.Comparison`: Markdown, LaTeX (booktabs), plain text and one
self-contained HTML file (tables and plots embedded, no network).

Layout shared by every format: a models x metrics table of means (with the bootstrap interval
where there is one), the best mean per metric in bold (direction from
``MetricSpec.higher_is_better``), a mark on means that differ significantly from the
baseline, then the tests (p-values, adjusted p-values, effect sizes, paired users) and a legend.
The Markdown and HTML reports end with their provenance: the inputs, the evaluation and test
settings, the versions and the date (UTC; :func:`utc_now`, which tests replace).
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import math
import numbers
import os
import platform
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from receval._errors import InputError
from receval._version import __version__
from receval.comparison import plots as plot
from receval.comparison.data import (
    MODEL_ROWS,
    NOTE_GLOBAL,
    NOTE_WEIGHTED,
    ComparisonData,
    ReportCurves,
)
from receval.comparison.text import plain
from receval.data.io import check_output_path, write_text

if TYPE_CHECKING:
    from receval.metrics.specs import Metric

__all__ = [
    "MAX_DIGITS",
    "best_models",
    "check_digits",
    "check_html",
    "curve_figures",
    "curves_left_out",
    "describe_input",
    "estimates_note",
    "format_p",
    "html_tables",
    "latex_escape",
    "legend",
    "md_escape",
    "provenance",
    "segment_rows",
    "text_table",
    "to_latex",
    "to_markdown",
    "untested",
    "untested_note",
    "utc_now",
    "write_html",
]

MARK = "*"
UNTESTED = "\u2020"  # a dagger; LaTeX: $^{\dagger}$
_TEST = {
    "paired_t": "paired t test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "randomization": "Fisher randomization test",
}
_CORRECTION = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg"}


MAX_DIGITS = 17
"""The most decimals a report prints (``digits``): float64 holds about 17 significant digits."""


def check_digits(digits: object) -> int:
    """``digits`` as an int, or :class:`InputError` unless it is an integer (numpy's too, not
    a bool) from 0 to :data:`MAX_DIGITS`."""
    if isinstance(digits, numbers.Integral) and not isinstance(digits, bool | np.bool_):
        n = int(digits)
        if 0 <= n <= MAX_DIGITS:
            return n
    msg = f"digits must be an integer from 0 to {MAX_DIGITS} (decimals); got {digits!r}."
    raise InputError(msg)


def _num(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def format_p(value: float | None, digits: int) -> str:
    """A p-value as every report prints it: ``digits`` decimals, ``<0.0001`` below that."""
    return _p(value, digits)


def _p(value: float | None, digits: int) -> str:
    if value is None or math.isnan(value):
        return "-"
    floor = 10.0**-digits
    return f"<{floor:.{digits}f}" if value < floor else f"{value:.{digits}f}"


def best_models(cmp: ComparisonData) -> dict[str, set[str]]:
    """Metric -> the models with the best mean (all of them on a tie)."""
    by_metric: dict[str, dict[str, float]] = {}  # one pass over the table, not one per metric
    for row in cmp.table.select("model", "metric", "mean").iter_rows(named=True):
        if row["mean"] is not None and not math.isnan(row["mean"]):
            by_metric.setdefault(row["metric"], {})[row["model"]] = row["mean"]
    out: dict[str, set[str]] = {}
    for metric in cmp.metric_specs:
        key = metric.canonical
        means = by_metric.get(key, {})
        if not means:
            out[key] = set()
            continue
        best = max(means.values()) if metric.spec.higher_is_better else min(means.values())
        out[key] = {m for m, v in means.items() if v == best}
    return out


def _cells(cmp: ComparisonData) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["model"], r["metric"]): r for r in cmp.table.iter_rows(named=True)}


def legend(cmp: ComparisonData, *, best: str = "Bold") -> str:
    """One paragraph: what the numbers, the best-mean mark (``best``) and the significance
    mark mean."""
    s = cmp.settings
    level = round(100 * s["confidence"], 6)
    method = "BCa" if s["ci"] == "bca" else "percentile"
    corr = _CORRECTION.get(s["correction"] or "", "no")
    test = _TEST[s["test"]]
    if s["test"] == "randomization":
        test += f" ({s['n_permutations']} sign flips, seed {s['seed']})"
    return (
        f"Mean over users [{level:g}% {method} bootstrap interval, {s['n_resamples']} user-level "
        f"resamples, seed {s['seed']}]. {best}: best mean per metric. {MARK}: differs from the "
        f"baseline {cmp.baseline} by a two-sided {test}, {corr} correction across all "
        f"{_n_tests(cmp)} comparisons, adjusted p <= {s['alpha']:g}. "
        "Effect size: paired Cohen's d = mean(model - baseline) / sd(model - baseline) over "
        "the paired users. A metric without per-user values has a mean only."
        + _sentence(untested_note(cmp))
        + estimates_note(cmp)
    )


def _sentence(text: str) -> str:
    return f" {text}" if text else ""


def estimates_note(cmp: ComparisonData) -> str:
    """A sentence on the sampled metrics of ``cmp`` (empty when none): they are estimates."""
    tags = sorted({m.sampling.text for m in cmp.metric_specs if m.sampling is not None})
    if not tags:
        return ""
    return (
        f" Estimates: a metric named metric~estimator(m) ({', '.join(tags)}) ranks each test "
        "item against m sampled negatives instead of the whole catalog (docs/sampled.md); "
        "~sampled(m) is the metric on the sampled ranks, a biased stand-in for the "
        "full-catalog metric, and the other estimators are corrected estimates of it."
    )


def _n_tests(cmp: ComparisonData) -> int:
    return int(cmp.table["p_value"].is_not_null().sum())


def _notes(cmp: ComparisonData) -> list[str]:
    """``metric (models): note`` lines, one per distinct note of a metric."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for row in cmp.table.iter_rows(named=True):
        note = row["note"]
        if note and note != "baseline":
            grouped.setdefault((row["metric"], note), []).append(row["model"])
    return [
        f"{metric} ({'all models' if len(models) == len(cmp.models) else ', '.join(models)}): "
        f"{note}"
        for (metric, note), models in grouped.items()
    ]


def untested(cmp: ComparisonData) -> dict[str, str]:
    """Metric -> why its means have no interval and no test (in request order): the metrics
    without per-user values and those whose mean weighs them. Every report marks their means
    with :data:`UNTESTED` and says why under the table (:func:`untested_note`)."""
    notes = {
        r["metric"]: r["note"]
        for r in cmp.table.select("metric", "note").iter_rows(named=True)
        if r["note"] in (NOTE_GLOBAL, NOTE_WEIGHTED)
    }
    out: dict[str, str] = {}
    for m in cmp.metric_specs:
        note = notes.get(m.canonical)
        if note == NOTE_GLOBAL:
            out[m.canonical] = "no per-user values"
        elif note == NOTE_WEIGHTED:
            out[m.canonical] = _weighted_reason(m)
    return out


def _weighted_reason(m: Metric) -> str:
    """Why a weighted metric has no test, and the spelling of it that has one (the choice of
    its aggregation parameter that makes the mean a plain mean over users), if any."""
    if m.sampling is not None or m.spec.aggregation_by is None:
        return "its mean is not the plain mean of its per-user values"
    param, table = m.spec.aggregation_by
    plain = [value for value, how in table if how == "user"]
    reason = f"its mean weighs the users by {param}={m.str_param(param)}"
    if plain:
        values = (*((k, v) for k, v in m.values if k != param), (param, plain[0]))
        reason += f"; {dataclasses.replace(m, values=values).canonical}, the plain mean over "
        reason += "users, gets both"
    return reason


def untested_note(cmp: ComparisonData) -> str:
    """The sentence under every report's table on the means marked :data:`UNTESTED` (empty
    when there are none): which metrics and why."""
    why = untested(cmp)
    if not why:
        return ""
    listed = "; ".join(f"{metric} ({reason})" for metric, reason in why.items())
    return f"{UNTESTED}: mean only, no interval or test: {listed}."


def _model_label(cmp: ComparisonData, model: str) -> str:
    return f"{model} (baseline)" if model == cmp.baseline else model


def to_markdown(cmp: ComparisonData, *, digits: int = 4) -> str:
    """The Markdown report (see the module docstring)."""
    digits = check_digits(digits)
    cells, best, marked = _cells(cmp), best_models(cmp), untested(cmp)
    head = ["model", *cmp.metrics]
    lines = [
        "| " + " | ".join(md_escape(h) for h in head) + " |",
        "| --- |" + " ---: |" * len(cmp.metrics),
    ]
    for model in cmp.models:
        parts = [md_escape(_model_label(cmp, model))]
        for key in cmp.metrics:
            row = cells[model, key]
            mean = _num(row["mean"], digits)
            if model in best[key]:
                mean = f"**{mean}**"
            text = mean
            if key in marked and row["mean"] is not None:
                text += f" {UNTESTED}"
            if row["ci_low"] is not None:
                low, high = _num(row["ci_low"], digits), _num(row["ci_high"], digits)
                text += f" [{low}, {high}]"
            if row["significant"]:
                text += f" \\{MARK}"  # numbers and marks only: no other markup to escape
            parts.append(text)
        lines.append("| " + " | ".join(parts) + " |")
    out = ["\n".join(lines), "", md_escape(legend(cmp))]
    tests = _test_rows(cmp, digits)
    if tests:
        head = ["model", "metric", "p", "p adjusted", "significant", "effect size", "paired users"]
        t_lines = [
            "| " + " | ".join(head) + " |",
            "| --- | --- |" + " ---: |" * (len(head) - 2),
        ]
        t_lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in tests]
        out += ["", f"Tests against {md_escape(cmp.baseline)}:", "", "\n".join(t_lines)]
    by_segment = segment_rows(cmp, digits)
    if by_segment:
        s_lines = [
            "| " + " | ".join(SEGMENT_HEAD) + " |",
            "| --- | --- | --- | --- |" + " ---: |" * (len(SEGMENT_HEAD) - 4),
        ]
        s_lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in by_segment]
        out += ["", f"By segment ({_segment_note(cmp)}):", "", "\n".join(s_lines)]
    notes = _notes(cmp)
    if notes:
        out += ["", "Notes:", "", *[f"- {md_escape(n)}" for n in notes]]
    facts = [f"- {md_escape(label)}: {md_escape(value)}" for label, value in provenance(cmp)]
    out += ["", "Provenance:", "", *facts]
    return "\n".join(out) + "\n"


_MD_SPECIAL = re.compile(r"[\\`*\[\]|~]")
_MD_UNDERSCORES = re.compile(r"_+")


def md_escape(text: str) -> str:
    """``text`` as Markdown that renders as that text (GitHub/CommonMark with raw HTML on, in a
    table cell or a list item): on one line (:func:`plain`), ``& < >`` as HTML entities, and a
    backslash before every character that makes markup (``\\ ` * [ ] | ~``, an ``_`` unless
    it is inside a word, where it cannot open emphasis).

    >>> md_escape("<b>[x](javascript:1) a|b snake_case _em_")
    '&lt;b&gt;\\\\[x\\\\](javascript:1) a\\\\|b snake_case \\\\_em\\\\_'
    """
    text = html.escape(plain(text), quote=False)
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(), text)

    def underscores(m: re.Match[str]) -> str:
        start, end = m.span()
        inside = start > 0 and end < len(text) and text[start - 1].isalnum()
        if inside and text[end].isalnum():
            return m.group()
        return "\\_" * len(m.group())

    return _MD_UNDERSCORES.sub(underscores, text)


SEGMENT_HEAD = ["segmentation", "segment", "model", "metric", "mean", "interval", "p adjusted",
                "significant", "users"]  # fmt: skip


def segment_rows(cmp: ComparisonData, digits: int) -> list[list[str]]:
    """The by-segment table (``segments=``) as text cells, one row per segmentation,
    segment, model and metric; empty without segments."""
    if cmp.by_segment is None:
        return []
    rows = []
    for r in cmp.by_segment.iter_rows(named=True):
        interval = ""
        if r["ci_low"] is not None:
            interval = f"[{_num(r['ci_low'], digits)}, {_num(r['ci_high'], digits)}]"
        significant = "" if r["significant"] is None else ("yes" if r["significant"] else "no")
        rows.append([
            r["segmentation"], "(not listed)" if r["segment"] is None else r["segment"],
            r["model"], r["metric"], _num(r["mean"], digits), interval,
            _p(r["p_adjusted"], digits), significant,
            "-" if r["n_users"] is None else str(r["n_users"]),
        ])  # fmt: skip
    return rows


def _segment_note(cmp: ComparisonData) -> str:
    correction = cmp.settings.get("correction")
    how = "no correction" if correction is None else f"{_CORRECTION[correction]} correction"
    return (
        "each segment's runs tested against the baseline in that segment; "
        f"{how} over all the by-segment tests together"
    )


def _test_rows(cmp: ComparisonData, digits: int) -> list[list[str]]:
    rows = []
    for row in cmp.table.iter_rows(named=True):
        if row["model"] == cmp.baseline or row["p_value"] is None:
            continue
        rows.append(
            [
                row["model"],
                row["metric"],
                _p(row["p_value"], digits),
                _p(row["p_adjusted"], digits),
                "yes" if row["significant"] else "no",
                _num(row["effect_size"], 3),
                str(row["n_paired"]),
            ]
        )
    return rows


_LATEX_SPECIAL = {
    "[": "{[}",  # at a row's start it would be the optional argument of the \\ before
    "]": "{]}",
    "*": "{*}",  # likewise: \\* is a command
    "<": r"\textless{}",  # < > | are other glyphs in the default (OT1) font encoding
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


_LATEX_UNTESTED = r"$^{\dagger}$"


def latex_escape(text: str) -> str:
    """``text`` on one line (control characters as spaces: pdflatex stops at some, and a
    blank line ends the table) with LaTeX's special characters escaped.

    >>> latex_escape("ndcg(gain={1: 2})@10 & 50%")
    'ndcg(gain=\\\\{1: 2\\\\})@10 \\\\& 50\\\\%'
    >>> latex_escape("[x]\\n*y")
    '{[}x{]} {*}y'
    """
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in plain(text))


def to_latex(cmp: ComparisonData, *, digits: int = 4, ci: bool = False) -> str:
    """A booktabs ``tabular``: models x metrics, best in bold, significance marks, a legend."""
    digits = check_digits(digits)
    cells, best, marked = _cells(cmp), best_models(cmp), untested(cmp)
    n = len(cmp.metrics)
    lines = [
        r"% requires \usepackage{booktabs}",
        r"\begin{tabular}{l" + "r" * n + "}",
        r"\toprule",
        "Model & " + " & ".join(latex_escape(k) for k in cmp.metrics) + r" \\",
        r"\midrule",
    ]
    for model in cmp.models:
        parts = [latex_escape(_model_label(cmp, model))]
        for key in cmp.metrics:
            row = cells[model, key]
            text = _num(row["mean"], digits)
            if model in best[key]:
                text = rf"\textbf{{{text}}}"
            if key in marked and row["mean"] is not None:
                text += _LATEX_UNTESTED
            if row["significant"]:
                text += rf"$^{{{MARK}}}$"
            if ci and row["ci_low"] is not None:
                low, high = _num(row["ci_low"], digits), _num(row["ci_high"], digits)
                text += rf" {{\scriptsize [{low}, {high}]}}"
            parts.append(text)
        lines.append(" & ".join(parts) + r" \\")
    s = cmp.settings
    corr = _CORRECTION.get(s["correction"] or "", "no")
    note = (
        rf"$^{{{MARK}}}$ {latex_escape(_TEST[s['test']])} against "
        rf"{latex_escape(cmp.baseline)}, {corr} correction, adjusted $p \le {s['alpha']:g}$. "
        r"Bold: best per metric."
        + latex_escape(_sentence(untested_note(cmp))).replace(UNTESTED, _LATEX_UNTESTED)
        + latex_escape(estimates_note(cmp))
    )
    if ci:
        level = round(100 * s["confidence"], 6)
        method = "BCa" if s["ci"] == "bca" else "percentile"
        note += rf" Brackets: {level:g}\% {method} bootstrap interval."
    lines += [
        r"\bottomrule",
        rf"\multicolumn{{{n + 1}}}{{l}}{{\footnotesize {note}}} \\",
        r"\end{tabular}",
    ]
    return "\n".join(lines) + "\n"


def text_table(cmp: ComparisonData, *, digits: int = 4) -> str:
    """A plain-text summary (``repr``); names on one line (:func:`plain`)."""
    digits = check_digits(digits)
    cells, marked = _cells(cmp), untested(cmp)
    rows = [["model", *map(plain, cmp.metrics)]]  # on one line, no terminal escape
    for model in cmp.models:
        row = [plain(_model_label(cmp, model))]
        for key in cmp.metrics:
            c = cells[model, key]
            text = _num(c["mean"], digits)
            if key in marked and c["mean"] is not None:
                text += f" {UNTESTED}"
            if c["ci_low"] is not None:
                text += f" [{_num(c['ci_low'], digits)}, {_num(c['ci_high'], digits)}]"
            if c["significant"]:
                text += f" {MARK}"
            row.append(text)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    body = "\n".join(
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows
    )
    s = cmp.settings
    return (
        f"Comparison(\n{body}\n  {MARK}: {_TEST[s['test']]} against {plain(cmp.baseline)}, "
        f"{_CORRECTION.get(s['correction'] or '', 'no')} correction, adjusted p <= "
        f"{s['alpha']:g}\n{_indent(untested_note(cmp))})"
    )


def _indent(line: str) -> str:
    return f"  {line}\n" if line else ""


def utc_now() -> datetime:
    """The report's clock: the current time in UTC (tests replace it for an exact date)."""
    return datetime.now(UTC)


def describe_input(value: Any) -> str:
    """An input as the provenance names it: a path as given, else the kind of object and,
    when known without reading it, its size (``"polars DataFrame, 1,234 rows"``,
    ``"dict, 12 users"``; a LazyFrame or a Spark DataFrame is not counted)."""
    if isinstance(value, str | os.PathLike):
        return os.fsdecode(value)
    kind = type(value)
    root = kind.__module__.split(".")[0]
    if root == "receval":  # a model source: its repr says what it is
        return repr(value)
    name = kind.__name__ if root == "builtins" else f"{root} {kind.__name__}"
    if isinstance(value, Mapping):
        return f"{name}, {_count(len(value), 'user')}"
    shape = getattr(value, "shape", None) if root in ("polars", "pandas", "pyarrow") else None
    if isinstance(shape, tuple) and shape and isinstance(shape[0], int):
        return f"{name}, {_count(shape[0], 'row')}"
    return name


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def provenance(cmp: ComparisonData) -> list[tuple[str, str]]:
    """``(label, value)`` pairs: the inputs (truth, each run, then ``train``, ``items``,
    ``exclude`` and ``candidates`` when given), the evaluation settings (tie
    policy, relevance threshold, no-recs policy, id_type when set), the test, correction,
    alpha and bootstrap, the versions of receval, Python and Polars, and the date (UTC, ISO
    8601, from :func:`utc_now`)."""
    import polars as pl

    s = cmp.settings
    inputs = cmp.inputs
    facts: list[tuple[str, str]] = []
    if inputs is None:
        facts.append(("truth", "not recorded"))
        facts += [(f"run {name}", "not recorded") for name in cmp.models]
    else:
        facts.append(("truth", describe_input(inputs["truth"])))
        facts += [(f"run {name}", describe_input(run)) for name, run in inputs["runs"].items()]
    evaluated = s.get("evaluate") or {}
    options = inputs["options"] if inputs is not None else {}
    # train and the catalog change what is measured (coverage, novelty), and a model
    # source's masks which items are ranked: inputs too
    for key in ("train", "items", "exclude", "candidates"):
        if options.get(key) is not None:
            facts.append((key, describe_input(options[key])))
    for key, label in (("ties", "ties"), ("relevance_threshold", "relevance threshold"),
                       ("no_recs", "no-recs policy"), ("id_type", "id_type")):  # fmt: skip
        value = evaluated.get(key, options.get(key))
        if value is not None:
            facts.append((label, f"{value:g}" if isinstance(value, float) else str(value)))
    sampling = evaluated.get("sampling")
    if sampling:  # a sampled protocol: its draws are part of what was measured
        shown = ", ".join(f"{k}={v}" for k, v in sampling.items() if v is not None)
        facts.append(("sampling", shown))
    test = f"{_TEST[s['test']]}, two-sided"
    if s["test"] == "randomization":
        test += f", {s['n_permutations']} sign flips, seed {s['seed']}"
    level = round(100 * s["confidence"], 6)
    method = "BCa" if s["ci"] == "bca" else "percentile"
    facts += [
        ("test", test),
        ("correction", _CORRECTION.get(s["correction"] or "", "none")),
        ("alpha", f"{s['alpha']:g}"),
        ("bootstrap", f"{level:g}% {method} interval, {s['n_resamples']} user-level "
                      f"resamples, seed {s['seed']}"),
        ("receval", __version__),
        ("Python", platform.python_version()),
        ("Polars", pl.__version__),
        ("date", utc_now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
    ]  # fmt: skip
    return facts


def curve_figures(curves: ReportCurves) -> dict[str, Any]:
    """The HTML report's curve figures, by caption: a metric@K curve of each base metric
    (K = 1..its largest K), then the ROC curves when there are any."""
    figures: dict[str, Any] = {}
    for at_k in curves.at_k:
        figures[f"{at_k.metric}@K, K = 1..{at_k.ks[-1]}"] = plot.draw_metric_at_k(at_k)
    if curves.roc:
        figures["ROC curves"] = plot.draw_roc(curves.roc)
    return figures


def curves_left_out(curves: ReportCurves) -> list[str]:
    """What the curves leave out and why, one sentence each (the HTML report prints them
    under its figures): the ROC curves of model runs."""
    models = curves.models
    if not models:
        return []
    many = len(models) > 1
    names = ", ".join(models[:-1]) + " and " + models[-1] if many else models[0]
    return [
        f"Left out: the ROC curve{'s' if many else ''} of {names} "
        f"(model source{'s' if many else ''}): {MODEL_ROWS}. gauc in the tables is each "
        "user's exact AUC over their candidates; the ROC of a model's top K is "
        "receval.plot.roc(truth, {name: receval.topk(model, k)})."
    ]


def _html_escape(text: str) -> str:
    """``text`` as HTML text or attribute value (quotes too), on one line (:func:`plain`)."""
    return html.escape(plain(text))


def _html_provenance(cmp: ComparisonData) -> str:
    e = _html_escape
    rows = "".join(
        f'<tr><th scope="row">{e(label)}</th><td>{e(value)}</td></tr>'
        for label, value in provenance(cmp)
    )
    return f'<h2>Provenance</h2><table id="provenance"><tbody>{rows}</tbody></table>'


def html_tables(cmp: ComparisonData, *, digits: int = 4) -> str:
    """The means table, the tests table, the legend and the notes as an HTML fragment."""
    digits = check_digits(digits)
    cells, best, marked = _cells(cmp), best_models(cmp), untested(cmp)
    e = _html_escape
    head = "".join(f"<th>{e(k)}</th>" for k in cmp.metrics)
    body = []
    for model in cmp.models:
        tds = [f'<th scope="row">{e(_model_label(cmp, model))}</th>']
        for key in cmp.metrics:
            row = cells[model, key]
            mean = e(_num(row["mean"], digits))
            if model in best[key]:
                mean = f"<strong>{mean}</strong>"
            text = f'<span class="mean">{mean}</span>'
            if key in marked and row["mean"] is not None:
                text += f'<sup class="untested">{UNTESTED}</sup>'
            if row["significant"]:
                text += f'<sup class="sig">{MARK}</sup>'
            if row["ci_low"] is not None:
                low, high = _num(row["ci_low"], digits), _num(row["ci_high"], digits)
                text += f' <span class="ci">[{low}, {high}]</span>'
            tds.append(f'<td data-model="{e(model)}" data-metric="{e(key)}">{text}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    parts = [
        f'<table id="means"><thead><tr><th>model</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>",
        f'<p class="legend">{e(legend(cmp))}</p>',
    ]
    tests = _test_rows(cmp, digits)
    if tests:
        names = ["model", "metric", "p", "p adjusted", "significant", "effect size", "paired users"]
        t_head = "".join(f"<th>{e(h)}</th>" for h in names)
        t_body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in tests)
        parts.append(
            f"<h2>Tests against {e(cmp.baseline)}</h2>"
            f'<table id="tests"><thead><tr>{t_head}</tr></thead><tbody>{t_body}</tbody></table>'
        )
    by_segment = segment_rows(cmp, digits)
    if by_segment:
        s_head = "".join(f"<th>{e(h)}</th>" for h in SEGMENT_HEAD)
        s_body = "".join(
            "<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in by_segment
        )
        parts.append(
            f'<h2>By segment</h2><p class="legend">{e(_segment_note(cmp))}</p>'
            f'<table id="segments"><thead><tr>{s_head}</tr></thead><tbody>{s_body}</tbody></table>'
        )
    notes = _notes(cmp)
    if notes:
        items = "".join(f"<li>{e(n)}</li>" for n in notes)
        parts.append(f'<h2>Notes</h2><ul id="notes">{items}</ul>')
    counts = "".join(
        f"<tr><th scope='row'>{e(name)}</th>"
        + "".join(f"<td>{v}</td>" for v in res.counts.to_dict().values())
        + "</tr>"
        for name, res in cmp.results.items()
    )
    c_head = "".join(f"<th>{e(k)}</th>" for k in next(iter(cmp.results.values())).counts.to_dict())
    parts.append(
        f'<h2>Users</h2><table id="counts"><thead><tr><th>model</th>{c_head}</tr></thead>'
        f"<tbody>{counts}</tbody></table>"
    )
    return "\n".join(parts)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 75em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 0.3em 0.8em; border-bottom: 1px solid #ccc; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #444; }
.ci { color: #666; font-size: 0.85em; }
.sig { color: #b00; }
.legend { font-size: 0.9em; color: #444; max-width: 60em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; }
"""


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def check_html(path: str | os.PathLike[str], digits: object) -> tuple[Path, int]:
    """The HTML report's path and ``digits``, checked before any work: an ``.html`` path
    whose folder exists, and :func:`check_digits`."""
    target = Path(path)
    if target.suffix.lower() not in (".html", ".htm"):
        msg = f"cannot write {str(target)!r}: expected an .html path."
        raise InputError(msg)
    n = check_digits(digits)
    check_output_path(target)
    return target, n


def write_html(
    cmp: ComparisonData,
    path: str | os.PathLike[str],
    *,
    plots: bool = True,
    curves: ReportCurves | None = None,
    title: str = "receval comparison",
    figures: Mapping[str, Any] | None = None,
    digits: int = 4,
) -> Path:
    """Write the self-contained HTML report atomically (temporary file, then rename); see
    :meth:`receval.Comparison.to_html`. ``curves`` (with ``plots``): the curves to draw
    after the other plots, as :func:`receval.comparison.curves.report_curves` computes
    them."""
    target, digits = check_html(path, digits)  # before drawing anything
    figs: dict[str, Any] = {}
    left_out: list[str] = []
    if plots:
        figs["Means with bootstrap intervals"] = plot.intervals(cmp)
        with_ci = set(cmp.table.filter(cmp.table["ci_low"].is_not_null())["metric"])
        testable = [k for k in cmp.metrics if k in with_ci]
        for key in testable:
            figs[f"Per-user values: {key}"] = plot.per_user(cmp, key)
        if cmp.by_segment is not None:
            for name in cmp.by_segment["segmentation"].unique(maintain_order=True):
                figs[f"By segment: {name}"] = plot.segments(cmp, name)
        if curves is not None:
            figs.update(curve_figures(curves))
            left_out = curves_left_out(curves)
    figs.update(figures or {})
    images = "".join(
        f'<figure><img alt="{_html_escape(cap)}" src="data:image/png;base64,{_png(fig)}">'
        f"<figcaption>{_html_escape(cap)}</figcaption></figure>"
        for cap, fig in figs.items()
    ) + "".join(f'<p class="left-out">{_html_escape(line)}</p>' for line in left_out)
    doc = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_html_escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_html_escape(title)}</h1>{html_tables(cmp, digits=digits)}"
        f'<div id="plots">{images}</div>{_html_provenance(cmp)}</body></html>\n'
    )
    write_text(doc, target)
    return target
