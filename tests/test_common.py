"""Registry-driven common tests (scikit-learn's ``test_common.py``).

Every registered metric declares property sets in ``spec.properties``; each property known
here has a check, and a metric without classification (or with a property no test knows)
fails. The checks run every metric with sampled parameters and cutoffs on small random data
that has ties (small integer scores), users without recs, recs users not in truth, users
with no relevant item, all-relevant users and cutoffs longer than the lists.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import receval
from receval import MetricSpec

# this suite covers the ranking family; test_families.py checks that every family has one
SPECS = tuple(s for s in receval.list_metrics() if s.family == "ranking")
IDS = [s.name for s in SPECS]

# Each property and what it promises; a property missing here fails the classification test.
KNOWN_PROPERTIES = {
    "bounded01": "values in [0, 1]",
    "nonnegative": "values in [0, inf)",
    "perfect_is_one": "1.0 on a perfect ranking (without cutoff and at K >= the list length)",
    "order_invariant": "with ties='expected', the order of input rows never changes a value",
}
BOUND_CLASSES = {"bounded01": (0.0, 1.0), "nonnegative": (0.0, math.inf)}

Rows = list[tuple[Hashable, Hashable, float]]
GAIN_MAP = "{0: 0, 1: 1, 2: 3, 3: 7}"  # monotone, covers every relevance the data has


def requests(spec: MetricSpec, ks: tuple[int | None, ...] = (None, 1, 3, 20)) -> list[str]:
    """Canonical strings: the defaults and each parameter varied alone, at each cutoff."""
    variants = [""]
    for p in spec.params:
        if p.kind == "threshold":
            values = ["2"]
        elif p.kind == "positive":
            values = ["2", "0.5"]
        elif p.kind in ("choice", "gain"):
            values = [c for c in p.choices if c != p.default]
            if p.kind == "gain":
                values.append(GAIN_MAP)
        else:
            pytest.fail(f"no sample values for parameter kind {p.kind!r} of {spec.name}")
        variants += [f"({p.name}={v})" for v in values]
    cuts = ks if spec.cutoff else (None,)
    return [spec.name + v + ("" if k is None else f"@{k}") for v in variants for k in cuts]


def threshold_of(metric: str) -> float:
    """The relevance threshold a request uses (its rel=, else evaluate's default 1)."""
    rel = receval.parse_metric(metric).get("rel")
    return 1.0 if rel is None else float(rel)  # type: ignore[arg-type]


def make_case(seed: int, *, string_ids: bool = False) -> tuple[Rows, Rows]:
    """Random (truth rows, recs rows) with ties, shuffled recs rows."""
    rng = random.Random(seed)
    items = list(range(1, 13))
    kinds = ["both"] * 5 + ["truth_only", "recs_only", "no_relevant", "all_relevant"]
    truth: Rows = []
    recs: Rows = []
    for u in range(1, 31):
        kind = "both" if u == 1 else rng.choice(kinds)
        uid: Hashable = f"u{u}" if string_ids else u
        if kind != "recs_only":
            for j, item in enumerate(rng.sample(items, rng.randint(1, 8))):
                if kind == "no_relevant":
                    rel = 0
                elif kind == "all_relevant" or (u == 1 and j == 0):
                    rel = rng.choice([1, 2, 3]) if u != 1 else 3
                else:
                    rel = rng.choice([0, 1, 2, 3])
                truth.append((uid, f"i{item}" if string_ids else item, float(rel)))
        if kind != "truth_only":
            for item in rng.sample(items, rng.randint(1, 9)):
                score = float(rng.randrange(3))  # few distinct scores: many ties
                recs.append((uid, f"i{item}" if string_ids else item, score))
    rng.shuffle(recs)
    return truth, recs


def frame(rows: Rows, value: str) -> pl.DataFrame:
    users, items, values = zip(*rows, strict=True)
    return pl.DataFrame({"user": list(users), "item": list(items), value: list(values)})


def run(truth: Rows, recs: Rows, metrics: list[str], **kwargs: object) -> receval.Result:
    return receval.evaluate(frame(truth, "relevance"), frame(recs, "score"), metrics, **kwargs)


CASES = [make_case(1), make_case(2, string_ids=True), make_case(3)]


# ----------------------------------------------------------------------- classification


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_metric_is_classified(spec: MetricSpec) -> None:
    props = set(spec.properties)
    assert props, f"{spec.name} has no properties: classify it in the registry"
    unknown = props - set(KNOWN_PROPERTIES)
    assert not unknown, f"{spec.name}: properties {unknown} have no check in test_common.py"
    bound = props & set(BOUND_CLASSES)
    assert len(bound) == 1, f"{spec.name} must be exactly one of {sorted(BOUND_CLASSES)}"
    assert spec.bounds == BOUND_CLASSES[bound.pop()], "properties disagree with spec.bounds"
    assert "order_invariant" in props, f"{spec.name}: every ranking metric must be"
    assert spec.description and spec.formula
    assert spec.family == "ranking"


def test_registry_is_not_empty() -> None:
    assert {"precision", "recall", "ndcg", "map", "mrr", "r_precision"} <= set(IDS)


# ------------------------------------------------------------------------------- checks


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_bounds(spec: MetricSpec) -> None:
    lo, hi = spec.bounds
    metrics = requests(spec)
    for truth, recs in CASES:
        for ties in ("expected", "first", "optimistic", "pessimistic"):
            res = run(truth, recs, metrics, ties=ties)
            for m in metrics:
                values = res.per_user[m].drop_nulls().to_list()
                assert values, f"{m}: no user evaluated, the data is too small"
                for v in [*values, res[m]]:
                    assert math.isfinite(v), f"{m} ({ties}): {v}"
                    assert lo - 1e-12 <= v <= hi + 1e-12, f"{m} ({ties}): {v} outside {lo, hi}"


def test_bounds_hold_for_a_non_monotone_gain_map() -> None:
    """The ideal list orders by gain, so ndcg stays <= 1 even when gain falls with relevance."""
    truth = [(1, "a", 2.0), (1, "b", 1.0)]
    metrics = ["ndcg(gain={1: 5, 2: 1})@1", "ndcg(gain={1: 5, 2: 1})"]
    b_first = run(truth, [(1, "a", 1.0), (1, "b", 2.0)], metrics)
    a_first = run(truth, [(1, "a", 2.0), (1, "b", 1.0)], metrics)
    # b (gain 5) first is the ideal list: 1.0
    assert b_first[metrics[0]] == 1.0
    assert b_first[metrics[1]] == 1.0
    # a first: dcg@1 = 1, idcg@1 = 5; whole list: (1 + 5 / log2(3)) / (5 + 1 / log2(3))
    assert a_first[metrics[0]] == pytest.approx(0.2, rel=1e-12)
    want = (1 + 5 / math.log2(3)) / (5 + 1 / math.log2(3))
    assert a_first[metrics[1]] == pytest.approx(want, rel=1e-12)


def perfect_recs(truth: Rows) -> Rows:
    """Every truth item of each user, scored by its relevance (equal relevance ties), then
    two items that are not in truth below them."""
    recs: Rows = [(u, i, rel) for u, i, rel in truth]
    for u in {u for u, _, _ in truth}:
        recs += [(u, "x1" if isinstance(u, str) else 901, -1.0)]
        recs += [(u, "x2" if isinstance(u, str) else 902, -2.0)]
    return recs


PERFECT = [s for s in SPECS if "perfect_is_one" in s.properties]


@pytest.mark.parametrize("spec", PERFECT, ids=[s.name for s in PERFECT])
def test_perfect_ranking_is_one(spec: MetricSpec) -> None:
    metrics = requests(spec, ks=(None, 12, 50))  # 12 >= the longest list (8 + 2 items)
    for truth, _ in CASES:
        recs = perfect_recs(truth)
        for ties in ("expected", "first", "pessimistic"):
            res = run(truth, recs, metrics, ties=ties)
            for m in metrics:
                values = res.per_user[m].drop_nulls().to_list()
                assert values
                bad = [v for v in values if not math.isclose(v, 1.0, rel_tol=1e-12)]
                assert not bad, f"{m} ({ties}) on a perfect ranking: {bad[:5]}"
                assert math.isclose(res[m], 1.0, rel_tol=1e-12)


NOT_PERFECT = [s for s in SPECS if "perfect_is_one" not in s.properties]


@pytest.mark.parametrize("spec", NOT_PERFECT, ids=[s.name for s in NOT_PERFECT])
def test_metrics_without_perfect_is_one_have_a_witness(spec: MetricSpec) -> None:
    """The classification is not too cautious: a perfect ranking can score != 1."""
    truth, _ = CASES[0]
    res = run(truth, perfect_recs(truth), requests(spec, ks=(None, 1, 3)))
    assert any(not math.isclose(v, 1.0) for v in res.values())


ORDER_INVARIANT = [s for s in SPECS if "order_invariant" in s.properties]


@pytest.mark.parametrize("spec", ORDER_INVARIANT, ids=[s.name for s in ORDER_INVARIANT])
def test_order_invariant(spec: MetricSpec) -> None:
    metrics = requests(spec)
    for n, (truth, recs) in enumerate(CASES):
        base = run(truth, recs, metrics)
        for seed in range(3):
            rng = random.Random(100 * n + seed)
            t2, r2 = truth[:], recs[:]
            rng.shuffle(t2)
            rng.shuffle(r2)
            other = run(t2, r2, metrics)
            assert_frame_equal(other.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)
            for m in metrics:
                assert math.isclose(other[m], base[m], rel_tol=1e-12, abs_tol=1e-12), m


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_per_user_columns_and_means(spec: MetricSpec) -> None:
    metrics = requests(spec)
    for truth, recs in CASES:
        res = run(truth, recs, metrics)
        # the requests are written in canonical form: they are the column names
        assert [receval.parse_metric(m).canonical for m in metrics] == metrics
        assert res.metrics == tuple(metrics)
        assert res.per_user.columns == ["user", *metrics]
        assert all(res.per_user.schema[m] == pl.Float64 for m in metrics)
        for m in metrics:
            column = res.per_user[m]
            values = column.drop_nulls().to_list()
            # a user has a value exactly when it has a relevant item at the metric's threshold
            thr = threshold_of(m)
            relevant: dict[Hashable, int] = {}
            for u, _, rel in truth:
                relevant[u] = relevant.get(u, 0) + (rel >= thr)
            want_users = sorted(u for u, n in relevant.items() if n >= 1)
            got_users = res.per_user.filter(column.is_not_null())["user"].to_list()
            assert got_users == want_users, m
            parsed = receval.parse_metric(m)
            if any(p.name == "average" for p in parsed.spec.params) and (
                parsed.get("average") == "micro"
            ):
                # micro: sum of hits over sum of |R|; per user hits / |R|
                sizes = [relevant[u] for u in got_users]
                want = sum(v * s for v, s in zip(values, sizes, strict=True)) / sum(sizes)
            else:
                want = math.fsum(values) / len(values)
            assert math.isclose(res[m], want, rel_tol=1e-12, abs_tol=1e-15), m


def test_micro_recall_differs_from_macro() -> None:
    """The micro exception above is real: it weighs users by |R|."""
    # user 1: 1 of 1 relevant found; user 2: 0 of 3 found
    truth = [(1, 1, 1.0), (2, 1, 1.0), (2, 2, 1.0), (2, 3, 1.0)]
    recs = [(1, 1, 1.0), (2, 9, 1.0)]
    res = run(truth, recs, ["recall", "recall(average=micro)"])
    assert res["recall"] == 0.5  # (1 + 0) / 2
    assert res["recall(average=micro)"] == 0.25  # (1 + 0) / (1 + 3)
