"""Reading truth and recommendations from every supported source into a Polars DataFrame.

Sources: Polars DataFrame or LazyFrame, pandas DataFrame, PyArrow Table or RecordBatch, a
path to a Parquet, CSV, TSV or TREC file (RecBole atomic files ``.inter``, ``.item`` and
``.user`` are TSV whose header types each column, honoured as RecBole defines them: see
:func:`_recbole_cast`; ``input_format`` names the format of a file whose suffix does not tell
it), and nested dicts
``{user: {item: value}}``. :class:`Inputs` reads each input with its own id column names
(``columns=``) and renames them to truth's. Nothing here modifies the caller's object.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

import polars as pl

from receval._errors import InputError, OutputError, first_line
from receval.data.layout import (
    FLOAT_EXACT,
    Role,
    assignments,
    inexact_integers_message,
    show_rows,
)
from receval.kernels.pools import check_pools

__all__ = [
    "RECBOLE_SUFFIXES",
    "ROLES",
    "InputFormat",
    "Inputs",
    "Role",
    "atomic_path",
    "check_columns",
    "check_exists",
    "check_input_format",
    "check_output_path",
    "check_outputs",
    "format_of",
    "read_table",
    "read_trec_qrels",
    "read_trec_run",
    "rename_ids",
    "same_file",
    "write_frame",
    "write_text",
]

ROLES: tuple[Role, ...] = get_args(Role)
InputFormat = Literal["parquet", "csv", "tsv", "trec"]
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_TREC_SUFFIXES = {".qrels", ".run", ".trec"}
_TEXT_SUFFIXES = {"", ".txt", ".res"}
RECBOLE_SUFFIXES = {".inter", ".item", ".user"}  # RecBole atomic files: TSV, typed headers
_RECBOLE_TYPE = re.compile(r"^(.+):(token|token_seq|float|float_seq)$")


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
    input_format: InputFormat | None = None,
) -> pl.DataFrame:
    """Turn any supported source into a Polars DataFrame (no copy where the source allows).

    ``value_col`` names the column that nested dicts and TREC files fill (relevance for truth,
    score for recs). ``input_format`` reads a path in that format whatever its suffix (None:
    the suffix, or the content of a TREC text file, tells).
    """
    check_pools()  # every table enters here: refuse a forked child before Polars could hang
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, pl.LazyFrame):
        try:
            return data.collect()
        except pl.exceptions.PolarsError as exc:  # the caller's query fails: say whose
            first = first_line(exc)
            msg = f"{role}: the LazyFrame could not be collected: {first}"
            raise InputError(msg) from exc
    if isinstance(data, str | os.PathLike):
        return _read_path(Path(data), role, user_col, item_col, value_col, input_format)
    if isinstance(data, Mapping):
        return _from_nested(data, role, user_col, item_col, value_col)
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        try:
            frame = pl.from_pandas(data, nan_to_null=False)  # a NaN score is a NaN, not a null
        except Exception as exc:  # pyarrow's and Polars' conversion errors
            raise _pandas_error(data, role, exc) from None
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


def check_input_format(value: object) -> dict[Role, InputFormat | None]:
    """``input_format`` as the format of each input (None: told by the file's suffix), or
    :class:`InputError`.

    ``value``: None, one format for every file input (``"parquet"``, ``"csv"``, ``"tsv"``,
    ``"trec"``), or formats by input, ``{"truth": "tsv"}`` or as text ``"truth=tsv,train=tsv"``
    (an input not named: its suffix tells).
    """
    choices = get_args(InputFormat)
    out: dict[Role, InputFormat | None] = dict.fromkeys(ROLES, None)
    if value is None:
        return out
    msg = (
        f"input_format must be one of {', '.join(choices)}, or formats by input such as "
        f"{{'truth': 'tsv'}} (as text: 'truth=tsv,train=tsv'); got {value!r}."
    )
    if isinstance(value, str):
        if value in choices:
            return dict.fromkeys(ROLES, cast(InputFormat, value))
        value = assignments(value, msg)
    if not isinstance(value, Mapping) or not value:
        raise InputError(msg)
    for key, kind in value.items():
        if key not in out or kind not in choices:
            raise InputError(msg)
        out[key] = kind
    return out


def check_columns(value: object, user_col: str, item_col: str) -> dict[Role, tuple[str, str]]:
    """The (user, item) id column names of each input, or :class:`InputError`: ``user_col``
    and ``item_col``, unless ``value`` (evaluate's ``columns``) names an input's own.

    ``value``: None, ``{input: {id: name}}`` (inputs ``truth``, ``recs``, ``train``,
    ``items``; ids ``user`` and ``item``, items having an item column only), or texts
    ``"recs.user=uid"`` (one, or a list: the command line's ``--columns``).
    """
    out: dict[Role, tuple[str, str]] = dict.fromkeys(ROLES, (user_col, item_col))
    if value is None:
        return out
    msg = (
        "columns must name id columns by input, {input: {id: name}} with input truth, recs, "
        "train or items and id user or item (items: item only), e.g. {'recs': {'user': 'uid', "
        f"'item': 'iid'}} (as text: 'recs.user=uid'); got {value!r}."
    )
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Mapping):
        if not isinstance(value, Iterable):
            raise InputError(msg)
        pairs: dict[str, dict[str, str]] = {}
        for text in value:
            if not isinstance(text, str):
                raise InputError(msg)
            left, sep, name = text.partition("=")
            role, dot, what = (p.strip() for p in left.partition("."))
            inner = pairs.setdefault(role, {})
            if not sep or not dot or what in inner:
                raise InputError(msg)
            inner[what] = name.strip()
        value = pairs
    if not value:
        raise InputError(msg)
    for role, names in value.items():
        if role not in out or not isinstance(names, Mapping) or not names:
            raise InputError(msg)
        user, item = out[role]
        for what, name in names.items():
            if what not in (("item",) if role == "items" else ("user", "item")):
                raise InputError(msg)
            if not isinstance(name, str) or not name:
                raise InputError(msg)
            user, item = (name, item) if what == "user" else (user, name)
        out[role] = (user, item)
    return out


def rename_ids(
    frame: pl.DataFrame, role: Role, names: tuple[str, str], canonical: tuple[str, str]
) -> pl.DataFrame:
    """``frame`` with its id columns ``names`` (user, item) renamed to truth's ``canonical``
    ones (items: the item column only). A column that already has a target name is dropped:
    it is not an id column of this input. A missing id column raises :class:`InputError`."""
    pairs = {}
    for j, what in enumerate(("user", "item")):
        src, dst = names[j], canonical[j]
        if src == dst or (role == "items" and what == "user"):
            continue
        if src not in frame.columns:
            msg = (
                f"{role} is missing column {src!r} (columns found: {frame.columns}); expected "
                f"the {what} ids of {role} there. {what}_col= names the {what} column of every "
                f"input and columns= that of one input: columns={{{role!r}: {{{what!r}: NAME}}}} "
                f"(CLI --columns {role}.{what}=NAME)."
            )
            raise InputError(msg)
        pairs[src] = dst
    if not pairs:
        return frame
    clash = [c for c in pairs.values() if c in frame.columns and c not in pairs]
    return frame.drop(clash).rename(pairs)


@dataclass(frozen=True)
class Inputs:
    """How each input is read: its (user, item) id column names (:func:`check_columns`) and
    its file format (:func:`check_input_format`). Every frame read gets truth's names."""

    columns: dict[Role, tuple[str, str]]
    formats: dict[Role, InputFormat | None]

    @staticmethod
    def of(columns: object, input_format: object, user_col: str, item_col: str) -> Inputs:
        """Checked ``columns`` and ``input_format`` options of :func:`receval.evaluate`."""
        return Inputs(check_columns(columns, user_col, item_col), check_input_format(input_format))

    @property
    def user_col(self) -> str:
        """The user column of every frame read (truth's)."""
        return self.columns["truth"][0]

    @property
    def item_col(self) -> str:
        """The item column of every frame read (truth's)."""
        return self.columns["truth"][1]

    def read(self, data: Any, role: Role, value_col: str) -> pl.DataFrame:
        """``data`` read as :func:`read_table` reads it, with ``role``'s own column names and
        format, then its id columns renamed to truth's."""
        user, item = self.columns[role]
        frame = read_table(
            data, role, user_col=user, item_col=item, value_col=value_col,
            input_format=self.formats[role],
        )  # fmt: skip
        return rename_ids(frame, role, (user, item), self.columns["truth"])


def check_exists(data: Any, role: Role) -> None:
    """Raise :class:`InputError` when ``data`` is a path that is not an existing file."""
    if not isinstance(data, str | os.PathLike):
        return
    path = Path(data)
    if path.is_dir():
        msg = f"{role} path {str(path)!r} is a folder; expected a file."
        raise InputError(msg)
    if not path.is_file():
        if path.exists():  # a FIFO, socket or device: reading it could block for ever
            msg = (
                f"{role} path {str(path)!r} is not a regular file (a pipe, socket or device); "
                "expected a file: write the data to a file first."
            )
            raise InputError(msg)
        msg = f"{role} file {str(path)!r} does not exist."
        raise InputError(msg)


def _pandas_error(data: Any, role: Role, exc: Exception) -> InputError:
    """Why a pandas frame could not become a Polars one: the usual cause is an object column
    that mixes types (integer and string ids), named here with its types."""
    mixed = []
    for name in data.columns:
        column = data[name]
        if column.dtype == object:
            kinds = sorted({type(v).__name__ for v in column.dropna()})
            if len(kinds) > 1:
                mixed.append(f"{name!r} ({', '.join(kinds)})")
    if mixed:
        msg = (
            f"{role} (a pandas DataFrame) has object column(s) that mix types: "
            f"{'; '.join(mixed)}. Ids must be all integers or all strings: convert the column "
            "first, e.g. df[col] = df[col].astype(str)."
        )
    else:
        first = first_line(exc)
        msg = f"{role} (a pandas DataFrame) could not be converted: {first}"
    return InputError(msg)


def format_of(path: Path, role: Role, given: InputFormat | None) -> InputFormat | None:
    """The format to read ``path`` in: ``given``, else its suffix's (RecBole's ``.inter``,
    ``.item`` and ``.user`` are TSV), else TREC when a text file's first line looks like it."""
    if given is not None:
        if given == "trec" and role == "items":
            msg = (
                "input_format 'trec' cannot read items (an item table is Parquet, CSV or TSV); "
                "name the format of each input instead, e.g. input_format={'truth': 'trec', "
                "'recs': 'trec'} (CLI --input-format truth=trec,recs=trec)."
            )
            raise InputError(msg)
        return given
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".csv":
        return "csv"
    if suffix in (".tsv", ".tab") or suffix in RECBOLE_SUFFIXES:
        return "tsv"
    if role != "items" and suffix in _TREC_SUFFIXES:
        return "trec"
    if role != "items" and suffix in _TEXT_SUFFIXES and _looks_like_trec(path, role):
        return "trec"
    return None


def _read_path(
    path: Path,
    role: Role,
    user_col: str,
    item_col: str,
    value_col: str,
    input_format: InputFormat | None = None,
) -> pl.DataFrame:
    check_exists(path, role)
    suffix = path.suffix.lower()
    kind = "CSV/TSV"
    try:
        fmt = format_of(path, role, input_format)
        kind = {"parquet": "Parquet", "trec": "TREC"}.get(fmt or "", "CSV/TSV")
        if fmt == "parquet":
            return pl.read_parquet(path)
        if fmt in ("csv", "tsv"):
            sep = "\t" if fmt == "tsv" else ","
            recbole = suffix in RECBOLE_SUFFIXES
            return _read_delimited(path, role, sep, (user_col, item_col), value_col, recbole)
        if fmt == "trec":
            if path.stat().st_size == 0:
                msg = f"{role} is empty (0 rows); expected at least one row (file {str(path)!r})."
                raise InputError(msg)
            if role in ("truth", "train"):  # train interactions read as qrels
                return read_trec_qrels(
                    path, user_col=user_col, item_col=item_col, relevance_col=value_col
                )
            return read_trec_run(path, user_col=user_col, item_col=item_col, score_col=value_col)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
        first = first_line(exc)
        msg = f"{role} file {str(path)!r} could not be read as {kind}: {first}"
        raise InputError(msg) from exc
    msg = (
        f"{role} file {str(path)!r}: cannot tell its format from the suffix {suffix!r}; expected "
        ".parquet, .csv, .tsv, RecBole's .inter, or a TREC qrels/run file (.qrels, .run, .trec, "
        "or .txt / no suffix with whitespace-separated lines of 4 (qrels) or 6 (run) fields); "
        "or name the format: input_format='tsv' (parquet, csv, tsv or trec; CLI --input-format)."
    )
    raise InputError(msg)


def _recbole_names(path: Path, sep: str) -> dict[str, tuple[str, str]]:
    """The header names of a RecBole atomic file that carry a type (``user_id:token``), each
    mapped to (the name without it, the type): ``("user_id", "token")``."""
    with path.open("rb") as handle:
        header = handle.readline().decode("utf-8", "replace").rstrip("\r\n").split(sep)
    out = {}
    for name in header:
        found = _RECBOLE_TYPE.match(name)
        if found:
            out[name] = (found.group(1), found.group(2))
    return out


def _recbole_cast(
    frame: pl.DataFrame, typed: Mapping[str, tuple[str, str]], role: Role, path: Path
) -> pl.DataFrame:
    """The typed columns of a RecBole atomic file (read as text, renamed) as RecBole defines
    their types: ``token`` a discrete id or value, kept as text (``id_type`` makes integer
    ids of it); ``float`` a number (Float64); ``token_seq`` tokens separated by spaces (a list
    of strings); ``float_seq`` numbers separated by spaces (a list of Float64). As in RecBole,
    an empty sequence field is an empty list and repeated spaces separate nothing; an empty
    ``float`` field is null. A value that is not a number raises :class:`InputError` naming
    the column and the first offending rows."""
    columns = []
    for header, (name, kind) in typed.items():
        if kind == "token" or frame.schema[name] != pl.String:
            continue
        text = pl.col(name)
        if kind == "float":
            expr = text.str.strip_chars().cast(pl.Float64, strict=False)
            bad = expr.is_null() & text.is_not_null() & (text.str.strip_chars() != "")
            what = "a number"
        else:
            tokens = (
                text.fill_null("").str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
            )
            expr = tokens
            bad = pl.lit(False)
            if kind == "float_seq":
                expr = tokens.list.eval(pl.element().cast(pl.Float64, strict=False))
                bad = expr.list.eval(pl.element().is_null().any()).list.first().fill_null(False)
            what = "numbers separated by spaces"
        checked = frame.select(expr.alias("value"), bad.alias("bad"))
        count = int(checked["bad"].sum())
        if count:
            msg = (
                f"{role} file {str(path)!r}: column {name!r} is declared {header!r} in its "
                f"RecBole header: every value must be {what}; {count} row(s) are not. First "
                f"offending rows:\n{show_rows(frame, checked['bad'], [name])}"
            )
            raise InputError(msg)
        columns.append(checked["value"].alias(name))
    return frame.with_columns(columns) if columns else frame


def _read_delimited(
    path: Path, role: Role, sep: str, ids: tuple[str, str], value_col: str, recbole: bool = False
) -> pl.DataFrame:
    """A CSV/TSV file whose id columns are text (``007`` stays ``"007"``), no column's type
    guessed from a sample of rows.

    truth, recs and train: every column is read as text, then the value column (relevance,
    score or rank) becomes Float64 when every value is a number; otherwise it stays text and
    the checks say it must be numeric. items: the id columns as text, every other column's
    type inferred from all rows (an item table has one row per item). ``recbole``: a RecBole
    atomic file, whose header names lose their type suffix (``item_id:token`` is ``item_id``)
    and whose typed columns get their type (:func:`_recbole_cast`); an untyped column is read
    as in any CSV/TSV file.
    """
    typed = _recbole_names(path, sep) if recbole else {}
    renamed = {old: new for old, (new, _) in typed.items()}
    if role == "items":
        original = {new: old for old, new in renamed.items()}
        # names absent from the header are ignored; typed columns are cast from their text
        texts = {original.get(c, c): pl.String for c in ids} | dict.fromkeys(typed, pl.String)
        frame = pl.read_csv(path, separator=sep, schema_overrides=texts, infer_schema_length=None)
        return _recbole_cast(frame.rename(renamed), typed, role, path) if typed else frame
    frame = pl.read_csv(path, separator=sep, infer_schema=False)
    if typed:
        frame = _recbole_cast(frame.rename(renamed), typed, role, path)
    untyped = value_col not in renamed.values()  # a typed value column has its type
    if value_col in frame.columns and value_col not in ids and untyped:
        values = frame[value_col].cast(pl.Float64, strict=False)
        if values.null_count() == frame[value_col].null_count():
            frame = frame.with_columns(values)
    return frame


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
    check_pools()  # the TREC readers are public: refuse a broken forked child here too
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


def _inexact(value: int) -> bool:
    """Whether float64 cannot hold the integer ``value`` exactly."""
    if -FLOAT_EXACT <= value <= FLOAT_EXACT:
        return False
    return abs(value) >= 2**1024 or float(value) != value


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
        if "int" in kinds:
            wide = [x for x in data_ if not _INT64_MIN <= x <= _INT64_MAX]
            if wide:
                msg = (
                    f"{role} as a dict: integer {what} ids must fit in 64 bits (from -2^63 to "
                    f"2^63-1); found {len(wide)} that do not, e.g. {wide[:3]}. Use string ids."
                )
                raise InputError(msg)
        columns.append(pl.Series(name, data_, dtype=pl.String if "str" in kinds else pl.Int64))
    inexact = [v for v in values if type(v) is int and _inexact(v)]
    if inexact:
        shown = ", ".join(
            text if len(text := str(v)) <= 24 else text[:21] + "..." for v in inexact[:3]
        )
        fix = f"rescale them (subtract the smallest value) first; e.g. {shown}."
        raise InputError(inexact_integers_message(f"{role} as a dict", len(inexact), fix))
    try:
        columns.append(pl.Series(value_col, values, dtype=pl.Float64, strict=False))
    except (TypeError, OverflowError, pl.exceptions.PolarsError) as exc:
        msg = f"{role} as a dict: values must be numbers ({exc})."
        raise InputError(msg) from None
    return pl.DataFrame(columns)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary file beside ``path`` to write to; when the block succeeds it replaces
    ``path`` in one step (a reader never sees a half-written file), else it is removed and an
    old file at ``path`` is kept.

    The new file gets the permissions a plain ``open()`` would give it (0o666 less the umask,
    or the old file's mode when it replaces one), not the temporary file's private 0o600. An
    operating-system failure (missing or read-only folder, full disk) raises
    :class:`OutputError` naming ``path``, never the temporary file.
    """
    target = Path(path)
    folder = target.parent
    check_output_path(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
    except OSError as exc:
        raise _output_error(target, exc) from None
    try:
        yield Path(tmp)
        os.chmod(tmp, _new_file_mode(target))
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _output_error(target, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Raise :class:`OutputError` unless ``path`` can be a new file: its folder exists and it
    is not a folder itself (checked before any work, and again when writing)."""
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        msg = f"cannot write {str(target)!r}: the folder {str(folder)!r} {what}."
        raise OutputError(msg)
    if target.is_dir():
        msg = f"cannot write {str(target)!r}: it is a folder; expected a file path."
        raise OutputError(msg)


_UMASK_LOCK = threading.Lock()


def _new_file_mode(target: Path) -> int:
    """The mode ``open(target, "w")`` would leave: an existing file's, else 0o666 & ~umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        pass
    with _UMASK_LOCK:  # the umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def _output_error(target: Path, exc: OSError) -> OutputError:
    reason = exc.strerror or str(exc) or type(exc).__name__
    return OutputError(f"cannot write {str(target)!r}: {reason}; nothing was written there.")


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
        try:
            if suffix in (".parquet", ".pq"):
                frame.write_parquet(tmp)
            else:
                frame.write_csv(tmp, separator="," if suffix == ".csv" else "\t")
        except pl.exceptions.PolarsError as exc:  # Polars wraps some OS errors (a full disk)
            first = first_line(exc)
            raise OSError(first) from exc


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: equal once resolved (symbolic links followed), or the
    same inode (hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Mapping[str, str | os.PathLike[str] | None],
) -> None:
    """Raise :class:`OutputError` when an output path names one of the input files.

    Writing there would replace an input (``--per-user truth.parquet``); checked before any
    work, on resolved paths, so a symbolic or hard link to an input is caught too.
    """
    for out_name, out in outputs.items():
        if out is None:
            continue
        for in_name, source in inputs.items():
            if source is not None and same_file(out, source):
                msg = (
                    f"{out_name} {str(out)!r} is the {in_name} file {str(source)!r}; writing it "
                    "would replace that input. Choose another output path."
                )
                raise OutputError(msg)
