"""Robustness across every accepted container and dtype (hypothesis).

Each example draws a small truth and recs table, then hands them to ``evaluate`` (and to the
command line) in a drawn container: nested dicts, Polars eager and lazy frames, pandas with
numpy / object / categorical / nullable / Arrow-backed columns, Arrow tables with plain, large
and dictionary string columns, Parquet and CSV files; ids of every integer width or unicode
strings with spaces and punctuation; scores as floats (with infinities) or integers. The call
must return exactly the canonical result (the same data as Python dicts) or raise a
:class:`receval.RecevalError`, never another exception; where both inputs keep one id kind the
call must succeed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import signal
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import receval
from helpers.examples import examples
from receval.cli import app

METRICS = ["ndcg@3", "map", "mrr", "recall@2", "precision@2", "hit_rate@1"]
# the sections' common settings (each sets its own number of examples)
ROBUST = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SETTINGS = settings(ROBUST, max_examples=examples(60))

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
CONTAINERS = ["dict", "polars", "lazy", "pandas", "arrow", "parquet", "csv"]
PANDAS_STR = ["object", "category", "string", "string[pyarrow]", "large_string[pyarrow]"]
ARROW_STR = ["string", "large_string", "dictionary"]
# ids: letters, digits, spaces, punctuation and non-ASCII letters; no control characters
ID_TEXT = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 _-,.'\"éßж中😀")), min_size=1, max_size=6
)


@dataclass(frozen=True)
class Table:
    """One logical input: rows (user, item, value) with one id kind."""

    users: tuple[Any, ...]
    items: tuple[Any, ...]
    values: tuple[float, ...]
    id_kind: str  # "int" or "str"

    def nested(self) -> dict[Any, dict[Any, float]]:
        out: dict[Any, dict[Any, float]] = {}
        for u, i, v in zip(self.users, self.items, self.values, strict=True):
            out.setdefault(u, {})[i] = v
        return out


@st.composite
def tables(draw: st.DrawFn) -> tuple[Table, Table]:
    """A truth and a recs table that share users and items."""
    kind = draw(st.sampled_from(["int", "str"]))
    ids = st.integers(min_value=0, max_value=120) if kind == "int" else ID_TEXT
    users = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    items = draw(st.lists(ids, min_size=2, max_size=6, unique=True))
    truth_rows = draw(
        st.lists(
            st.tuples(st.sampled_from(users), st.sampled_from(items), st.integers(0, 3)),
            min_size=1,
            max_size=12,
            unique_by=lambda r: (r[0], r[1]),
        )
    )
    score = st.one_of(
        st.integers(-8, 8).map(lambda x: x / 4),  # exact in float32 too; ties are common
        st.sampled_from([math.inf, -math.inf]),
    )
    recs_rows = draw(
        st.lists(
            st.tuples(st.sampled_from(users), st.sampled_from(items), score),
            min_size=1,
            max_size=14,
            unique_by=lambda r: (r[0], r[1]),
        )
    )
    truth = Table(
        tuple(r[0] for r in truth_rows),
        tuple(r[1] for r in truth_rows),
        tuple(float(max(r[2], 1) if n == 0 else r[2]) for n, r in enumerate(truth_rows)),
        kind,
    )
    recs = Table(
        tuple(r[0] for r in recs_rows),
        tuple(r[1] for r in recs_rows),
        tuple(float(r[2]) for r in recs_rows),
        kind,
    )
    return truth, recs


@dataclass(frozen=True)
class Form:
    """How one table is handed over: container, id dtype, value dtype."""

    container: str
    id_type: str  # an INT_TYPES name, or a string flavour of the container
    value_type: str  # float64, float32, int64, or nullable variants


@st.composite
def forms(draw: st.DrawFn, table: Table) -> Form:
    container = draw(st.sampled_from(CONTAINERS))
    if table.id_kind == "int":
        id_type = "int64" if container == "dict" else draw(st.sampled_from(INT_TYPES))
    elif container == "pandas":
        id_type = draw(st.sampled_from(PANDAS_STR))
    elif container in ("arrow", "parquet"):
        id_type = draw(st.sampled_from(ARROW_STR))
    elif container in ("polars", "lazy"):
        id_type = draw(st.sampled_from(["string", "categorical"]))
    else:
        id_type = "string"
    finite_ints = all(math.isfinite(v) and v == int(v) for v in table.values)
    value_types = ["float64", "float32"]
    if finite_ints:
        value_types += ["int64", "int32"]
    if container == "pandas":
        value_types += ["Float64"] + (["Int64"] if finite_ints else [])
    value_type = "float64" if container == "dict" else draw(st.sampled_from(value_types))
    return Form(container, id_type, value_type)


def _pandas_ids(values: tuple[Any, ...], id_type: str) -> Any:
    if id_type in INT_TYPES:
        return np.array(values, dtype=id_type)
    if id_type == "object":
        return pd.Series(list(values), dtype=object)
    if id_type == "large_string[pyarrow]":
        return pd.Series(list(values), dtype=pd.ArrowDtype(pa.large_string()))
    return pd.Series(list(values), dtype=id_type)


def _arrow_ids(values: tuple[Any, ...], id_type: str) -> pa.Array:
    if id_type in INT_TYPES:
        return pa.array(values, type=getattr(pa, id_type)())
    if id_type == "dictionary":
        return pa.array(values, type=pa.string()).dictionary_encode()
    return pa.array(values, type=getattr(pa, id_type)())


def build(table: Table, form: Form, value_col: str, folder: Path, name: str) -> Any:
    """``table`` in the container and dtypes of ``form``."""
    if form.container == "dict":
        return table.nested()
    if form.container == "pandas":
        return pd.DataFrame(
            {
                "user": _pandas_ids(table.users, form.id_type),
                "item": _pandas_ids(table.items, form.id_type),
                value_col: pd.Series(list(table.values)).astype(form.value_type),
            }
        )
    value_type = {"Float64": "float64", "Int64": "int64"}.get(form.value_type, form.value_type)
    if form.container in ("polars", "lazy"):
        id_dtype = _POLARS_IDS[form.id_type]
        frame = pl.DataFrame(
            {
                "user": pl.Series(list(table.users)).cast(id_dtype),
                "item": pl.Series(list(table.items)).cast(id_dtype),
                value_col: pl.Series(list(table.values), dtype=pl.Float64).cast(
                    _POLARS_VALUES[value_type]
                ),
            }
        )
        return frame.lazy() if form.container == "lazy" else frame
    arrow = pa.table(
        {
            "user": _arrow_ids(table.users, form.id_type),
            "item": _arrow_ids(table.items, form.id_type),
            value_col: pa.array(table.values, type=pa.float64()).cast(getattr(pa, value_type)()),
        }
    )
    if form.container == "arrow":
        return arrow
    path = folder / f"{name}.{form.container}"
    if form.container == "parquet":
        pq.write_table(arrow, path)
    else:
        pl.DataFrame(pl.from_arrow(arrow)).write_csv(path)
    return path


_POLARS_IDS: dict[str, Any] = {
    "string": pl.String,
    "categorical": pl.Categorical,
    **{t: getattr(pl, t.replace("uint", "UInt").replace("int", "Int")) for t in INT_TYPES},
}
_POLARS_VALUES: dict[str, Any] = {
    "float64": pl.Float64,
    "float32": pl.Float32,
    "int64": pl.Int64,
    "int32": pl.Int32,
}


def _reads_as(form: Form, table: Table) -> str:
    """The id kind receval sees: text files hold string ids unless asked otherwise."""
    return "str" if form.container == "csv" else table.id_kind


def _outcome(call: Any) -> receval.Result | receval.RecevalError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call()  # type: ignore[no-any-return]
        except receval.RecevalError as exc:
            return exc


def _summary(res: receval.Result) -> dict[str, Any]:
    """Means, counts and per-user values keyed by the user's text (CSV ids are strings)."""
    per_user = {
        metric: sorted(
            (str(u), v)
            for u, v in zip(res.per_user["user"], res.per_user[metric], strict=True)
            if v is not None
        )
        for metric in res.per_user.columns[1:]
    }
    means = {k: ("nan" if math.isnan(v) else v) for k, v in res.means.items()}
    return {"means": means, "counts": res.counts, "per_user": per_user}


