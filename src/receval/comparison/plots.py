"""Plots of evaluations and comparisons, with matplotlib (a dependency of receval).

Every function builds a :class:`matplotlib.figure.Figure` directly (no ``pyplot``, no
global state, no display needed), returns it, and also saves it when given ``path=`` (the
format from the suffix: ``.png``, ``.svg``, ``.pdf``; written atomically). matplotlib is
imported inside the functions, so ``import receval`` does not import it.

* :func:`roc`, :func:`pr`: ROC and precision-recall curves of each run's recommendation rows,
  labelled by truth (a recommended item is positive when its relevance reaches the threshold).
* :func:`metric_at_k`: a metric at every cutoff K = 1..N (N <= :data:`MAX_KS`) or at the
  given cutoffs, one line per run.
* :func:`per_user`: the distribution of per-user values of a metric, one box (or violin)
  per model.
* :func:`intervals`: each model's mean with its bootstrap interval, one panel per metric.
* :func:`segments`: each model's mean in every segment of one segmentation, as grouped bars
  (``compare(..., segments=...)``), one panel per metric.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from receval._errors import InputError, about, check_choice
from receval.arrays.classification import auc, average_precision, pr_curve, roc_curve
from receval.comparison.text import plain
from receval.data.io import atomic_path
from receval.engines.model import is_model
from receval.evaluation import evaluate
from receval.families.pointwise import labelled_rows
from receval.metrics.registry import parse_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from receval.comparison.compare import Comparison
    from receval.metrics.result import Result

__all__ = [
    "INTERVALS_PER_ROW",
    "MAX_KS",
    "intervals",
    "metric_at_k",
    "per_user",
    "pr",
    "roc",
    "segments",
]

MAX_KS = 10_000
"""The largest N of :func:`metric_at_k`'s ``ks=N`` (K = 1..N) and of ``receval plot
metric-at-k --k N``. Longer ranges draw more points than a figure can show, and past the
longest list a curve only drifts with K (precision@K is hits / K); an explicit list of
cutoffs has no limit."""


def _new_figure(width: float = 6.4, height: float = 4.8) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _literal(text: str) -> str:
    """``text`` as matplotlib draws it literally: on one line (control characters as spaces)
    and with each ``$`` escaped, so that a name is never read as mathtext (``$$`` raised,
    ``$x^2$`` was drawn as math). Every name, label and title of these plots goes through it.
    """
    return plain(text).replace("$", r"\$")


# Legends are given their handles: without them matplotlib leaves out every artist whose
# label starts with "_" (a model named "_new" would vanish from the legend).


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


MODEL_ROWS = (
    "a model has no recommendation rows, and the curve over every user x catalog item would "
    "compare raw scores of different users, which has no meaning (the reason evaluate refuses "
    "auc from a model)"
)
"""Why :func:`roc` and :func:`pr` draw no model source (the HTML report says it too)."""


def _check_not_model(name: str, recs: Any, what: str) -> None:
    if is_model(recs):
        msg = (
            f"run {name!r} is a model source ({type(recs).__name__}): {what} draws a run's "
            f"recommendation rows; {MODEL_ROWS}. Compare gauc (each user's exact AUC over "
            f"their candidates), or draw receval.topk(model, k), a recommendations table."
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
    id_type: str | Mapping[str, str],
) -> tuple[Any, Any]:
    labels, scores, _users = labelled_rows(
        truth,
        recs,
        user_col=user_col,
        item_col=item_col,
        score_col=score_col,
        relevance_col=relevance_col,
        relevance_threshold=relevance_threshold,
        id_type=id_type,
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
    _check_runs(runs)
    for name, recs in runs.items():
        _check_not_model(name, recs, "roc")
    fig = _new_figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    for name, recs in runs.items():
        with about(f"run {name!r}"):
            labels, scores = _labelled(
                truth, recs, user_col=user_col, item_col=item_col, score_col=score_col,
                relevance_col=relevance_col, relevance_threshold=relevance_threshold,
                id_type=id_type,
            )  # fmt: skip
        fpr, tpr, _ = roc_curve(labels, scores)
        # the corners only: points inside a straight run change nothing that is drawn
        bends = np.r_[True, (np.diff(fpr, 2) != 0) | (np.diff(tpr, 2) != 0), True]
        label = _literal(f"{name} (AUC = {auc(labels, scores):.4f})")
        handles += ax.plot(fpr[bends], tpr[bends], label=label)
    handles += ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="chance")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.legend(handles=handles, loc="lower right")
    if title:
        ax.set_title(_literal(title))
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
    id_type: str | Mapping[str, str] = "auto",
    title: str | None = "Precision-recall curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Precision-recall curves of the runs' recommendation rows (labelled as for :func:`roc`),
    drawn as steps, one line per run; the legend gives :func:`receval.average_precision`."""
    _check_runs(runs)
    for name, recs in runs.items():
        _check_not_model(name, recs, "pr")
    fig = _new_figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    for name, recs in runs.items():
        with about(f"run {name!r}"):
            labels, scores = _labelled(
                truth, recs, user_col=user_col, item_col=item_col, score_col=score_col,
                relevance_col=relevance_col, relevance_threshold=relevance_threshold,
                id_type=id_type,
            )  # fmt: skip
        precision, recall, _ = pr_curve(labels, scores)
        ap = average_precision(labels, scores)
        label = _literal(f"{name} (AP = {ap:.4f})")
        handles += ax.plot(recall, precision, drawstyle="steps-post", label=label)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.legend(handles=handles, loc="upper right")
    if title:
        ax.set_title(_literal(title))
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
    """``metric@K`` for every K in ``ks``, one line per run.

    ``metric`` is a metric with a cutoff, given without one (``"ndcg"``,
    ``"ndcg(gain=exp)"``); each run is evaluated once with every K (the cost grows linearly
    with the number of cutoffs). ``ks`` is an integer N (K = 1..N; at most :data:`MAX_KS`,
    10,000) or a list of integers >= 1 (any number of them, any size). ``options`` go to
    :func:`receval.evaluate`.
    """
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
    fig = _new_figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    for name, recs in runs.items():
        with about(f"run {name!r}"):
            means = evaluate(truth, recs, names, **options).means  # canonical names: no parsing
        means_k = [means[n] for n in names]
        handles += ax.plot(k_list, means_k, marker="o", markersize=3, label=_literal(name))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # cutoffs are whole numbers
    ax.set_xlabel("K")
    ax.set_ylabel(_literal(f"{base.canonical}@K"))
    ax.legend(handles=handles)
    ax.set_title(_literal(title if title is not None else f"{base.canonical}@K"))
    return _finish(fig, path)


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
    check_choice("kind", kind, ("box", "violin"))
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
    ax.set_xticks(positions, [_literal(n) for n in names])
    key = parse_metric(metric).canonical
    ax.set_ylabel(_literal(f"{key} per user"))
    ax.set_title(_literal(title if title is not None else f"{key}: per-user values"))
    return _finish(fig, path)


