"""The result of an evaluation: means, per-user values, counts and settings."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from receval.metrics.registry import Metric, parse_metric

__all__ = ["Counts", "Result"]


@dataclass(frozen=True)
class Counts:
    """How many users the evaluation saw, by kind (docs/metrics.md, "Users").

    Attributes
    ----------
    evaluated:
        Users in truth with at least one relevant item (relevance >= the threshold).
    no_recs:
        Evaluated users with no recommendations (scored 0, left out or an error, by policy).
    no_relevant:
        Users in truth with no relevant item: left out of every mean.
    recs_not_in_truth:
        Users with recommendations who are not in truth: left out of accuracy metrics.
    recs_in_train:
        Recommendation rows of users in truth whose item the user already has in ``train``
        (an item seen in training is rarely in the test set, so such rows seldom count as
        hits); None when no ``train`` is given.
    """

    evaluated: int
    no_recs: int
    no_relevant: int
    recs_not_in_truth: int
    recs_in_train: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        """The counts as a plain dict (``recs_in_train`` None without ``train``)."""
        return asdict(self)

    def __repr__(self) -> str:
        """The counts, ``recs_in_train`` only when a ``train`` was given."""
        shown = {k: v for k, v in asdict(self).items() if k != "recs_in_train" or v is not None}
        return f"Counts({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def _same(a: Any, b: Any) -> bool:
    """Equal data, NaN equal to NaN: nested mappings (same keys), sequences, frames, floats."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, pl.DataFrame | pl.Series) or isinstance(b, pl.DataFrame | pl.Series):
        return _same_frame(a, b)
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # values whose == is not a truth value (arrays)
        return a is b


def _same_frame(a: Any, b: Any) -> bool:
    """Equal frames or series (schema and values, NaN equal to NaN, nulls in the same place),
    or both None."""
    if a is None or b is None:
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, pl.DataFrame):
        return bool(a.schema == b.schema and a.equals(b, null_equal=True))
    return bool(a.dtype == b.dtype and a.equals(b, check_names=True, null_equal=True))


