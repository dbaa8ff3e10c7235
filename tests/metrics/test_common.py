"""Registry-driven common suite (scikit-learn's ``test_common.py``) of every metric family.

Every metric of ``receval.list_metrics()`` declares property sets in ``spec.properties``; each
property known for its family has a check, and a metric with no property, with a property no
check of its family knows, or of a family without data here fails. The checks run every metric
with sampled parameters (each varied alone) and cutoffs on small random data built for its
family:

- ranking: ties (small integer scores), users without recs, recs users not in truth, users with
  no relevant item, all-relevant users and cutoffs longer than the lists;
- classification and rating: the same kinds of users, scores in [0, 1] with ties; every spec
  also runs through the common error tables;
- beyond: ties, short lists, cutoffs longer than the lists, recs users not in truth and truth
  users without recs; similarity metrics run with vector (cosine) and categorical (Jaccard)
  features. Hypothesis properties follow: bounds, diversity = 1 - ils, Gini 0 for uniform
  exposure, coverage monotone in K.

A check that several families share (classification, bounds, order of the rows, a perfect
prediction) is one test parametrised over every registered spec and its family's cases; a check
that only one family has is parametrised over that family's specs.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import receval
from helpers.beyond import frames
from helpers.beyond import make_case as beyond_case
from helpers.cases import Case, random_case, recs_frame, truth_frame
from helpers.examples import examples
from receval import InputError, MetricSpec
from receval._errors import UndefinedMetricWarning

# ------------------------------------------------------------------------------ the registry

SPECS = tuple(receval.list_metrics())
IDS = [s.name for s in SPECS]
POINTWISE = ("classification", "rating")
FAMILIES = ("ranking", *POINTWISE, "beyond")


def of_family(*families: str) -> list[MetricSpec]:
    return [s for s in SPECS if s.family in families]


def specs_with(prop: str) -> list[MetricSpec]:
    return [s for s in SPECS if prop in s.properties]


# Each property and what it promises, by family; a property missing here fails the
# classification test.
POINTWISE_PROPERTIES = {
    "bounded01": "values in [0, 1]",
    "nonnegative": "values in [0, inf)",
    "at_most_one": "values in (-inf, 1]",
    "perfect_is_zero": "0.0 when every prediction equals the true rating",
    "perfect_is_one": "1.0 when every prediction equals the true rating",
    "score_transform_invariant": "unchanged by a strictly increasing transform of the scores",
}
RANKING_PROPERTIES = {
    "bounded01": "values in [0, 1]",
    "nonnegative": "values in [0, inf)",
    "perfect_is_one": "1.0 on a perfect ranking (without cutoff and at K >= the list length)",
    "order_invariant": "with ties='expected', the order of input rows never changes a value",
}
BEYOND_PROPERTIES = {
    "bounded01": "values in [0, 1]",
    "nonnegative": "values in [0, inf)",
    "similarity_bounded": "ils in [-1, 1] from cosine, [0, 1] from Jaccard (diversity: 1 - ils)",
    "order_invariant": "with ties='expected', the order of input rows never changes a value",
}
KNOWN_PROPERTIES: dict[str, dict[str, str]] = {
    "ranking": RANKING_PROPERTIES,
    "classification": POINTWISE_PROPERTIES,
    "rating": POINTWISE_PROPERTIES,
    "beyond": BEYOND_PROPERTIES,
}
# the test of each property, by family (test_every_property_has_a_check)
POINTWISE_CHECKS = {
    "bounded01": "test_bounds",
    "nonnegative": "test_bounds",
    "at_most_one": "test_bounds",
    "score_transform_invariant": "test_score_transform_invariant",
    "perfect_is_zero": "test_perfect_is_zero",
    "perfect_is_one": "test_perfect_is_one",
}
CHECKS: dict[str, dict[str, str]] = {
    "ranking": {
        "bounded01": "test_bounds",
        "nonnegative": "test_bounds",
        "perfect_is_one": "test_perfect_is_one",
        "order_invariant": "test_order_of_rows_never_matters",
    },
    "classification": POINTWISE_CHECKS,
    "rating": POINTWISE_CHECKS,
    "beyond": {
        "bounded01": "test_bounds",
        "nonnegative": "test_bounds",
        "similarity_bounded": "test_bounds",
        "order_invariant": "test_order_of_rows_never_matters",
    },
}
POINTWISE_BOUNDS = {
    "bounded01": (0.0, 1.0),
    "nonnegative": (0.0, math.inf),
    "at_most_one": (-math.inf, 1.0),
}
# exactly one of these per metric, equal to spec.bounds (the beyond family has no such classes)
BOUND_CLASSES: dict[str, dict[str, tuple[float, float]]] = {
    "ranking": {"bounded01": (0.0, 1.0), "nonnegative": (0.0, math.inf)},
    "classification": POINTWISE_BOUNDS,
    "rating": POINTWISE_BOUNDS,
}

# ----------------------------------------------------------------------------- requests

GAIN_MAP = "{0: 0, 1: 1, 2: 3, 3: 7}"  # monotone, covers every relevance the data has
# the parameter values a request samples, by kind; a family takes only the kinds listed for it
SAMPLE_VALUES = {
    "threshold": ["2"],
    "positive": ["2", "0.5"],
    "grade": ["3", "7.5"],  # bounds the relevance (the data's is 0..3)
    "number": ["0.25", "1"],
    "fraction": ["0.5", "0.9"],
}
PARAM_KINDS = {
    "ranking": {"threshold", "positive", "grade", "fraction", "choice", "gain"},
    "classification": {"threshold", "positive", "number", "choice"},
    "rating": {"threshold", "positive", "number", "choice"},
    "beyond": {"fraction", "choice", "threshold", "word"},
}
# the item-table column (and group) of the beyond metrics that read one (helpers.beyond data)
NAMED = {
    "miscalibration": "by=genres",
    "awrf": "by=genres",
    "group_share": "by=year, group=2000",
    "exposure_share": "by=year, group=2000",
    "exposure_disparity": "by=year, group=2000",
    "exposure_gap": "by=year, group=2000",
    "exposure_gini": "by=genres",
    "exposure_entropy": "by=genres",
    "group_coverage": "by=genres",
}


def requests(spec: MetricSpec, ks: tuple[int | None, ...] = (None, 1, 3, 20)) -> list[str]:
    """Canonical strings: the defaults and each parameter varied alone, at each cutoff (a metric
    without cutoff: once)."""
    base = NAMED.get(spec.name)
    variants = [f"({base})"] if base else [""]
    for p in spec.params:
        if p.kind not in PARAM_KINDS[spec.family]:
            pytest.fail(f"no sample values for parameter kind {p.kind!r} of {spec.name}")
        if p.kind == "word":
            continue  # set by NAMED
        if p.kind in ("choice", "gain"):
            values = [c for c in p.choices if c != p.default]
            if p.kind == "gain":
                values.append(GAIN_MAP)
        else:
            values = SAMPLE_VALUES[p.kind]
        variants += [f"({base + ', ' if base else ''}{p.name}={v})" for v in values]
    cuts = ks if spec.cutoff else (None,)
    return [spec.name + v + ("" if k is None else f"@{k}") for v in variants for k in cuts]


def values_of(res: receval.Result, metric: str) -> list[float]:
    """The mean and, for a per-user metric, the per-user values (NaN and nulls dropped)."""
    name = receval.parse_metric(metric).canonical
    out = [res[name]]
    if name in res.per_user.columns:
        out += [v for v in res.per_user[name].to_list() if v is not None]
    return [v for v in out if not math.isnan(v)]


# ------------------------------------------------------------------------- ranking data

Rows = list[tuple[Hashable, Hashable, float]]


def ranking_case(seed: int, *, string_ids: bool = False) -> tuple[Rows, Rows]:
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


def run_ranking(truth: Rows, recs: Rows, metrics: list[str], **kwargs: object) -> receval.Result:
    return receval.evaluate(frame(truth, "relevance"), frame(recs, "score"), metrics, **kwargs)


RANKING_CASES = [ranking_case(1), ranking_case(2, string_ids=True), ranking_case(3)]


def threshold_of(metric: str) -> float:
    """The relevance threshold a request uses (its rel=, else evaluate's default 1)."""
    rel = receval.parse_metric(metric).get("rel")
    return 1.0 if rel is None else float(rel)  # type: ignore[arg-type]


def perfect_recs(truth: Rows) -> Rows:
    """Every truth item of each user, scored by its relevance (equal relevance ties), then
    two items that are not in truth below them."""
    recs: Rows = [(u, i, rel) for u, i, rel in truth]
    for u in {u for u, _, _ in truth}:
        recs += [(u, "x1" if isinstance(u, str) else 901, -1.0)]
        recs += [(u, "x2" if isinstance(u, str) else 902, -2.0)]
    return recs


# ------------------------------------------------------- classification and rating data


def pointwise_case(seed: int) -> Case:
    case = random_case(random.Random(seed), string_ids=seed % 2 == 0)
    return Case(case.truth, [(u, i, s / 2) for u, i, s in case.recs])  # scores in [0, 1]


POINTWISE_CASES = [pointwise_case(seed) for seed in range(4)]


def run_pointwise(case: Case, metrics: list[str], **kwargs: Any) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", UserWarning)
        return receval.evaluate(
            truth_frame(case.truth), recs_frame(case.recs), metrics, no_recs="skip", **kwargs
        )


def perfect_case(case: Case) -> Case:
    """Predictions equal to the true ratings, for every truth row (plus recs-only rows)."""
    recs = [(u, i, float(r)) for u, d in case.truth.items() for i, r in d.items()]
    return Case(
        case.truth, [*recs, ("nobody" if isinstance(recs[0][0], str) else -1, recs[0][1], 1.0)]
    )


# --------------------------------------------------------------------------- beyond data

FEATURES: dict[str, Any] = {"cosine": "vec", "jaccard": ["genres", "year"]}
NO_PAIRS = "ignore:no recs user has 2 or more items"  # ils@1: NaN with a warning (tested)


def run_beyond(
    data: dict[str, Any], metrics: list[str], kind: str = "cosine", **extra: Any
) -> receval.Result:
    return receval.evaluate(
        data["truth"], data["recs"], metrics, train=data["train"], items=data["items"],
        item_features=FEATURES[kind], **extra,
    )  # fmt: skip


# ---------------------------------------------------------------------- parametrisation

# the cases of each family, by index into its list of cases (ranking, pointwise) or by seed of
# helpers.beyond.make_case (beyond: the seeds differ between the checks)
CASE_KEYS: dict[str, list[int]] = {
    "ranking": list(range(len(RANKING_CASES))),
    "classification": list(range(len(POINTWISE_CASES))),
    "rating": list(range(len(POINTWISE_CASES))),
}


def spec_cases(specs: Iterable[MetricSpec], beyond_seeds: Iterable[int] = ()) -> list[Any]:
    """``(spec, case)`` for every spec and every case of its family (a family without cases
    here has none: test_every_metric_has_a_common_suite fails for it)."""
    seeds = list(beyond_seeds)
    params = []
    for spec in specs:
        if spec.family == "beyond":
            quiet = pytest.mark.filterwarnings(NO_PAIRS)
            params += [pytest.param(spec, k, id=f"{spec.name}-seed{k}", marks=quiet) for k in seeds]
        else:
            keys = CASE_KEYS.get(spec.family, [])
            params += [pytest.param(spec, k, id=f"{spec.name}-case{k}") for k in keys]
    return params


BOUNDS_PARAMS = spec_cases(SPECS, beyond_seeds=[0, 1])
ORDER_PARAMS = spec_cases(SPECS, beyond_seeds=[2, 3])


# ------------------------------------------------------------------------ classification


def check_classified(spec: MetricSpec) -> None:
    props = set(spec.properties)
    assert props, f"{spec.name} has no properties: classify it in the registry"
    assert spec.family in KNOWN_PROPERTIES, f"{spec.name}: family {spec.family!r} has no suite"
    unknown = props - set(KNOWN_PROPERTIES[spec.family])
    assert not unknown, f"{spec.name}: properties {unknown} have no check in test_common.py"
    if spec.family == "beyond":
        assert spec.cutoff, f"{spec.name}: the beyond checks request every cutoff"
        return
    bound = props & set(BOUND_CLASSES[spec.family])
    assert len(bound) == 1, (
        f"{spec.name} must be exactly one of {sorted(BOUND_CLASSES[spec.family])}"
    )
    assert spec.bounds == BOUND_CLASSES[spec.family][bound.pop()], (
        "properties disagree with spec.bounds"
    )
    assert spec.description and spec.formula
    if spec.family == "ranking":
        assert "order_invariant" in props, f"{spec.name}: every ranking metric must be"
        return
    assert not spec.cutoff, "pointwise metrics take no @K"
    if spec.family == "classification":
        assert any(p.name == "rel" for p in spec.params), "classification metrics take rel="
    else:
        assert [p.name for p in spec.params] == ["average"]


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_metric_is_classified(spec: MetricSpec) -> None:
    check_classified(spec)


@pytest.mark.parametrize("family", FAMILIES)
def test_unknown_or_missing_property_fails(family: str) -> None:
    """The classification check itself rejects what it must reject."""
    for props in (frozenset(), frozenset({"bounded01", "shiny"})):
        fake = MetricSpec(
            name="fake", description="d", formula="f", family=family, properties=props
        )
        with pytest.raises(AssertionError):
            check_classified(fake)


def test_registry_is_not_empty() -> None:
    assert {"precision", "recall", "ndcg", "map", "mrr", "r_precision"} <= {
        s.name for s in of_family("ranking")
    }
    for family in FAMILIES:
        assert of_family(family), f"no {family} metric registered"


def test_every_metric_has_a_common_suite() -> None:
    """Every registered metric runs through the checks shared by the families."""
    for spec in receval.list_metrics():
        assert spec.family in FAMILIES, f"{spec.name}: family {spec.family!r} has no common suite"
        for params in (BOUNDS_PARAMS, ORDER_PARAMS):
            assert any(p.values[0] == spec for p in params), f"{spec.name} has no cases"


def test_every_property_has_a_check() -> None:
    for family in FAMILIES:
        assert set(KNOWN_PROPERTIES[family]) == set(CHECKS[family]), family
    assert {check for checks in CHECKS.values() for check in checks.values()} <= set(globals())


# ------------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(("spec", "case"), BOUNDS_PARAMS)
def test_bounds(spec: MetricSpec, case: int) -> None:
    if spec.family == "ranking":
        ranking_bounds(spec, *RANKING_CASES[case])
    elif spec.family in POINTWISE:
        pointwise_bounds(spec, POINTWISE_CASES[case])
    else:
        assert spec.family == "beyond"
        beyond_bounds(spec, case)


def ranking_bounds(spec: MetricSpec, truth: Rows, recs: Rows) -> None:
    lo, hi = spec.bounds
    metrics = requests(spec)
    for ties in ("expected", "first", "optimistic", "pessimistic"):
        res = run_ranking(truth, recs, metrics, ties=ties)
        for m in metrics:
            values = res.per_user[m].drop_nulls().to_list()
            assert values, f"{m}: no user evaluated, the data is too small"
            for v in [*values, res[m]]:
                assert math.isfinite(v), f"{m} ({ties}): {v}"
                assert lo - 1e-12 <= v <= hi + 1e-12, f"{m} ({ties}): {v} outside {lo, hi}"


def pointwise_bounds(spec: MetricSpec, case: Case) -> None:
    lo, hi = spec.bounds
    metrics = requests(spec)
    res = run_pointwise(case, metrics)
    for m in metrics:
        for v in values_of(res, m):
            assert lo - 1e-12 <= v <= hi + 1e-12, f"{m}: {v} outside {spec.bounds}"


def beyond_bounds(spec: MetricSpec, seed: int) -> None:
    data = frames(beyond_case(seed, str_ids=bool(seed)))
    names = requests(spec)
    for kind in FEATURES:
        res = run_beyond(data, names, kind)
        for name in names:
            got = values_of(res, name)
            if "bounded01" in spec.properties:
                assert all(0.0 <= v <= 1.0 for v in got), name
            if "nonnegative" in spec.properties:
                assert all(v >= 0.0 for v in got), name
            if "similarity_bounded" in spec.properties:
                low, high = (-1.0, 1.0) if kind == "cosine" else (0.0, 1.0)
                if spec.name == "diversity":
                    low, high = 1.0 - high, 1.0 - low
                eps = 1e-12
                assert all(low - eps <= v <= high + eps for v in got), (name, kind)
            lo, hi = spec.bounds
            assert all(lo <= v <= hi for v in got), name


def test_bounds_hold_for_a_non_monotone_gain_map() -> None:
    """The ideal list orders by gain, so ndcg stays <= 1 even when gain falls with relevance."""
    truth = [(1, "a", 2.0), (1, "b", 1.0)]
    metrics = ["ndcg(gain={1: 5, 2: 1})@1", "ndcg(gain={1: 5, 2: 1})"]
    b_first = run_ranking(truth, [(1, "a", 1.0), (1, "b", 2.0)], metrics)
    a_first = run_ranking(truth, [(1, "a", 2.0), (1, "b", 1.0)], metrics)
    # b (gain 5) first is the ideal list: 1.0
    assert b_first[metrics[0]] == 1.0
    assert b_first[metrics[1]] == 1.0
    # a first: dcg@1 = 1, idcg@1 = 5; whole list: (1 + 5 / log2(3)) / (5 + 1 / log2(3))
    assert a_first[metrics[0]] == pytest.approx(0.2, rel=1e-12)
    want = (1 + 5 / math.log2(3)) / (5 + 1 / math.log2(3))
    assert a_first[metrics[1]] == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------------ order of rows


@pytest.mark.parametrize(("spec", "case"), ORDER_PARAMS)
def test_order_of_rows_never_matters(spec: MetricSpec, case: int) -> None:
    if spec.family == "ranking":
        ranking_order_invariant(spec, case)
    elif spec.family in POINTWISE:
        pointwise_order_invariant(spec, POINTWISE_CASES[case])
    else:
        assert spec.family == "beyond"
        beyond_order_invariant(spec, case)


def ranking_order_invariant(spec: MetricSpec, n: int) -> None:
    assert "order_invariant" in spec.properties
    truth, recs = RANKING_CASES[n]
    metrics = requests(spec)
    base = run_ranking(truth, recs, metrics)
    for seed in range(3):
        rng = random.Random(100 * n + seed)
        t2, r2 = truth[:], recs[:]
        rng.shuffle(t2)
        rng.shuffle(r2)
        other = run_ranking(t2, r2, metrics)
        assert_frame_equal(other.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)
        for m in metrics:
            assert math.isclose(other[m], base[m], rel_tol=1e-12, abs_tol=1e-12), m


def pointwise_order_invariant(spec: MetricSpec, case: Case) -> None:
    metrics = requests(spec)
    shuffled = Case(
        dict(reversed(list(case.truth.items()))), random.Random(5).sample(case.recs, len(case.recs))
    )
    a, b = run_pointwise(case, metrics), run_pointwise(shuffled, metrics)
    for m in metrics:
        x, y = a[m], b[m]
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-12)
    assert a.per_user.columns == b.per_user.columns


