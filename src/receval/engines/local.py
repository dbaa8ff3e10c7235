"""The local engine: one process, every family on the canonical layout.

:func:`evaluate_local` reads truth and recs, builds the layout and runs the ranking kernel
once (:func:`receval.families.ranking.prepare`), then calls each requested family's provider
(:data:`receval.families.providers.PARTS`) and merges their parts into one
:class:`~receval.Result`.
"""

from __future__ import annotations

from typing import Any

from receval.data.io import Inputs
from receval.data.layout import IdType
from receval.families.beyond import check_train
from receval.families.contract import Context, NoRecsPolicy, TiesPolicy, merge
from receval.families.providers import PARTS
from receval.families.ranking import prepare, ranking_part
from receval.metrics.registry import Metric
from receval.metrics.result import Result

__all__ = ["evaluate_local"]


def evaluate_local(
    truth: Any,
    recs: Any,
    plan: tuple[Metric, ...],
    *,
    inputs: Inputs,
    kinds: dict[str, IdType],
    score_col: str,
    rank_col: str | None,
    relevance_col: str | None,
    ties: TiesPolicy,
    threshold: float,
    no_recs: NoRecsPolicy,
    options: dict[str, Any],
) -> Result:
    """:func:`receval.evaluate` on recommendation tables, in this process (options checked)."""
    ranking = tuple(m for m in plan if m.spec.family == "ranking")
    user_col, item_col = inputs.user_col, inputs.item_col  # every frame gets truth's names
    truth = inputs.read(truth, "truth", relevance_col or "relevance")
    recs = inputs.read(recs, "recs", score_col if rank_col is None else rank_col)
    prep, kernel = prepare(
        truth, recs, ranking, user_col=user_col, item_col=item_col, score_col=score_col,
        rank_col=rank_col, relevance_col=relevance_col, ties=ties,
        relevance_threshold=threshold, no_recs=no_recs, id_type=kinds,
        context=Context(
            train=options["train"], items=options["items"],
            item_features=options["item_features"], rating_range=options["rating_range"],
            inputs=inputs,
        ),
    )  # fmt: skip
    if options["train"] is not None:
        prep = check_train(prep, options["train"])
    settings = {
        "ties": ties, "relevance_threshold": prep.threshold, "no_recs": no_recs,
        "relevance_col": prep.relevance_col if prep.context.has_relevance else None,
    }  # fmt: skip
    parts = []
    if ranking:
        parts.append(ranking_part(ranking, prep, kernel))
    for family in ("classification", "rating", "beyond"):
        chosen = tuple(m for m in plan if m.spec.family == family)
        if chosen:
            parts.append(PARTS[family](chosen, prep))
    return merge(plan, parts, prep, settings)
