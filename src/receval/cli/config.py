"""Evaluation settings from a TOML or JSON file, for ``receval evaluate --config``.

The keys are the keyword names of :func:`receval.evaluate` plus ``truth``, ``recs``,
``metrics``, and the command line's ``per_user`` and ``format``. Metric strings are the same
as everywhere else. Relative paths are relative to the file's folder.

Example ``eval.toml``::

    truth = "data/test.parquet"
    recs = "runs/model.parquet"
    metrics = ["ndcg@10", "ndcg(gain=exp)@10", "map(denominator=min)@100", "recall@20",
               "coverage@10", "novelty@10"]
    train = "data/train.parquet"
    ties = "expected"
    relevance_threshold = 1
    id_type = "auto"          # or "str" / "int": how user and item ids are typed
    input_format = "tsv"      # files whose suffix does not tell (or {truth = "tsv"})
    per_user = "out/per_user.parquet"

    [columns.recs]            # recs' own id columns (truth's names the output)
    user = "uid"
    item = "iid"

A factor model instead of ``recs`` (``receval evaluate --user-factors ...``): the keys
``user_factors``, ``item_factors``, ``user_ids``, ``item_ids``, ``similarity``, ``device``,
``exclude``, ``candidates``, ``block_memory`` (``"256MiB"`` or a number of bytes) and
``excluded_truth``. ``sorted_by_user`` (``true``, ``false`` or ``"auto"``): with
``--engine stream``, whether Parquet files sorted by user are read in order
(docs/streaming.md).
``segments``: a segmentation or a list of them (docs/segments.md): built-in names, truth
columns, or segment files (relative to the config file, like every path).
``receval topk --config`` reads those (less ``excluded_truth``) plus ``k``, ``users``,
``output``, ``user_col``, ``item_col`` and ``id_type``.

``receval split --config`` reads the options of :func:`receval.split` by their Python names
(``method``, ``n``, ``fraction``, ``cutoff``, ``seed``, ...) plus ``input``, ``out_dir`` and
``format``; a TOML date (``cutoff = 2024-01-31``) is a bound as well as text.

``receval compare --config`` and ``receval report --config`` read the same keys (less
``recs`` and ``per_user``) plus the comparison's: ``runs`` (a table NAME = PATH, in order),
``baseline``, ``test``, ``correction``, ``alpha``, ``confidence``, ``ci``, ``n_resamples``,
``n_permutations``, ``seed`` and ``output``, with ``format`` (compare) or ``title`` and
``curves`` (report). A run may be a factor model, ``als = { user_factors = "U.npy",
item_factors = "I.npy" }`` (``user_ids``, ``item_ids`` optional), with the model keys
``exclude``, ``candidates``, ``similarity``, ``device`` and ``block_memory``.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

from receval._errors import InputError
from receval.cli.common import check_regular_input
from receval.data.io import check_columns, check_input_format

__all__ = ["COMPARE_KEYS", "CONFIG_KEYS", "REPORT_KEYS", "SPLIT_KEYS", "TOPK_KEYS", "load_config"]

_PATHS = (
    "truth", "recs", "per_user", "train", "items", "user_factors", "item_factors", "user_ids",
    "item_ids", "exclude", "candidates", "users",
)  # fmt: skip
# a factor model in place of recs (receval evaluate and topk)
_MODEL = (
    "user_factors", "item_factors", "user_ids", "item_ids", "similarity", "device", "exclude",
    "candidates", "block_memory",
)  # fmt: skip
_STRINGS = (
    "user_col", "item_col", "score_col", "rank_col", "relevance_col", "ties", "no_recs", "format",
    "id_type", "similarity", "excluded_truth", "device", "sampling", "sample_col",
)  # fmt: skip
CONFIG_KEYS = (
    "truth", "recs", "per_user", "train", "items", "metrics", "user_col", "item_col",
    "score_col", "rank_col", "relevance_col", "ties", "no_recs", "format", "id_type",
    "relevance_threshold", "item_features", "rating_range", "input_format", "columns", *_MODEL,
    "excluded_truth", "segments", "sampling", "sample_col", "sorted_by_user",
)  # fmt: skip
"""The keys of ``receval evaluate --config``."""

# compare and report: evaluate's keys less recs, per_user and format, plus the comparison's
_EVALUATE_OPTIONS = tuple(
    k for k in CONFIG_KEYS
    if k not in ("recs", "per_user", "format", *_MODEL, "excluded_truth", "sampling",
                 "sample_col", "sorted_by_user")
)  # fmt: skip
_NUMBERS = ("relevance_threshold", "alpha", "confidence", "fraction", "validation_fraction")
_INTEGERS = ("n_resamples", "n_permutations", "seed", "k", "min_user_interactions",
             "min_item_interactions")  # fmt: skip
_COMPARISON = (
    "runs", "baseline", "test", "correction", "alpha", "confidence", "ci", "n_resamples",
    "n_permutations", "seed", "output", "users",
)  # fmt: skip
# names a newcomer may write (the command line's) -> the key
_FLAG_NAMES = {
    "recs": "runs", "run": "runs", "resamples": "n_resamples", "permutations": "n_permutations",
    "metric": "metrics", "threshold": "relevance_threshold",
}  # fmt: skip
# the options of the factor-model runs of compare and report (their files are in runs)
_COMPARE_MODEL = ("similarity", "device", "exclude", "candidates", "block_memory")
COMPARE_KEYS = (*_EVALUATE_OPTIONS, *_COMPARISON, *_COMPARE_MODEL, "format")
"""The keys of ``receval compare --config``."""
REPORT_KEYS = (*_EVALUATE_OPTIONS, *_COMPARISON, *_COMPARE_MODEL, "title", "curves")
"""The keys of ``receval report --config``."""
TOPK_KEYS = (*_MODEL, "k", "users", "output", "user_col", "item_col", "id_type")
"""The keys of ``receval topk --config``."""
# receval split: the options of receval.split by their Python names, plus input and out_dir
_SPLIT_INTEGERS = ("n", "validation_n", "k", "seed", "min_user_interactions",
                   "min_item_interactions")  # fmt: skip
_SPLIT_FRACTIONS = ("fraction", "validation_fraction")
_SPLIT_BOUNDS = ("cutoff", "end", "validation_cutoff")  # a number or a date/datetime text
SPLIT_KEYS = (
    "input", "out_dir", "method", *_SPLIT_INTEGERS, *_SPLIT_FRACTIONS, *_SPLIT_BOUNDS, "by",
    "user_col", "item_col", "time_col", "ties", "duplicates", "short_users", "drop_cold",
    "input_format", "id_type", "format",
)  # fmt: skip
"""The keys of ``receval split --config``."""


def load_config(path: str | Path, keys: tuple[str, ...] = CONFIG_KEYS) -> dict[str, Any]:
    """Read and check a config file; return its settings with paths resolved.

    Parameters
    ----------
    path:
        The TOML file (or JSON, by the ``.json`` suffix).
    keys:
        The keys the command knows (:data:`CONFIG_KEYS`, :data:`COMPARE_KEYS` or
        :data:`REPORT_KEYS`); any other key is an :class:`InputError` with a did-you-mean hint.

    Returns
    -------
    dict
        Key -> checked value; paths (and the paths of ``runs``) relative to the file's folder.
    """
    source = Path(path)
    check_regular_input("--config", source)  # a FIFO would block the read until a writer came
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"config file {str(source)!r} could not be read: {exc.strerror or exc}."
        raise InputError(msg) from None
    except UnicodeDecodeError as exc:
        msg = (
            f"config file {str(source)!r} is not UTF-8 text: byte {exc.object[exc.start]:#04x} "
            f"at offset {exc.start} cannot be decoded. Save the file as UTF-8."
        )
        raise InputError(msg) from None
    try:
        doc = json.loads(text) if source.suffix.lower() == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "JSON" if source.suffix.lower() == ".json" else "TOML"
        msg = f"config file {str(source)!r} is not valid {kind}: {exc}."
        raise InputError(msg) from None
    if not isinstance(doc, dict):
        msg = (
            f"config file {str(source)!r} must hold a table of settings; got {type(doc).__name__}."
        )
        raise InputError(msg)

    settings: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=2)
            if _FLAG_NAMES.get(key) in keys:  # a flag's name, e.g. resamples for --resamples
                close = [_FLAG_NAMES[key], *(c for c in close if c != _FLAG_NAMES[key])][:2]
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            msg = (
                f"config file {str(source)!r} has an unknown key {key!r}{hint} "
                f"Known keys: {', '.join(keys)}."
            )
            raise InputError(msg)
        settings[key] = _check(source, key, value)
    return settings


_MODEL_FILES = ("user_factors", "item_factors", "user_ids", "item_ids")


def _is_model(run: Any) -> bool:
    """Whether a ``runs`` value is a factor model's table of files: user_factors and
    item_factors, user_ids and item_ids optional, each a path."""
    return (
        isinstance(run, dict)
        and {"user_factors", "item_factors"} <= set(run)
        and set(run) <= set(_MODEL_FILES)
        and all(isinstance(v, str) and v.strip() for v in run.values())
    )


def _path(source: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else source.parent / path


def _check(source: Path, key: str, value: Any) -> Any:
    where = f"config file {str(source)!r}: {key}"
    if key in ("input", "out_dir", "n", "validation_n") or key in _SPLIT_BOUNDS:
        return _check_split(source, key, value, where)
    if key in _PATHS or key == "output":
        if not isinstance(value, str):
            msg = f"{where} must be a path string; got {value!r}."
            raise InputError(msg)
        return _path(source, value)
    if key == "runs":
        table = (
            isinstance(value, dict)
            and value
            and all((isinstance(p, str) and p.strip()) or _is_model(p) for p in value.values())
            and all(n.strip() for n in value)
        )
        if not table:
            msg = (
                f"{where} must be a non-empty table NAME = PATH (e.g. [runs] pop = "
                f'"runs/pop.parquet"), or NAME = a factor model {{ user_factors = PATH, '
                f"item_factors = PATH }} (user_ids and item_ids optional); got {value!r}."
            )
            raise InputError(msg)
        return {
            name.strip(): (
                {k: _path(source, v) for k, v in run.items()}
                if isinstance(run, dict)
                else _path(source, run.strip())
            )
            for name, run in value.items()
        }
    if key in _INTEGERS:
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"{where} must be an integer; got {value!r}."
            raise InputError(msg)
        return value
    if key == "block_memory":  # a size: "256MiB", or a number of bytes
        if isinstance(value, bool) or not isinstance(value, int | str):
            msg = f'{where} must be a size such as "256MiB" or a number of bytes; got {value!r}.'
            raise InputError(msg)
        return value
    if key == "correction" and value is None:  # JSON null: no correction
        return "none"
    if key == "sorted_by_user":  # --engine stream: true, false or "auto"
        if value not in (True, False, "auto") or not isinstance(value, bool | str):
            msg = f'{where} must be true, false or "auto"; got {value!r}.'
            raise InputError(msg)
        return value
    if key == "curves":
        if not isinstance(value, bool):
            msg = f"{where} must be true or false; got {value!r}."
            raise InputError(msg)
        return value
    if key == "segments":  # names stay; a value naming a file (relative to this one) is a path
        if isinstance(value, str):
            value = [value]
        if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            msg = (
                f"{where} must be a segmentation or a list of them, e.g. ['activity', "
                f"'tiers.csv']; got {value!r}."
            )
            raise InputError(msg)
        return [str(_path(source, v)) if _path(source, v).is_file() else v for v in value]
    if key == "metrics":
        if isinstance(value, str):
            value = [value]
        if not (isinstance(value, list) and value and all(isinstance(m, str) for m in value)):
            msg = f"{where} must be a list of metric strings such as ['ndcg@10']; got {value!r}."
            raise InputError(msg)
        return value
    if key == "item_features":
        ok = isinstance(value, str) or (
            isinstance(value, list) and value and all(isinstance(c, str) for c in value)
        )
        if not ok:
            msg = (
                f"{where} must be a column name or a list of column names of items; got {value!r}."
            )
            raise InputError(msg)
        return value
    if key == "rating_range":
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        )
        if not ok:
            msg = f"{where} must be two numbers [r_min, r_max]; got {value!r}."
            raise InputError(msg)
        return (value[0], value[1])
    if key in ("columns", "input_format"):  # a table or text, checked as evaluate checks it
        try:
            if key == "columns":
                check_columns(value, "user", "item")
            else:
                check_input_format(value)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        return value
    if key in _NUMBERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            msg = f"{where} must be a number; got {value!r}."
            raise InputError(msg)
        return value
    if not isinstance(value, str):
        msg = f"{where} must be a string; got {value!r}."
        raise InputError(msg)
    return value


def _check_split(source: Path, key: str, value: Any, where: str) -> Any:
    """The keys of ``receval split --config`` that no other command has."""
    if key in ("input", "out_dir"):
        if not isinstance(value, str):
            msg = f"{where} must be a path string; got {value!r}."
            raise InputError(msg)
        return _path(source, value)
    if key in _SPLIT_INTEGERS:
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"{where} must be an integer; got {value!r}."
            raise InputError(msg)
        return value
    # a bound: a number, or text (a date or datetime); TOML dates come as date objects
    if isinstance(value, bool) or not isinstance(value, int | float | str | date):
        msg = f"{where} must be a number or a date/datetime such as '2024-01-31'; got {value!r}."
        raise InputError(msg)
    return value
