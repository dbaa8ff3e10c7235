"""Worked examples with the expected numbers computed by hand (never by the library).

The MRR, AP and nDCG examples are the classic textbook ones (Wikipedia "Mean reciprocal
rank", "Evaluation measures (information retrieval)", "Discounted cumulative gain").
"""

from __future__ import annotations

import math
from math import log2

import pytest

import receval

TOL = 1e-12


def evaluate(truth: dict, recs: dict, metrics: list[str], **kwargs: object) -> receval.Result:
    return receval.evaluate(truth, recs, metrics, **kwargs)


def ranked(items: list[str]) -> dict[str, float]:
    """Recs of one user in the given order (distinct, descending scores)."""
    return {item: float(len(items) - pos) for pos, item in enumerate(items)}


# ------------------------------------------------------------------------------ MRR


def test_mrr_first_hits_at_3_2_1() -> None:
    truth = {"cat": {"cats": 1}, "torus": {"tori": 1}, "virus": {"viruses": 1}}
    recs = {
        "cat": ranked(["catten", "cati", "cats"]),  # first hit at 3
        "torus": ranked(["torii", "tori", "toruses"]),  # first hit at 2
        "virus": ranked(["viruses", "virii", "viri"]),  # first hit at 1
    }
    res = evaluate(truth, recs, ["mrr", "mrr@2", "hit_rate@2", "arhr"])
    assert res["mrr"] == pytest.approx((1 / 3 + 1 / 2 + 1) / 3, abs=TOL)  # 11/18
    assert res["mrr@2"] == pytest.approx((0 + 1 / 2 + 1) / 3, abs=TOL)  # rank 3 is cut
    assert res["hit_rate@2"] == pytest.approx(2 / 3, abs=TOL)
    assert res["arhr"] == pytest.approx(11 / 18, abs=TOL)  # one relevant item each
    assert res.per_user["mrr"].to_list() == pytest.approx([1 / 3, 1 / 2, 1.0])


# ------------------------------------------------------------------------------- AP


AP_TRUTH = {"q": {"d1": 1, "d3": 1, "d6": 1}}
AP_RECS = {"q": ranked(["d1", "d2", "d3", "d4", "d5", "d6", "d7"])}  # relevant at 1, 3, 6


def test_average_precision_relevant_at_1_3_6() -> None:
    res = evaluate(
        AP_TRUTH,
        AP_RECS,
        ["map", "map@5", "map@2", "map(denominator=min)@2", "map(denominator=min)@5"],
    )
    assert res["map"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 6) / 3, abs=TOL)  # 13/18
    assert res["map@5"] == pytest.approx((1 + 2 / 3) / 3, abs=TOL)  # 6 is cut
    assert res["map@2"] == pytest.approx(1 / 3, abs=TOL)  # only position 1, over |R| = 3
    assert res["map(denominator=min)@2"] == pytest.approx(1 / 2, abs=TOL)  # over min(2, 3)
    assert res["map(denominator=min)@5"] == pytest.approx((1 + 2 / 3) / 3, abs=TOL)


def test_set_metrics_on_the_ap_example() -> None:
    metrics = [
        "precision@3",
        "precision@10",
        "precision",
        "recall@3",
        "recall@6",
        "f1@3",
        "fbeta(beta=2)@6",
        "r_precision",
        "hit_rate@1",
        "arhr",
        "arhr@3",
    ]
    res = evaluate(AP_TRUTH, AP_RECS, metrics)
    want = {
        "precision@3": 2 / 3,
        "precision@10": 3 / 10,  # K, not the list length (7)
        "precision": 3 / 7,  # whole list
        "recall@3": 2 / 3,
        "recall@6": 1.0,
        "f1@3": 2 / 3,  # P = R = 2/3
        "fbeta(beta=2)@6": 5 * (1 / 2) * 1 / (4 * (1 / 2) + 1),  # P = 1/2, R = 1 -> 5/6
        "r_precision": 2 / 3,  # precision at |R| = 3
        "hit_rate@1": 1.0,
        "arhr": 1 + 1 / 3 + 1 / 6,
        "arhr@3": 1 + 1 / 3,
    }
    for metric, value in want.items():
        assert res[metric] == pytest.approx(value, abs=TOL), metric