@SETTINGS
@given(data=st.data(), pair=tables())
def test_every_container_and_dtype(
    data: st.DataObject, pair: tuple[Table, Table], tmp_path_factory: pytest.TempPathFactory
) -> None:
    truth, recs = pair
    folder = tmp_path_factory.mktemp("robust")
    canonical = _outcome(lambda: receval.evaluate(truth.nested(), recs.nested(), METRICS))
    t_form = data.draw(forms(truth), label="truth form")
    r_form = data.draw(forms(recs), label="recs form")
    t_in = build(truth, t_form, "relevance", folder, "truth")
    r_in = build(recs, r_form, "score", folder, "recs")
    got = _outcome(lambda: receval.evaluate(t_in, r_in, METRICS))
    event(f"{t_form.container} truth, {r_form.container} recs: {type(got).__name__}")
    if isinstance(canonical, receval.RecevalError):
        assert isinstance(got, receval.RecevalError), (canonical, got)
        return
    if isinstance(got, receval.RecevalError):
        assert _reads_as(t_form, truth) != _reads_as(r_form, recs), got
        return
    assert _summary(got) == _summary(canonical)


@settings(ROBUST, max_examples=examples(25))
@given(data=st.data(), pair=tables())
def test_command_line_never_shows_a_traceback(
    data: st.DataObject, pair: tuple[Table, Table], tmp_path_factory: pytest.TempPathFactory
) -> None:
    truth, recs = pair
    folder = tmp_path_factory.mktemp("robust_cli")
    files = [
        Form(c, t, v)
        for c in ("parquet", "csv")
        for t in (INT_TYPES if truth.id_kind == "int" else ["string"])
        for v in ("float64",)
    ]
    t_form = data.draw(st.sampled_from(files), label="truth file")
    r_form = data.draw(st.sampled_from(files), label="recs file")
    t_path = build(truth, t_form, "relevance", folder, "truth")
    r_path = build(recs, r_form, "score", folder, "recs")
    args = ["evaluate", "--truth", str(t_path), "--recs", str(r_path), "--format", "json"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = CliRunner().invoke(app, [*args, *(a for m in METRICS for a in ("-m", m))])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    canonical = _outcome(lambda: receval.evaluate(truth.nested(), recs.nested(), METRICS))
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert lines[0].startswith("error: ")
        assert isinstance(canonical, receval.RecevalError) or (
            _reads_as(t_form, truth) != _reads_as(r_form, recs)
        ), result.stderr
        return
    assert result.exit_code == 0, result.stderr
    assert not isinstance(canonical, receval.RecevalError)
    got = json.loads(result.stdout)["metrics"]
    want = {k: (None if math.isnan(v) else v) for k, v in canonical.means.items()}
    assert got == want


# ------------------------------------------------------------------------- Evaluator (generated)
# update / update_scores / merge / compute with drawn good and bad inputs (issue 29, item 8):
# each call returns or raises a RecevalError, never another exception, and a Result computed
# from what was accepted keeps each mean the mean of its own per-user values.

EV_METRICS = ["recall@2", "ndcg@3", "precision@1"]
EV_SETTINGS = settings(ROBUST, max_examples=examples(25))
EV_ID = st.one_of(st.integers(0, 6), st.sampled_from(["a", "b", "c"]))


@st.composite
def ev_scores(draw: Any, n_rows: int, n_cols: int) -> Any:
    """A score matrix: mostly good floats or integers, sometimes a bad kind or shape."""
    kind = draw(
        st.sampled_from(
            ["float", "float", "int", "float32", "huge_int", "complex", "text", "bool", "nan",
             "longdouble", "object", "ragged", "scalar", "torch_half"]
        )
    )  # fmt: skip
    base = np.array(
        draw(st.lists(st.integers(-3, 3), min_size=n_rows * n_cols, max_size=n_rows * n_cols)),
        dtype=np.int64,
    ).reshape(n_rows, n_cols)
    if kind == "float":
        return base.astype(np.float64) / 2
    if kind == "int":
        return base
    if kind == "float32":
        return base.astype(np.float32)
    if kind == "huge_int":
        return base + 2**60 + 1
    if kind == "complex":
        return base.astype(complex)
    if kind == "text":
        return base.astype(str)
    if kind == "bool":
        return base > 0
    if kind == "nan":
        out = base.astype(np.float64)
        out.flat[0] = np.nan
        return out
    if kind == "longdouble":
        return base.astype(np.longdouble) + np.longdouble(2) ** -70
    if kind == "object":
        return base.astype(object)
    if kind == "ragged":
        return [list(range(n_cols)), list(range(n_cols + 1))]
    if kind == "torch_half":
        torch = pytest.importorskip("torch")
        return torch.from_numpy(base.astype(np.float32)).half()
    return 3.0


@st.composite
def ev_ops(draw: Any) -> list[tuple[Any, ...]]:
    ops: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(1, 4))):
        what = draw(st.sampled_from(["update", "update_scores", "update_scores", "merge"]))
        if what == "update":
            users = draw(st.lists(EV_ID, min_size=0, max_size=3))
            truth = {u: {draw(EV_ID): draw(st.sampled_from([0, 1, 2]))} for u in users}
            recs = {u: {draw(EV_ID): draw(st.floats(-1, 1)) for _ in range(2)} for u in users}
            ops.append(("update", truth, recs))
        elif what == "update_scores":
            users = draw(
                st.one_of(
                    st.lists(st.integers(0, 9), min_size=1, max_size=3),
                    st.lists(EV_ID, min_size=1, max_size=3),
                    st.just([0.5, 1.5]),
                )
            )
            n_cols = draw(st.integers(1, 4))
            scores = draw(ev_scores(len(users), n_cols))
            truth = {u: {draw(st.integers(0, n_cols)): 1} for u in users[:2]}
            exclude = draw(
                st.sampled_from([None, {u: [0] for u in users}, {users[0]: 5}, "nowhere.csv"])
            )
            item_ids = draw(st.sampled_from([None, list(range(n_cols)), ["x"] * n_cols]))
            k = draw(st.sampled_from([None, "all", 1, 0, "three", 10**9]))
            ops.append(("update_scores", users, scores, truth, exclude, item_ids, k))
        else:
            users = draw(st.lists(st.integers(10, 14), min_size=1, max_size=2, unique=True))
            train = draw(st.sampled_from([None, pl.DataFrame({"user": [10], "item": [1]})]))
            ops.append(("merge", {u: {1: 1} for u in users}, {u: {1: 0.5} for u in users}, train))
    return ops