def beyond_order_invariant(spec: MetricSpec, seed: int) -> None:
    assert "order_invariant" in spec.properties
    data = frames(beyond_case(seed))
    names = requests(spec)
    shuffled = dict(data)
    order = list(range(data["recs"].height))
    random.Random(seed).shuffle(order)
    shuffled["recs"] = data["recs"][order]
    shuffled["train"] = data["train"].reverse()
    shuffled["items"] = data["items"].reverse()
    for kind in FEATURES:
        a = run_beyond(data, names, kind)
        b = run_beyond(shuffled, names, kind)
        assert a.means == pytest.approx(b.means, nan_ok=True, rel=1e-12)
        assert_frame_equal(a.per_user, b.per_user, check_exact=False, rel_tol=1e-12)


# --------------------------------------------------------------------- perfect predictions


@pytest.mark.parametrize(("spec", "case"), spec_cases(specs_with("perfect_is_one")))
def test_perfect_is_one(spec: MetricSpec, case: int) -> None:
    if spec.family == "ranking":
        ranking_perfect_is_one(spec, RANKING_CASES[case][0])
    else:
        assert spec.family in POINTWISE
        pointwise_perfect_is_one(spec, POINTWISE_CASES[case])


def ranking_perfect_is_one(spec: MetricSpec, truth: Rows) -> None:
    metrics = requests(spec, ks=(None, 12, 50))  # 12 >= the longest list (8 + 2 items)
    recs = perfect_recs(truth)
    for ties in ("expected", "first", "pessimistic"):
        res = run_ranking(truth, recs, metrics, ties=ties)
        for m in metrics:
            values = res.per_user[m].drop_nulls().to_list()
            assert values
            bad = [v for v in values if not math.isclose(v, 1.0, rel_tol=1e-12)]
            assert not bad, f"{m} ({ties}) on a perfect ranking: {bad[:5]}"
            assert math.isclose(res[m], 1.0, rel_tol=1e-12)


