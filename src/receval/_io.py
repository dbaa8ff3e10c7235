"""Reading truth and recommendations from every supported source into a Polars DataFrame.

Sources: Polars DataFrame or LazyFrame, pandas DataFrame, PyArrow Table or RecordBatch, a
path to a Parquet, CSV, TSV or TREC file, and nested dicts ``{user: {item: value}}``.
Nothing here modifies the caller's object.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import polars as pl

from ._errors import InputError

__all__ = ["read_table", "read_trec_qrels", "read_trec_run", "write_frame"]

Role = Literal["truth", "recs", "train", "items"]
_TREC_SUFFIXES = {".qrels", ".run", ".trec"}
_TEXT_SUFFIXES = {"", ".txt", ".res"}


def read_trec_qrels(
    path: str | os.PathLike[str],
    *,
    user_col: str = "user",
    item_col: str = "item",
    relevance_col: str = "relevance",
) -> pl.DataFrame:
    """Read a TREC qrels file (``user iteration item relevance``, whitespace separated).

    Ids are kept as strings, as trec_eval compares them.
    """
    frame = _read_whitespace(path, "truth", 4)
    return pl.DataFrame(
        {
            user_col: frame["c0"],
            item_col: frame["c2"],
            relevance_col: _number(frame, "c3", path, "relevance"),
        }
    )


def read_trec_run(
    path: str | os.PathLike[str],
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
) -> pl.DataFrame:
    """Read a TREC run file (``user Q0 item rank score tag``, whitespace separated).

    The score column orders the list, as trec_eval does (the rank column is ignored).
    """
    frame = _read_whitespace(path, "recs", 6)
    return pl.DataFrame(
        {
            user_col: frame["c0"],
            item_col: frame["c2"],
            score_col: _number(frame, "c4", path, "score"),
        }
    )


def read_table(
    data: Any,
    role: Role,
    *,
    user_col: str,
    item_col: str,
    value_col: str,
) -> pl.DataFrame:
    """Turn any supported source into a Polars DataFrame (no copy where the source allows).

    ``value_col`` names the column that nested dicts and TREC files fill (relevance for truth,
    score for recs).
    """
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, str | os.PathLike):
        return _read_path(Path(data), role, user_col, item_col, value_col)
    if isinstance(data, Mapping):
        return _from_nested(data, role, user_col, item_col, value_col)
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        frame = pl.from_pandas(data)
        if isinstance(frame, pl.DataFrame):
            return frame
    if module == "pyarrow":
        frame = pl.from_arrow(data)
        if isinstance(frame, pl.DataFrame):
            return frame
    msg = (
        f"{role} must be a Polars/pandas DataFrame, a PyArrow Table, a path to a Parquet, CSV, "
        f"TSV or TREC file, or a dict {{user: {{item: value}}}}; got {type(data).__name__}."
    )
    raise InputError(msg)


def _read_path(
    path: Path, role: Role, user_col: str, item_col: str, value_col: str
) -> pl.DataFrame:
    if path.is_dir():
        msg = f"{role} path {str(path)!r} is a folder; expected a file."
        raise InputError(msg)
    if not path.is_file():
        msg = f"{role} file {str(path)!r} does not exist."
        raise InputError(msg)
    suffix = path.suffix.lower()
    kind = "Parquet" if suffix in (".parquet", ".pq") else "CSV/TSV"
    try:
        if suffix in (".parquet", ".pq"):
            return pl.read_parquet(path)
        if suffix in (".csv", ".tsv", ".tab"):
            return pl.read_csv(path, separator="\t" if suffix != ".csv" else ",")
        text = suffix in _TEXT_SUFFIXES and _looks_like_trec(path, role)
        if role != "items" and (suffix in _TREC_SUFFIXES or text):
            kind = "TREC"
            if path.stat().st_size == 0:
                msg = f"{role} is empty (0 rows); expected at least one row (file {str(path)!r})."
                raise InputError(msg)
            if role in ("truth", "train"):  # train interactions read as qrels
                return read_trec_qrels(
                    path, user_col=user_col, item_col=item_col, relevance_col=value_col
                )
            return read_trec_run(path, user_col=user_col, item_col=item_col, score_col=value_col)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"{role} file {str(path)!r} could not be read as {kind}: {first}"
        raise InputError(msg) from exc
    msg = (
        f"{role} file {str(path)!r}: cannot tell its format from the suffix {suffix!r}; expected "
        ".parquet, .csv, .tsv, or a TREC qrels/run file (.qrels, .run, .trec, or .txt / no "
        "suffix with whitespace-separated lines of 4 (qrels) or 6 (run) fields)."
    )
    raise InputError(msg)


def _looks_like_trec(path: Path, role: Role) -> bool:
    qrels = role in ("truth", "train")
    with path.open("rb") as handle:
        first = handle.readline().decode("utf-8", "replace").split()
    if len(first) != (4 if qrels else 6):
        return False
    return qrels or first[1].upper() == "Q0" or _is_number(first[4])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_whitespace(path: str | os.PathLike[str], role: Role, fields: int) -> pl.DataFrame:
    lines = pl.read_csv(
        Path(path),
        has_header=False,
        separator="\n",
        new_columns=["line"],
        schema_overrides={"line": pl.String},
        quote_char=None,
    )
    parts = lines.filter(pl.col("line").str.strip_chars() != "").select(
        pl.col("line").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" ").alias("p")
    )
    width = parts.select(pl.col("p").list.len().alias("n")).with_row_index("row")
    bad = width.filter(pl.col("n") != fields)
    if bad.height:
        kind = (
            "qrels (user iteration item relevance)"
            if fields == 4
            else "run (user Q0 item rank score tag)"
        )
        rows = ", ".join(str(r + 1) for r in bad["row"].head(5).to_list())
        msg = (
            f"{role} file {str(path)!r} is not a TREC {kind} file: expected {fields} "
            f"whitespace-separated fields on every line; {bad.height} line(s) differ "
            f"(lines {rows})."
        )
        raise InputError(msg)
    names = [f"c{i}" for i in range(fields)]
    return parts.select(pl.col("p").list.to_struct(fields=names)).unnest("p")


def _number(frame: pl.DataFrame, column: str, path: str | os.PathLike[str], what: str) -> pl.Series:
    values = frame[column].cast(pl.Float64, strict=False)
    if values.null_count():
        bad = frame.filter(values.is_null())[column].head(3).to_list()
        msg = (
            f"TREC file {str(path)!r}: the {what} field must be a number; "
            f"{values.null_count()} line(s) are not, e.g. {bad}."
        )
        raise InputError(msg)
    return values


def _from_nested(
    data: Mapping[Any, Any], role: Role, user_col: str, item_col: str, value_col: str
) -> pl.DataFrame:
    users: list[Any] = []  # ids must be all integers or all strings: checked by strict Series
    items: list[Any] = []
    values: list[Any] = []
    for user, inner in data.items():
        if not isinstance(inner, Mapping):
            msg = (
                f"{role} as a dict must map each user to a dict {{item: value}}; user {user!r} "
                f"maps to {type(inner).__name__}."
            )
            raise InputError(msg)
        users.extend([user] * len(inner))
        items.extend(inner.keys())
        values.extend(inner.values())
    columns = []
    for name, data_, what in ((user_col, users, "user"), (item_col, items, "item")):
        kinds = {type(x).__name__ for x in data_}
        if not (kinds <= {"int"} or kinds <= {"str"}):
            msg = (
                f"{role} as a dict: {what} ids must be all integers or all strings; found "
                f"{', '.join(sorted(kinds))}."
            )
            raise InputError(msg)
        columns.append(pl.Series(name, data_, dtype=pl.String if "str" in kinds else pl.Int64))
    try:
        columns.append(pl.Series(value_col, values, dtype=pl.Float64, strict=False))
    except (TypeError, pl.exceptions.PolarsError) as exc:
        msg = f"{role} as a dict: values must be numbers ({exc})."
        raise InputError(msg) from None
    return pl.DataFrame(columns)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary file beside ``path`` to write to; when the block succeeds it replaces
    ``path`` in one step (a reader never sees a half-written file), else it is removed."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_frame(frame: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` to a .parquet, .csv or .tsv file atomically.

    The data goes to a temporary file in the same folder, which then replaces ``path`` in one
    step, so a reader never sees a half-written file.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv", ".tsv"):
        msg = f"cannot write {str(target)!r}: expected a .parquet, .csv or .tsv path."
        raise InputError(msg)
    with atomic_path(target) as tmp:
        if suffix in (".parquet", ".pq"):
            frame.write_parquet(tmp)
        else:
            frame.write_csv(tmp, separator="," if suffix == ".csv" else "\t")
