"""Results by segment: the same evaluation on each segment's rows.

A user segment is its truth users and their recommendations; an item segment is the truth
rows of its items (so ranking metrics count only the segment's relevant items) and the
recommendations of the users those rows belong to. Each segment is evaluated like a whole
run, by the engine the caller passes in (so a segment's numbers equal an evaluation of that
segment's rows alone); docs/segments.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import polars as pl

from receval._errors import RecevalError
from receval.data.segments import Segmentation, same_id_type
from receval.metrics.result import Result
from receval.metrics.specs import Metric

__all__ = ["BY_SEGMENT_SCHEMA", "evaluate_segments", "segment_plan"]

BY_SEGMENT_SCHEMA = {
    "segmentation": pl.String,
    "kind": pl.String,
    "segment": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "users": pl.Int64,
    "note": pl.String,
}

Run = Callable[[pl.DataFrame, Any, tuple[Metric, ...]], Result]


def segment_plan(plan: tuple[Metric, ...], kind: str) -> tuple[Metric, ...]:
    """The metrics a segment of ``kind`` reports: every one for users; for items, all but
    the beyond-accuracy metrics (they judge whole lists, not the segment's truth items)."""
    if kind == "user":
        return plan
    return tuple(m for m in plan if m.spec.family != "beyond")


def _labels(frame: pl.DataFrame, col: str, seg: Segmentation) -> pl.Series:
    """The segment of each row of ``frame`` (null: its id is not in the segmentation)."""
    ids, table_ids = same_id_type(frame[col], seg.table[col])
    table = pl.DataFrame({"__id": table_ids, "segment": seg.table["segment"]})
    keyed = pl.DataFrame({"__id": ids}).join(table, on="__id", how="left", maintain_order="left")
    return keyed["segment"]


def _users_of(result: Result, metric: Metric) -> int:
    name = metric.canonical
    if name in result.per_user.columns:
        return int(result.per_user[name].drop_nulls().len())
    return int(result.counts.evaluated)


def _each(
    run: Run, truth: pl.DataFrame, recs: Any, metrics: tuple[Metric, ...]
) -> tuple[Result | None, dict[str, str]]:
    """The segment evaluated without the metrics that raise on it alone (their errors by
    name); None when every metric raises."""
    failed: dict[str, str] = {}
    for m in metrics:
        try:
            run(truth, recs, (m,))
        except RecevalError as exc:
            failed[m.canonical] = str(exc)
    kept = tuple(m for m in metrics if m.canonical not in failed)
    return (run(truth, recs, kept) if kept else None), failed


def evaluate_segments(
    run: Run,
    truth: pl.DataFrame,
    recs: Any,
    segmentations: list[Segmentation],
    plan: tuple[Metric, ...],
    *,
    user_col: str,
    item_col: str,
) -> tuple[pl.DataFrame, dict[tuple[str, str | None], Result]]:
    """Evaluate every segment of every segmentation with ``run(truth, recs, metrics)``.

    ``recs`` is a table (filtered to each segment's users) or a model source (passed as is:
    a model scores truth's users only). Returns the ``by_segment`` frame (one row per
    segmentation, segment and metric, in display order; a segment without truth rows, and a
    metric that is undefined on a segment's rows (AUC where every row has one label, ...),
    have a null value, 0 users and the reason in ``note``) and each evaluated segment's
    :class:`Result` (without the metrics undefined on it).
    """
    table_recs = isinstance(recs, pl.DataFrame)
    rows: list[tuple[Any, ...]] = []
    results: dict[tuple[str, str | None], Result] = {}
    for seg in segmentations:
        col = user_col if seg.kind == "user" else item_col
        metrics = segment_plan(plan, seg.kind)
        labelled = truth.with_columns(_labels(truth, col, seg).alias("__segment"))
        labels: list[str | None] = list(seg.labels)
        if labelled["__segment"].null_count():
            labels.append(None)  # truth rows whose id the segmentation does not list
        for label in labels:
            mask = pl.col("__segment").is_null() if label is None else pl.col("__segment") == label
            part = labelled.filter(mask).drop("__segment")
            if part.height == 0:
                rows.extend((seg.name, seg.kind, label, m.canonical, None, 0, "no truth rows")
                            for m in metrics)  # fmt: skip
                continue
            users = part[user_col].unique()
            seg_recs = recs
            if table_recs:
                r_ids, u_ids = same_id_type(recs[user_col], users)
                seg_recs = recs.filter(r_ids.is_in(u_ids.implode()))  # is_in(Series): deprecated
            res: Result | None
            try:
                res = run(part, seg_recs, metrics)
            except RecevalError:  # a metric undefined on this segment (AUC with one class...)
                res, failed = _each(run, part, seg_recs, metrics)
            else:
                failed = {}
            if res is not None:
                results[seg.name, label] = res
            for m in metrics:
                if m.canonical in failed or res is None:
                    note = failed.get(m.canonical, "not evaluated")
                    rows.append((seg.name, seg.kind, label, m.canonical, None, 0, note))
                    continue
                value: float | None = res[m.canonical]
                if value is not None and math.isnan(value):
                    value = None
                rows.append(
                    (seg.name, seg.kind, label, m.canonical, value, _users_of(res, m), None)
                )
    return pl.DataFrame(rows, schema=BY_SEGMENT_SCHEMA, orient="row"), results