def pointwise_perfect_is_one(spec: MetricSpec, case: Case) -> None:
    metrics = requests(spec)
    res = run_pointwise(perfect_case(case), metrics)
    for m in metrics:
        got = values_of(res, m)
        assert got, m
        assert all(v == 1.0 for v in got), m


@pytest.mark.parametrize(("spec", "case"), spec_cases(specs_with("perfect_is_zero")))
def test_perfect_is_zero(spec: MetricSpec, case: int) -> None:
    assert spec.family in POINTWISE
    metrics = requests(spec)
    res = run_pointwise(perfect_case(POINTWISE_CASES[case]), metrics)
    for m in metrics:
        assert all(v == 0.0 for v in values_of(res, m)), m


NOT_PERFECT = [s for s in of_family("ranking") if "perfect_is_one" not in s.properties]


@pytest.mark.parametrize("spec", NOT_PERFECT, ids=[s.name for s in NOT_PERFECT])
def test_ranking_metrics_without_perfect_is_one_have_a_witness(spec: MetricSpec) -> None:
    """The classification is not too cautious: a perfect ranking can score != 1."""
    truth, _ = RANKING_CASES[0]
    res = run_ranking(truth, perfect_recs(truth), requests(spec, ks=(None, 1, 3)))
    assert any(not math.isclose(v, 1.0) for v in res.values())