@EV_SETTINGS
@given(ops=ev_ops())
def test_evaluator_returns_or_raises_receval_errors(ops: list[tuple[Any, ...]]) -> None:
    ev = receval.Evaluator(EV_METRICS)
    accepted = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in ops:
            try:
                if op[0] == "update":
                    ev.update(op[1], op[2])
                elif op[0] == "update_scores":
                    _, users, scores, truth, exclude, item_ids, k = op
                    ev.update_scores(users, scores, truth, exclude=exclude, item_ids=item_ids, k=k)
                else:
                    other = receval.Evaluator(EV_METRICS, train=op[3])
                    other.update(op[1], op[2])
                    ev.merge(other)
                accepted += 1
                event(f"accepted {op[0]}")
            except receval.RecevalError as exc:
                event(f"refused {op[0]}: {type(exc).__name__}")
        try:
            res = ev.compute()
        except receval.RecevalError:
            event("compute refused")
            return
    for name in EV_METRICS:
        column = res.per_user[name].drop_nulls().drop_nans()
        if column.len():
            assert res[name] == pytest.approx(column.mean(), rel=1e-12, abs=1e-15)
    assert ev.compute() == res  # computing again changes nothing


# ------------------------------------------------------------------- report writers (issue 29)
# Drawn hostile model names, segment labels, digits and paths through every writer of a
# Comparison (to_markdown, to_latex, to_json, the HTML tables, repr, to_html): each returns or
# raises a RecevalError, and what it writes is text, never markup: the Markdown rendered by a
# CommonMark parser (raw HTML on) has only the report's own tags and tables of a constant
# width, the LaTeX no control character and no cell that changes a row's width, the HTML no
# tag or attribute from a name.

