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
    per_user = "out/per_user.parquet"
"""

from __future__ import annotations

import difflib
import json
import tomllib
from pathlib import Path
from typing import Any

from ._errors import InputError

__all__ = ["CONFIG_KEYS", "load_config"]

_PATHS = ("truth", "recs", "per_user", "train", "items")
_STRINGS = (
    "user_col", "item_col", "score_col", "rank_col", "relevance_col", "ties", "no_recs", "format"
)  # fmt: skip
CONFIG_KEYS = (
    *_PATHS, "metrics", *_STRINGS, "relevance_threshold", "item_features", "rating_range"
)  # fmt: skip


def load_config(path: str | Path) -> dict[str, Any]:
    """Read and check a config file; return its settings with paths resolved."""
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"config file {str(source)!r} could not be read: {exc.strerror or exc}."
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
        if key not in CONFIG_KEYS:
            close = difflib.get_close_matches(key, CONFIG_KEYS, n=2)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            msg = (
                f"config file {str(source)!r} has an unknown key {key!r}{hint} "
                f"Known keys: {', '.join(CONFIG_KEYS)}."
            )
            raise InputError(msg)
        settings[key] = _check(source, key, value)
    return settings


def _check(source: Path, key: str, value: Any) -> Any:
    where = f"config file {str(source)!r}: {key}"
    if key in _PATHS:
        if not isinstance(value, str):
            msg = f"{where} must be a path string; got {value!r}."
            raise InputError(msg)
        path = Path(value).expanduser()
        return path if path.is_absolute() else source.parent / path
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
    if key == "relevance_threshold":
        if isinstance(value, bool) or not isinstance(value, int | float):
            msg = f"{where} must be a number; got {value!r}."
            raise InputError(msg)
        return value
    if not isinstance(value, str):
        msg = f"{where} must be a string; got {value!r}."
        raise InputError(msg)
    return value
