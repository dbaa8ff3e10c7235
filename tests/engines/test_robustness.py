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


_CLI_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


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
