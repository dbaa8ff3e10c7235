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

import json
import math
import warnings
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
from receval.cli import app

METRICS = ["ndcg@3", "map", "mrr", "recall@2", "precision@2", "hit_rate@1"]
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

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


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
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
EV_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
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


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
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
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
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
