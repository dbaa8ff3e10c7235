"""Reading the files of a factor model, its ids and its candidates: the input layer of the
command line's model source (``receval evaluate`` and ``receval topk`` with ``--user-factors``
/ ``--item-factors``; ``receval.cli.model_io`` builds the :class:`receval.FactorModel`).

Factor files, one row of factors per user (``--user-factors``) or item (``--item-factors``):

* ``.npy``: a 2-D array (rows x d), no ids;
* ``.npz``: the array named ``user_factors`` / ``item_factors`` (by the option), else
  ``factors``, else the file's only 2-D array; the ids are the array named ``user_ids`` /
  ``item_ids``, else ``ids``, when the file holds one;
* Parquet (``.parquet``, ``.pq``): the ids are the column named by ``--user-col`` /
  ``--item-col`` (default ``user`` / ``item``), else ``id``, when there is one; the factors are
  the one list (or array) column of numbers, else every other column (all numeric), in
  column order.

Id files (``--user-ids``, ``--item-ids``, ``topk --users``, a global ``--candidates``), one id
per factor row, in row order: ``.npy`` (a 1-D array of integers or strings), ``.txt`` or no
suffix (one id per line), or Parquet, CSV, TSV (one column, or the column named as the ids
above). Ids follow ``id_type`` as everywhere: ``auto`` keeps the types of ``.npy``, ``.npz``
and Parquet files and reads text files (``.txt``, CSV, TSV) as text; ``int`` reads integers
(``007`` is 7), ``str`` text. Without ids a factor file's rows are the ids 0..n-1.

Every problem is an :class:`InputError` naming the option and the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.data.layout import IdType as IdKind

__all__ = ["existing_file", "load_candidates", "load_factors", "load_ids"]

_PARQUET = (".parquet", ".pq")
_NUMPY = (".npy", ".npz")
_TEXT = ("", ".txt")
_DELIMITED = {".csv": ",", ".tsv": "\t"}


def load_factors(
    path: str | os.PathLike[str],
    role: Literal["user", "item"],
    *,
    id_col: str | None = None,
    kind: IdKind = "auto",
) -> tuple[np.ndarray, np.ndarray | None]:
    """The factor matrix of ``--{role}-factors`` and, where the file holds them, its ids.

    Parameters
    ----------
    path:
        A ``.npy``, ``.npz`` or Parquet file (see the module's docstring).
    role:
        ``"user"`` or ``"item"``: names the option in errors and the arrays / columns looked up.
    id_col:
        The id column of a Parquet file (default: ``role``); a column ``id`` also serves.
    kind:
        ``id_type`` for these ids: ``"auto"``, ``"str"`` or ``"int"``.

    Returns
    -------
    (factors, ids)
        ``factors``: a 2-D numeric array (rows x d, d >= 1, rows >= 1; float16 widened to
        float32); ``ids``: int64 or an object array of str, one per row, or None.
    """
    where = _where(f"--{role}-factors", path)
    source = _existing(path, where)
    suffix = source.suffix.lower()
    ids: np.ndarray | None = None
    if suffix in _PARQUET:
        frame = _read_parquet(source, where)
        factors, ids = _parquet_factors(frame, id_col or role, where)
    elif suffix in _NUMPY:
        loaded = _np_load(source, where)
        if isinstance(loaded, np.ndarray):
            factors = loaded
        else:
            factors, ids = _npz_factors(loaded, role, where)
    else:
        msg = (
            f"{where}: cannot tell its format from the suffix {suffix!r}; expected .npy (a 2-D "
            "array), .npz or .parquet."
        )
        raise InputError(msg)
    factors = _check_matrix(factors, where)
    if ids is not None:
        ids = _typed(ids, kind, where)
        _check_distinct(ids, where)
        if len(ids) != factors.shape[0]:
            msg = f"{where}: {len(ids)} ids for {factors.shape[0]} rows of factors."
            raise InputError(msg)
    return factors, ids


def load_ids(
    path: str | os.PathLike[str],
    option: str,
    *,
    id_col: str | None = None,
    kind: IdKind = "auto",
) -> np.ndarray:
    """The ids of an id file (``option`` names it in errors, e.g. ``"--user-ids"``).

    Parameters
    ----------
    path:
        ``.npy`` (1-D), ``.txt`` / no suffix (one id per line), Parquet, CSV or TSV (one
        column, or the column ``id_col`` or ``id``).
    option:
        The option the file was given to.
    id_col:
        The column to read from a table with several columns.
    kind:
        ``id_type`` for these ids: ``"auto"``, ``"str"`` or ``"int"``.

    Returns
    -------
    numpy.ndarray
        int64, or an object array of str: distinct, no nulls, at least one.
    """
    where = _where(option, path)
    source = _existing(path, where)
    suffix = source.suffix.lower()
    values: Any
    if suffix in _NUMPY:
        values = _np_load(source, where)
        if not isinstance(values, np.ndarray):
            values.close()
            msg = f"{where}: expected a .npy file holding one 1-D array of ids; found an .npz."
            raise InputError(msg)
        if values.ndim != 1:
            msg = f"{where}: expected a 1-D array of ids, found shape {values.shape}."
            raise InputError(msg)
    elif suffix in _TEXT:
        values = _text_ids(source, where)
    elif suffix in _PARQUET or suffix in _DELIMITED:
        frame = _read_table(source, suffix, where)
        values = _id_column(frame, id_col, where)
    else:
        msg = (
            f"{where}: cannot tell its format from the suffix {suffix!r}; expected .npy, .txt "
            "(one id per line), .parquet, .csv or .tsv."
        )
        raise InputError(msg)
    ids = _typed(_as_ids(values, where), kind, where)
    if len(ids) == 0:
        msg = f"{where}: holds no ids."
        raise InputError(msg)
    _check_distinct(ids, where)
    return ids


def load_candidates(
    path: str | os.PathLike[str],
    *,
    user_col: str,
    item_col: str,
    kinds: dict[str, IdKind],
) -> np.ndarray | pl.DataFrame:
    """``--candidates``: a table of (user, item) rows (both columns present: per-user
    candidates, as a DataFrame of those two columns), else item ids (global candidates,
    as :func:`load_ids` reads them)."""
    where = _where("--candidates", path)
    source = _existing(path, where)
    suffix = source.suffix.lower()
    if suffix in _PARQUET or suffix in _DELIMITED:
        frame = _read_table(source, suffix, where)
        if user_col in frame.columns and item_col in frame.columns:
            pairs = frame.select(user_col, item_col)
            for col, what in ((user_col, "user"), (item_col, "item")):
                values = _typed(_as_ids(pairs[col], where), kinds[what], where)
                pairs = pairs.with_columns(pl.Series(col, values.tolist()))
            return pairs
    return load_ids(path, "--candidates", id_col=item_col, kind=kinds["item"])


def existing_file(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` as a :class:`~pathlib.Path`, or :class:`InputError` (naming ``option``, e.g.
    ``"--exclude"``) when it is a folder or does not exist."""
    return _existing(path, _where(option, path))


def _where(option: str, path: str | os.PathLike[str]) -> str:
    return f"{option} file {str(path)!r}"


def _existing(path: str | os.PathLike[str], where: str) -> Path:
    source = Path(path)
    if source.is_dir():
        msg = f"{where} is a folder; expected a file."
        raise InputError(msg)
    if not source.is_file():
        msg = f"{where} does not exist."
        raise InputError(msg)
    return source


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _np_load(source: Path, where: str) -> Any:
    try:
        return np.load(source, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        msg = f"{where} could not be read as NumPy .npy/.npz: {_first_line(exc)}"
        raise InputError(msg) from None


def _read_parquet(source: Path, where: str) -> pl.DataFrame:
    try:
        return pl.read_parquet(source)
    except (pl.exceptions.PolarsError, OSError) as exc:
        msg = f"{where} could not be read as Parquet: {_first_line(exc)}"
        raise InputError(msg) from None


def _read_table(source: Path, suffix: str, where: str) -> pl.DataFrame:
    if suffix in _PARQUET:
        return _read_parquet(source, where)
    try:  # every column as text: ids are never guessed from a sample of rows
        return pl.read_csv(source, separator=_DELIMITED[suffix], infer_schema=False)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
        kind = "CSV" if suffix == ".csv" else "TSV"
        msg = f"{where} could not be read as {kind}: {_first_line(exc)}"
        raise InputError(msg) from None


def _npz_factors(archive: Any, role: str, where: str) -> tuple[np.ndarray, np.ndarray | None]:
    try:
        names = list(archive.files)
        name = next((n for n in (f"{role}_factors", "factors") if n in names), None)
        if name is None:
            flat = []
            for n in names:
                if archive[n].ndim == 2:
                    flat.append(n)
            if len(flat) != 1:
                msg = (
                    f"{where}: expected an array named {role}_factors or factors, or exactly "
                    f"one 2-D array; found arrays {names}."
                )
                raise InputError(msg)
            name = flat[0]
        factors = archive[name]
        id_name = next((n for n in (f"{role}_ids", "ids") if n in names), None)
        ids = None if id_name is None else archive[id_name]
    except ValueError as exc:  # an object array inside (allow_pickle=False)
        msg = f"{where} could not be read as NumPy .npz: {_first_line(exc)}"
        raise InputError(msg) from None
    finally:
        archive.close()
    if ids is not None and ids.ndim != 1:
        msg = f"{where}: expected a 1-D array {id_name!r} of ids, found shape {ids.shape}."
        raise InputError(msg)
    return factors, None if ids is None else _as_ids(ids, f"{where} ({id_name!r})")


def _parquet_factors(
    frame: pl.DataFrame, id_col: str, where: str
) -> tuple[np.ndarray, np.ndarray | None]:
    id_name = next((c for c in (id_col, "id") if c in frame.columns), None)
    ids = None if id_name is None else _as_ids(frame[id_name], where)
    rest = [c for c in frame.columns if c != id_name]
    nested = [c for c in rest if isinstance(frame.schema[c], pl.List | pl.Array)]
    hint = (
        f"expected the factors as one list column of numbers, or as numeric columns, and the "
        f"ids (optional) in column {id_col!r} or 'id'"
    )
    if len(nested) > 1 or (nested and len(rest) > 1):
        msg = f"{where}: {hint}; found columns {frame.columns}."
        raise InputError(msg)
    if not rest:
        msg = f"{where}: {hint}; found no factor column (columns {frame.columns})."
        raise InputError(msg)
    if nested:
        column = frame[nested[0]]
        inner = column.dtype.inner  # type: ignore[attr-defined]
        if not inner.is_numeric():
            msg = f"{where}: list column {nested[0]!r} holds {inner}; {hint}."
            raise InputError(msg)
        if column.null_count() or column.explode().null_count():
            msg = f"{where}: list column {nested[0]!r} has null values; expected numbers."
            raise InputError(msg)
        lengths = column.list.len().unique() if isinstance(column.dtype, pl.List) else None
        if lengths is not None and len(lengths) > 1:
            shown = sorted(lengths.to_list())[:5]
            msg = f"{where}: the lists of column {nested[0]!r} differ in length {shown}."
            raise InputError(msg)
        width = column.dtype.size if isinstance(column.dtype, pl.Array) else int(lengths[0])  # type: ignore[index]
        flat = column.explode().to_numpy() if column.len() else np.empty(0)
        return flat.reshape(column.len(), width), ids
    bad = [c for c in rest if not frame.schema[c].is_numeric()]
    if bad:
        msg = f"{where}: column {bad[0]!r} is {frame.schema[bad[0]]}; {hint}."
        raise InputError(msg)
    nulls = sum(frame[c].null_count() for c in rest)
    if nulls:
        msg = f"{where}: {nulls} null value(s) in the factor columns; expected numbers."
        raise InputError(msg)
    return frame.select(rest).to_numpy(), ids


def _check_matrix(factors: np.ndarray, where: str) -> np.ndarray:
    if factors.ndim != 2:
        msg = f"{where}: expected a 2-D array (rows x factors), found shape {factors.shape}."
        raise InputError(msg)
    if factors.dtype.kind not in "iuf":
        msg = f"{where}: expected numbers (float or integer), found dtype {factors.dtype}."
        raise InputError(msg)
    if factors.shape[0] == 0 or factors.shape[1] == 0:
        msg = f"{where}: expected at least one row and one factor, found shape {factors.shape}."
        raise InputError(msg)
    if factors.dtype == np.float16:
        factors = factors.astype(np.float32)  # exact
    return factors


def _text_ids(source: Path, where: str) -> list[str]:
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{where} could not be read as UTF-8 text: {_first_line(exc)}"
        raise InputError(msg) from None
    ids = [line.strip() for line in lines]
    while ids and not ids[-1]:
        ids.pop()
    empty = [n + 1 for n, text in enumerate(ids) if not text]
    if empty:
        msg = f"{where}: {len(empty)} empty line(s) (line {empty[0]}); expected one id per line."
        raise InputError(msg)
    return ids


def _id_column(frame: pl.DataFrame, id_col: str | None, where: str) -> pl.Series:
    if frame.width == 1:
        return frame.to_series()
    name = next((c for c in (id_col, "id") if c is not None and c in frame.columns), None)
    if name is None:
        named = f"{id_col!r} or 'id'" if id_col else "'id'"
        msg = (
            f"{where}: expected one column of ids, or a column named {named}; found "
            f"{frame.columns}."
        )
        raise InputError(msg)
    return frame[name]


def _as_ids(values: Any, where: str) -> np.ndarray:
    """``values`` (an array, Series or list) as int64 or an object array of str."""
    if isinstance(values, pl.Series):
        if values.null_count():
            msg = f"{where}: {values.null_count()} null id(s); expected an id on every row."
            raise InputError(msg)
        if values.dtype == pl.String:
            return np.array(values.to_list(), dtype=object)
        values = values.to_numpy()
    array = np.asarray(values)
    if array.dtype.kind == "U" or (
        array.dtype.kind == "O" and all(isinstance(v, str) for v in array)
    ):
        return np.array(array.tolist(), dtype=object)
    if array.dtype.kind in "iu":
        if array.size and array.dtype == np.uint64 and int(array.max()) > 2**63 - 1:
            msg = f"{where}: integer ids must fit in 64 bits (at most 2^63-1); use text ids."
            raise InputError(msg)
        return array.astype(np.int64)
    msg = f"{where}: expected integer or text ids, found dtype {array.dtype}."
    raise InputError(msg)


def _typed(ids: np.ndarray, kind: IdKind, where: str) -> np.ndarray:
    """``ids`` as ``id_type``'s ``kind`` asks: ``str`` all text, ``int`` all integers."""
    if kind == "str" and ids.dtype != object:
        return np.array([str(v) for v in ids.tolist()], dtype=object)
    if kind == "int" and ids.dtype == object:
        text = pl.Series(ids.tolist(), dtype=pl.String)
        values = text.str.strip_chars().cast(pl.Int64, strict=False)
        if values.null_count():
            bad = text.filter(values.is_null()).head(3).to_list()
            msg = (
                f"{where}: {values.null_count()} id(s) are not 64-bit integers (id_type 'int' "
                f"reads ids as integers), e.g. {bad}; use --id-type str to read them as text."
            )
            raise InputError(msg)
        return values.to_numpy()
    return ids


def _check_distinct(ids: np.ndarray, where: str) -> None:
    series = pl.Series(ids.tolist())
    repeated = series.filter(series.is_duplicated()).unique(maintain_order=True)
    if len(repeated):
        msg = (
            f"{where}: {len(repeated)} id(s) appear more than once, e.g. "
            f"{repeated.head(3).to_list()}; expected one row per id."
        )
        raise InputError(msg)
