"""Plots of evaluations and comparisons, with matplotlib (a dependency of receval).

Every function takes numbers and draws them: a comparison (:class:`receval.Comparison`),
results, or the curves that :mod:`receval.comparison.curves` computes; none evaluates. Each
builds a :class:`matplotlib.figure.Figure` directly (no ``pyplot``, no global state, no display
needed), returns it, and also saves it when given ``path=`` (the format from the suffix:
``.png``, ``.svg``, ``.pdf``; written atomically). matplotlib is imported inside the functions,
so ``import receval`` does not import it.

* :func:`draw_roc`, :func:`draw_pr`: ROC and precision-recall curves, one line per run
  (``receval.plot.roc`` and ``receval.plot.pr`` compute them from truth and runs, then draw
  them here).
* :func:`draw_metric_at_k`: a metric at several cutoffs, one line per run
  (``receval.plot.metric_at_k``).
* :func:`per_user`: the distribution of per-user values of a metric, one box (or violin)
  per model.
* :func:`intervals`: each model's mean with its bootstrap interval, one panel per metric.
* :func:`segments`: each model's mean in every segment of one segmentation, as grouped bars
  (``compare(..., segments=...)``), one panel per metric.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from receval._errors import InputError, check_choice
from receval.comparison.data import ComparisonData, CutoffCurves, PrCurve, RocCurve
from receval.comparison.text import plain
from receval.data.io import atomic_path
from receval.metrics.registry import parse_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from receval.metrics.result import Result

__all__ = [
    "INTERVALS_PER_ROW",
    "draw_metric_at_k",
    "draw_pr",
    "draw_roc",
    "intervals",
    "per_user",
    "segments",
]


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


def draw_roc(
    curves: Mapping[str, RocCurve],
    *,
    title: str | None = "ROC curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """ROC curves, one line per run (its AUC in the legend), plus the chance line."""
    fig = _new_figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    for name, curve in curves.items():
        fpr, tpr = curve.fpr, curve.tpr
        # the corners only: points inside a straight run change nothing that is drawn
        bends = np.r_[True, (np.diff(fpr, 2) != 0) | (np.diff(tpr, 2) != 0), True]
        label = _literal(f"{name} (AUC = {curve.auc:.4f})")
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


def draw_pr(
    curves: Mapping[str, PrCurve],
    *,
    title: str | None = "Precision-recall curve",
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """Precision-recall curves drawn as steps, one line per run (its average precision in
    the legend)."""
    fig = _new_figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    for name, curve in curves.items():
        label = _literal(f"{name} (AP = {curve.average_precision:.4f})")
        handles += ax.plot(curve.recall, curve.precision, drawstyle="steps-post", label=label)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.legend(handles=handles, loc="upper right")
    if title:
        ax.set_title(_literal(title))
    return _finish(fig, path)


def draw_metric_at_k(
    curves: CutoffCurves,
    *,
    title: str | None = None,
    path: str | os.PathLike[str] | None = None,
) -> Figure:
    """A metric at its cutoffs, one line per run; the title defaults to ``metric@K``."""
    fig = _new_figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    ks = list(curves.ks)
    for name, means in curves.means.items():
        handles += ax.plot(ks, list(means), marker="o", markersize=3, label=_literal(name))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # cutoffs are whole numbers
    ax.set_xlabel("K")
    ax.set_ylabel(_literal(f"{curves.metric}@K"))
    ax.legend(handles=handles)
    ax.set_title(_literal(title if title is not None else f"{curves.metric}@K"))
    return _finish(fig, path)


def _per_user_values(source: ComparisonData | Mapping[str, Result], metric: str) -> dict[str, Any]:
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
    source: ComparisonData | Mapping[str, Result],
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
    comparison: ComparisonData,
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


def _intervals_legend(fig: Figure, comparison: ComparisonData, untested: bool) -> None:
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
    comparison: ComparisonData,
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
