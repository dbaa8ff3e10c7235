"""The ranking kernel's two ways to place matched items: counting scores
(``kernels.ranking._counted_groups``, the default where it applies) and sorting each list.

Both must give the same values bit for bit, for every metric, tie policy and threshold
(the counted path applies to ``expected`` and ``first`` without cascade metrics; the others
take the sort either way), on lists with many ties, -0.0 beside 0.0, infinite scores, users
with no recs, users with more matched items than the counted path takes, and duplicates.
"""

from __future__ import annotations

import functools

import numpy as np
import polars as pl
import pytest

import receval
from receval.kernels import ranking as K

METRICS = [
    "ndcg@3", "ndcg", "ndcg(gain=exp)@5", "dcg(gain={1: 1, 2: 3, 3: 7})@4", "cg@2", "ndcg_k@3",
    "map", "map@4", "map(denominator=min)@3", "mrr", "mrr@2", "arhr@5", "recall@3",
    "recall(average=micro)", "precision@2", "f1@3", "fbeta(beta=2)@4", "hit_rate@1",
    "hit_rate@3", "r_precision", "precision(rel=2)@3", "ndcg(rel=3)@4",
]  # fmt: skip
CASCADE = ["err@5", "rbp(p=0.8)", "rbp_residual(p=0.5)@4", "bpref", "judged@3"]


def _frames(seed: int, n_users: int = 60, long_users: int = 3) -> tuple[pl.DataFrame, ...]:
    """Random truth and recs with heavy ties; ``long_users`` users have lists of 200 items
    with over ``K.COUNTED_MAX`` matched items."""
    rng = np.random.default_rng(seed)
    truth_rows: list[tuple[int, int, float]] = []
    recs_rows: list[tuple[int, int, float]] = []
    scores = np.array([2.0, 1.0, 0.5, 0.0, -0.0, -1.0, np.inf, -np.inf])
    for u in range(n_users):
        long = u < long_users
        n_items = 200 if long else int(rng.integers(0, 25))
        items = rng.permutation(300)[: max(n_items, 1)]
        n_truth = 150 if long else int(rng.integers(1, 12))
        judged = items[:n_truth] if long else rng.permutation(300)[:n_truth]
        for i in judged:
            truth_rows.append((u, int(i), float(rng.integers(0, 4))))
        if u % 7 == 3:
            continue  # a user without recs
        for i in items[:n_items]:
            score = scores[rng.integers(0, len(scores))] if u % 2 else rng.integers(0, 4) / 2
            recs_rows.append((u, int(i), float(score)))
    for u in range(n_users, n_users + 3):  # recs users not in truth
        recs_rows.append((u, 1, 1.0))
    truth = pl.DataFrame(truth_rows, schema=["user", "item", "relevance"], orient="row")
    recs = pl.DataFrame(recs_rows, schema=["user", "item", "score"], orient="row")
    order = rng.permutation(recs.height)
    return truth, recs[order]


def _both(
    monkeypatch: pytest.MonkeyPatch, truth: pl.DataFrame, recs: pl.DataFrame, **options: object
) -> tuple[receval.Result, receval.Result]:
    counted = receval.evaluate(truth, recs, **options)  # type: ignore[arg-type]
    with monkeypatch.context() as patch:
        patch.setattr(K, "rank_users", functools.partial(K.rank_users, counted=False))
        sorted_ = receval.evaluate(truth, recs, **options)  # type: ignore[arg-type]
    return counted, sorted_


def _assert_identical(a: receval.Result, b: receval.Result) -> None:
    assert list(a.means) == list(b.means)
    for name, value in a.means.items():
        other = b.means[name]
        assert (np.isnan(value) and np.isnan(other)) or value == other, name
    left, right = a.per_user, b.per_user
    assert left.columns == right.columns and left.height == right.height
    for col in left.columns[1:]:
        x = left[col].to_numpy()
        y = right[col].to_numpy()
        assert np.array_equal(x.view(np.int64), y.view(np.int64)), col  # bit for bit


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", ["expected", "first", "trec", "optimistic", "pessimistic"])
def test_counted_positions_equal_sorted_lists(
    monkeypatch: pytest.MonkeyPatch, seed: int, ties: str
) -> None:
    truth, recs = _frames(seed)
    metrics = METRICS + (CASCADE if seed == 2 else [])
    counted, sorted_ = _both(monkeypatch, truth, recs, metrics=metrics, ties=ties)
    _assert_identical(counted, sorted_)
    assert counted.counts.evaluated > 0


@pytest.mark.parametrize("threshold", [0.5, 2.0, 3.0])
def test_counted_positions_at_every_threshold(
    monkeypatch: pytest.MonkeyPatch, threshold: float
) -> None:
    truth, recs = _frames(5)
    counted, sorted_ = _both(
        monkeypatch, truth, recs, metrics=METRICS, relevance_threshold=threshold
    )
    _assert_identical(counted, sorted_)


def test_counted_positions_equal_brute_force_ranks() -> None:
    """The counted positions against ranks computed here: 1 + the number of items scored
    higher (``first``: plus the equal items listed before; ``expected``: each position of the
    tie group with its share), on a list with ties, -0.0 beside 0.0 and an infinite score."""
    scores = [0.5, 1.0, 0.5, -0.0, 0.0, 1.0, np.inf, 0.5]
    relevant = [0, 2, 4]  # list indices of the relevant items; the others are judged 0
    items = list(range(10, 10 + len(scores)))
    rel = [1.0 if j in relevant else 0.0 for j in range(len(scores))]
    truth = pl.DataFrame({"user": [1] * 8, "item": items, "relevance": rel})
    recs = pl.DataFrame({"user": [1] * 8, "item": items, "score": scores})
    ranks = {
        j: 1 + sum(t > scores[j] for t in scores) + sum(t == scores[j] for t in scores[:j])
        for j in relevant
    }
    assert ranks == {0: 4, 2: 5, 4: 8}
    got = receval.evaluate(truth, recs, metrics=["arhr"], ties="first").means["arhr"]
    assert got == pytest.approx(sum(1.0 / r for r in ranks.values()), rel=1e-15)
    # expected: the 0.5 group holds positions 4-6 (2 of its 3 items relevant), the zeros 7-8
    want = (2 / 3) * (1 / 4 + 1 / 5 + 1 / 6) + (1 / 2) * (1 / 7 + 1 / 8)
    got = receval.evaluate(truth, recs, metrics=["arhr"], ties="expected").means["arhr"]
    assert got == pytest.approx(want, rel=1e-15)


def test_duplicate_recs_found_on_either_path(monkeypatch: pytest.MonkeyPatch) -> None:
    truth, recs = _frames(3)
    dup = pl.concat([recs, recs.filter(pl.col("user") == 0).head(1)])
    for counted in (True, False):
        with monkeypatch.context() as patch:
            patch.setattr(K, "rank_users", functools.partial(K.rank_users, counted=counted))
            with pytest.raises(receval.InputError, match="recs has 2 duplicate"):
                receval.evaluate(truth, dup, metrics=["ndcg@3"])