# --------------------------------------------------------------- score transformations


@pytest.mark.parametrize(("spec", "case"), spec_cases(specs_with("score_transform_invariant")))
def test_score_transform_invariant(spec: MetricSpec, case: int) -> None:
    assert spec.family in POINTWISE
    original = POINTWISE_CASES[case]
    metrics = requests(spec)
    moved = Case(original.truth, [(u, i, math.exp(3 * s) - 7) for u, i, s in original.recs])
    a, b = run_pointwise(original, metrics), run_pointwise(moved, metrics)
    for m in metrics:
        assert a[m] == pytest.approx(b[m], abs=1e-12)
        name = receval.parse_metric(m).canonical
        if name in a.per_user.columns:
            np.testing.assert_allclose(
                a.per_user[name].to_numpy(), b.per_user[name].to_numpy(), atol=1e-12
            )


# ------------------------------------------------------------- ranking: per-user columns


@pytest.mark.parametrize(("spec", "case"), spec_cases(of_family("ranking")))
def test_ranking_per_user_columns_and_means(spec: MetricSpec, case: int) -> None:
    metrics = requests(spec)
    truth, recs = RANKING_CASES[case]
    res = run_ranking(truth, recs, metrics)
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
    res = run_ranking(truth, recs, ["recall", "recall(average=micro)"])
    assert res["recall"] == 0.5  # (1 + 0) / 2
    assert res["recall(average=micro)"] == 0.25  # (1 + 0) / (1 + 3)


