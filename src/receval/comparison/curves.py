"""The curves of runs over truth: ROC and precision-recall curves of each run's
recommendation rows, and a metric at many cutoffs.

The numbers are computed here (:func:`roc_curves`, :func:`pr_curves`, :func:`cutoff_curves`,
and :func:`report_curves` for the HTML report) as the data types of
:mod:`receval.comparison.data`; :mod:`receval.comparison.plots` draws them and never
evaluates. :func:`roc`, :func:`pr` and :func:`metric_at_k` (``receval.plot.roc``, ...) are the
two steps in one call.

Examples
--------
>>> import receval
>>> truth = {"u1": {"a": 1, "b": 1}, "u2": {"c": 1}}
>>> runs = {"m1": {"u1": {"a": 0.9, "x": 0.5, "b": 0.1}, "u2": {"c": 0.7}},
...         "m2": {"u1": {"x": 0.9, "a": 0.5}, "u2": {"y": 0.7, "c": 0.2}}}
>>> fig = receval.plot.metric_at_k(truth, runs, "recall", ks=3)
>>> [line.get_label() for line in fig.axes[0].get_lines()]
['m1', 'm2']
>>> fig.axes[0].get_lines()[0].get_ydata().tolist()  # recall@1, @2, @3 of m1
[0.75, 0.75, 1.0]
"""

from __future__ import annotations

import numbers
import os
import reprlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from receval._errors import InputError, about
from receval.arrays.classification import auc, average_precision, pr_curve, roc_curve
from receval.comparison.data import (
    MODEL_ROWS,
    ComparisonData,
    CutoffCurves,
    PrCurve,
    ReportCurves,
    RocCurve,
)
from receval.comparison.plots import draw_metric_at_k, draw_pr, draw_roc
from receval.data.models import is_model
from receval.engines.local import labelled_rows
from receval.evaluation import evaluate
from receval.metrics.registry import parse_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MAX_KS",
    "cutoff_curves",
    "metric_at_k",
    "pr",
    "pr_curves",
    "report_curves",
    "roc",
    "roc_curves",
]

MAX_KS = 10_000
"""The largest N of :func:`metric_at_k`'s ``ks=N`` (K = 1..N) and of ``receval plot
metric-at-k --k N``. Longer ranges draw more points than a figure can show, and past the
longest list a curve only drifts with K (precision@K is hits / K); an explicit list of
cutoffs has no limit."""

_MAX_CURVE_K = 100  # the longest metric@K curve of the HTML report


def _check_runs(runs: Mapping[str, Any]) -> None:
    if not isinstance(runs, Mapping) or not runs:
        msg = (
            "runs must be a non-empty mapping {model name: recommendations}; got "
            f"{type(runs).__name__}{' (empty)' if isinstance(runs, Mapping) else ''}."
        )
        raise InputError(msg)


def _check_not_model(name: str, recs: Any, what: str) -> None:
    if is_model(recs):
        msg = (
            f"run {name!r} is a model source ({type(recs).__name__}): {what} draws a run's "
            f"recommendation rows; {MODEL_ROWS}. Compare gauc (each user's exact AUC over "
            f"their candidates), or draw receval.topk(model, k), a recommendations table."
        )
        raise InputError(msg)


def _labelled_runs(
    truth: Any, runs: Mapping[str, Any], what: str, **columns: Any
) -> Iterable[tuple[str, Any, Any]]:
    """``(name, labels, scores)`` of each run's recommendation rows, labelled by truth
    (after every run is checked to be a table, not a model source)."""
    _check_runs(runs)
    for name, recs in runs.items():
        _check_not_model(name, recs, what)
    for name, recs in runs.items():
        with about(f"run {name!r}"):
            labels, scores, _users = labelled_rows(truth, recs, **columns)
        yield name, labels, scores


def roc_curves(truth: Any, runs: Mapping[str, Any], **columns: Any) -> dict[str, RocCurve]:
    """Run name -> the ROC curve of its recommendation rows, labelled by truth as for
    :func:`roc` (``columns``: its ``user_col`` ... ``id_type``)."""
    out = {}
    for name, labels, scores in _labelled_runs(truth, runs, "roc", **columns):
        fpr, tpr, _ = roc_curve(labels, scores)
        out[name] = RocCurve(fpr, tpr, auc(labels, scores))
    return out


def pr_curves(truth: Any, runs: Mapping[str, Any], **columns: Any) -> dict[str, PrCurve]:
    """Run name -> the precision-recall curve of its recommendation rows, labelled by truth
    as for :func:`roc` (``columns``: its ``user_col`` ... ``id_type``)."""
    out = {}
    for name, labels, scores in _labelled_runs(truth, runs, "pr", **columns):
        precision, recall, _ = pr_curve(labels, scores)
        out[name] = PrCurve(precision, recall, average_precision(labels, scores))
    return out


def cutoff_curves(
    truth: Any,
    runs: Mapping[str, Any],
    metric: str = "ndcg",
    *,
    ks: int | Iterable[int] = 10,
    **options: Any,
) -> CutoffCurves:
    """``metric@K`` of each run for every K in ``ks`` (as for :func:`metric_at_k`): each run
    is evaluated once, with every cutoff."""
    _check_runs(runs)
    base = parse_metric(metric)
    if not base.spec.cutoff or base.k is not None:
        msg = (
            f"metric must be a metric with a cutoff, given without @K (e.g. 'ndcg'); "
            f"got {metric!r}."
        )
        raise InputError(msg)
    k_list = _cutoffs(ks)
    names = [f"{base.canonical}@{k}" for k in k_list]
    means: dict[str, tuple[float, ...]] = {}
    for name, recs in runs.items():
        with about(f"run {name!r}"):
            got = evaluate(truth, recs, names, **options).means  # canonical names: no parsing
        means[name] = tuple(got[n] for n in names)
    return CutoffCurves(base.canonical, tuple(k_list), means)