HOSTILE_NAMES = st.one_of(
    st.text(
        alphabet=st.sampled_from(list("ab _<>&|\\*[]()`~$#^%{}!\"'=:/\n\t\r\x00\x1b\u2028é中😀")),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(
        [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "[x](javascript:alert(1))",
            "a\\|b",
            "two\nlines",
            "$$",
            "$x^2$",
            "_u_",
            "**b**",
            "&amp;",
            "[y]",
            "*",
            "\\",
        ]
    ),
)
DIGITS = st.one_of(st.integers(-3, 20), st.sampled_from([None, 1.5, True, "2", 10**9]))
REPORT_TRUTH = {u: {"a": 1, "b": 1} for u in range(6)}
REPORT_TAGS = {"table", "thead", "tbody", "tr", "th", "td", "p", "strong", "ul", "li"}
HTML_TAGS = REPORT_TAGS | {"h2", "span", "sup", "html", "head", "meta", "title", "style", "body",
                           "h1", "div", "figure", "img", "figcaption"}  # fmt: skip


def _report_run(j: int) -> dict[int, dict[str, float]]:
    return {u: {"a": 0.9 if (u + j) % 3 else 0.1, "x": 0.5, "b": 0.2 + j / 100} for u in range(6)}


def _shown_name(name: str) -> str:
    import re

    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", " ", name)


def _html_tags(text: str) -> tuple[set[str], list[str]]:
    from html.parser import HTMLParser

    found: tuple[set[str], list[str]] = (set(), [])

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found[0].add(tag)
            found[1].extend(a for a, _ in attrs if a.startswith("on"))

    Tags().feed(text)
    return found


def _check_markdown(text: str, names: list[str], baseline: str) -> None:
    import html
    import re

    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)
    tags = set(re.findall(r"<([a-z0-9]+)", rendered))
    assert tags <= REPORT_TAGS, (tags, text)
    tables = []
    for table in re.findall(r"<table>(.*?)</table>", rendered, flags=re.S):
        rows = [
            [html.unescape(re.sub(r"<[^>]+>", "", c))
             for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
        ]  # fmt: skip
        assert len({len(r) for r in rows}) == 1, (rows, text)
        tables.append(rows)
    # a cell is trimmed: a name's own leading and trailing spaces are not shown
    want = [(_shown_name(n) + (" (baseline)" if n == baseline else "")).strip() for n in names]
    assert [r[0].strip() for r in tables[0][1:]] == want, (tables[0], text)


def _check_latex(text: str, n_models: int, n_metrics: int) -> None:
    import re

    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u2028\u2029]", text), repr(text)
    assert "\n\n" not in text
    lines = text.splitlines()
    start = lines.index(r"\midrule") + 1
    for row in lines[start : start + n_models]:
        assert len(re.findall(r"(?<!\\)&", row)) == n_metrics, row
        assert row[0] not in "[*", row


@settings(ROBUST, max_examples=examples(30))
@given(
    names=st.lists(HOSTILE_NAMES, min_size=2, max_size=3, unique=True),
    labels=st.none() | st.lists(HOSTILE_NAMES, min_size=2, max_size=2),
    digits=DIGITS,
)
def test_report_writers_print_names_as_text(
    names: list[str], labels: list[str] | None, digits: object
) -> None:
    from receval.comparison.report import html_tables, text_table

    runs = {name: _report_run(j) for j, name in enumerate(names)}
    segments = None if labels is None else {u: labels[u % 2] for u in REPORT_TRUTH}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = receval.compare(
            REPORT_TRUTH, runs, ["ndcg@2", "mrr", "gauc"], n_resamples=20, segments=segments
        )
    assert json.loads(cmp.to_json())["models"] == names  # JSON keeps names exactly
    valid = isinstance(digits, int) and not isinstance(digits, bool) and 0 <= digits <= 17
    writers = {
        "markdown": lambda: cmp.to_markdown(digits=digits),  # type: ignore[arg-type]
        "latex": lambda: cmp.to_latex(digits=digits, ci=True),  # type: ignore[arg-type]
        "html": lambda: html_tables(cmp, digits=digits),  # type: ignore[arg-type]
        "text": lambda: text_table(cmp, digits=digits),  # type: ignore[arg-type]
    }
    for kind, write in writers.items():
        got = _outcome(write)
        event(f"{kind}: {type(got).__name__}")
        if not valid:
            assert isinstance(got, receval.InputError) and "digits" in str(got), got
            continue
        assert isinstance(got, str), got
        if kind == "markdown":
            _check_markdown(got, names, cmp.baseline)
        elif kind == "latex":
            _check_latex(got, len(names), 3)
        elif kind == "html":
            tags, handlers = _html_tags(got)
            assert tags <= HTML_TAGS and not handlers, (tags, handlers, got)
        else:
            assert all(_shown_name(n) in got for n in names)


