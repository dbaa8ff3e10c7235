"""What a comparison holds, as data: the numbers that :func:`receval.compare` computes and
the reports and plots take (:mod:`receval.comparison.report`, :mod:`receval.comparison.plots`).

:class:`ComparisonData` is the table, results and settings of a comparison;
:class:`receval.Comparison` adds the methods that render it. The curve types
(:class:`RocCurve`, :class:`PrCurve`, :class:`CutoffCurves`, :class:`ReportCurves`) are the
numbers that :mod:`receval.comparison.curves` computes from truth and runs and the plots draw.
This module imports no renderer and no engine, so that every module of the package can read
it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from receval.metrics.registry import Metric, parse_metric
from receval.metrics.result import Result

__all__ = [
    "MODEL_ROWS",
    "NOTE_BASELINE",
    "NOTE_GLOBAL",
    "NOTE_WEIGHTED",
    "TABLE_SCHEMA",
    "ComparisonData",
    "CutoffCurves",
    "PrCurve",
    "ReportCurves",
    "RocCurve",
]

NOTE_BASELINE = "baseline"
NOTE_GLOBAL = "no per-user values: mean only, no CI or test"
NOTE_WEIGHTED = "mean is not a plain average over users (micro or weighted): no CI or test"

TABLE_SCHEMA = {
    "model": pl.String,
    "metric": pl.String,
    "mean": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_value": pl.Float64,
    "p_adjusted": pl.Float64,
    "significant": pl.Boolean,
    "effect_size": pl.Float64,
    "n_users": pl.Int64,
    "n_paired": pl.Int64,
    "note": pl.String,
}
"""The columns of :attr:`ComparisonData.table` (see the class docstring)."""

MODEL_ROWS = (
    "a model has no recommendation rows, and the curve over every user x catalog item would "
    "compare raw scores of different users, which has no meaning (the reason evaluate refuses "
    "auc from a model)"
)
"""Why no ROC or PR curve is drawn of a model source (the plots refuse it, the HTML report
says it under its figures)."""


class ComparisonData:
    """Models compared on the same truth, as numbers: what :func:`receval.compare` computes
    and the reports and plots take (:class:`receval.Comparison` adds the methods that render
    it).

    Attributes
    ----------
    table:
        One row per (model, metric), models in the order given, metrics in request order:
        ``model``, ``metric``, ``mean`` (the model's mean, as :func:`receval.evaluate` reports
        it), ``ci_low`` / ``ci_high`` (bootstrap interval of that mean), ``p_value`` (paired test
        against the baseline), ``p_adjusted`` (after the correction), ``significant``
        (``p_adjusted <= alpha``), ``effect_size`` (paired Cohen's d of model - baseline),
        ``n_users`` (users with a value for this model), ``n_paired`` (users both the model and
        the baseline have a value for) and ``note`` (why a cell is empty, users left unpaired).
        Baseline rows and metrics without per-user values have null test columns.
    results:
        Model name -> its :class:`~receval.Result`.
    baseline:
        The baseline's name.
    settings:
        The options of the comparison (test, correction, alpha, confidence, ci, n_resamples,
        n_permutations, seed) and of the evaluation.
    inputs:
        The truth and runs as given to :func:`compare` and the options passed to
        :func:`receval.evaluate` (references, not copies), for the report's metric@K curves and
        provenance; None when not known.
    """

    def __init__(
        self,
        table: pl.DataFrame,
        results: dict[str, Result],
        baseline: str,
        metrics: tuple[Metric, ...],
        settings: dict[str, Any],
        *,
        inputs: Mapping[str, Any] | None = None,
        by_segment: pl.DataFrame | None = None,
    ) -> None:
        self._by_segment = by_segment
        self._table = table
        self._results = results
        self._baseline = baseline
        self._metrics = metrics
        self._settings = settings
        self._inputs = inputs

    @property
    def table(self) -> pl.DataFrame:
        """One row per (model, metric); see the class docstring."""
        return self._table

    @property
    def by_segment(self) -> pl.DataFrame | None:
        """With ``segments=``: the comparison in every segment (else None). The columns of
        :attr:`table` after ``segmentation``, ``kind`` and ``segment``; each segment's runs are
        tested against the baseline's in that segment, and the correction runs over every
        test of this table together (all segments, models and metrics)."""
        return self._by_segment

    @property
    def results(self) -> dict[str, Result]:
        """Model name -> :class:`~receval.Result` of its evaluation."""
        return dict(self._results)

    @property
    def baseline(self) -> str:
        """The model every other model is tested against."""
        return self._baseline

    @property
    def models(self) -> tuple[str, ...]:
        """Model names, in the order given."""
        return tuple(self._results)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Canonical metric names, in request order."""
        return tuple(m.canonical for m in self._metrics)

    @property
    def metric_specs(self) -> tuple[Metric, ...]:
        """The parsed metrics (spec, parameters, cutoff), in request order."""
        return self._metrics

    @property
    def settings(self) -> dict[str, Any]:
        """Options of the comparison and of the evaluation."""
        return dict(self._settings)

    @property
    def inputs(self) -> dict[str, Any] | None:
        """``{"truth": ..., "runs": {name: ...}, "options": {...}}``: the truth and runs as
        given to :func:`compare` (paths, DataFrames, dicts: the objects themselves, not copies)
        and the options passed to :func:`receval.evaluate`; None when not known."""
        return None if self._inputs is None else dict(self._inputs)

    def cell(self, model: str, metric: str) -> dict[str, Any]:
        """The table row of ``model`` and ``metric`` (any spelling of the metric) as a dict."""
        key = parse_metric(metric).canonical
        rows = self._table.filter((pl.col("model") == model) & (pl.col("metric") == key))
        if rows.height == 0:
            msg = f"no row for model {model!r} and metric {key!r}"
            raise KeyError(msg)
        return rows.row(0, named=True)

    def to_dict(self) -> dict[str, Any]:
        """Everything in plain Python types (NaN as None): settings, models, metrics, rows and
        each model's user counts."""
        rows = [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in self._table.iter_rows(named=True)
        ]
        return {
            "baseline": self._baseline,
            "models": list(self.models),
            "metrics": list(self.metrics),
            "settings": _jsonable(self._settings),
            "rows": rows,
            "counts": {name: res.counts.to_dict() for name, res in self._results.items()},
            **({} if self._by_segment is None else {"by_segment": [
                {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in self._by_segment.iter_rows(named=True)
            ]}),
        }  # fmt: skip

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), indent=indent)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