# ---------------------------------------------------- classification and rating: errors

TRUTH = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 1], "relevance": [2.0, 0.0, 1.0]})
RECS = pl.DataFrame({"user": [1, 1, 2], "item": [1, 3, 1], "score": [0.5, 0.2, 0.7]})

COMMON_BAD: list[tuple[dict[str, Any], str]] = [
    (
        {"recs": RECS.with_columns(pl.lit(None, pl.Float64).alias("score"))},
        r"recs has 3 null value\(s\) in column 'score'",
    ),
    (
        {"recs": RECS.with_columns(pl.lit(float("nan")).alias("score"))},
        r"recs has 3 NaN value\(s\) in column 'score'",
    ),
    ({"truth": TRUTH.head(0)}, r"truth is empty \(0 rows\)"),
    ({"recs": RECS.drop("score")}, r"recs is missing column 'score'"),
    ({"recs": pl.concat([RECS, RECS.head(1)])}, r"recs has 2 duplicate \(user, item\) row\(s\)"),
    (
        {
            "recs": RECS.with_columns(pl.col("score").cast(pl.Int64).alias("rank")),
            "rank_col": "rank",
        },
        r"need (scores|predicted ratings in a score column), not ranks",
    ),
]
POINTWISE_SPECS = of_family(*POINTWISE)