@pytest.mark.slow
@settings(ROBUST, max_examples=15)
@given(
    names=st.lists(HOSTILE_NAMES, min_size=2, max_size=3, unique=True),
    file=st.text(alphabet=st.sampled_from(list("ab <>&|*[]()`~$#%{}!\"'=:\n\té😀")), max_size=8),
    title=HOSTILE_NAMES,
)
def test_html_report_with_plots_of_hostile_names(
    names: list[str], file: str, title: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The whole HTML report, figures included (names reach matplotlib: never mathtext), at a
    drawn path: written, or a RecevalError (a path that cannot be written)."""
    runs = {name: _report_run(j) for j, name in enumerate(names)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = receval.compare(REPORT_TRUTH, runs, ["ndcg@2", "gauc"], n_resamples=20)
    target = tmp_path_factory.mktemp("report") / f"{file}.html"
    got = _outcome(lambda: cmp.to_html(target, title=title))
    event(f"to_html: {type(got).__name__}")
    if isinstance(got, receval.RecevalError):
        return
    assert isinstance(got, Path), got
    tags, handlers = _html_tags(got.read_text(encoding="utf-8"))
    assert tags <= HTML_TAGS and not handlers, (tags, handlers)


# --- split, audit_split and Sampling: every bad input is a RecevalError -------------------
# Interaction tables of drawn column types (good and bad: floats, bools, nulls, lists, dates,
# NaN, text timestamps, ids beyond int64) in a drawn container (Polars eager and lazy, pandas
# with numpy or Arrow-backed columns, Arrow, CSV, TSV, Parquet, a RecBole .inter file with
# drawn header types), and a call of a drawn method whose options are mostly good (so that the
# splits themselves run) with now and then a bad value or one the method does not take. The
# call must return, or raise a RecevalError: never another exception, never a hang; a split
# that returns must account for every row, and its own parts, written and read back, must
# pass audit_split.

HANG_SECONDS = 240  # a hang, not a slow call: the first calls compile the kernels
COLUMN_VALUES: dict[str, Any] = {
    "int": st.integers(0, 6),
    "str": st.sampled_from(["a", "b", "007", "7", "c d", "é"]),
    "float": st.sampled_from([0.0, 1.5, 2.0, -0.0, 3.0]),
    "odd_float": st.sampled_from([0.0, 1.5, math.nan, math.inf, -math.inf]),
    "bool": st.booleans(),
    "null": st.none(),
    "maybe_null": st.one_of(st.none(), st.integers(0, 4)),
    "big": st.sampled_from([0, 2**63, 2**64 - 1]),
    "date": st.dates(min_value=dt.date(2020, 1, 1), max_value=dt.date(2020, 1, 9)),
    "datetime": st.datetimes(min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2020, 1, 9)),
    "iso": st.sampled_from(["2020-01-02", "2020-01-05", "2020-01-05T10:00:00", "never"]),
    "list": st.lists(st.integers(0, 3), max_size=2),
}
GOOD_KINDS = {
    "user": ["int", "str"],
    "item": ["int", "str"],
    "timestamp": ["int", "int", "date", "datetime", "float"],
    "rating": ["int", "float"],
}
ANY_KIND = list(COLUMN_VALUES)
RECBOLE_TYPES = ["token", "float", "token_seq", "float_seq", ""]
CONTAINERS_SPLIT = ["polars", "lazy", "pandas", "pandas_arrow", "arrow", "csv", "tsv", "parquet",
                    "inter"]  # fmt: skip


@contextmanager
def no_hang(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Fail (instead of waiting for ever) when the block runs longer than ``seconds``."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError(f"the call ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _never_crashes(call: Any) -> object:
    """``call()``'s result, or its RecevalError; any other exception fails the test."""
    with no_hang(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call()
        except receval.RecevalError as exc:
            assert str(exc), "an error without a message"
            return exc


def _container(draw: st.DrawFn, frame: pl.DataFrame, folder: Path, name: str) -> Any:
    """``frame`` in a drawn container: an object, or a file written for it."""
    container = draw(st.sampled_from(CONTAINERS_SPLIT), label=f"{name} container")
    try:
        if container == "lazy":
            return frame.lazy()
        if container == "pandas":
            return frame.to_pandas()
        if container == "pandas_arrow":
            return frame.to_pandas(use_pyarrow_extension_array=True)
        if container == "arrow":
            return frame.to_arrow()
    except Exception:  # a type pandas or Arrow cannot hold: the frame itself then
        return frame
    if container == "polars":
        return frame
    path = folder / f"{name}.{container}"
    if container == "parquet":
        frame.write_parquet(path)
        return path
    flat = frame.with_columns(
        pl.col(c).list.eval(pl.element().cast(pl.String)).list.join(" ")
        for c, t in frame.schema.items()
        if isinstance(t, pl.List)
    )
    if container in ("csv", "tsv"):
        flat.write_csv(path, separator="," if container == "csv" else "\t")
        return path
    types = [draw(st.sampled_from(RECBOLE_TYPES)) for _ in flat.columns]
    header = "\t".join(f"{c}:{t}" if t else c for c, t in zip(flat.columns, types, strict=True))
    body = flat.write_csv(separator="\t", include_header=False)
    path.write_text(header + "\n" + body, encoding="utf-8")
    return path


@st.composite
def interaction_frames(draw: st.DrawFn, name: str) -> pl.DataFrame:
    """An interaction table (user, item, timestamp, rating): mostly of good column kinds and
    a few rows per user (so that the splits run), else of any kinds."""
    good = draw(st.sampled_from([True, True, True, False]), label=f"{name} kinds good")
    n = draw(st.integers(4, 16) if good else st.integers(0, 8), label=f"{name} rows")
    kinds = {
        col: draw(st.sampled_from(options if good else ANY_KIND), label=f"{name}.{col}")
        for col, options in GOOD_KINDS.items()
    }
    data = {col: [draw(COLUMN_VALUES[kind]) for _ in range(n)] for col, kind in kinds.items()}
    if good and kinds["user"] == "int":  # few users, so that each has rows to split
        data["user"] = [u % 3 for u in data["user"]]
    try:
        return pl.DataFrame(data, strict=False)
    except (pl.exceptions.PolarsError, OverflowError, TypeError):
        return pl.DataFrame({c: pl.Series(c, [str(v) for v in vs]) for c, vs in data.items()})


@st.composite
def interaction_tables(draw: st.DrawFn, folder: Path, name: str) -> Any:
    """:func:`interaction_frames` in a drawn container."""
    return _container(draw, draw(interaction_frames(name)), folder, name)


@st.composite
def split_parts(draw: st.DrawFn, folder: Path) -> tuple[Any, Any, Any]:
    """(train, test, validation or None), each in a drawn container: mostly the rows of one
    table dealt into parts (so that their kinds agree), else independent tables."""
    if not draw(st.sampled_from([True, True, True, False]), label="parts of one table"):
        validation = draw(st.one_of(st.none(), interaction_frames("validation")))
        frames = [draw(interaction_frames("train")), draw(interaction_frames("test")), validation]
    else:
        whole = draw(interaction_frames("whole"))
        with_validation = draw(st.booleans(), label="with validation")
        side = draw(st.lists(st.integers(0, 2 if with_validation else 1), min_size=whole.height,
                             max_size=whole.height), label="parts")  # fmt: skip
        codes = pl.Series(side, dtype=pl.Int64)
        frames = [whole.filter(codes == c) for c in range(3)]
        frames[2] = frames[2] if with_validation else None
    return tuple(  # type: ignore[return-value]
        None if f is None else _container(draw, f, folder, name)
        for f, name in zip(frames, ("train", "test", "validation"), strict=True)
    )


# Options of split: values that are good (the call should run), and bad ones (out of domain,
# of the wrong type, or unusable for the data).
GOOD_VALUES: dict[str, list[Any]] = {
    "n": [1, 2, 3, np.int64(1)],
    "fraction": [0.5, 0.2, 0.75, np.float32(0.5)],
    "cutoff": [2, 3, 4, dt.date(2020, 1, 4), dt.datetime(2020, 1, 4, 12), "2020-01-04", 1.5],
    "end": [5, 6, dt.date(2020, 1, 7), "2020-01-08"],
    "k": [2, 3],
    "by": ["time", "random"],
    "validation_n": [1],
    "validation_fraction": [0.25],
    "validation_cutoff": [1, 2, dt.date(2020, 1, 2), "2020-01-02"],
    "ties": ["random", "together"],
    "short_users": ["train", "drop", "raise"],
    "seed": [0, 7, 2**64 - 1, np.uint64(3)],
    "duplicates": ["first", "last", "keep", "raise"],
    "min_user_interactions": [1, 2],
    "min_item_interactions": [1, 2],
    "drop_cold": ["none", "users", "items", "both"],
    "relevance_col": [None, "rating"],
    "relevance_threshold": [1, 3, 0.5],
    "time_col": ["timestamp", None],
    "id_type": ["auto", "str", "int", {"item": "int"}, "user=str"],
}
BAD_VALUES: dict[str, list[Any]] = {
    "n": [0, -1, 1.5, True, "1", 10**30, math.nan],
    "fraction": [0, 1, math.nan, "0.5", -0.1, True, 1e-15, 10**400],
    "cutoff": ["x", math.nan, 10**30, b"1", [1], dt.time(1)],
    "end": ["x", math.nan, -(10**30)],
    "k": [1, 0, 2.0, 10**30, "3"],
    "by": ["item", 1],
    "validation_n": [0, "x", 10**30],
    "validation_fraction": [2.0, math.nan, 0.9],
    "validation_cutoff": ["y", 10**30, math.inf],
    "ties": ["first", 1],
    "short_users": ["x", None, 0],
    "seed": [2**64, -1, 1.0, True, None, 10**5000, "1"],
    "duplicates": ["drop", None, 1],
    "min_user_interactions": [0, 1.5, 10**30, None, "2"],
    "min_item_interactions": [0, None, -(2**70)],
    "drop_cold": [None, "x", True],
    "relevance_col": ["missing", "user", "item", "timestamp", 3, ""],
    "relevance_threshold": ["x", math.nan, None, math.inf, 10**400],
    "time_col": ["rating", "user", "missing", 3, ""],
    "id_type": ["float", 1, {"bogus": "int"}, {"item": "x"}, "item=", None],
    "input_format": ["tsv", "csv", "parquet", "trec", "xml", 1],
    "user_col": ["missing", "timestamp", "item", 3, ""],
    "item_col": ["missing", "user", None],
}
COMMON_OPTIONS = [
    "seed", "duplicates", "min_user_interactions", "min_item_interactions", "drop_cold",
    "relevance_col", "relevance_threshold", "time_col", "id_type",
]  # fmt: skip
METHOD_OPTIONS = {  # receval.data.split._OPTIONS, written out: the test's own copy
    "temporal_global": ["cutoff", "fraction", "end", "validation_cutoff", "validation_fraction",
                        "ties"],
    "temporal_user": ["n", "fraction", "validation_n", "validation_fraction", "ties",
                      "short_users"],
    "leave_one_out": ["by", "validation_n", "ties", "short_users"],
    "random_user": ["n", "fraction", "validation_n", "validation_fraction", "short_users"],
    "random": ["n", "fraction", "validation_n", "validation_fraction"],
    "kfold_user": ["k", "n", "fraction", "by", "ties", "short_users"],
}  # fmt: skip
NEEDS = {"temporal_global": ["cutoff", "fraction"], "leave_one_out": []}  # else n or fraction


@st.composite
def split_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any], bool]:
    """A method and its options: ``(method, options, good)``, ``good`` when every option was
    drawn from the good values of one the method takes."""
    method = draw(st.sampled_from([*METHOD_OPTIONS] * 4 + ["nope"]), label="method")
    if method == "nope":
        return method, {}, False
    needs = NEEDS.get(method, ["n", "fraction"])
    names = [draw(st.sampled_from(needs))] if needs else []
    names += ["k"] if method == "kfold_user" else []
    # the others of an exclusive group (cutoff or fraction, n or fraction, one validation size)
    left_out = set(needs) | {"validation_n", "validation_fraction", "validation_cutoff"}
    validation = [n for n in METHOD_OPTIONS[method] if n.startswith("validation")]
    names += [draw(st.sampled_from(validation))] if validation and draw(st.booleans()) else []
    takes = [n for n in [*METHOD_OPTIONS[method], *COMMON_OPTIONS] if n not in left_out]
    names += draw(st.lists(st.sampled_from(takes), max_size=3, unique=True))
    options = {name: draw(st.sampled_from(GOOD_VALUES[name])) for name in dict.fromkeys(names)}
    good = draw(st.sampled_from([True, True, False]), label="options good")
    if not good:
        bad = draw(st.sampled_from(sorted(BAD_VALUES)), label="bad option")
        options[bad] = draw(st.sampled_from(BAD_VALUES[bad]), label="bad value")
    return method, options, good