# ----------------------------------------------------------------------------- nDCG


def test_ndcg_wikipedia_example() -> None:
    # Retrieved D1..D6 with relevance 3, 2, 3, 0, 1, 2; D7 (3) and D8 (2) not retrieved.
    truth = {"q": {"D1": 3, "D2": 2, "D3": 3, "D4": 0, "D5": 1, "D6": 2, "D7": 3, "D8": 2}}
    recs = {"q": ranked(["D1", "D2", "D3", "D4", "D5", "D6"])}
    metrics = ["cg@6", "dcg@6", "ndcg@6", "dcg(gain=exp)@3", "ndcg(gain=exp)@3", "ndcg@1"]
    res = evaluate(truth, recs, metrics)

    dcg6 = 3 + 2 / log2(3) + 3 / 2 + 0 + 1 / log2(6) + 2 / log2(7)  # 6.861...
    idcg6 = 3 + 3 / log2(3) + 3 / 2 + 2 / log2(5) + 2 / log2(6) + 2 / log2(7)  # 8.740...
    assert res["cg@6"] == pytest.approx(3 + 2 + 3 + 0 + 1 + 2, abs=TOL)
    assert res["dcg@6"] == pytest.approx(dcg6, abs=TOL)
    assert res["ndcg@6"] == pytest.approx(dcg6 / idcg6, abs=TOL)  # 0.785...
    assert math.isclose(res["ndcg@6"], 0.785, abs_tol=5e-4)

    exp_dcg3 = 7 + 3 / log2(3) + 7 / 2  # gains 2^3-1, 2^2-1, 2^3-1
    exp_idcg3 = 7 + 7 / log2(3) + 7 / 2  # ideal 3, 3, 3
    assert res["dcg(gain=exp)@3"] == pytest.approx(exp_dcg3, abs=TOL)
    assert res["ndcg(gain=exp)@3"] == pytest.approx(exp_dcg3 / exp_idcg3, abs=TOL)
    assert res["ndcg@1"] == 1.0  # D1 has the top relevance


def test_ndcg_gain_map_and_relevance_threshold() -> None:
    truth = {"q": {"a": 1, "b": 2, "c": 3}}
    recs = {"q": ranked(["a", "x", "c"])}
    gain = "ndcg(gain={0: 0, 1: 1, 2: 4, 3: 10})"
    res = evaluate(truth, recs, [gain, "ndcg", "ndcg(rel=3)"])
    assert res[gain] == pytest.approx((1 + 10 / 2) / (10 + 4 / log2(3) + 1 / 2), abs=TOL)
    plain = (1 + 3 / 2) / (3 + 2 / log2(3) + 1 / 2)
    assert res["ndcg"] == pytest.approx(plain, abs=TOL)
    # the threshold decides who is evaluated, not the gains
    assert res["ndcg(rel=3)"] == pytest.approx(plain, abs=TOL)


# ---------------------------------------------------------------------- expected ties


