"""Property-based checks of the top-K metrics (hypothesis).

Bounds, perfect rankings, invariance to row order and to strictly increasing transforms
of the scores, equality across input formats, the user policy and its counts, and
agreement with the brute-force reference for every metric and every tie policy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import receval
from helpers import brute
from helpers.cases import (
    ALL_METRICS,
    Case,
    assert_matches_brute,
    cases,
    per_user,
    random_case,
    recs_frame,
    run_receval,
    truth_frame,
)
from helpers.examples import examples

POLICIES = brute.TIES
FAST = settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# metrics that need no gain map (any relevance value is allowed)
PLAIN_METRICS = [m for m in ALL_METRICS if "{" not in m]


def _has_evaluated_user(case: Case, threshold: float) -> bool:
    return bool(brute.evaluated_users(case.truth, threshold))


def _assert_same_per_user(a: receval.Result, b: receval.Result, tol: float = 1e-12) -> None:
    assert a.metrics == b.metrics
    for metric in a.metrics:
        got, want = per_user(a, metric), per_user(b, metric)
        assert set(got) == set(want), metric
        for user in want:
            assert math.isclose(got[user], want[user], rel_tol=tol, abs_tol=tol), (
                metric,
                user,
                got[user],
                want[user],
            )
        assert math.isclose(a[metric], b[metric], rel_tol=tol, abs_tol=tol), metric


# ---------------------------------------------------------------- reference agreement


@FAST
@given(
    case=cases(),
    ties=st.sampled_from(POLICIES),
    threshold=st.sampled_from([1, 2]),
    no_recs=st.sampled_from(["zero", "skip"]),
)
def test_agrees_with_brute_force(case: Case, ties: str, threshold: int, no_recs: str) -> None:
    evaluated = brute.evaluated_users(case.truth, threshold)
    assume(evaluated & {u for u, _, _ in case.recs} if no_recs == "skip" else evaluated)
    res = run_receval(case, ALL_METRICS, ties=ties, relevance_threshold=threshold, no_recs=no_recs)
    ref = brute.evaluate(
        case.truth, case.recs, ALL_METRICS, ties=ties, threshold=threshold, no_recs=no_recs
    )
    assert_matches_brute(res, ref, ALL_METRICS)


@FAST
@given(
    case=cases(string_ids=True, rel_values=(-1, 0, 0.5, 1, 2.5)),
    ties=st.sampled_from(POLICIES),
    threshold=st.sampled_from([0.5, 1, 2.5]),
)
def test_fractional_and_negative_relevance(case: Case, ties: str, threshold: float) -> None:
    # relevance below 0 gains 0; gains never depend on the threshold
    assume(_has_evaluated_user(case, threshold))
    res = run_receval(case, PLAIN_METRICS, ties=ties, relevance_threshold=threshold)
    ref = brute.evaluate(case.truth, case.recs, PLAIN_METRICS, ties=ties, threshold=threshold)
    assert_matches_brute(res, ref, PLAIN_METRICS)


def test_brute_force_on_larger_seeded_data() -> None:
    for seed in range(4):
        case = random_case(random.Random(seed), n_users=100, n_scores=4, string_ids=seed % 2 == 1)
        for ties in POLICIES:
            res = run_receval(case, ALL_METRICS, ties=ties)
            ref = brute.evaluate(case.truth, case.recs, ALL_METRICS, ties=ties)
            assert_matches_brute(res, ref, ALL_METRICS, what=f"seed {seed} {ties}")


# ---------------------------------------------------------------------------- bounds


@FAST
@given(case=cases(), ties=st.sampled_from(POLICIES), threshold=st.sampled_from([1, 2]))
def test_bounds(case: Case, ties: str, threshold: int) -> None:
    assume(_has_evaluated_user(case, threshold))
    res = run_receval(case, ALL_METRICS, ties=ties, relevance_threshold=threshold)
    for metric in ALL_METRICS:
        values = [*per_user(res, metric).values(), res[metric]]
        if brute.parse(metric).name in brute.NORMALISED:
            assert all(0.0 <= v <= 1.0 + 1e-12 for v in values), (metric, values)
        else:  # arhr, cg, dcg
            assert all(v >= 0.0 for v in values), (metric, values)


# ------------------------------------------------------------------ perfect rankings


@st.composite
def perfect_cases(draw: st.DrawFn) -> Case:
    """Recs = every truth item, in descending relevance, distinct scores."""
    truth: dict[Hashable, dict[Hashable, float]] = {}
    recs: list[tuple[Hashable, Hashable, float]] = []
    for user in range(1, draw(st.integers(1, 4)) + 1):
        rels = draw(st.lists(st.integers(0, 3), min_size=1, max_size=8))
        rels[0] = max(rels[0], 1)
        truth[user] = {10 * user + j: r for j, r in enumerate(rels)}
        ordered = sorted(truth[user].items(), key=lambda kv: -kv[1])
        recs += [(user, item, float(len(ordered) - pos)) for pos, (item, _) in enumerate(ordered)]
    return Case(truth, recs)


@FAST
@given(case=perfect_cases(), k=st.integers(1, 10), ties=st.sampled_from(POLICIES))
def test_perfect_ranking(case: Case, k: int, ties: str) -> None:
    ones = [
        "ndcg",
        f"ndcg@{k}",
        f"ndcg(gain=exp)@{k}",
        "map",
        f"map(denominator=min)@{k}",
        "mrr",
        f"mrr@{k}",
        f"hit_rate@{k}",
        "r_precision",
        "recall",
        "ndcg(gain={0: 0, 1: 2, 2: 3, 3: 10})",
    ]
    n_rel = {u: sum(r >= 1 for r in judged.values()) for u, judged in case.truth.items()}
    extra = [f"recall@{k}", f"precision@{k}", f"map@{k}"]
    res = run_receval(case, ones + extra, ties=ties)
    for metric in ones:
        assert per_user(res, metric) == pytest.approx(dict.fromkeys(case.truth, 1.0)), metric
    recall, precision, ap = (per_user(res, m) for m in extra)
    for user, n in n_rel.items():
        assert recall[user] == pytest.approx(min(k, n) / n)  # 1 when K >= |R|
        assert precision[user] == pytest.approx(min(k, n) / k)
        assert ap[user] == pytest.approx(min(k, n) / n)


# ------------------------------------------------------------------------ invariance


@FAST
@given(case=cases(), ties=st.sampled_from(POLICIES), data=st.data())
def test_row_order_does_not_matter(case: Case, ties: str, data: st.DataObject) -> None:
    shuffled_truth = dict(data.draw(st.permutations(list(case.truth.items()))))
    shuffled_truth = {
        u: dict(data.draw(st.permutations(list(judged.items()))))
        for u, judged in shuffled_truth.items()
    }
    if ties == "first":
        # only the order of rows of *other* users may change: keep each user's rows in order
        shuffled_recs = sorted(case.recs, key=lambda row: str(row[0]))
    else:
        shuffled_recs = list(data.draw(st.permutations(case.recs)))
    a = run_receval(case, ALL_METRICS, ties=ties)
    b = run_receval(Case(shuffled_truth, shuffled_recs), ALL_METRICS, ties=ties)
    _assert_same_per_user(a, b)


TRANSFORMS = {
    "affine": lambda s: 3.0 * s + 1.0,
    "cube": lambda s: s**3 - 5.0,
    "exp": math.exp,
    "negated_reciprocal": lambda s: -1.0 / (s + 1.0),
}


@FAST
@given(
    case=cases(n_scores=4),
    ties=st.sampled_from(POLICIES),
    transform=st.sampled_from(sorted(TRANSFORMS)),
)
def test_increasing_score_transform_does_not_matter(case: Case, ties: str, transform: str) -> None:
    f = TRANSFORMS[transform]
    moved = Case(case.truth, [(u, i, f(s)) for u, i, s in case.recs])
    _assert_same_per_user(
        run_receval(case, ALL_METRICS, ties=ties), run_receval(moved, ALL_METRICS, ties=ties)
    )


@FAST
@given(case=cases(n_scores=4), ties=st.sampled_from(POLICIES))
def test_rank_column_equals_scores(case: Case, ties: str) -> None:
    # dense rank of the scores (1 = best): same order, same ties
    levels = sorted({s for _, _, s in case.recs}, reverse=True)
    rank_of = {s: pos for pos, s in enumerate(levels, start=1)}
    ranked = pl.DataFrame(
        {
            "user": [u for u, _, _ in case.recs],
            "item": [i for _, i, _ in case.recs],
            "rank": [rank_of[s] for _, _, s in case.recs],
        }
    )
    by_rank = receval.evaluate(
        truth_frame(case.truth), ranked, ALL_METRICS, rank_col="rank", ties=ties
    )
    _assert_same_per_user(by_rank, run_receval(case, ALL_METRICS, ties=ties))


# ---------------------------------------------------------------------- input formats


def _as_dicts(case: Case) -> tuple[dict, dict]:
    recs: dict[Hashable, dict[Hashable, float]] = {}
    for user, item, score in case.recs:
        recs.setdefault(user, {})[item] = score
    return case.truth, recs


def _write_trec(case: Case, tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "truth.qrels"
    qrels.write_text(
        "".join(f"{u} 0 {i} {r}\n" for u, judged in case.truth.items() for i, r in judged.items())
    )
    run = tmp_path / "recs.run"
    run.write_text(
        "".join(f"{u} Q0 {i} {n} {s!r} tag\n" for n, (u, i, s) in enumerate(case.recs, 1))
    )
    return qrels, run


@pytest.mark.parametrize("seed", [1, 2])
def test_input_formats_agree(seed: int, tmp_path: Path) -> None:
    case = random_case(random.Random(seed), n_users=40, n_scores=3, string_ids=seed == 2)
    truth, recs = truth_frame(case.truth), recs_frame(case.recs)
    truth.write_parquet(tmp_path / "truth.parquet")
    recs.write_parquet(tmp_path / "recs.parquet")
    truth.write_csv(tmp_path / "truth.csv")
    recs.write_csv(tmp_path / "recs.csv")
    truth.write_csv(tmp_path / "truth.tsv", separator="\t")
    recs.write_csv(tmp_path / "recs.tsv", separator="\t")
    sources = {
        "pandas": (truth.to_pandas(), recs.to_pandas()),
        "pyarrow": (truth.to_arrow(), recs.to_arrow()),
        "dict": _as_dicts(case),
        "parquet": (tmp_path / "truth.parquet", tmp_path / "recs.parquet"),
        "parquet_str": (str(tmp_path / "truth.parquet"), str(tmp_path / "recs.parquet")),
        "csv": (tmp_path / "truth.csv", tmp_path / "recs.csv"),
        "tsv": (tmp_path / "truth.tsv", tmp_path / "recs.tsv"),
    }
    if seed == 2:  # TREC files carry string ids
        sources["trec"] = _write_trec(case, tmp_path)
    pandas_before = sources["pandas"][1].copy()
    for ties in POLICIES:
        want = receval.evaluate(truth, recs, ALL_METRICS, ties=ties)
        for name, (t, r) in sources.items():
            ids = {"id_type": "int"} if name in ("csv", "tsv") and seed != 2 else {}  # text ids
            got = receval.evaluate(t, r, ALL_METRICS, ties=ties, **ids)
            assert got.per_user.equals(want.per_user), (name, ties)
            assert got.means == want.means, (name, ties)
            assert got.counts == want.counts, (name, ties)
    # inputs are never modified
    pd.testing.assert_frame_equal(sources["pandas"][1], pandas_before)
    assert recs.equals(recs_frame(case.recs))


def test_missing_relevance_column_means_relevance_one() -> None:
    case = random_case(random.Random(3), n_users=30, rel_values=(1,), kinds=("both", "truth_only"))
    with_col = truth_frame(case.truth)
    assert with_col["relevance"].unique().to_list() == [1]
    without = with_col.drop("relevance")
    recs = recs_frame(case.recs)
    a = receval.evaluate(with_col, recs, ALL_METRICS)
    b = receval.evaluate(without, recs, ALL_METRICS)
    assert a.per_user.equals(b.per_user)
    assert a.means == b.means


def test_pyarrow_record_batch_and_pandas_string_ids() -> None:
    case = random_case(random.Random(4), n_users=30, string_ids=True)
    truth, recs = truth_frame(case.truth), recs_frame(case.recs)
    want = receval.evaluate(truth, recs, ALL_METRICS)
    batch = pa.RecordBatch.from_pandas(recs.to_pandas(), preserve_index=False)
    got = receval.evaluate(truth.to_pandas(), batch, ALL_METRICS)
    assert got.per_user.equals(want.per_user)


# ---------------------------------------------------------------- users and counts


@FAST
@given(case=cases())
def test_counts_follow_the_user_policy(case: Case) -> None:
    res = run_receval(case, ["ndcg@5", "recall@3"])
    rec_users = {u for u, _, _ in case.recs}
    evaluated = brute.evaluated_users(case.truth)
    counts = res.counts
    assert counts.evaluated == len(evaluated)
    assert counts.no_recs == len(evaluated - rec_users)
    assert counts.no_relevant == len(set(case.truth) - evaluated)
    assert counts.recs_not_in_truth == len(rec_users - set(case.truth))
    # per-user rows: the evaluated users, sorted by id
    assert res.per_user["user"].to_list() == sorted(evaluated)
    for user in evaluated - rec_users:
        assert per_user(res, "ndcg@5")[user] == 0.0


def test_no_recs_raise() -> None:
    case = Case({1: {1: 1}, 2: {2: 1}}, [(1, 1, 1.0)])
    with pytest.raises(receval.InputError, match="1 evaluated user"):
        run_receval(case, ["ndcg@5"], no_recs="raise")
    res = run_receval(case, ["ndcg@5"], no_recs="skip")
    assert res["ndcg@5"] == 1.0
    assert run_receval(case, ["ndcg@5"], no_recs="zero")["ndcg@5"] == 0.5


# ------------------------------------------------------------------------- spelling


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("recip_rank", "mrr"),
        ("rr@5", "mrr@5"),
        ("p@5", "precision@5"),
        ("r@10", "recall@10"),
        ("success@3", "hit_rate@3"),
        ("hr@3", "hit_rate@3"),
        ("ap@10", "map@10"),
        ("rprec", "r_precision"),
        ("ndcg(gain=linear)@10", "ndcg@10"),
        ("fbeta(beta=1)@5", "f1@5"),
        ("map(denominator=relevant)@5", "map@5"),
        ("recall(average=macro)@5", "recall@5"),
    ],
)
def test_aliases_give_the_canonical_values(alias: str, canonical: str) -> None:
    case = random_case(random.Random(5), n_users=30)
    res = run_receval(case, [alias, canonical])
    assert res[alias] == pytest.approx(res[canonical], abs=1e-15)
    ref = brute.evaluate(case.truth, case.recs, [canonical])
    assert res[alias] == pytest.approx(ref.means[canonical], abs=1e-12)


def test_metric_thresholds_override_the_global_one() -> None:
    case = random_case(random.Random(6), n_users=60)
    metrics = [
        "precision(rel=2)@3",
        "recall(rel=2)@3",
        "recall(rel=2, average=micro)@3",
        "fbeta(rel=2, beta=2)@3",
        "hit_rate(rel=2)@3",
        "mrr(rel=2)",
        "arhr(rel=2)@3",
        "map(rel=2)@3",
        "map(rel=2, denominator=min)@3",
        "cg(rel=2)@3",
        "ndcg(rel=2, gain=exp)@3",
        "r_precision(rel=2)",
        "precision@3",  # global threshold 1
        "ndcg@3",
    ]
    for ties in POLICIES:
        res = run_receval(case, metrics, ties=ties)
        ref = brute.evaluate(case.truth, case.recs, metrics, ties=ties)
        assert_matches_brute(res, ref, metrics, what=ties)
