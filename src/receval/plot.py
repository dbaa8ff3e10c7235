"""Plots of evaluations and comparisons, with matplotlib (the ``plot`` extra:
``pip install 'receval[plot]'``).

Every function builds a :class:`matplotlib.figure.Figure` directly (no ``pyplot``, no
global state, no display needed), returns it, and also saves it when given ``path=`` (the
format from the suffix: ``.png``, ``.svg``, ``.pdf``; written atomically). matplotlib is
imported inside the functions, so ``import receval`` does not import it.

* :func:`roc`, :func:`pr`: ROC and precision-recall curves of each run's recommendation rows,
  labelled by truth (a recommended item is positive when its relevance reaches the threshold).
* :func:`metric_at_k`: a metric at every cutoff K = 1..N, one line per run.
* :func:`per_user`: the distribution of per-user values of a metric, one box (or violin)
  per model.
* :func:`intervals`: each model's mean with its bootstrap interval, one panel per metric.

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

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._errors import InputError
from ._io import atomic_path
from ._registry import parse_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ._compare import Comparison
    from ._result import Result

__all__ = ["intervals", "metric_at_k", "per_user", "pr", "roc"]


def _new_figure(width: float = 6.4, height: float = 4.8) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - the test extra installs matplotlib
        msg = "receval.plot needs matplotlib: pip install 'receval[plot]'"
        raise ImportError(msg) from exc
    return Figure(figsize=(width, height), layout="constrained")


def _finish(fig: Figure, path: str | os.PathLike[str] | None) -> Figure:
    if path is None:
        return fig
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    supported = fig.canvas.get_supported_filetypes()
    if fmt not in supported:
        msg = (
            f"path {str(target)!r}: cannot tell the image format from the suffix; expected one "
            f"of {', '.join('.' + k for k in sorted(supported))}."
        )
        raise InputError(msg)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=fmt, dpi=100)
    return fig


def _check_runs(runs: Mapping[str, Any]) -> None:
    if not isinstance(runs, Mapping) or not runs:
        msg = (
            "runs must be a non-empty mapping {model name: recommendations}; got "
            f"{type(runs).__name__}{' (empty)' if isinstance(runs, Mapping) else ''}."
        )
        raise InputError(msg)


def _labelled(
    truth: Any,
    recs: Any,
    *,
    user_col: str,
    item_col: str,
    score_col: str,
    relevance_col: str | None,
    relevance_threshold: float,
) -> tuple[Any, Any]:
    from ._pointwise import labelled_rows

    labels, scores, _users = labelled_rows(
        truth,
        recs,
        user_col=user_col,
        item_col=item_col,
        score_col=score_col,
        relevance_col=relevance_col,
        relevance_threshold=relevance_threshold,
    )
    return labels, scores


def roc(
    truth: Any,
    runs: Mapping[str, Any],
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    title: str | None = "ROC curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """ROC curves of the runs' recommendation rows, one line per run plus the chance line.

    Each recommended row is a sample: label 1 when truth gives the item a relevance >=
    ``relevance_threshold`` for that user, score from ``score_col``. The curve is
    :func:`receval.roc_curve` (every distinct score, as scikit-learn's
    ``roc_curve(drop_intermediate=False)``); the legend gives :func:`receval.auc`.
    """
    from ._classification import auc, roc_curve

    _check_runs(runs)
    fig = _new_figure()
    ax = fig.add_subplot()
    for name, recs in runs.items():
        labels, scores = _labelled(
            truth, recs, user_col=user_col, item_col=item_col, score_col=score_col,
            relevance_col=relevance_col, relevance_threshold=relevance_threshold,
        )  # fmt: skip
        fpr, tpr, _ = roc_curve(labels, scores)
        # the corners only: points inside a straight run change nothing that is drawn
        bends = np.r_[True, (np.diff(fpr, 2) != 0) | (np.diff(tpr, 2) != 0), True]
        ax.plot(fpr[bends], tpr[bends], label=f"{name} (AUC = {auc(labels, scores):.4f})")
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="chance")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.legend(loc="lower right")
    if title:
        ax.set_title(title)
    return _finish(fig, path)


def pr(
    truth: Any,
    runs: Mapping[str, Any],
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    title: str | None = "Precision-recall curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Precision-recall curves of the runs' recommendation rows (labelled as for :func:`roc`),
    drawn as steps, one line per run; the legend gives :func:`receval.average_precision`."""
    from ._classification import average_precision, pr_curve

    _check_runs(runs)
    fig = _new_figure()
    ax = fig.add_subplot()
    for name, recs in runs.items():
        labels, scores = _labelled(
            truth, recs, user_col=user_col, item_col=item_col, score_col=score_col,
            relevance_col=relevance_col, relevance_threshold=relevance_threshold,
        )  # fmt: skip
        precision, recall, _ = pr_curve(labels, scores)
        ap = average_precision(labels, scores)
        ax.plot(recall, precision, drawstyle="steps-post", label=f"{name} (AP = {ap:.4f})")
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.legend(loc="upper right")
    if title:
        ax.set_title(title)
    return _finish(fig, path)


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
    """``metric@K`` for every K in ``ks`` (an int N means K = 1..N), one line per run.

    ``metric`` is a metric with a cutoff, given without one (``"ndcg"``,
    ``"ndcg(gain=exp)"``); each run is evaluated once with every K. ``options`` go to
    :func:`receval.evaluate`.
    """
    from ._evaluate import evaluate

    _check_runs(runs)
    base = parse_metric(metric)
    if not base.spec.cutoff or base.k is not None:
        msg = (
            f"metric must be a metric with a cutoff, given without @K (e.g. 'ndcg'); "
            f"got {metric!r}."
        )
        raise InputError(msg)
    k_list = list(range(1, ks + 1)) if isinstance(ks, int) else sorted(set(ks))
    if not k_list or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in k_list):
        msg = f"ks must be an integer N >= 1 or a non-empty list of integers >= 1; got {ks!r}."
        raise InputError(msg)
    names = [f"{base.canonical}@{k}" for k in k_list]
    fig = _new_figure()
    ax = fig.add_subplot()
    for name, recs in runs.items():
        res = evaluate(truth, recs, names, **options)
        ax.plot(k_list, [res[n] for n in names], marker="o", markersize=3, label=name)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # cutoffs are whole numbers
    ax.set_xlabel("K")
    ax.set_ylabel(f"{base.canonical}@K")
    ax.legend()
    ax.set_title(title if title is not None else f"{base.canonical}@K")
    return _finish(fig, path)