def _integer(value: object) -> int | None:
    """``value`` as an int when it is an integer (numpy's too; not a bool), else None."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _cutoffs(ks: object) -> list[int]:
    """The sorted distinct cutoffs of :func:`metric_at_k`'s ``ks``, or :class:`InputError`."""
    shown = reprlib.repr(ks)
    bad = f"ks must be an integer N >= 1 or a non-empty list of integers >= 1; got {shown}."
    n = _integer(ks)
    if n is not None:
        if n < 1:
            raise InputError(bad)
        if n > MAX_KS:
            msg = (
                f"ks must be an integer N from 1 to {MAX_KS} (K = 1..N, receval.plot.MAX_KS) or a "
                f"non-empty list of integers >= 1; got {n}. Pass the cutoffs to draw as a list, "
                f"e.g. ks=[1, 10, 100, 1000, {n}]."
            )
            raise InputError(msg)
        return list(range(1, n + 1))
    if isinstance(ks, str | bytes) or not isinstance(ks, Iterable):
        raise InputError(bad)
    try:
        values = [_integer(k) for k in ks]
    except TypeError:  # iterable in type only, e.g. a 0-d numpy array
        raise InputError(bad) from None
    if not values or any(k is None or k < 1 for k in values):
        raise InputError(bad)
    return sorted({k for k in values if k is not None})


def report_curves(cmp: ComparisonData) -> ReportCurves | None:
    """The HTML report's curves, computed from the comparison's inputs (None when they are
    not known): metric@K for K = 1..K of each ranking metric with a cutoff (one curve per base
    metric, its largest K, at most 100), and the ROC curves of the runs that are tables when
    a classification metric is among the compared ones (a model source has none: it is named
    in :attr:`~receval.comparison.data.ReportCurves.models`). The runs are evaluated again,
    with the comparison's options."""
    inputs = cmp.inputs
    if inputs is None:
        return None
    truth, runs, options = inputs["truth"], inputs["runs"], inputs["options"]
    longest: dict[str, int] = {}
    classification = False
    for name in cmp.metrics:
        m = parse_metric(name)
        if m.sampling is not None:  # no curve of a sampled estimate
            continue
        classification = classification or m.spec.family == "classification"
        if m.spec.family == "ranking" and m.k is not None:
            base = m.canonical.rsplit("@", 1)[0]
            longest[base] = max(longest.get(base, 0), min(m.k, _MAX_CURVE_K))
    at_k = tuple(cutoff_curves(truth, runs, base, ks=k, **options) for base, k in longest.items())
    if not classification:
        return ReportCurves(at_k, {}, ())
    models = tuple(name for name, run in runs.items() if is_model(run))
    tables = {name: run for name, run in runs.items() if name not in models}
    keys = ("user_col", "item_col", "score_col", "relevance_col", "relevance_threshold",
            "id_type")  # fmt: skip
    roc_options = {key: options[key] for key in keys if key in options}
    return ReportCurves(at_k, roc_curves(truth, tables, **roc_options) if tables else {}, models)


def roc(
    truth: Any,
    runs: Mapping[str, Any],
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    id_type: str | Mapping[str, str] = "auto",
    title: str | None = "ROC curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """ROC curves of the runs' recommendation rows, one line per run plus the chance line.

    Each recommended row is a sample: label 1 when truth gives the item a relevance >=
    ``relevance_threshold`` for that user, score from ``score_col``. The curve is
    :func:`receval.roc_curve` (every distinct score, as scikit-learn's
    ``roc_curve(drop_intermediate=False)``); the legend gives :func:`receval.auc`.
    ``id_type`` types the ids as :func:`receval.evaluate`'s does.
    """
    curves = roc_curves(
        truth, runs, user_col=user_col, item_col=item_col, score_col=score_col,
        relevance_col=relevance_col, relevance_threshold=relevance_threshold, id_type=id_type,
    )  # fmt: skip
    return draw_roc(curves, title=title, path=path)


def pr(
    truth: Any,
    runs: Mapping[str, Any],
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    id_type: str | Mapping[str, str] = "auto",
    title: str | None = "Precision-recall curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Precision-recall curves of the runs' recommendation rows (labelled as for :func:`roc`),
    drawn as steps, one line per run; the legend gives :func:`receval.average_precision`."""
    curves = pr_curves(
        truth, runs, user_col=user_col, item_col=item_col, score_col=score_col,
        relevance_col=relevance_col, relevance_threshold=relevance_threshold, id_type=id_type,
    )  # fmt: skip
    return draw_pr(curves, title=title, path=path)


def metric_at_k(
    truth: Any,
    runs: Mapping[str, Any],
    metric: str = "ndcg",
    *,
    ks: int | Iterable[int] = 10,
    title: str | None = None,
    path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Figure:
    """``metric@K`` for every K in ``ks``, one line per run.

    ``metric`` is a metric with a cutoff, given without one (``"ndcg"``,
    ``"ndcg(gain=exp)"``); each run is evaluated once with every K (the cost grows linearly
    with the number of cutoffs). ``ks`` is an integer N (K = 1..N; at most :data:`MAX_KS`,
    10,000) or a list of integers >= 1 (any number of them, any size). ``options`` go to
    :func:`receval.evaluate`.
    """
    curves = cutoff_curves(truth, runs, metric, ks=ks, **options)
    return draw_metric_at_k(curves, title=title, path=path)
