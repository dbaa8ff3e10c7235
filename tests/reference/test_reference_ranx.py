"""receval against ranx on tie-free data (distinct float scores), per user and on average.

How ranx is aligned with docs/metrics.md:

- ranx refuses a run whose query ids differ from the qrels unless ``make_comparable=True``,
  which adds an empty result list (every metric 0) for a query missing from the run and
  drops run queries absent from the qrels: exactly receval's ``no_recs="zero"`` and
  "recs users not in truth are left out".
- ranx keeps qrels queries with no relevant item and scores them 0; docs/metrics.md leaves them
  out, so only the users with a relevant item are passed to ranx.
- ranx drops qrels entries below the relevance level before computing any metric, gains
  included (``ndcg@10-l2`` gives rel-1 items gain 0), unlike trec_eval and receval, whose
  gains do not depend on the threshold. With a level above 1 only binary metrics are
  compared.
- Items with relevance 0 in the qrels are kept in the input; ranx ignores them.

ranx mutates the ``Run`` it is given, so each call builds fresh objects.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Hashable

import pytest

from helpers import brute
from helpers.cases import Case, assert_values_close, per_user, random_case, run_receval

ranx = pytest.importorskip("ranx")

TOL = 1e-9
KS = (1, 3, 5, 10, 20)

# receval metric -> ranx metric
PAIRS: dict[str, str] = {}
for _k in KS:
    PAIRS.update(
        {
            f"precision@{_k}": f"precision@{_k}",
            f"recall@{_k}": f"recall@{_k}",
            f"f1@{_k}": f"f1@{_k}",
            f"hit_rate@{_k}": f"hit_rate@{_k}",
            f"mrr@{_k}": f"mrr@{_k}",
            f"map@{_k}": f"map@{_k}",
            f"ndcg@{_k}": f"ndcg@{_k}",
            f"ndcg(gain=exp)@{_k}": f"ndcg_burges@{_k}",
            f"dcg@{_k}": f"dcg@{_k}",
            f"dcg(gain=exp)@{_k}": f"dcg_burges@{_k}",
        }
    )
PAIRS.update(
    {
        "precision": "precision",  # hits / list length
        "recall": "recall",
        "f1": "f1",
        "hit_rate": "hit_rate",
        "mrr": "mrr",
        "map": "map",
        "map@100": "map@100",
        "ndcg": "ndcg",
        "ndcg(gain=exp)": "ndcg_burges",
        "r_precision": "r-precision",
    }
)

# binary metrics at relevance level 2 (ranx "-l2"); receval spells it `rel=2`
PAIRS_L2 = {
    "precision(rel=2)@5": "precision@5-l2",
    "recall(rel=2)@10": "recall@10-l2",
    "f1(rel=2)@5": "f1@5-l2",
    "hit_rate(rel=2)@3": "hit_rate@3-l2",
    "mrr(rel=2)": "mrr-l2",
    "map(rel=2)@10": "map@10-l2",
    "r_precision(rel=2)": "r-precision-l2",
}


def ranx_values(
    case: Case, measures: dict[str, str], level: int = 1
) -> dict[str, dict[Hashable, float]]:
    users = sorted(brute.evaluated_users(case.truth, level), key=str)
    qrels = {str(u): {str(i): int(r) for i, r in case.truth[u].items()} for u in users}
    run: dict[str, dict[str, float]] = {}
    for user, item, score in case.recs:
        run.setdefault(str(user), {})[str(item)] = float(score)
    ranx_run = ranx.Run(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings inside ranx
        ranx.evaluate(
            ranx.Qrels(qrels),
            ranx_run,
            list(measures.values()),
            return_mean=False,
            make_comparable=True,
        )
    # ranx saves per-query scores, keyed by query id, in the run object
    return {
        ours: {u: float(ranx_run.scores[theirs][str(u)]) for u in users}
        for ours, theirs in measures.items()
    }


def assert_matches_ranx(
    case: Case, measures: dict[str, str], level: int = 1, **kwargs: object
) -> None:
    metrics = list(measures)
    want = ranx_values(case, measures, level)
    for ties in ("expected", "first"):  # no ties: the policy must not matter
        res = run_receval(case, metrics, ties=ties, **kwargs)
        for metric in metrics:
            assert_values_close(per_user(res, metric), want[metric], TOL, metric)
            mean = math.fsum(want[metric].values()) / len(want[metric])
            assert res[metric] == pytest.approx(mean, rel=TOL, abs=TOL), metric


CASES = [
    (1, {}),
    (2, {"string_ids": True}),
    (3, {"max_len": 14, "n_items": 16}),
    (4, {"max_len": 14, "n_items": 16, "string_ids": True, "rel_values": (0, 1)}),
]


@pytest.mark.parametrize(("seed", "options"), CASES)
def test_matches_ranx(seed: int, options: dict) -> None:
    case = random_case(random.Random(seed), n_users=300, distinct_scores=True, **options)
    assert_matches_ranx(case, PAIRS)


@pytest.mark.parametrize(("seed", "options"), CASES[:2])
def test_binary_metrics_match_ranx_relevance_level_2(seed: int, options: dict) -> None:
    case = random_case(random.Random(50 + seed), n_users=300, distinct_scores=True, **options)
    assert_matches_ranx(case, PAIRS_L2, level=2)
    # the same through the global threshold instead of the metric parameter
    plain = {m.replace("(rel=2)", ""): r for m, r in PAIRS_L2.items()}
    assert_matches_ranx(case, plain, level=2, relevance_threshold=2)