@pytest.mark.parametrize("spec", POINTWISE_SPECS, ids=[s.name for s in POINTWISE_SPECS])
@pytest.mark.parametrize(
    ("change", "match"), COMMON_BAD, ids=[str(i) for i, _ in enumerate(COMMON_BAD)]
)
def test_pointwise_common_errors(spec: MetricSpec, change: dict[str, Any], match: str) -> None:
    kwargs = dict(change)
    truth = kwargs.pop("truth", TRUTH)
    recs = kwargs.pop("recs", RECS)
    with pytest.raises(InputError, match=match):
        receval.evaluate(truth, recs, [spec.name], **kwargs)


@pytest.mark.parametrize("spec", of_family("rating"), ids=lambda s: str(s.name))
def test_rating_needs_true_ratings(spec: MetricSpec) -> None:
    with pytest.raises(InputError, match=r"need true ratings: truth has no relevance column"):
        receval.evaluate(TRUTH.drop("relevance"), RECS, [spec.name])


@pytest.mark.parametrize("spec", of_family("classification"), ids=lambda s: str(s.name))
def test_classification_rel_is_validated(spec: MetricSpec) -> None:
    with pytest.raises(
        receval.MetricError, match=r"parameter `rel` of .* must be a finite number > 0"
    ):
        receval.evaluate(TRUTH, RECS, [f"{spec.name}(rel=0)"])