@dataclass(frozen=True)
class RocCurve:
    """One run's ROC curve over its recommendation rows (:func:`receval.roc_curve`: every
    distinct score) and its area (:func:`receval.auc`)."""

    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    auc: float


@dataclass(frozen=True)
class PrCurve:
    """One run's precision-recall curve over its recommendation rows
    (:func:`receval.pr_curve`) and its :func:`receval.average_precision`."""

    precision: NDArray[np.float64]
    recall: NDArray[np.float64]
    average_precision: float


@dataclass(frozen=True)
class CutoffCurves:
    """A metric at several cutoffs, for each run: ``means[run][i]`` is ``metric@ks[i]``.

    ``metric`` is the canonical name without the cutoff (``"ndcg"``); ``ks`` are sorted and
    distinct, and ``means`` lists the runs in the order given."""

    metric: str
    ks: tuple[int, ...]
    means: dict[str, tuple[float, ...]]


@dataclass(frozen=True)
class ReportCurves:
    """The curves of the HTML report, computed from a comparison's inputs.

    ``at_k``: one metric@K curve (K = 1..its largest K) per base ranking metric compared with
    a cutoff; ``roc``: the ROC curves of the runs that are tables of recommendations, when a
    classification metric is compared (else empty); ``models``: the runs left out of the ROC
    curves because they are model sources (:data:`MODEL_ROWS`), when a classification metric
    is compared (else empty)."""

    at_k: tuple[CutoffCurves, ...]
    roc: dict[str, RocCurve]
    models: tuple[str, ...]
