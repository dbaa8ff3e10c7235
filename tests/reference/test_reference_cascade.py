"""The cascade metrics and the metrics of incomplete judgments against the peers' own code.

- bpref: trec_eval (pytrec_eval), with ``ties="trec"`` on data with ties, at relevance levels
  1 and 2 (a relevance below 0 is not a judgment for trec_eval's bpref);
- err@K: gdeval.pl through ir_measures (``ERR@K``, needs perl), which prints 5 decimals;
- judged@K: ir_measures' ``Judged@K``;
- rbp: ir_measures ``RBP(p, rel=1)`` (cwl_eval, no cutoff), trectools ``get_rbp`` (binary and
  graded at depth K, and its residual), ranx ``rbp.P`` (graded, no cutoff).

ir_measures, gdeval and trectools order a tie by document id ascending or keep the run's order,
so every peer but trec_eval is compared on tie-free data (distinct float scores). The users are
those docs/metrics.md evaluates (truth users with a relevant item); a user missing from a
peer's output has no recs and scores 0 (trec_eval ``-c``).
"""

from __future__ import annotations

import math
import random
import shutil
import warnings
from collections.abc import Hashable
from typing import Any

import pandas as pd
import pytest
import pytrec_eval

from helpers import brute
from helpers.cases import Case, assert_values_close, per_user, random_case, run_receval

TOL = 1e-12


def qrels_of(case: Case) -> dict[str, dict[str, int]]:
    return {str(u): {str(i): int(r) for i, r in j.items()} for u, j in case.truth.items()}


def run_of(case: Case) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for user, item, score in case.recs:
        run.setdefault(str(user), {})[str(item)] = float(score)
    return run


def compare(
    case: Case, ours: str, theirs: dict[str, float], tol: float, level: int = 1, **kw: Any
) -> None:
    """Per user and on average; users missing from ``theirs`` score 0."""
    users = brute.evaluated_users(case.truth, level)
    want = {u: float(theirs.get(str(u), 0.0)) for u in users}
    res = run_receval(case, [ours], **kw)
    assert_values_close(per_user(res, ours), want, tol, ours)
    assert res[ours] == pytest.approx(math.fsum(want.values()) / len(want), rel=tol, abs=tol)


TIED = [
    (1, {"n_scores": 3}),
    (2, {"n_scores": 5, "string_ids": True}),
    (3, {"n_scores": 2, "max_len": 14, "n_items": 16}),
    (4, {"n_scores": 1, "max_len": 12, "n_items": 14}),  # one big tie per user
]


@pytest.mark.parametrize(("seed", "options"), TIED)
@pytest.mark.parametrize("level", [1, 2])
def test_bpref_matches_trec_eval(seed: int, options: dict[str, Any], level: int) -> None:
    case = random_case(
        random.Random(seed), n_users=300, rel_values=(-1, 0, 1, 2, 3), **options
    )  # relevance -1: in truth, but not a judged non-relevant item for bpref
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_of(case), {"bpref"}, relevance_level=level)
    out = evaluator.evaluate(run_of(case))
    theirs = {u: v["bpref"] for u, v in out.items()}
    compare(case, "bpref", theirs, TOL, level, ties="trec", relevance_threshold=level)
    compare(case, f"bpref(rel={level})", theirs, TOL, level, ties="trec")


def tie_free(seed: int, **options: Any) -> Case:
    return random_case(
        random.Random(seed), n_users=300, distinct_scores=True, max_len=14, n_items=16, **options
    )


ir_measures = pytest.importorskip("ir_measures")


def ir_values(case: Case, measure: Any, provider: str) -> dict[str, float]:
    prov = ir_measures.providers.registry[provider]
    if not prov.is_available():
        pytest.skip(f"ir_measures provider {provider} is not available here")
    return {
        m.query_id: float(m.value) for m in prov.iter_calc([measure], qrels_of(case), run_of(case))
    }


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval.pl needs perl")
@pytest.mark.parametrize("k", [1, 3, 5, 10, 20])
def test_err_matches_gdeval(k: int) -> None:
    case = tie_free(5)  # integer user ids: gdeval reads numeric topics only
    compare(case, f"err@{k}", ir_values(case, ir_measures.ERR @ k, "gdeval"), 6e-6)


