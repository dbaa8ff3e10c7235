"""Tie policies (docs/metrics.md "Ties").

``expected`` is checked against brute-force averaging over every order of every tie group,
for every metric, on many small random cases (tie groups straddle every cutoff used). The
closed forms that docs/metrics.md gives are checked against the same enumeration, so a wrong
formula in the spec cannot hide behind a library that implements it faithfully.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from math import comb

import polars as pl
import pytest

import receval
from helpers import brute
from helpers.cases import (
    ALL_METRICS,
    Case,
    assert_matches_brute,
    per_user,
    random_case,
    run_receval,
    truth_frame,
)

POLICIES = brute.TIES

# ------------------------------------------------- the spec's closed forms (no library)


def _expected(metric: str, prefix: list[float], group: list[float], n_relevant: int) -> float:
    """Average of ``metric`` over every order of ``group`` placed after ``prefix``."""
    m = brute.parse(metric)
    truth_rels = [1.0] * n_relevant
    perms = list(itertools.permutations(group))
    values = [brute.value_of_list(m, prefix + list(p), truth_rels, 1) for p in perms]
    return math.fsum(values) / len(values)


def _group_shapes() -> list[tuple[int, int, int, int]]:
    """(s, h, m, r): s items before the group (h of them relevant), m tied, r relevant."""
    return [
        (s, h, m, r)
        for s in range(3)
        for h in range(s + 1)
        for m in range(1, 6)
        for r in range(m + 1)
    ]


@pytest.mark.parametrize(("s", "h", "m", "r"), _group_shapes())
def test_spec_closed_forms_match_enumeration(s: int, h: int, m: int, r: int) -> None:
    prefix = [1.0] * h + [0.0] * (s - h)
    group = [1.0] * r + [0.0] * (m - r)
    n_relevant = h + r + 1  # one relevant item never retrieved, so |R| > hits
    slots = range(1, m + 1)

    for k in range(1, s + m + 2):
        j = max(0, min(m, k - s))  # positions of the group inside the cutoff
        hits_before = sum(prefix[:k])
        # linear forms: every position of the group gets relevance r/m
        want_hits = hits_before + j * r / m
        assert _expected(f"precision@{k}", prefix, group, n_relevant) == pytest.approx(
            want_hits / k, abs=1e-12
        )
        want_dcg = sum(g / math.log2(p + 1) for p, g in enumerate(prefix[:k], 1)) + sum(
            (r / m) / math.log2(s + t + 1) for t in slots if s + t <= k
        )
        assert _expected(f"dcg@{k}", prefix, group, n_relevant) == pytest.approx(want_dcg)
        want_arhr = sum(g / p for p, g in enumerate(prefix[:k], 1)) + sum(
            (r / m) / (s + t) for t in slots if s + t <= k
        )
        assert _expected(f"arhr@{k}", prefix, group, n_relevant) == pytest.approx(want_arhr)
        beta = 2.0
        want_f = (1 + beta**2) * want_hits / (beta**2 * n_relevant + k)
        assert _expected(f"fbeta(beta=2)@{k}", prefix, group, n_relevant) == pytest.approx(want_f)
        if h == 0:
            want_hit_rate = 1 - comb(m - r, j) / comb(m, j)
            assert _expected(f"hit_rate@{k}", prefix, group, n_relevant) == pytest.approx(
                want_hit_rate
            )

    if h == 0:
        want_mrr = (
            sum(comb(m - x, r - 1) / comb(m, r) / (s + x) for x in range(1, m - r + 2))
            if r
            else 0.0
        )
        assert _expected("mrr", prefix, group, n_relevant) == pytest.approx(want_mrr)

    # ap: the prefix part is deterministic, the group part is the spec's closed form
    prefix_ap = brute.value_of_list(brute.parse("map"), prefix, [1.0] * n_relevant, 1)
    pair = r * (r - 1) / (m * (m - 1)) if m > 1 else 0.0
    group_ap = sum((1 / (s + t)) * ((r / m) * (h + 1) + (t - 1) * pair) for t in slots)
    assert _expected("map", prefix, group, n_relevant) == pytest.approx(
        prefix_ap + group_ap / n_relevant
    )


# -------------------------------------------------------- library against brute force

SEEDED = [
    # (seed, generator options): ties at 3 levels, 2 levels, and one level (all tied)
    (1, {"n_scores": 3}),
    (2, {"n_scores": 3, "string_ids": True}),
    (3, {"n_scores": 2}),
    (4, {"n_scores": 1, "max_len": 5}),
    (5, {"n_scores": 2, "rel_values": (0, 1)}),
    (6, {"n_scores": 3, "rel_values": (0, 0, 1, 2), "string_ids": True}),
]


@pytest.mark.parametrize(("seed", "options"), SEEDED)
def test_expected_matches_permutation_average(seed: int, options: dict) -> None:
    case = random_case(random.Random(seed), n_users=60, **options)
    res = run_receval(case, ALL_METRICS, ties="expected")
    ref = brute.evaluate(case.truth, case.recs, ALL_METRICS, ties="expected")
    assert_matches_brute(res, ref, ALL_METRICS, what=f"seed {seed}")


@pytest.mark.parametrize("ties", POLICIES)
@pytest.mark.parametrize("seed", [11, 12])
def test_every_policy_matches_brute(ties: str, seed: int) -> None:
    case = random_case(random.Random(seed), n_users=60, string_ids=seed % 2 == 0)
    res = run_receval(case, ALL_METRICS, ties=ties)
    ref = brute.evaluate(case.truth, case.recs, ALL_METRICS, ties=ties)
    assert_matches_brute(res, ref, ALL_METRICS, what=ties)


def test_tie_group_straddling_the_cutoff() -> None:
    # x (score 3, not relevant) then a, b, c tied at score 2, a the only relevant item.
    # K = 2 takes x and one of the three tied items.
    case = Case({1: {"a": 1}}, [(1, "x", 3.0), (1, "a", 2.0), (1, "b", 2.0), (1, "c", 2.0)])
    res = run_receval(case, ["hit_rate@2", "precision@2", "mrr@2", "ndcg@2", "map@2"])
    assert res["hit_rate@2"] == pytest.approx(1 - comb(2, 1) / comb(3, 1))  # 1/3
    assert res["precision@2"] == pytest.approx(1 / 6)  # (1/3 hit) / 2
    assert res["mrr@2"] == pytest.approx(1 / 6)  # a at 2 with probability 1/3
    assert res["ndcg@2"] == pytest.approx((1 / 3) / math.log2(3))  # idcg = 1
    assert res["map@2"] == pytest.approx((1 / 3) * (1 / 2))


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_optimistic_expected_pessimistic_are_ordered(seed: int) -> None:
    case = random_case(random.Random(seed), n_users=80, n_scores=2, string_ids=seed == 22)
    results = {t: run_receval(case, ALL_METRICS, ties=t) for t in POLICIES}
    for metric in ALL_METRICS:
        if brute.parse(metric).name in brute.JUDGMENT_ONLY:
            continue
        best = per_user(results["optimistic"], metric)
        mid = per_user(results["expected"], metric)
        worst = per_user(results["pessimistic"], metric)
        assert set(best) == set(mid) == set(worst)
        for user, value in mid.items():
            assert best[user] >= value - 1e-12, (metric, user, best[user], value)
            assert value >= worst[user] - 1e-12, (metric, user, value, worst[user])
        for t in ("first", "trec"):
            other = per_user(results[t], metric)
            for user, value in other.items():
                assert best[user] + 1e-12 >= value >= worst[user] - 1e-12, (t, metric, user)
        assert results["optimistic"][metric] >= results["expected"][metric] - 1e-12
        assert results["expected"][metric] >= results["pessimistic"][metric] - 1e-12


@pytest.mark.parametrize("string_ids", [False, True])
def test_without_ties_every_policy_agrees(string_ids: bool) -> None:
    case = random_case(random.Random(31), n_users=80, distinct_scores=True, string_ids=string_ids)
    reference = run_receval(case, ALL_METRICS, ties="first")
    for ties in POLICIES:
        res = run_receval(case, ALL_METRICS, ties=ties)
        for metric in ALL_METRICS:
            want = per_user(reference, metric)
            got = per_user(res, metric)
            assert set(got) == set(want)
            for user in want:
                assert got[user] == pytest.approx(want[user], abs=1e-12), (ties, metric, user)


# ------------------------------------------------------------- documented tiebreaks


@pytest.mark.parametrize(
    ("order", "want_mrr"),
    [(["a", "b"], 1.0), (["b", "a"], 0.5)],
)
def test_first_follows_input_order(order: list[str], want_mrr: float) -> None:
    # a relevant, b not, same score: "first" keeps the input order of the rows.
    case = Case({1: {"a": 1}}, [(1, item, 1.0) for item in order])
    assert run_receval(case, ["mrr"], ties="first")["mrr"] == want_mrr
    # the other policies do not depend on the order of the rows
    assert run_receval(case, ["mrr"], ties="expected")["mrr"] == pytest.approx(0.75)
    assert run_receval(case, ["mrr"], ties="trec")["mrr"] == 0.5  # "b" > "a": b first
    assert run_receval(case, ["mrr"], ties="optimistic")["mrr"] == 1.0
    assert run_receval(case, ["mrr"], ties="pessimistic")["mrr"] == 0.5


def test_first_uses_row_order_within_each_user_when_rows_interleave() -> None:
    rows = [(2, 7, 1.0), (1, 5, 1.0), (2, 3, 1.0), (1, 9, 1.0), (1, 10, 2.0)]
    case = Case({1: {9: 1}, 2: {7: 1}}, rows)
    res = run_receval(case, ["mrr"], ties="first")
    # user 1: 10 (score 2), then 5 before 9 (input order) -> 1/3; user 2: 7 first -> 1
    assert per_user(res, "mrr") == {1: pytest.approx(1 / 3), 2: 1.0}


@pytest.mark.parametrize("input_order", [[9, 10], [10, 9]])
def test_trec_compares_item_ids_as_strings(input_order: list[int]) -> None:
    # trec_eval breaks ties by docno descending with strcmp: "9" > "10", so 9 comes first.
    case = Case({1: {10: 1}}, [(1, item, 1.0) for item in input_order])
    assert run_receval(case, ["mrr"], ties="trec")["mrr"] == 0.5
    case = Case({"u": {"b10": 1}}, [("u", item, 1.0) for item in ("b10", "b9")])
    assert run_receval(case, ["mrr"], ties="trec")["mrr"] == 0.5  # "b9" > "b10"
    case = Case({"u": {"B": 1}}, [("u", item, 1.0) for item in ("B", "a")])
    assert run_receval(case, ["mrr"], ties="trec")["mrr"] == 0.5  # "a" > "B" (ASCII)


@pytest.mark.parametrize("ties", POLICIES)
def test_repeated_ranks_are_ties(ties: str) -> None:
    case = random_case(random.Random(41), n_users=40, n_scores=3)
    # rank 1 is best: rank = 10 - score keeps the same ties and order
    ranked = pl.DataFrame(
        {
            "user": [u for u, _, _ in case.recs],
            "item": [i for _, i, _ in case.recs],
            "rank": [int(10 - s) for _, _, s in case.recs],
        }
    )
    res = receval.evaluate(truth_frame(case.truth), ranked, ALL_METRICS, rank_col="rank", ties=ties)
    ref = brute.evaluate(case.truth, case.recs, ALL_METRICS, ties=ties)
    assert_matches_brute(res, ref, ALL_METRICS, what=f"rank_col {ties}")


# ----------------------------------------------------- big tie groups (closed forms)


def _closed_forms(s: int, h: int, m: int, r: int, n_relevant: int, k: int) -> dict[str, float]:
    """docs/metrics.md closed forms, exact (Fraction), for a prefix of s items (h relevant, first)
    followed by one group of m tied items holding r relevant ones (binary relevance)."""
    prefix = [1] * h + [0] * (s - h)
    j = max(0, min(m, k - s))
    rm = Fraction(r, m)
    pair = Fraction(r * (r - 1), m * (m - 1)) if m > 1 else Fraction(0)
    hits_k = sum(prefix[:k]) + j * rm

    def ap(cut: int) -> Fraction:
        seen, total = 0, Fraction(0)
        for pos, rel in enumerate(prefix[:cut], 1):
            seen += rel
            total += Fraction(seen, pos) if rel else 0
        for t in range(1, m + 1):
            if s + t <= cut:
                total += Fraction(1, s + t) * (rm * (h + 1) + (t - 1) * pair)
        return total / n_relevant

    dcg_k = sum(g / math.log2(p + 1) for p, g in enumerate(prefix[:k], 1)) + sum(
        float(rm) / math.log2(s + t + 1) for t in range(1, m + 1) if s + t <= k
    )
    idcg_k = sum(1 / math.log2(p + 1) for p in range(1, min(k, n_relevant) + 1))
    out = {
        f"precision@{k}": float(hits_k / k),
        f"recall@{k}": float(hits_k / n_relevant),
        f"map@{k}": float(ap(k)),
        "map": float(ap(s + m)),
        f"ndcg@{k}": dcg_k / idcg_k,
    }
    if h == 0:
        out[f"hit_rate@{k}"] = float(1 - Fraction(comb(m - r, j), comb(m, j)))
        out["mrr"] = float(
            sum(Fraction(comb(m - x, r - 1), comb(m, r)) / (s + x) for x in range(1, m - r + 2))
        )
    return out


@pytest.mark.parametrize(
    ("s", "h", "m", "r", "k"),
    [
        (0, 0, 50, 1, 10),
        (2, 0, 300, 5, 20),
        (3, 2, 300, 40, 100),
        (1, 1, 64, 64, 10),
        (0, 0, 2000, 1000, 10),
        (0, 0, 2000, 3, 1500),
        (2, 1, 5, 2, 4),  # small enough to check the helper against brute force
        (1, 0, 6, 3, 3),
    ],
)
def test_big_tie_groups_follow_the_closed_forms(s: int, h: int, m: int, r: int, k: int) -> None:
    n_relevant = h + r + 1  # one relevant item is never retrieved
    truth = {"u": {f"p{i}": 1 for i in range(h)} | {f"g{i}": 1 for i in range(r)} | {"lost": 1}}
    recs = {"u": {f"p{i}": 10.0 + s - i for i in range(s)} | {f"g{i}": 1.0 for i in range(m)}}
    want = _closed_forms(s, h, m, r, n_relevant, k)
    res = receval.evaluate(truth, recs, list(want), ties="expected")
    for metric, value in want.items():
        assert res[metric] == pytest.approx(value, rel=1e-9, abs=1e-12), metric
    if m <= 6:
        rows = [("u", item, score) for item, score in recs["u"].items()]
        ref = brute.evaluate(truth, rows, list(want), ties="expected")
        assert ref.means == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    "scores",
    [
        {"x": 0.0, "a": -0.0},  # -0.0 == 0.0: a tie
        {"x": -0.0, "a": 0.0},
        {"x": math.inf, "a": math.inf, "y": 1.0},  # infinite scores tie too
        {"x": -math.inf, "a": -math.inf},
    ],
)
def test_signed_zero_and_infinite_scores_tie(scores: dict[str, float]) -> None:
    truth = {"u": {"a": 1}}
    want = {"expected": 0.75, "first": 0.5, "trec": 0.5, "optimistic": 1.0, "pessimistic": 0.5}
    for ties, value in want.items():
        assert receval.evaluate(truth, {"u": scores}, ["mrr"], ties=ties)["mrr"] == value, ties