def test_expected_one_relevant_among_three_tied() -> None:
    # a, b, c tied; a relevant. Each of the 3! orders equally likely: a at 1, 2, 3 w.p. 1/3.
    truth = {"u": {"a": 1}}
    recs = {"u": {"a": 1.0, "b": 1.0, "c": 1.0}}
    res = evaluate(truth, recs, ["mrr", "map", "precision@1", "hit_rate@2", "ndcg@2"])
    assert res["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3, abs=TOL)  # 11/18
    assert res["map"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3, abs=TOL)
    assert res["precision@1"] == pytest.approx(1 / 3, abs=TOL)
    assert res["hit_rate@2"] == pytest.approx(2 / 3, abs=TOL)
    assert res["ndcg@2"] == pytest.approx((1 / 3) * 1 + (1 / 3) / log2(3), abs=TOL)


def test_expected_ap_two_relevant_among_three_tied() -> None:
    # The relevant pair takes positions {1,2}, {1,3} or {2,3}, each w.p. 1/3:
    #   AP = (1 + 1)/2 = 1,  (1 + 2/3)/2 = 5/6,  (1/2 + 2/3)/2 = 7/12  -> mean 29/36
    truth = {"u": {"a": 1, "b": 1}}
    recs = {"u": {"a": 5.0, "b": 5.0, "c": 5.0}}
    res = evaluate(truth, recs, ["map", "map@1", "r_precision"])
    assert res["map"] == pytest.approx(29 / 36, abs=TOL)
    assert res["map@1"] == pytest.approx((2 / 3) * 1 / 2, abs=TOL)  # P(hit at 1) / |R|
    assert res["r_precision"] == pytest.approx((2 / 3 + 2 / 3) / 2, abs=TOL)  # E[hits@2]/2


def test_graded_tie_expected_optimistic_pessimistic() -> None:
    # x (score 2, irrelevant) first, then a (rel 2) and b (rel 1) tied at score 1.
    truth = {"u": {"a": 2, "b": 1}}
    recs = {"u": {"x": 2.0, "a": 1.0, "b": 1.0}}
    idcg = 2 + 1 / log2(3)
    want = {
        "expected": (1.5 / log2(3) + 1.5 / 2) / idcg,  # each tied slot gains (2 + 1) / 2
        "optimistic": (2 / log2(3) + 1 / 2) / idcg,
        "pessimistic": (1 / log2(3) + 2 / 2) / idcg,
        "trec": (1 / log2(3) + 2 / 2) / idcg,  # ids descending: b (rel 1) before a (rel 2)
        "first": (2 / log2(3) + 1 / 2) / idcg,  # input order: a before b
    }
    for ties, value in want.items():
        assert evaluate(truth, recs, ["ndcg"], ties=ties)["ndcg"] == pytest.approx(
            value, abs=TOL
        ), ties


# ----------------------------------------------------------------------------- trec


def test_trec_order_example() -> None:
    # scores: c 2; a, b, e tied at 1 -> trec order c, e, b, a (ids descending).
    # relevance a 1, b 2, d 1 (never retrieved); c 0. |R| = 3.
    truth = {"q": {"a": 1, "b": 2, "c": 0, "d": 1}}
    recs = {"q": {"a": 1.0, "b": 1.0, "c": 2.0, "e": 1.0}}
    res = evaluate(truth, recs, ["map", "mrr", "ndcg", "precision@2", "r_precision"], ties="trec")
    assert res["map"] == pytest.approx((1 / 3 + 2 / 4) / 3, abs=TOL)  # b at 3, a at 4
    assert res["mrr"] == pytest.approx(1 / 3, abs=TOL)
    ndcg = (2 / log2(4) + 1 / log2(5)) / (2 + 1 / log2(3) + 1 / log2(4))
    assert res["ndcg"] == pytest.approx(ndcg, abs=TOL)
    assert res["precision@2"] == 0.0
    assert res["r_precision"] == pytest.approx(1 / 3, abs=TOL)


# ----------------------------------------------------------------- users and averaging


def test_user_policy_and_micro_recall() -> None:
    truth = {
        1: {10: 1},  # hit at 1
        2: {20: 1, 21: 1, 22: 1},  # no hit
        3: {30: 1},  # no recs: scores 0 and is counted
        4: {40: 0},  # no relevant item: left out
    }
    recs = {1: {10: 0.9, 11: 0.1}, 2: {29: 0.5}, 4: {40: 0.3}, 5: {50: 0.7}}
    res = evaluate(truth, recs, ["recall@2", "recall(average=micro)@2", "mrr"])
    assert res["recall@2"] == pytest.approx((1 + 0 + 0) / 3, abs=TOL)
    assert res["recall(average=micro)@2"] == pytest.approx(1 / (1 + 3 + 1), abs=TOL)
    assert res.counts == receval.Counts(evaluated=3, no_recs=1, no_relevant=1, recs_not_in_truth=1)
    assert res.per_user["user"].to_list() == [1, 2, 3]
    assert res.per_user["mrr"].to_list() == [1.0, 0.0, 0.0]

    skipped = evaluate(truth, recs, ["recall@2", "recall(average=micro)@2"], no_recs="skip")
    assert skipped["recall@2"] == pytest.approx(1 / 2, abs=TOL)
    assert skipped["recall(average=micro)@2"] == pytest.approx(1 / 4, abs=TOL)