@pytest.mark.parametrize("k", [None, 1, 3, 10, 20])
def test_judged_matches_ir_measures(k: int | None) -> None:
    case = tie_free(6, string_ids=True)
    measure = ir_measures.Judged if k is None else ir_measures.Judged @ k
    ours = "judged" if k is None else f"judged@{k}"
    compare(case, ours, ir_values(case, measure, "judged"), TOL)


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_binary_rbp_matches_cwl_eval(p: float) -> None:
    case = tie_free(7)
    compare(case, f"rbp(p={p})", ir_values(case, ir_measures.RBP(p=p, rel=1), "cwl_eval"), TOL)


trectools = pytest.importorskip("trectools")


def trectools_rbp(case: Case, p: float, k: int, binary: bool) -> tuple[dict, dict]:
    """trectools' RBP@k and its residual at depth k, per query id."""
    qrels = trectools.TrecQrel()
    qrels.qrels_data = pd.DataFrame(
        [(str(u), 0, str(i), int(r)) for u, j in case.truth.items() for i, r in j.items()],
        columns=["query", "q0", "docid", "rel"],
    )
    rows = [(str(u), "Q0", str(i), 0, float(s), "sys") for u, i, s in case.recs]
    run = trectools.TrecRun()
    run.run_data = pd.DataFrame(
        rows, columns=["query", "q0", "docid", "rank", "score", "system"]
    ).sort_values(["query", "score"], ascending=[True, False])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, residual = trectools.TrecEval(run, qrels).get_rbp(
            p=p, depth=k, per_query=True, binary_topical_relevance=binary, average_ties=False
        )
    return value.iloc[:, 0].to_dict(), residual.iloc[:, 0].to_dict()


@pytest.mark.parametrize("k", [1, 3, 5, 10, 20])
@pytest.mark.parametrize("p", [0.5, 0.8])
def test_rbp_and_residual_match_trectools(k: int, p: float) -> None:
    case = tie_free(8, string_ids=k % 2 == 0)
    binary, residual = trectools_rbp(case, p, k, binary=True)
    compare(case, f"rbp(p={p})@{k}", binary, TOL)
    graded, _ = trectools_rbp(case, p, k, binary=False)
    compare(case, f"rbp(p={p}, gain=linear)@{k}", graded, TOL)
    # trectools' residual is NaN for a query whose list has no relevant item and is missing for
    # a query whose top K is all judged non-relevant: compare the others (most users)
    known = {u: v for u, v in residual.items() if not math.isnan(v)}
    res = run_receval(case, [f"rbp_residual(p={p})@{k}"])
    ours = per_user(res, f"rbp_residual(p={p})@{k}")
    users: dict[Hashable, float] = {u: known[str(u)] for u in ours if str(u) in known}
    assert len(users) > 50
    assert_values_close({u: ours[u] for u in users}, users, TOL, "rbp_residual")


ranx = pytest.importorskip("ranx")


@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_graded_rbp_matches_ranx(p: float) -> None:
    case = tie_free(9)
    users = brute.evaluated_users(case.truth)
    qrels = {str(u): {str(i): int(r) for i, r in j.items()} for u, j in case.truth.items()}
    qrels = {u: j for u, j in qrels.items() if any(r >= 1 for r in j.values())}
    run = {u: items for u, items in run_of(case).items() if u in qrels}
    name = f"rbp.{round(p * 100)}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranked = ranx.Run(run)
        ranx.evaluate(
            ranx.Qrels(qrels), ranked, name, return_mean=False, make_comparable=True,
            save_results_in_run=True,
        )  # fmt: skip
    assert len(ranked.scores[name]) == len(users)
    compare(case, f"rbp(p={p}, gain=linear)", ranked.scores[name], 1e-9)
