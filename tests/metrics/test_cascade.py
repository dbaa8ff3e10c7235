"""The cascade metrics and the metrics of incomplete judgments (issue #16): err, rbp,
rbp_residual, bpref and judged (docs/metrics.md "Cascade metrics and incomplete judgments").

Worked by hand from the definitions (Chapelle et al. 2009; Moffat & Zobel 2008; Buckley &
Voorhees 2004 as trec_eval computes it), then against the brute force of helpers/brute.py on
random data with ties, graded, fractional and negative relevance, short lists, users without
recs or relevant items, under every tie policy; hypothesis properties (bounds, the residual's
promise, monotonicity in K); bad input. The peers are compared in
tests/reference/test_reference_cascade.py.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Hashable
from fractions import Fraction
from math import comb

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import receval
from helpers import brute
from helpers.cases import Case, assert_matches_brute, cases, per_user, random_case, run_receval
from helpers.examples import examples
from receval.metrics.registry import parse_metrics

POLICIES = brute.TIES
FAST = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# ------------------------------------------------------------------ worked by hand

# user 1 judges a (2), b (0), c (1) and e (1, not recommended); d and z are unjudged.
# threshold 1: R = {a, c, e}, |R| = 3; judged non-relevant: {b}, N = 1.
# user 2 has no recs; user 3 has no relevant item (not evaluated).
HAND = Case(
    {1: {"a": 2, "b": 0, "c": 1, "e": 1}, 2: {"a": 1}, 3: {"a": 0}},
    [(1, "a", 5.0), (1, "d", 4.0), (1, "b", 3.0), (1, "c", 2.0), (1, "z", 1.0), (3, "a", 1.0)],
)
HAND_VALUES = {
    # R(g) = (2^g - 1) / 2^4: a 3/16, c 1/16; ERR = 3/16 + (13/16)(1/16)/4
    "err": 3 / 16 + (13 / 16) * (1 / 16) / 4,
    "err@3": 3 / 16,
    # max_grade 2: a 3/4, c 1/4; ERR = 3/4 + (1/4)(1/4)/4
    "err(max_grade=2)": 3 / 4 + (1 / 4) * (1 / 4) / 4,
    # relevant at 1 and 4: 0.2 (1 + 0.8^3)
    "rbp": 0.2 * (1 + 0.8**3),
    "rbp@3": 0.2,
    "rbp(p=0.5)": 0.5 * (1 + 0.5**3),
    # graded: 0.2 (2 + 1 * 0.8^3); exp: 0.2 (3 + 1 * 0.8^3)
    "rbp(gain=linear)": 0.2 * (2 + 0.8**3),
    "rbp(gain=exp)": 0.2 * (3 + 0.8**3),
    # unjudged at 2 and 5, depth 5: 0.2 (0.8 + 0.8^4) + 0.8^5
    "rbp_residual": 0.2 * (0.8 + 0.8**4) + 0.8**5,
    # depth 3: d at 2, then the tail 0.8^3
    "rbp_residual@3": 0.2 * 0.8 + 0.8**3,
    # depth 10 > the list: the tail is 0.8^10 (positions 6..10 hold nothing)
    "rbp_residual@10": 0.2 * (0.8 + 0.8**4) + 0.8**10,
    # a: nothing above, 1; c: b above, 1 - min(1, 3) / min(3, 1) = 0; (1 + 0) / 3
    "bpref": 1 / 3,
    "bpref@1": 1 / 3,
    # at rel=2, R = {a}, judged non-relevant {b, c, e}: a first, 1
    "bpref(rel=2)": 1.0,
    "judged@3": 2 / 3,
    "judged": 3 / 5,
    "judged@10": 3 / 5,  # over min(K, |L|)
}


def test_worked_by_hand() -> None:
    res = run_receval(HAND, list(HAND_VALUES))
    for metric, want in HAND_VALUES.items():
        got = per_user(res, metric)
        empty = 0.8**10 if metric == "rbp_residual@10" else 0.8**3 if metric.endswith("@3") else 1.0
        want_user2 = empty if metric.startswith("rbp_residual") else 0.0
        if "rel=2" in metric:  # user 2's only item has relevance 1: not evaluated
            assert got == {1: pytest.approx(want, abs=1e-15)}, metric
            assert res[metric] == pytest.approx(want, abs=1e-15), metric
            continue
        assert got == {1: pytest.approx(want, abs=1e-15), 2: pytest.approx(want_user2)}, metric
        assert res[metric] == pytest.approx((want + want_user2) / 2, abs=1e-15), metric
    assert res.counts.no_relevant == 1  # user 3: no value
    ref = brute.evaluate(HAND.truth, HAND.recs, list(HAND_VALUES))
    assert_matches_brute(res, ref, list(HAND_VALUES), tol=1e-15)


def test_no_recs_skip_and_residual_of_an_empty_list() -> None:
    res = run_receval(HAND, ["rbp_residual", "rbp_residual(p=0.5)@2", "judged@2"], no_recs="skip")
    assert 2 not in per_user(res, "rbp_residual")
    zero = run_receval(HAND, ["rbp_residual", "rbp_residual(p=0.5)@2", "judged@2"])
    assert per_user(zero, "rbp_residual")[2] == 1.0  # nothing of the ranking is known
    assert per_user(zero, "rbp_residual(p=0.5)@2")[2] == 0.25  # p^K
    assert per_user(zero, "judged@2")[2] == 0.0


def test_ties_worked_by_hand() -> None:
    # x (relevant), y (judged non-relevant) and z (unjudged) tie; w (unjudged) below them
    case = Case({1: {"x": 1, "y": 0}}, [(1, "x", 1.0), (1, "y", 1.0), (1, "z", 1.0), (1, "w", 0.0)])
    res = run_receval(
        case,
        ["bpref", "err(max_grade=1)", "err(max_grade=1)@1", "judged@1", "rbp_residual(p=0.5)@1"],
    )
    # bpref: x follows y in half of the orders, then 1 - min(1, 1) / min(1, 1) = 0
    assert res["bpref"] == pytest.approx(0.5, abs=1e-15)
    # ERR, R(x) = 1/2: x at 1, 2 or 3 with probability 1/3 each
    assert res["err(max_grade=1)"] == pytest.approx((1 / 2) * (1 + 1 / 2 + 1 / 3) / 3, abs=1e-15)
    assert res["err(max_grade=1)@1"] == pytest.approx(1 / 6, abs=1e-15)
    assert res["judged@1"] == pytest.approx(2 / 3, abs=1e-15)
    # position 1 is unjudged with probability 1/3: (1/3)(1 - 0.5) + 0.5
    assert res["rbp_residual(p=0.5)@1"] == pytest.approx(1 / 6 + 1 / 2, abs=1e-15)
    # optimistic: judged first (x, y, z); pessimistic: z, y, x (relevance ascending, unjudged
    # before judged at equal relevance): residual@1 = (1 - 0.5) + 0.5
    best = run_receval(case, ["judged@1", "rbp_residual(p=0.5)@1", "bpref"], ties="optimistic")
    worst = run_receval(case, ["judged@1", "rbp_residual(p=0.5)@1", "bpref"], ties="pessimistic")
    assert (best["judged@1"], best["rbp_residual(p=0.5)@1"], best["bpref"]) == (1.0, 0.5, 1.0)
    assert (worst["judged@1"], worst["rbp_residual(p=0.5)@1"], worst["bpref"]) == (0.0, 1.0, 0.0)


# ------------------------------------------------------------------ brute force

GRADED = [
    f"{name}{at}"
    for at in ("", "@1", "@2", "@3", "@5")
    for name in (
        "rbp(gain=linear)",
        "rbp(p=0.95, gain=exp)",
        "rbp(p=0.3, gain={0: 0, 1: 1, 2: 5, 3: 6})",
        "rbp(rel=2, gain=linear)",
        "rbp_residual(p=0.5)",
        "err(max_grade=3)",
        "err(rel=2)",
        "bpref(rel=2)",
        "judged(rel=2)",
    )
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", POLICIES)
def test_graded_variants_agree_with_brute_force(seed: int, ties: str) -> None:
    case = random_case(random.Random(seed), n_users=60, n_scores=3, string_ids=seed % 2 == 1)
    res = run_receval(case, GRADED, ties=ties)
    ref = brute.evaluate(case.truth, case.recs, GRADED, ties=ties)
    assert_matches_brute(res, ref, GRADED, tol=1e-12, what=f"seed {seed} {ties}")


@pytest.mark.parametrize("threshold", [0.5, 1, 2.5])
def test_fractional_negative_relevance_and_long_ties(threshold: float) -> None:
    # scores 0 or 1 over lists of up to 7 items: tie groups of up to 7 straddle every cutoff;
    # relevance -1 is judged (judged, residual) but not judged non-relevant (bpref)
    metrics = [
        f"{name}{at}"
        for at in ("", "@1", "@2", "@4", "@6")
        for name in ("err", "rbp", "rbp(gain=linear)", "rbp_residual", "bpref", "judged")
    ]
    for seed in range(3):
        case = random_case(
            random.Random(10 + seed), n_users=40, n_scores=2, max_len=7, n_items=9,
            rel_values=(-1, 0, 0.5, 1, 2.5), string_ids=seed == 1,
        )  # fmt: skip
        for ties in ("expected", "optimistic", "pessimistic"):
            res = run_receval(case, metrics, ties=ties, relevance_threshold=threshold)
            ref = brute.evaluate(case.truth, case.recs, metrics, ties=ties, threshold=threshold)
            assert_matches_brute(res, ref, metrics, tol=1e-12, what=f"{seed} {ties}")


def test_long_tie_groups_stay_exact() -> None:
    # one tie of 40 items, 12 relevant of grades 1..3, 10 judged non-relevant: the closed forms
    # against the same computation in exact rational arithmetic (Fractions)
    rng = random.Random(3)
    items = list(range(40))
    grades = {i: rng.choice([1, 2, 3]) for i in items[:12]} | dict.fromkeys(items[12:22], 0)
    recs = [(1, i, 0.0) for i in items] + [(1, 100, 1.0)]  # one unjudged item above the tie
    case = Case({1: grades}, recs)
    res = run_receval(case, ["err(max_grade=3)@10", "bpref@10", "bpref"])

    stop = {i: Fraction(2**g - 1, 2**3) for i, g in grades.items()}
    nz = [stop[i] for i in items if i in stop and stop[i] > 0]
    m, r = 40, len(nz)

    def mean_product(a: int) -> Fraction:  # mean of prod(1 - R) over the a-subsets of nz
        e = [Fraction(1)] + [Fraction(0)] * r
        for x in nz:
            for d in range(r, 0, -1):
                e[d] += e[d - 1] * (1 - x)
        return e[a] / comb(r, a)

    def reach(t: int) -> Fraction:  # E[prod(1 - R)] over the tie's first t positions
        return sum(
            (Fraction(comb(r, a) * comb(m - r, t - a), comb(m, t)) * mean_product(a))
            for a in range(min(t, r) + 1)
        )

    err = sum((reach(t - 1) - reach(t)) / (1 + t) for t in range(1, 10))  # positions 2..10
    assert res["err(max_grade=3)@10"] == pytest.approx(float(err), rel=1e-13)

    n_rel, n_non = 12, 10

    def bpref(depth: int) -> Fraction:
        total = Fraction(0)
        for t in range(1, depth + 1):  # a relevant item at tie position t
            for x in range(min(t - 1, n_non) + 1):  # x judged non-relevant among the t - 1
                prob = Fraction(comb(n_non, x) * comb(m - 1 - n_non, t - 1 - x), comb(m - 1, t - 1))
                total += prob * (1 - Fraction(min(x, n_rel), min(n_rel, n_non)) if x else 1)
        return Fraction(n_rel, m) * total / n_rel

    assert res["bpref@10"] == pytest.approx(float(bpref(9)), rel=1e-13)
    assert res["bpref"] == pytest.approx(float(bpref(40)), rel=1e-13)


# ------------------------------------------------------------------ properties


@FAST
@given(case=cases(max_len=7), ties=st.sampled_from(POLICIES), k=st.sampled_from([None, 1, 3, 6]))
def test_bounds_and_the_residual_promise(case: Case, ties: str, k: int | None) -> None:
    assume(brute.evaluated_users(case.truth))
    at = "" if k is None else f"@{k}"
    names = ["err", "rbp", "rbp_residual", "bpref", "judged", "rbp(p=0.5)", "rbp_residual(p=0.5)"]
    res = run_receval(case, [n + at for n in names], ties=ties)
    values = {n: per_user(res, n + at) for n in names}
    for n in names:
        assert all(-1e-15 <= v <= 1 + 1e-12 for v in values[n].values()), n
    for p in ("", "(p=0.5)"):
        rbp, residual = values["rbp" + p], values["rbp_residual" + p]
        tail = (0.5 if p else 0.8) ** (k or 0)
        for u in rbp:
            assert rbp[u] + residual[u] <= 1 + 1e-12
            if k is not None:  # the tail past depth K is always unknown
                assert residual[u] >= tail - 1e-15


@FAST
@given(case=cases(max_len=6), data=st.data())
def test_judging_the_unjudged_items_stays_within_the_residual(
    case: Case, data: st.DataObject
) -> None:
    """The promise of Moffat & Zobel's residual: however the unjudged items of the top K get
    judged, RBP@K ends in [rbp, rbp + residual]."""
    assume(brute.evaluated_users(case.truth))
    k = data.draw(st.sampled_from([1, 2, 4, 6]))
    metrics = [f"rbp(p=0.7)@{k}", f"rbp_residual(p=0.7)@{k}"]
    before = run_receval(case, metrics, ties="first")
    truth: dict[Hashable, dict[Hashable, float]] = {u: dict(j) for u, j in case.truth.items()}
    for user, item, _ in case.recs:
        if user in truth and item not in truth[user]:
            truth[user][item] = data.draw(st.sampled_from([0, 1]))
    after = run_receval(Case(truth, case.recs), metrics, ties="first")
    low, width = per_user(before, metrics[0]), per_user(before, metrics[1])
    judged_after = per_user(after, metrics[0])
    for user, value in ((u, judged_after[u]) for u in low):  # newly relevant users: no bound
        assert low[user] - 1e-12 <= value <= low[user] + width[user] + 1e-12
    for value in per_user(after, metrics[1]).values():  # every listed item is judged now
        assert value == pytest.approx(0.7**k, abs=1e-15)


@FAST
@given(case=cases(max_len=7), ties=st.sampled_from(POLICIES))
def test_monotone_in_k(case: Case, ties: str) -> None:
    assume(brute.evaluated_users(case.truth))
    ks = [1, 2, 3, 5, 8]
    names = ["err", "rbp", "rbp_residual"]
    res = run_receval(case, [f"{n}@{k}" for n in names for k in ks], ties=ties)
    for user in per_user(res, "err@1"):
        err = [per_user(res, f"err@{k}")[user] for k in ks]
        rbp = [per_user(res, f"rbp@{k}")[user] for k in ks]
        top = [rbp[i] + per_user(res, f"rbp_residual@{k}")[user] for i, k in enumerate(ks)]
        assert all(a <= b + 1e-15 for a, b in itertools.pairwise(err))
        assert all(a <= b + 1e-15 for a, b in itertools.pairwise(rbp))
        assert all(a + 1e-15 >= b for a, b in itertools.pairwise(top))


def test_all_judged_lists() -> None:
    # every recommended item judged: judged@K = 1, the residual is the tail p^d alone
    full = random_case(random.Random(8), n_users=40)
    case = Case(full.truth, [row for row in full.recs if row[1] in full.truth.get(row[0], {})])
    assert len(case.recs) > 40
    res = run_receval(case, ["judged@3", "judged", "rbp_residual@3", "rbp_residual"])
    lengths: dict[Hashable, int] = {}
    for user, _, _ in case.recs:
        lengths[user] = lengths.get(user, 0) + 1
    listed = {u: lengths[u] for u in per_user(res, "judged") if u in lengths}
    assert len(listed) > 10
    for metric, want in (
        ("judged@3", dict.fromkeys(listed, 1.0)),
        ("judged", dict.fromkeys(listed, 1.0)),
        ("rbp_residual@3", dict.fromkeys(listed, 0.8**3)),
        ("rbp_residual", {u: 0.8**n for u, n in listed.items()}),
    ):
        got = per_user(res, metric)
        assert {u: got[u] for u in listed} == pytest.approx(want, abs=1e-15), metric


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("metric", ["rbp", "rbp_residual"])
@pytest.mark.parametrize("p", ["1", "0", "1.5", "-0.2", "1.0"])
def test_persistence_outside_the_open_unit_interval(metric: str, p: str) -> None:
    msg = f"parameter `p` of {metric} must be a number strictly between 0 and 1; got {p}."
    with pytest.raises(receval.MetricError, match=f"^{re.escape(msg)}$"):
        run_receval(HAND, [f"{metric}(p={p})@10"])


def test_persistence_must_be_a_number() -> None:
    with pytest.raises(receval.MetricError, match=r"parameter `p` of rbp must be a number; got"):
        run_receval(HAND, ["rbp(p=high)"])


def test_relevance_above_max_grade() -> None:
    case = Case({1: {"a": 5, "b": 4, "c": 6}, 2: {"a": 5}}, [(1, "a", 1.0)])
    msg = (
        "err(max_grade=4) needs relevance <= 4; truth column 'relevance' has 3 row(s) above "
        "it, with value(s) [5.0, 6.0]. Give the scale's top grade, e.g. err(max_grade=6), or "
        "rescale the relevance."
    )
    with pytest.raises(receval.InputError) as info:
        run_receval(case, ["err@10"])
    assert str(info.value) == msg
    assert run_receval(case, ["err(max_grade=6)@10"])["err(max_grade=6)@10"] > 0
    with pytest.raises(
        receval.MetricError, match=r"`max_grade` of err must be a finite number > 0"
    ):
        run_receval(case, ["err(max_grade=0)"])


def test_canonical_names_and_peer_spellings() -> None:
    parsed = parse_metrics(["ERR@10", "RBP(p=0.8)", "Bpref", "Judged@10", "rbp_res@5"])
    assert [m.canonical for m in parsed] == [
        "err@10", "rbp", "bpref", "judged@10", "rbp_residual@5",
    ]  # fmt: skip
    assert receval.parse_metric("rbp(p=0.95, gain=binary)@5").canonical == "rbp(p=0.95)@5"
    specs = {s.name: s for s in receval.list_metrics()}
    assert specs["rbp_residual"].higher_is_better is False
    assert all(specs[n].higher_is_better for n in ("err", "rbp", "bpref", "judged"))
    assert math.isinf(specs["rbp"].bounds[1])  # graded gains exceed 1