def _per_user_values(source: Comparison | Mapping[str, Result], metric: str) -> dict[str, Any]:
    key = parse_metric(metric).canonical
    results = source.results if hasattr(source, "results") else source
    if not isinstance(results, Mapping) or not results:
        msg = "source must be a Comparison or a non-empty mapping {model name: Result}."
        raise InputError(msg)
    out = {}
    for name, res in results.items():
        if key not in res.per_user.columns:
            msg = (
                f"{key} has no per-user values in {name!r}'s result (a global metric, or not "
                f"evaluated); per-user columns: {', '.join(res.per_user.columns[1:]) or 'none'}."
            )
            raise InputError(msg)
        out[name] = res.per_user[key].drop_nulls().to_numpy()
    return out


def per_user(
    source: Comparison | Mapping[str, Result],
    metric: str,
    *,
    kind: Literal["box", "violin"] = "box",
    title: str | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """The distribution of the per-user values of ``metric``, one box (or violin) per model,
    with each model's mean as a marker.

    ``source`` is a :class:`~receval.Comparison` or a mapping ``{model name: Result}``.
    """
    if kind not in ("box", "violin"):
        msg = f"kind must be one of box, violin; got {kind!r}."
        raise InputError(msg)
    values = _per_user_values(source, metric)
    names = list(values)
    data = [values[n] for n in names]
    fig = _new_figure(max(4.0, 1.2 * len(names) + 2.0), 4.0)
    ax = fig.add_subplot()
    positions = list(range(1, len(names) + 1))
    if kind == "box":
        ax.boxplot(data, positions=positions, showmeans=True, widths=0.6)
    else:
        nonempty = [i for i, d in enumerate(data) if d.size]
        ax.violinplot(
            [data[i] for i in nonempty], positions=[positions[i] for i in nonempty], showmeans=True
        )
    ax.set_xticks(positions, names)
    key = parse_metric(metric).canonical
    ax.set_ylabel(f"{key} per user")
    ax.set_title(title if title is not None else f"{key}: per-user values")
    return _finish(fig, path)


def intervals(
    comparison: Comparison,
    *,
    metrics: Iterable[str] | None = None,
    title: str | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Each model's mean with its bootstrap interval, one panel per metric (models on the
    vertical axis, the baseline's mean as a dashed line, significant differences in red)."""
    keys = (
        list(comparison.metrics)
        if metrics is None
        else [parse_metric(m).canonical for m in metrics]
    )
    unknown = [k for k in keys if k not in comparison.metrics]
    if unknown or not keys:
        msg = (
            f"metrics must be among the compared metrics ({', '.join(comparison.metrics)}); "
            f"got {unknown or keys!r}."
        )
        raise InputError(msg)
    models = list(comparison.models)
    fig = _new_figure(3.2 * len(keys) + 1.0, 0.5 * len(models) + 1.6)
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    table = comparison.table
    for ax, key in zip(axes, keys, strict=True):
        rows = {r["model"]: r for r in table.filter(table["metric"] == key).iter_rows(named=True)}
        for y, model in enumerate(models):
            r = rows[model]
            if r["mean"] is None:
                continue
            color = "tab:red" if r["significant"] else "tab:blue"
            if r["ci_low"] is not None:
                err = [[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]]
                ax.errorbar([r["mean"]], [y], xerr=err, fmt="o", color=color, capsize=3)
            else:
                ax.plot([r["mean"]], [y], "o", color=color)
        base_mean = rows[comparison.baseline]["mean"]
        if base_mean is not None:
            ax.axvline(base_mean, linestyle="--", color="grey", linewidth=1)
        ax.set_yticks(range(len(models)), models if ax is axes[0] else [""] * len(models))
        ax.set_ylim(-0.6, len(models) - 0.4)
        ax.invert_yaxis()
        ax.set_title(key)
    if title:
        fig.suptitle(title)
    return _finish(fig, path)
