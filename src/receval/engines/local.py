"""The local engine: one process, every family on the canonical layout.

:func:`evaluate_local` reads truth and recs into the layout
(:func:`receval.data.tables.read_pair`) and runs the ranking kernel once
(:func:`receval.families.ranking.prepare`), then calls each requested family's provider
(:func:`receval.families.providers.family_parts`) and merges their parts into one
:class:`~receval.Result`. The layout is then dropped on another thread
(:func:`receval.kernels.memory.release_later`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from receval.data.layout import IdTypeArg, check_id_type
from receval.data.tables import read_pair, split_samples
from receval.engines.inputs import with_family_tables, with_train
from receval.families.contract import Options, check_threshold, merge
from receval.families.pointwise import labelled
from receval.families.providers import family_parts
from receval.families.ranking import prepare
from receval.kernels.memory import release_later
from receval.metrics.result import Result
from receval.metrics.specs import Metric

__all__ = ["evaluate_local", "labelled_rows"]


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
    pair = read_pair(
        truth, recs, user_col=options.user_col, item_col=options.item_col,
        score_col=options.score_col, rank_col=options.rank_col,
        relevance_col=options.relevance_col, id_type=options.kinds, stacklevel=2,
    )  # fmt: skip
    prep, kernel = prepare(
        pair, ranking, ties=options.ties, relevance_threshold=options.threshold,
        no_recs=options.no_recs, context=context,
    )  # fmt: skip
    if options.train is not None:
        prep = with_train(prep, options.train)
    settings = options.settings(bool(prep.context.has_relevance))
    beyond = tuple(m for m in plan if m.spec.family == "beyond")
    if beyond:
        prep = with_family_tables(beyond, prep)
    parts = family_parts(plan, prep, kernel)
    result = merge(plan, parts, prep, settings)
    held = [prep, kernel, parts, truth, recs]
    del prep, kernel, parts, truth, recs
    release_later(held)  # the layout's memory maps go back to the OS on another thread
    return result


def labelled_rows(
    truth: Any,
    recs: Any,
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    relevance_col: str | None = None,
    relevance_threshold: float = 1,
    id_type: IdTypeArg = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The classification rows of ``(truth, recs)`` as :func:`receval.evaluate` sees them.

    One row per recs row of a user in truth (recs users not in truth are left out, as from
    every accuracy metric), grouped by user (users in the order :func:`~receval.evaluate`
    groups them, rows of a user in input order). Inputs are read, validated and matched by
    :func:`~receval.evaluate`'s own pipeline, with the same errors.

    Parameters
    ----------
    truth, recs:
        As for :func:`receval.evaluate` (recs need a score column).
    user_col, item_col, score_col, relevance_col, relevance_threshold, id_type:
        As for :func:`receval.evaluate`.

    Returns
    -------
    labels : numpy.ndarray
        int8: 1 when the row's item is in the user's truth with relevance >= the threshold.
    scores : numpy.ndarray
        float64: the recs score.
    users : numpy.ndarray
        int64: dense user codes 0, 1, ... (one per user kept, in row order).

    Examples
    --------
    >>> import receval
    >>> from receval.engines.local import labelled_rows
    >>> truth = {"u1": {"a": 1}, "u2": {"c": 2, "d": 0}}
    >>> recs = {"u1": {"a": 0.9, "b": 0.4}, "u2": {"c": 0.3, "d": 0.8}, "u3": {"a": 0.1}}
    >>> y, s, u = labelled_rows(truth, recs)
    >>> y.tolist(), s.tolist(), u.tolist()
    ([1, 0, 1, 0], [0.9, 0.4, 0.3, 0.8], [0, 0, 1, 1])
    >>> receval.auc(y, s) == receval.evaluate(truth, recs, "auc")["auc"]
    True
    """
    pair = read_pair(
        truth, recs, user_col=user_col, item_col=item_col, score_col=score_col,
        relevance_col=relevance_col, id_type=check_id_type(id_type),
    )  # fmt: skip
    prep, _ = prepare(pair, relevance_threshold=check_threshold(relevance_threshold))
    return labelled(prep)