class Result(Mapping[str, float]):
    """Means and per-user values of the requested metrics.

    ``result[name]`` accepts any spelling of a metric the grammar accepts
    (``result["NDCG @ 10"]``, ``result["ap@100"]`` for ``map@100``) and returns a Python
    float. The result is a read-only mapping from canonical metric names to means.

    ``a == b`` compares two Results in full (means, counts, per-user values, settings,
    details and segments; NaN equals NaN in the same place); a Result never equals a plain
    dict of means (compare ``result.means`` for that), and it is not hashable.
    """

    def __init__(
        self,
        metrics: tuple[Metric, ...],
        means: dict[str, float],
        per_user: pl.DataFrame,
        counts: Counts,
        settings: dict[str, Any],
        details: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self._metrics = metrics
        self._means = means
        self._per_user = per_user
        self._counts = counts
        self._settings = settings
        self._details = details or {}
        self._by_segment: pl.DataFrame | None = None
        self._segments: dict[tuple[str, str | None], Result] = {}

    def with_segments(
        self, by_segment: pl.DataFrame, segments: Mapping[tuple[str, str | None], Result]
    ) -> Result:
        """This result with its results by segment (``evaluate(..., segments=...)``)."""
        out = Result(
            self._metrics, self._means, self._per_user, self._counts, self._settings,
            self._details,
        )  # fmt: skip
        out._by_segment = by_segment
        out._segments = dict(segments)
        return out

    def __getitem__(self, name: str) -> float:
        if isinstance(name, str) and name in self._means:  # a canonical name: no parsing
            return self._means[name]
        try:
            key = parse_metric(name).canonical
        except ValueError:
            raise KeyError(name) from None
        if key not in self._means:
            msg = f"{name!r} ({key}) was not evaluated; evaluated: {', '.join(self._means)}"
            raise KeyError(msg)
        return self._means[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._means)

    def __eq__(self, other: object) -> bool:
        """The whole result: metrics, means, counts, per-user values, settings, details and
        segments (NaN equal to NaN in the same place). A Result never equals a plain mapping
        of means: compare ``result.means`` for that."""
        if not isinstance(other, Result):
            return NotImplemented
        if self is other:
            return True
        return (
            self.metrics == other.metrics
            and _same(self._means, other._means)
            and self._counts == other._counts
            and _same_frame(self._per_user, other._per_user)
            and _same(self._settings, other._settings)
            and _same(self._details, other._details)
            and _same_frame(self._by_segment, other._by_segment)
            and self._segments.keys() == other._segments.keys()
            and all(v == other._segments[k] for k, v in self._segments.items())
        )

    # the per-user frame is a Polars DataFrame, which can be changed in place: no hash
    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return len(self._means)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Canonical names of the evaluated metrics, in request order."""
        return tuple(m.canonical for m in self._metrics)

    @property
    def means(self) -> dict[str, float]:
        """Canonical name -> mean over the users evaluated by that metric."""
        return dict(self._means)

    @property
    def per_user(self) -> pl.DataFrame:
        """The user column, then one Float64 column per metric (null: user not evaluated)."""
        return self._per_user

    @property
    def counts(self) -> Counts:
        """Users evaluated, without recs, without relevant items, and recs users not in truth."""
        return self._counts

    @property
    def settings(self) -> dict[str, Any]:
        """The options the evaluation ran with: ``ties``, ``relevance_threshold``,
        ``no_recs`` and ``relevance_col``, truth's relevance column (None: every truth row had
        relevance 1)."""
        return dict(self._settings)

    @property
    def details(self) -> dict[str, dict[str, Any]]:
        """Canonical name -> facts about how that metric was computed, for the metrics that
        have any: users skipped (``gauc``: one class only), rows without a prediction (rating
        metrics), the catalog used (``coverage``, ``gini``), ..."""
        return {k: dict(v) for k, v in self._details.items()}

    @property
    def by_segment(self) -> pl.DataFrame | None:
        """The metrics by segment, when ``segments=`` was given (else None): one row per
        segmentation, segment and metric: ``segmentation``, ``kind`` (``"user"`` or
        ``"item"``), ``segment`` (null: ids the segmentation does not list), ``metric``,
        ``value`` (null: no truth rows in the segment) and ``users`` (users with a value)."""
        return self._by_segment

    @property
    def segments(self) -> dict[tuple[str, str | None], Result]:
        """``(segmentation, segment)`` -> the :class:`Result` of that segment's rows alone
        (per-user values, counts and details included); empty without ``segments=``."""
        return dict(self._segments)

    def to_dict(self) -> dict[str, Any]:
        """``{"metrics": {...}, "counts": {...}, "settings": {...}}``, plus ``"details"``
        when a metric has any and ``"by_segment"`` (a list of rows) with ``segments=``."""
        doc: dict[str, Any] = {
            "metrics": dict(self._means),
            "counts": self._counts.to_dict(),
            "settings": dict(self._settings),
        }
        if self._details:
            doc["details"] = self.details
        if self._by_segment is not None:
            doc["by_segment"] = self._by_segment.to_dicts()
        return doc

    def to_json(self, *, indent: int | None = 2) -> str:
        """The :meth:`to_dict` document as JSON (NaN is written as null)."""
        doc = self.to_dict()
        doc["metrics"] = {k: (None if math.isnan(v) else v) for k, v in doc["metrics"].items()}
        return json.dumps(doc, indent=indent)

    def _repr_html_(self) -> str:
        """A table of the means (with each metric's details) and the counts, for notebooks."""

        def detail(name: str) -> str:
            facts = self._details.get(name, {})
            return html.escape(", ".join(f"{k}={v}" for k, v in facts.items()))

        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{v:.6f}</td>"
            + (f"<td>{detail(k)}</td>" if self._details else "")
            + "</tr>"
            for k, v in self._means.items()
        )
        head = "<th>metric</th><th>value</th>" + ("<th>details</th>" if self._details else "")
        c = self._counts
        return (
            f"<table><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            f"<p>users: {c.evaluated} evaluated, {c.no_recs} without recs, {c.no_relevant} "
            f"without relevant items, {c.recs_not_in_truth} recs users not in truth"
            + ("" if c.recs_in_train is None else f", {c.recs_in_train} recs rows in train")
            + f"; ties={html.escape(str(self._settings.get('ties')))}</p>"
        )

    def __repr__(self) -> str:
        width = max(len(k) for k in self._means)
        lines = [f"  {k:<{width}}  {v:.6f}" for k, v in self._means.items()]
        c = self._counts
        lines.append(
            f"  users: {c.evaluated} evaluated, {c.no_recs} without recs, "
            f"{c.no_relevant} without relevant items, {c.recs_not_in_truth} recs users not in truth"
            + ("" if c.recs_in_train is None else f", {c.recs_in_train} recs rows in train")
        )
        return "Result(\n" + "\n".join(lines) + "\n)"
