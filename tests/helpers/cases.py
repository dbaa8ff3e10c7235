"""Random cases, their input frames and comparisons with the brute-force reference, shared by
the correctness tests (ties, properties, the references, the common suite).

Cases are ``(truth, recs)`` with ``truth = {user: {item: relevance}}`` and ``recs`` a list
of ``(user, item, score)`` rows in input order (the data model of ``helpers/brute.py``). The
generators deliberately produce ties (small integer scores), users in truth without recs,
users in recs without truth, users whose truth has no relevant item, users whose every
judged item is relevant, and lists shorter than the cutoffs used in the tests.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from hypothesis import strategies as st

from helpers import brute

# Item ids whose string order differs from their numeric order ("9" > "10").
INT_ITEMS = (1, 2, 3, 5, 9, 10, 11, 19, 20, 42, 99, 100, 101, 250, 1000, 7)
# String ids with mixed case, prefixes and digit runs ("b9" > "b10", "B" < "a").
STR_ITEMS = (
    *("a", "b", "ab", "B", "b10", "b9", "Z", "zz"),
    *("a-1", "a_1", "x", "xy", "c", "C", "d", "q"),
)

USER_KINDS = ("both", "both", "both", "all_relevant", "no_relevant", "truth_only", "recs_only")


@dataclass
class Case:
    truth: dict[Hashable, dict[Hashable, float]]
    recs: list[tuple[Hashable, Hashable, float]]


def user_id(u: int, string_ids: bool) -> Hashable:
    return f"u{u}" if string_ids else u + 1


def random_case(
    rng: random.Random,
    *,
    n_users: int = 30,
    n_items: int = 10,
    max_len: int = 6,
    n_scores: int = 3,
    rel_values: Sequence[int] = (0, 1, 2, 3),
    string_ids: bool = False,
    distinct_scores: bool = False,
    kinds: Sequence[str] = USER_KINDS,
    shuffle_rows: bool = True,
) -> Case:
    """A random case; user 0 always has recs and a relevant item (so something is evaluated)."""
    pool = (STR_ITEMS if string_ids else INT_ITEMS)[:n_items]
    top_rel = max(rel_values)
    truth: dict[Hashable, dict[Hashable, float]] = {}
    recs: list[tuple[Hashable, Hashable, float]] = []
    for u in range(n_users):
        uid = user_id(u, string_ids)
        kind = "both" if u == 0 else rng.choice(kinds)
        if kind != "recs_only":
            judged = rng.sample(pool, rng.randint(1, len(pool)))
            if kind == "all_relevant":
                rels = [rng.choice([r for r in rel_values if r >= 1] or [1]) for _ in judged]
            elif kind == "no_relevant":
                rels = [0 for _ in judged]
            else:
                rels = [rng.choice(rel_values) for _ in judged]
            if u == 0:
                rels[0] = top_rel
            truth[uid] = dict(zip(judged, rels, strict=True))
        if kind != "truth_only":
            if kind == "all_relevant":
                listed = rng.sample(list(truth[uid]), rng.randint(1, min(max_len, len(truth[uid]))))
            else:
                listed = rng.sample(pool, rng.randint(1, min(max_len, len(pool))))
            if distinct_scores:
                scores = [rng.random() + j for j in range(len(listed))]
                rng.shuffle(scores)
            else:
                scores = [float(rng.randrange(n_scores)) for _ in listed]
            recs.extend((uid, item, s) for item, s in zip(listed, scores, strict=True))
    if shuffle_rows:
        rng.shuffle(recs)
    return Case(truth, recs)


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    max_users: int = 5,
    max_items: int = 7,
    max_len: int = 5,
    n_scores: int = 3,
    rel_values: Sequence[int] = (0, 1, 2, 3),
    string_ids: bool = False,
    distinct_scores: bool = False,
) -> Case:
    """Hypothesis version of :func:`random_case` (small, shrinkable)."""
    pool = list((STR_ITEMS if string_ids else INT_ITEMS)[:max_items])
    n_users = draw(st.integers(1, max_users))
    truth: dict[Hashable, dict[Hashable, float]] = {}
    recs: list[tuple[Hashable, Hashable, float]] = []
    for u in range(n_users):
        uid = user_id(u, string_ids)
        kind = "both" if u == 0 else draw(st.sampled_from(USER_KINDS))
        if kind != "recs_only":
            judged = draw(st.lists(st.sampled_from(pool), min_size=1, unique=True))
            if kind == "all_relevant":
                rel_st = st.sampled_from([r for r in rel_values if r >= 1] or [1])
            elif kind == "no_relevant":
                rel_st = st.just(0)
            else:
                rel_st = st.sampled_from(rel_values)
            rels = draw(st.lists(rel_st, min_size=len(judged), max_size=len(judged)))
            if u == 0:
                rels[0] = max(rel_values)
            truth[uid] = dict(zip(judged, rels, strict=True))
        if kind != "truth_only":
            source = list(truth[uid]) if kind == "all_relevant" else pool
            listed = draw(
                st.lists(st.sampled_from(source), min_size=1, max_size=max_len, unique=True)
            )
            if distinct_scores:
                score_st = st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
                scores = draw(
                    st.lists(score_st, min_size=len(listed), max_size=len(listed), unique=True)
                )
            else:
                scores = draw(
                    st.lists(
                        st.integers(0, n_scores - 1).map(float),
                        min_size=len(listed),
                        max_size=len(listed),
                    )
                )
            recs.extend((uid, item, s) for item, s in zip(listed, scores, strict=True))
    recs = draw(st.permutations(recs))
    return Case(truth, list(recs))


# ----------------------------------------------------------------- input frames


def truth_frame(truth: dict[Hashable, dict[Hashable, float]]) -> pl.DataFrame:
    rows = [(u, i, r) for u, judged in truth.items() for i, r in judged.items()]
    users, items, rels = zip(*rows, strict=True)
    return pl.DataFrame({"user": list(users), "item": list(items), "relevance": list(rels)})


def recs_frame(recs: Sequence[tuple[Hashable, Hashable, float]]) -> pl.DataFrame:
    users, items, scores = zip(*recs, strict=True)
    return pl.DataFrame(
        {"user": list(users), "item": list(items), "score": [float(s) for s in scores]}
    )


def run_receval(case: Case, metrics: Sequence[str], **kwargs: Any) -> Any:
    import receval

    return receval.evaluate(truth_frame(case.truth), recs_frame(case.recs), metrics, **kwargs)


def canonical(metric: str) -> str:
    import receval

    return str(receval.parse_metric(metric).canonical)


def per_user(res: Any, metric: str, user_col: str = "user") -> dict[Hashable, float]:
    """Non-null per-user values of ``metric`` from a receval result."""
    frame = res.per_user
    col = canonical(metric)
    return {
        u: v
        for u, v in zip(frame[user_col].to_list(), frame[col].to_list(), strict=True)
        if v is not None
    }


def assert_values_close(
    got: dict[Hashable, float], want: dict[Hashable, float], tol: float, what: str
) -> None:
    assert set(got) == set(want), (
        f"{what}: users differ; only in receval {sorted(set(got) - set(want), key=str)}, "
        f"only in reference {sorted(set(want) - set(got), key=str)}"
    )
    bad = {
        u: (got[u], want[u])
        for u in want
        if not math.isclose(got[u], want[u], rel_tol=tol, abs_tol=tol)
    }
    assert not bad, f"{what}: per-user (receval, reference) differ: {dict(list(bad.items())[:5])}"


def assert_matches_brute(
    res: Any, ref: brute.BruteResult, metrics: Sequence[str], tol: float = 1e-9, what: str = ""
) -> None:
    for m in metrics:
        assert_values_close(per_user(res, m), ref.per_user[m], tol, f"{what} {m}")
        got, want = res[m], ref.means[m]
        assert math.isclose(got, want, rel_tol=tol, abs_tol=tol), (
            f"{what} {m}: mean receval {got!r} != reference {want!r}"
        )


def metrics_for(ks: Sequence[int | None]) -> list[str]:
    """Every top-K metric of docs/metrics.md with every variant, at each cutoff in ``ks``."""
    out: list[str] = []
    for k in ks:
        at = "" if k is None else f"@{k}"
        out += [
            f"precision{at}",
            f"recall{at}",
            f"recall(average=micro){at}",
            f"f1{at}",
            f"fbeta(beta=2){at}",
            f"fbeta(beta=0.5){at}",
            f"hit_rate{at}",
            f"mrr{at}",
            f"arhr{at}",
            f"map{at}",
            f"cg{at}",
            f"cg(gain=exp){at}",
            f"dcg{at}",
            f"dcg(gain=exp){at}",
            f"ndcg{at}",
            f"ndcg(gain=exp){at}",
            f"ndcg(gain={{0: 0, 1: 1, 2: 5, 3: 6}}){at}",
            f"ndcg_k{at}",
            f"ndcg_k(gain=exp){at}",
            f"err{at}",
            f"err(max_grade=3){at}",
            f"rbp{at}",
            f"rbp(p=0.5){at}",
            f"rbp_residual{at}",
            f"bpref{at}",
            f"judged{at}",
        ]
        if k is not None:
            out.append(f"map(denominator=min){at}")
    out.append("r_precision")
    return out


ALL_METRICS = metrics_for([None, 1, 2, 3, 5, 10])
