"""receval with ``ties="trec"`` against trec_eval (pytrec_eval), per user and on average.

trec_eval sorts a run by score descending, then by docno descending (strcmp), and its
``-c`` mode averages over every judged query, a query missing from the run scoring 0. The
comparison uses exactly that: per-query values from pytrec_eval, 0 for evaluated users
that pytrec_eval did not return (no recs), and the mean over the users docs/metrics.md
evaluates (truth users with at least one relevant item).

Data: small integer scores (many ties, including ties that straddle the cutoffs),
graded relevance 0..3, lists shorter and longer than the cutoffs, users in truth missing
from recs, users in recs missing from truth, users with no relevant item.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable

import pytest
import pytrec_eval

from helpers import brute
from helpers.cases import Case, assert_values_close, per_user, random_case, run_receval

KS = (1, 3, 5, 10, 20)
# receval metric -> trec_eval measure
PAIRS: dict[str, str] = {}
for _k in KS:
    PAIRS[f"precision@{_k}"] = f"P_{_k}"
    PAIRS[f"recall@{_k}"] = f"recall_{_k}"
    PAIRS[f"map@{_k}"] = f"map_cut_{_k}"
    PAIRS[f"ndcg@{_k}"] = f"ndcg_cut_{_k}"
    PAIRS[f"hit_rate@{_k}"] = f"success_{_k}"
PAIRS.update(
    {
        "mrr": "recip_rank",  # trec_eval's recip_rank and map have no cutoff
        "map": "map",
        "r_precision": "Rprec",
        "ndcg": "ndcg",  # whole list, ideal over all judged items
        "precision": "set_P",  # hits / number retrieved
        "recall": "set_recall",
        "f1": "set_F",
    }
)

TOL = 1e-12


def trec_eval_values(
    case: Case, measures: dict[str, str], relevance_level: int = 1
) -> dict[str, dict[Hashable, float]]:
    """Per-user trec_eval values of the users docs/metrics.md evaluates (0 when not in the run)."""
    qrels = {
        str(u): {str(i): int(r) for i, r in judged.items()} for u, judged in case.truth.items()
    }
    run: dict[str, dict[str, float]] = {}
    for user, item, score in case.recs:
        run.setdefault(str(user), {})[str(item)] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, set(measures.values()), relevance_level=relevance_level
    )
    out = evaluator.evaluate(run)
    users = brute.evaluated_users(case.truth, relevance_level)
    return {
        ours: {u: out.get(str(u), {}).get(theirs, 0.0) for u in users}
        for ours, theirs in measures.items()
    }


def assert_matches_trec_eval(
    case: Case, measures: dict[str, str], relevance_level: int = 1, **kwargs: object
) -> None:
    metrics = list(measures)
    res = run_receval(case, metrics, ties="trec", **kwargs)
    want = trec_eval_values(case, measures, relevance_level)
    for metric in metrics:
        assert_values_close(per_user(res, metric), want[metric], TOL, metric)
        mean = math.fsum(want[metric].values()) / len(want[metric])
        assert res[metric] == pytest.approx(mean, rel=TOL, abs=TOL), metric


CASES = [
    # (seed, generator options)
    (1, {"n_scores": 3}),
    (2, {"n_scores": 5, "string_ids": True}),
    (3, {"n_scores": 2, "max_len": 14, "n_items": 16}),
    (4, {"n_scores": 8, "max_len": 14, "n_items": 16, "string_ids": True}),
    (5, {"n_scores": 1, "max_len": 12, "n_items": 14}),  # one big tie per user
]


@pytest.mark.parametrize(("seed", "options"), CASES)
def test_matches_trec_eval(seed: int, options: dict) -> None:
    case = random_case(random.Random(seed), n_users=300, **options)
    assert_matches_trec_eval(case, PAIRS)


@pytest.mark.parametrize(("seed", "options"), CASES)
def test_matches_trec_eval_with_relevance_level_2(seed: int, options: dict) -> None:
    # ndcg gains stay the relevance values (trec_eval ignores -l for gains)
    case = random_case(random.Random(100 + seed), n_users=300, **options)
    assert_matches_trec_eval(case, PAIRS, relevance_level=2, relevance_threshold=2)


def test_per_metric_rel_matches_trec_eval_relevance_level() -> None:
    case = random_case(random.Random(7), n_users=300, n_scores=3, n_items=14, max_len=12)
    at_two = {
        "precision(rel=2)@5": "P_5",
        "recall(rel=2)@10": "recall_10",
        "map(rel=2)": "map",
        "mrr(rel=2)": "recip_rank",
        "r_precision(rel=2)": "Rprec",
        "hit_rate(rel=2)@3": "success_3",
        "ndcg(rel=2)@10": "ndcg_cut_10",
    }
    at_one = {"precision@5": "P_5", "map": "map", "ndcg@10": "ndcg_cut_10"}
    res = run_receval(case, [*at_two, *at_one], ties="trec")
    for measures, level in ((at_two, 2), (at_one, 1)):
        want = trec_eval_values(case, measures, relevance_level=level)
        for metric in measures:
            assert_values_close(per_user(res, metric), want[metric], TOL, metric)
            mean = math.fsum(want[metric].values()) / len(want[metric])
            assert res[metric] == pytest.approx(mean, rel=TOL, abs=TOL), metric


def test_fractional_scores_and_long_lists() -> None:
    # many distinct levels with repeated fractional values; lists longer than every cutoff
    rng = random.Random(9)
    case = random_case(rng, n_users=200, n_items=16, max_len=16, n_scores=6)
    case = Case(case.truth, [(u, i, s / 7 - 0.3) for u, i, s in case.recs])
    assert_matches_trec_eval(case, PAIRS)


def test_skip_matches_trec_eval_without_c() -> None:
    # Without -c, trec_eval averages over the queries in both qrels and run: no_recs="skip".
    case = random_case(random.Random(8), n_users=300, n_scores=3, string_ids=True)
    res = run_receval(case, list(PAIRS), ties="trec", no_recs="skip")
    want = trec_eval_values(case, PAIRS)
    in_run = {u for u, _, _ in case.recs}
    for metric in PAIRS:
        kept = {u: v for u, v in want[metric].items() if u in in_run}
        assert len(kept) < len(want[metric])  # some evaluated users do have no recs
        assert_values_close(per_user(res, metric), kept, TOL, metric)
        mean = math.fsum(kept.values()) / len(kept)
        assert res[metric] == pytest.approx(mean, rel=TOL, abs=TOL), metric


def test_numeric_looking_string_ids() -> None:
    # integer ids turned into strings on both sides ("9" > "10" in both tiebreaks)
    case = random_case(random.Random(10), n_users=300, n_scores=2, n_items=16, max_len=12)
    as_str = Case(
        {str(u): {str(i): r for i, r in judged.items()} for u, judged in case.truth.items()},
        [(str(u), str(i), s) for u, i, s in case.recs],
    )
    assert_matches_trec_eval(as_str, PAIRS)