def intervals(
    comparison: Comparison,
    *,
    metrics: Iterable[str] | None = None,
    title: str | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Each model's mean with its bootstrap interval, one panel per metric (models on the
    vertical axis, the baseline's mean as a dashed line, significant differences in red), at
    most :data:`INTERVALS_PER_ROW` (3) panels a row: more metrics wrap to more rows.

    A legend under the panels explains the colours: the baseline (black, its mean dashed),
    ``significant (adjusted p <= alpha)`` (red), ``not significant`` (blue) and, when some
    model has no test (a metric without per-user values), ``no test`` (grey).
    """
    keys = (
        list(comparison.metrics)
        if metrics is None
        else [parse_metric(m).canonical for m in metrics]
    )
    compared = set(comparison.metrics)
    unknown = [k for k in keys if k not in compared]
    if unknown or not keys:
        msg = (
            f"metrics must be among the compared metrics ({', '.join(comparison.metrics)}); "
            f"got {unknown or keys!r}."
        )
        raise InputError(msg)
    models = list(comparison.models)
    n_cols = min(len(keys), INTERVALS_PER_ROW)
    n_rows = -(-len(keys) // n_cols)
    fig = _new_figure(3.2 * n_cols + 1.0, (0.5 * len(models) + 1.2) * n_rows + 0.6)
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    for ax in grid.ravel()[len(keys) :]:  # the last row's empty places
        fig.delaxes(ax)
    axes = grid.ravel()[: len(keys)]
    cells: dict[str, dict[str, dict[str, Any]]] = {}  # metric -> model -> row, in one pass
    for r in comparison.table.iter_rows(named=True):
        cells.setdefault(r["metric"], {})[r["model"]] = r
    untested = False
    for ax, key in zip(axes, keys, strict=True):
        rows = cells[key]
        for y, model in enumerate(models):
            r = rows[model]
            if r["mean"] is None:
                continue
            if model == comparison.baseline:
                color = _BASELINE
            elif r["significant"] is None:
                color, untested = _UNTESTED, True
            else:
                color = _SIGNIFICANT if r["significant"] else _NOT_SIGNIFICANT
            if r["ci_low"] is not None:
                err = [[r["mean"] - r["ci_low"]], [r["ci_high"] - r["mean"]]]
                ax.errorbar([r["mean"]], [y], xerr=err, fmt="o", color=color, capsize=3)
            else:
                ax.plot([r["mean"]], [y], "o", color=color)
        base_mean = rows[comparison.baseline]["mean"]
        if base_mean is not None:
            ax.axvline(base_mean, linestyle="--", color="grey", linewidth=1)
        first = ax is axes[0] or ax.get_subplotspec().is_first_col()
        shown = [_literal(m) for m in models] if first else [""] * len(models)
        ax.set_yticks(range(len(models)), shown)
        ax.set_ylim(-0.6, len(models) - 0.4)
        ax.invert_yaxis()
        ax.set_title(_literal(key))
    _intervals_legend(fig, comparison, untested)
    if title:
        fig.suptitle(_literal(title))
    return _finish(fig, path)


INTERVALS_PER_ROW = 3
"""The most panels (metrics) in a row of :func:`intervals`; more metrics wrap to more rows,
so that each panel stays wide enough to read (eight metrics: three rows of three)."""

_BASELINE, _SIGNIFICANT, _NOT_SIGNIFICANT, _UNTESTED = "black", "tab:red", "tab:blue", "tab:gray"


def _intervals_legend(fig: Figure, comparison: Comparison, untested: bool) -> None:
    """The legend of :func:`intervals`, under the panels: what each colour means."""
    from matplotlib.lines import Line2D

    alpha = comparison.settings.get("alpha", 0.05)
    entries = [
        (_literal(f"baseline: {comparison.baseline} (mean dashed)"), _BASELINE),
        (f"significant (adjusted p <= {alpha:g})", _SIGNIFICANT),
        ("not significant", _NOT_SIGNIFICANT),
    ]
    if untested:
        entries.append(("no test", _UNTESTED))
    handles = [
        Line2D([], [], color="grey" if color == _BASELINE else color, marker="o",
               linestyle="--" if color == _BASELINE else "none", markerfacecolor=color,
               markeredgecolor=color, label=label)
        for label, color in entries
    ]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize="small")


def segments(
    comparison: Comparison,
    segmentation: str,
    *,
    metrics: Iterable[str] | None = None,
    title: str | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Grouped bars of each model's mean in every segment of ``segmentation`` (a comparison
    made with ``segments=``), one panel per metric: segments along the horizontal axis, one
    bar per model, the bootstrap interval as an error bar where there is one, and ``*`` over
    the bars that differ significantly from the baseline's in that segment."""
    frame = comparison.by_segment
    if frame is None:
        msg = "the comparison has no segments: compare(..., segments=...) makes them."
        raise InputError(msg)
    names = frame["segmentation"].unique(maintain_order=True).to_list()
    if segmentation not in names:
        msg = f"segmentation must be one of {names}; got {segmentation!r}."
        raise InputError(msg)
    rows = frame.filter(frame["segmentation"] == segmentation)
    present = rows["metric"].unique(maintain_order=True).to_list()
    keys = present if metrics is None else [parse_metric(m).canonical for m in metrics]
    unknown = [k for k in keys if k not in present]
    if unknown or not keys:
        msg = f"metrics must be among {present} for {segmentation!r}; got {unknown or keys!r}."
        raise InputError(msg)
    labels = [
        "(not listed)" if s is None else str(s)
        for s in rows["segment"].unique(maintain_order=True).to_list()
    ]
    models = list(comparison.models)
    cells = {
        ("(not listed)" if r["segment"] is None else r["segment"], r["model"], r["metric"]): r
        for r in rows.iter_rows(named=True)
    }
    fig = _new_figure(max(4.0, 0.9 * len(labels) * max(1, len(models)) / 2 + 2.0) * len(keys),
                      3.8)  # fmt: skip
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    width = 0.8 / max(1, len(models))
    x = np.arange(len(labels), dtype=float)
    handles: list[Any] = []
    for ax, key in zip(axes, keys, strict=True):
        for j, model in enumerate(models):
            pos = x - 0.4 + width * (j + 0.5)
            got = [cells.get((label, model, key)) for label in labels]
            means = [np.nan if c is None or c["mean"] is None else c["mean"] for c in got]
            low = [m - c["ci_low"] if c is not None and c["ci_low"] is not None else 0.0
                   for m, c in zip(means, got, strict=True)]  # fmt: skip
            high = [c["ci_high"] - m if c is not None and c["ci_high"] is not None else 0.0
                    for m, c in zip(means, got, strict=True)]  # fmt: skip
            has_ci = any(low) or any(high)
            bars = ax.bar(pos, means, width, yerr=[low, high] if has_ci else None, capsize=2,
                          label=_literal(model))  # fmt: skip
            if ax is axes[0]:
                handles.append(bars)
            for p, m, c in zip(pos, means, got, strict=True):
                if c is not None and c["significant"]:
                    ax.annotate("*", (p, m), ha="center", va="bottom", color=_SIGNIFICANT)
        ax.set_xticks(x, [_literal(label) for label in labels])
        ax.set_title(_literal(key))
    axes[0].legend(handles=handles, fontsize="small")
    fig.suptitle(_literal(title or f"by segment: {segmentation}"))
    return _finish(fig, path)