# --------------------------------------------------------- beyond: hypothesis properties


@st.composite
def recs_frames(draw: st.DrawFn) -> pl.DataFrame:
    n_users = draw(st.integers(1, 6))
    rows = []
    for u in range(n_users):
        items = draw(st.lists(st.integers(0, 12), min_size=1, max_size=8, unique=True))
        rows += [(u, i, float(draw(st.integers(0, 2)))) for i in items]
    return pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")


ITEM_TABLE = pl.DataFrame(
    {
        "item": list(range(13)),
        "vec": [[math.cos(i), math.sin(i), (i % 3) - 1.0] for i in range(13)],
        "genre": [f"g{i % 4}" for i in range(13)],
    }
)
TRAIN = pl.DataFrame({"user": [i % 5 for i in range(30)], "item": [i % 9 for i in range(30)]})


@settings(max_examples=examples(40), deadline=None)
@given(recs=recs_frames(), k=st.sampled_from([None, 1, 2, 3, 5]))
def test_beyond_properties(recs: pl.DataFrame, k: int | None) -> None:
    at = "" if k is None else f"@{k}"
    metrics = [n + at for n in ("coverage", "gini", "entropy", "novelty", "arp", "long_tail")]
    res = receval.evaluate({0: {0: 1}}, recs, metrics, train=TRAIN, items=ITEM_TABLE)
    assert 0 <= res["coverage" + at] <= 1
    assert 0 <= res["gini" + at] <= 1 - 1 / 13 + 1e-12
    assert 0 <= res["entropy" + at] <= math.log2(13) + 1e-12
    assert 0 <= res["long_tail" + at] <= 1
    assert res["novelty" + at] >= 0
    for feature in ("vec", ["genre"]):
        with pytest.warns(UserWarning) if _no_pairs(recs, k) else _nothing():
            sim = receval.evaluate(
                {0: {0: 1}}, recs, ["ils" + at, "diversity" + at], items=ITEM_TABLE,
                item_features=feature,
            )  # fmt: skip
        ils, div = sim.per_user["ils" + at], sim.per_user["diversity" + at]
        assert ((1.0 - ils) - div).abs().fill_null(0).max() <= 1e-12  # type: ignore[operator]
        if not math.isnan(sim["ils" + at]):
            assert sim["diversity" + at] == pytest.approx(1 - sim["ils" + at], abs=1e-12)


