"""The metric families' providers on a model source's exact ranks.

A model source has no recommendation lists: the scan engine (:mod:`receval.engines.model`)
scores every candidate of each user and counts, for each truth row, the candidates above and
tied with it (:class:`~receval.families.contract.ExactRanks`, held by
:attr:`Prepared.exact <receval.families.contract.Prepared>`). The providers here compute
each family's metrics from those counts and return the same
:class:`~receval.families.contract.Part` as the providers of lists
(:func:`receval.families.providers.family_parts` picks them): the ranking metrics from exact
ranks (no list is cut), ``gauc`` over every candidate of a user (the candidates not in truth
are its negatives), and the rating metrics on the model's scores of the truth pairs. The
beyond-accuracy metrics read the model's top-K lists, which the engine builds as a table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from receval.arrays import classification as C
from receval.data.layout import group_by_user
from receval.data.tables import match_users
from receval.families.contract import ExactRanks, NoRecs, Part, Prepared, per_user_frame
from receval.families.pointwise import raise_no_recs, rating_part, warn_nan
from receval.families.ranking import KernelOutput, match, plan_arrays, ranking_part
from receval.kernels import model as MK
from receval.metrics.specs import Metric

__all__ = ["exact_gauc_part", "exact_ranking_part", "exact_rating_part"]


def _ranks(prep: Prepared) -> ExactRanks:
    assert prep.exact is not None, "an exact-rank provider needs Prepared.exact"
    return prep.exact


def exact_ranking_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """The ranking metrics from the exact ranks' counts (the ranking is the whole catalog)."""
    ranks = _ranks(prep)
    pa = plan_arrays(plan, prep.threshold, prep.t_rel, prep.relevance_col)
    n_cand = np.maximum(ranks.n_cand, 0)
    longest = max(int(n_cand.max(initial=0)), int(np.diff(prep.t_grp.offsets).max(initial=0)))
    log2p = np.log2(np.arange(2, longest + 3, dtype=np.float64))
    arrays = (
        prep.t_grp.offsets, ranks.t_col, ranks.t_cand, prep.t_rel, pa.t_gain, ranks.t_score,
        ranks.above, ranks.tied, ranks.first_before, ranks.trec_before, n_cand,
        pa.thresholds, pa.ops, pa.ks, pa.thr_arr, pa.gain_idx, pa.fpar, log2p,
    )  # fmt: skip
    out, nrel = MK.rank_from_counts(arrays, prep.ties.code, ranks.n_chunks, len(plan))
    kernel = KernelOutput(out, nrel, pa.thr_idx, pa.ops)
    return ranking_part(plan, prep, kernel, lists=False)  # exact ranks: no list is cut


def exact_gauc_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """``gauc`` over every candidate of each user (non-truth candidates are negatives)."""
    ranks = _ranks(prep)
    rows = np.maximum(ranks.n_cand, 0)
    groups = np.flatnonzero(rows > 0)
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    columns: dict[str, np.ndarray] = {}
    part = Part(means, None, details)
    arrays = (prep.t_grp.offsets, ranks.t_cand, prep.t_rel, ranks.t_score, ranks.above,
              ranks.tied, rows)  # fmt: skip
    for m in plan:
        threshold = prep.threshold_of(m)
        relevant = prep.t_rel >= threshold
        if prep.no_recs is NoRecs.RAISE:
            raise_no_recs(prep, relevant, m)
        twice, positives = MK.gauc_counts(arrays, threshold, ranks.n_chunks)
        pos, n = positives[groups], rows[groups]
        neg = n - pos
        with np.errstate(invalid="ignore", divide="ignore"):
            auc_u = np.where((pos > 0) & (neg > 0), twice[groups] / (2.0 * pos * neg), np.nan)
        weight = m.str_param("weight")
        value, used, skipped = C.gauc_from_groups(auc_u, n, pos, weight)
        if not used:
            warn_nan(m.canonical, "no user has both a relevant and a non-relevant recommended item")
        ok = ~np.isnan(auc_u)
        w = C.gauc_weights(n[ok], pos[ok], weight)
        part.sums[m.canonical] = (w * auc_u[ok], w)
        details[m.canonical] = {
            "rows": int(n.sum()),
            "positives": int(pos.sum()),
            "truth_rows_without_score": int(np.count_nonzero(~ranks.t_cand)),
            "positives_without_score": int(np.count_nonzero(relevant & ~ranks.t_cand)),
            "rows_of_users_not_in_truth": 0,
            "users_used": used,
            "users_skipped": skipped,
        }
        means[m.canonical] = value
        columns[m.canonical] = auc_u
    kept = prep.t_grp.keys.gather(groups)
    part.per_user = per_user_frame(kept, np.arange(groups.size), columns, prep.user_col)
    return part


def exact_rating_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """The rating metrics on the model's scores of the truth pairs (a pair it does not score
    is a truth row without a prediction)."""
    t_score = _ranks(prep).t_score
    scored = ~np.isnan(t_score)
    frame = prep.t_grp.frame.filter(pl.Series(scored)).select(prep.user_col, prep.item_col)
    frame = frame.with_columns(pl.Series("score", t_score[scored]))
    r_grp = group_by_user(frame, prep.user_col)
    u2r = match_users(prep.t_grp.keys, r_grp.keys)
    pairs, _ = match(
        (), prep.t_grp, r_grp, u2r, user_col=prep.user_col, item_col=prep.item_col,
        relevance_col=prep.relevance_col, order_col="score", by_rank=False, ties=prep.ties,
        threshold=prep.threshold, no_recs=prep.no_recs, context=prep.context,
    )  # fmt: skip
    return rating_part(plan, pairs)
