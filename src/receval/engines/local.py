"""The local engine: one process, every family on the canonical layout.

:func:`evaluate_local` reads truth and recs, builds the layout and runs the ranking kernel
once (:func:`receval.families.ranking.prepare`), then calls each requested family's provider
(:data:`receval.families.providers.PARTS`) and merges their parts into one
:class:`~receval.Result`. The layout is then dropped on another thread
(:func:`receval.kernels.memory.release_later`).
"""

from __future__ import annotations

from typing import Any

from receval.families.beyond import check_train, split_samples
from receval.families.contract import Options, merge
from receval.families.providers import PARTS
from receval.families.ranking import prepare, ranking_part
from receval.kernels.memory import release_later
from receval.metrics.result import Result
from receval.metrics.specs import Metric

__all__ = ["evaluate_local"]


def evaluate_local(truth: Any, recs: Any, plan: tuple[Metric, ...], options: Options) -> Result:
    """:func:`receval.evaluate` on recommendation tables, in this process (options checked)."""
    ranking = tuple(m for m in plan if m.spec.family == "ranking")
    inputs = options.inputs  # every frame gets truth's names
    truth = inputs.read(truth, "truth", options.relevance_name)
    recs = inputs.read(recs, "recs", options.order_col)
    context = options.context()
    if options.sample_col is not None:  # several sampled rankings per user (docs/fairness.md)
        recs, samples = split_samples(
            recs, user_col=options.user_col, item_col=options.item_col,
            order_col=options.order_col, sample_col=options.sample_col, by_rank=options.by_rank,
        )  # fmt: skip
        context = options.context(samples=samples)
    prep, kernel = prepare(
        truth, recs, ranking, user_col=options.user_col, item_col=options.item_col,
        score_col=options.score_col, rank_col=options.rank_col,
        relevance_col=options.relevance_col, ties=options.ties,
        relevance_threshold=options.threshold, no_recs=options.no_recs, id_type=options.kinds,
        context=context,
    )  # fmt: skip
    if options.train is not None:
        prep = check_train(prep, options.train)
    settings = options.settings(bool(prep.context.has_relevance))
    parts = []
    if ranking:
        parts.append(ranking_part(ranking, prep, kernel))
    for family in ("classification", "rating", "beyond"):
        chosen = tuple(m for m in plan if m.spec.family == family)
        if chosen:
            parts.append(PARTS[family](chosen, prep))
    result = merge(plan, parts, prep, settings)
    held = [prep, kernel, parts, truth, recs]
    del prep, kernel, parts, truth, recs
    release_later(held)  # the layout's memory maps go back to the OS on another thread
    return result