def _no_pairs(recs: pl.DataFrame, k: int | None) -> bool:
    longest = int(recs.group_by("user").len()["len"].max())  # type: ignore[arg-type]
    return min(longest, k if k is not None else longest) < 2


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


@settings(max_examples=examples(30), deadline=None)
@given(recs=recs_frames())
def test_coverage_is_monotone_in_k(recs: pl.DataFrame) -> None:
    ks = [1, 2, 3, 5, 8]
    res = receval.evaluate({0: {0: 1}}, recs, [f"coverage@{k}" for k in ks], items=ITEM_TABLE)
    values = [res[f"coverage@{k}"] for k in ks]
    assert values == sorted(values)
    assert (
        values[-1] == receval.evaluate({0: {0: 1}}, recs, "coverage", items=ITEM_TABLE)["coverage"]
    )


@settings(max_examples=examples(30), deadline=None)
@given(n_items=st.integers(1, 12), n_users=st.integers(1, 5), k=st.integers(1, 4))
def test_gini_zero_and_entropy_maximal_for_uniform_exposure(
    n_items: int, n_users: int, k: int
) -> None:
    # every user gets the whole catalog: each item appears n_users times
    rows = [(u, i, float(i % 2)) for u in range(n_users) for i in range(n_items)]
    recs = pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")
    items = pl.DataFrame({"item": list(range(n_items))})
    res = receval.evaluate({0: {0: 1}}, recs, ["gini", "entropy", "coverage"], items=items)
    assert res["gini"] == 0.0
    assert res["entropy"] == pytest.approx(math.log2(n_items), abs=1e-12)
    assert res["coverage"] == 1.0