@settings(ROBUST, max_examples=examples(40))
@given(data=st.data())
def test_split_bad_input_is_a_receval_error(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check_split(data, tmp_path_factory)


@pytest.mark.slow
@settings(ROBUST, max_examples=600)
@given(data=st.data())
def test_split_bad_input_is_a_receval_error_many(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check_split(data, tmp_path_factory)


def _check_split(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("robust_split")
    table = data.draw(interaction_tables(folder, "interactions"), label="interactions")
    method, options, good = data.draw(split_calls(), label="call")
    event(f"{method}, options {'good' if good else 'with a bad one'}")
    got = _never_crashes(lambda: receval.split(table, method, **options))  # type: ignore[arg-type]
    event(f"split: {type(got).__name__}")
    if not isinstance(got, receval.Split):
        return
    counts = got.counts()
    assert sum(counts.values()) == got.frame.height
    parts = [got.train, got.test] + ([got.validation] if got.validation is not None else [])
    assert sum(p.height for p in parts) == got.frame.height - counts["dropped"]
    assert got.audit.table.height > 0
    if got.fold_parts:  # each fold its own split of the same rows, with its own audit
        for fold in got.folds:
            assert sum(fold.counts().values()) == got.frame.height
            assert fold.train.height + fold.test.height <= got.frame.height - counts["dropped"]
            assert all(isinstance(fold.audit[c], int | None) for c in fold.audit.table["check"])
        return
    assert all(isinstance(got.audit[c], int | None) for c in got.audit.table["check"])
    # the split's own output, written and read back, passes the audit: the CLI's workflow
    written = got.write(folder / "parts")
    audit_options = {
        k: v
        for k, v in options.items()
        if k in ("time_col", "relevance_col", "relevance_threshold")
    }
    validation = folder / "parts" / "validation.parquet"
    again = _never_crashes(
        lambda: receval.audit_split(
            written[0], written[1], validation=validation if validation.exists() else None,
            **audit_options,
        )
    )  # fmt: skip
    assert isinstance(again, receval.SplitAudit), again


@settings(ROBUST, max_examples=examples(30))
@given(data=st.data())
def test_audit_split_bad_input_is_a_receval_error(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check_audit(data, tmp_path_factory)


@pytest.mark.slow
@settings(ROBUST, max_examples=400)
@given(data=st.data())
def test_audit_split_bad_input_is_a_receval_error_many(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check_audit(data, tmp_path_factory)


def _check_audit(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("robust_audit")
    train, test, validation = data.draw(split_parts(folder), label="parts")
    names = ["time_col", "relevance_col", "relevance_threshold", "id_type", "input_format",
             "user_col", "item_col"]  # fmt: skip
    chosen = data.draw(st.lists(st.sampled_from(names), max_size=3, unique=True))
    options = {
        name: data.draw(st.sampled_from(GOOD_VALUES.get(name, []) + BAD_VALUES[name]))
        for name in chosen
    }
    got = _never_crashes(lambda: receval.audit_split(train, test, validation=validation, **options))
    event(f"audit_split: {type(got).__name__}")
    if isinstance(got, receval.SplitAudit):
        assert got.table.height > 0
        assert str(got)


SAMPLING_VALUES: dict[str, list[Any]] = {
    "negatives": [1, 5, 0, -2, 2.0, True, "5", None, 10**30, np.int32(4)],
    "seed": GOOD_VALUES["seed"] + BAD_VALUES["seed"],
    "replace": [False, True, 1, "yes", None],
    "distribution": ["uniform", "popularity", "zipf", None],
    "correction": [None, "rescale", "minimal_bias", "bias_variance", "mle", "other", 1],
    "gamma": [0.01, 0.5, 0, 1, math.nan, math.inf, True, "0.1", None],
    "catalog_size": [None, 50, 1, 2.0, -3, True, 10**30],
}


@settings(ROBUST, max_examples=examples(30))
@given(data=st.data())
def test_sampling_bad_input_is_a_receval_error(data: st.DataObject) -> None:
    _check_sampling(data)


@pytest.mark.slow
@settings(ROBUST, max_examples=400)
@given(data=st.data())
def test_sampling_bad_input_is_a_receval_error_many(data: st.DataObject) -> None:
    _check_sampling(data)


def _check_sampling(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(list(SAMPLING_VALUES)), max_size=4, unique=True))
    kwargs = {name: data.draw(st.sampled_from(SAMPLING_VALUES[name])) for name in names}
    negatives = kwargs.pop("negatives", 5)
    got = _never_crashes(lambda: receval.Sampling(negatives, **kwargs))
    text = data.draw(
        st.one_of(
            st.text(max_size=30),
            st.builds(
                "{}({}{})".format,
                st.sampled_from(["sampled", "rescale", "mle", "bias_variance", "x", ""]),
                st.sampled_from(["5", "0", "-1", "1e3", "5.0", "", "True", "'5'", "2**64"]),
                st.sampled_from(["", ", seed=3", f", seed={2**64}", ", seed=-1", ", gamma=2",
                                 ", replace=true", ", nope=1", ", seed=1.0", ", seed=",
                                 ", catalog_size=9", ", distribution=popularity"]),
            ),
        ),
        label="text",
    )  # fmt: skip
    parsed = _never_crashes(lambda: receval.Sampling.parse(text))
    event(f"{type(got).__name__}, parse: {type(parsed).__name__}")
    rng = np.random.default_rng(0)
    model = receval.FactorModel(rng.normal(size=(6, 2)), rng.normal(size=(12, 2)))
    truth = pl.DataFrame({"user": [0, 1, 2, 3], "item": [0, 3, 5, 7]})
    for sampling in (got, parsed):
        if not isinstance(sampling, receval.Sampling):
            continue
        assert type(sampling.seed) is int and 0 <= sampling.seed < 2**64
        _never_crashes(lambda s=sampling: receval.evaluate(truth, model, ["ndcg@3"], sampling=s))


# -- the command line's new entry points: compare/report with factor files, split and audit
# with bad paths, pipes and FIFOs (issue 29). Every drawn call exits 0, or 2 with one line
# "error: ..." on stderr; never an exception, a traceback or a hang.

_FILE_KINDS = ["npy", "npz", "parquet", "garbage", "empty", "wrong_shape", "text", "fifo",
               "folder", "missing"]  # fmt: skip


def _factor_file(kind: str, folder: Path, name: str, rows: int, rng: np.random.Generator) -> Path:
    """A factor file of the drawn kind (good ones hold ``rows`` x 3 factors)."""
    import os

    factors = rng.normal(size=(rows, 3))
    path = folder / f"{name}.{kind if kind in ('npy', 'npz', 'parquet') else 'npy'}"
    if kind == "npy":
        np.save(path, factors)
    elif kind == "npz":
        np.savez(path, factors=factors)
    elif kind == "parquet":
        pl.DataFrame({"id": list(range(rows)), "f": factors.tolist()}).write_parquet(path)
    elif kind == "garbage":
        path.write_bytes(b"\x93NUMPY garbage \x00\xff" * 3)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "wrong_shape":
        np.save(path, factors.ravel())
    elif kind == "text":
        np.save(path, np.array([["a", "b"]] * rows))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    return path  # "missing": never created


def _one_line_or_success(result: Any) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


_CLI_SETTINGS = settings(ROBUST, max_examples=examples(20))


@_CLI_SETTINGS
@given(data=st.data())
def test_compare_and_report_with_factor_files_exit_cleanly(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("robust_factors")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    n_users, n_items = (
        data.draw(st.integers(1, 6), label="users"),
        data.draw(st.integers(1, 8), label="items"),
    )
    truth = folder / "truth.parquet"
    pl.DataFrame(
        {"user": rng.integers(0, n_users + 1, 8), "item": rng.integers(0, n_items + 1, 8)}
    ).unique().write_parquet(truth)
    u_kind = data.draw(st.sampled_from(_FILE_KINDS), label="user factors")
    i_kind = data.draw(st.sampled_from(_FILE_KINDS), label="item factors")
    u = _factor_file(u_kind, folder, "u", n_users, rng)
    i = _factor_file(i_kind, folder, "i", n_items, rng)
    spec = data.draw(
        st.sampled_from([f"m={u},{i}", f"m={u}", f"={u},{i}", f"m={u},{i},{u}", "m"]),
        label="--factors",
    )
    args = ["--truth", str(truth), "--factors", spec, "-m", "mrr", "-m", "ndcg@3",
            "--resamples", "20", "--no-progress"]  # fmt: skip
    if data.draw(st.booleans(), label="second model"):
        args += ["--factors", f"n={_factor_file('npy', folder, 'u2', n_users, rng)},{i}"]
    if data.draw(st.booleans(), label="--exclude"):
        exclude = folder / "train.parquet"
        pl.DataFrame({"user": [0], "item": [0]}).write_parquet(exclude)
        args += ["--exclude", str(exclude)]
    if data.draw(st.booleans(), label="a table run"):
        recs = folder / "recs.parquet"
        pl.DataFrame({"user": [0, 1], "item": [0, 1], "score": [1.0, 0.5]}).write_parquet(recs)
        args += ["--run", f"t={recs}"]
    command = data.draw(st.sampled_from(["compare", "report"]), label="command")
    if command == "report":
        args += ["-o", str(folder / "r.html"), "--no-curves"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = CliRunner().invoke(app, [command, *args])
    event(f"exit {result.exit_code}")
    _one_line_or_success(result)
    good = {"npy", "npz", "parquet"}
    if result.exit_code == 0:
        assert u_kind in good and i_kind in good


_PATH_KINDS = ["csv", "parquet", "missing", "folder", "fifo", "empty", "garbage", "suffix"]


def _table_file(kind: str, folder: Path, name: str) -> Path:
    import os

    frame = pl.DataFrame(
        {"user": [1, 1, 1, 2, 2, 2], "item": [1, 2, 3, 1, 2, 4], "timestamp": [1, 2, 3, 4, 5, 6]}
    )
    path = folder / f"{name}.{'csv' if kind in ('csv', 'empty', 'fifo', 'folder') else 'parquet'}"
    if kind == "csv":
        frame.write_csv(path)
    elif kind == "parquet":
        frame.write_parquet(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(b"PAR1\x00\x01garbage")
    elif kind == "suffix":
        path = folder / f"{name}.xlsx"
        path.write_bytes(b"not a table")
    return path


@_CLI_SETTINGS
@given(data=st.data())
def test_split_and_audit_with_bad_paths_exit_cleanly(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("robust_split")
    if data.draw(st.booleans(), label="audit"):
        train = _table_file(data.draw(st.sampled_from(_PATH_KINDS), label="train"), folder, "tr")
        test = _table_file(data.draw(st.sampled_from(_PATH_KINDS), label="test"), folder, "te")
        args = ["audit", str(train), str(test)]
    else:
        source = _table_file(data.draw(st.sampled_from(_PATH_KINDS), label="input"), folder, "in")
        out_kind = data.draw(st.sampled_from(["new", "file", "missing_parent", "fifo_inside"]))
        out_dir = folder / "out"
        if out_kind == "file":
            out_dir.write_text("x")
        elif out_kind == "missing_parent":
            out_dir = folder / "no" / "such" / "out"
        elif out_kind == "fifo_inside":
            import os

            out_dir.mkdir()
            os.mkfifo(out_dir / "train.parquet")
        args = ["split", str(source), "--method", "leave_one_out", "--out-dir", str(out_dir)]
        if data.draw(st.booleans(), label="--config fifo"):
            import os

            config = folder / "split.toml"
            os.mkfifo(config)
            args += ["--config", str(config)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = CliRunner().invoke(app, args)
    event(f"exit {result.exit_code}")
    _one_line_or_success(result)
