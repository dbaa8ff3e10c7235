"""Registry-driven common tests for the classification and rating families.

Every spec of the two families declares properties; each property known here has a check that
runs the metric with sampled parameters on small random data (ties, users without recs, recs
users not in truth, users with no relevant item). A spec without properties, or with a property
that no check knows, fails. Every spec also runs through the common error tables.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval
from helpers.cases import Case, random_case, recs_frame, truth_frame
from receval import InputError, MetricSpec
from receval._errors import UndefinedMetricWarning

SPECS = tuple(s for s in receval.list_metrics() if s.family in ("classification", "rating"))
IDS = [s.name for s in SPECS]

KNOWN_PROPERTIES = {
    "bounded01": "values in [0, 1]",
    "nonnegative": "values in [0, inf)",
    "at_most_one": "values in (-inf, 1]",
    "perfect_is_zero": "0.0 when every prediction equals the true rating",
    "perfect_is_one": "1.0 when every prediction equals the true rating",
    "score_transform_invariant": "unchanged by a strictly increasing transform of the scores",
}
BOUND_CLASSES = {
    "bounded01": (0.0, 1.0),
    "nonnegative": (0.0, math.inf),
    "at_most_one": (-math.inf, 1.0),
}


def requests(spec: MetricSpec) -> list[str]:
    """The defaults and each parameter varied alone."""
    variants = [""]
    for p in spec.params:
        if p.kind == "threshold":
            values = ["2"]
        elif p.kind == "positive":
            values = ["2", "0.5"]
        elif p.kind == "number":
            values = ["0.25", "1"]
        elif p.kind == "choice":
            values = [c for c in p.choices if c != p.default]
        else:
            pytest.fail(f"no sample values for parameter kind {p.kind!r} of {spec.name}")
        variants += [f"({p.name}={v})" for v in values]
    return [spec.name + v for v in variants]


def make_case(seed: int) -> Case:
    case = random_case(random.Random(seed), string_ids=seed % 2 == 0)
    return Case(case.truth, [(u, i, s / 2) for u, i, s in case.recs])  # scores in [0, 1]


CASES = [make_case(seed) for seed in range(4)]


def evaluate(case: Case, metrics: list[str], **kwargs: Any) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", UserWarning)
        return receval.evaluate(
            truth_frame(case.truth), recs_frame(case.recs), metrics, no_recs="skip", **kwargs
        )


def values(res: receval.Result, metric: str) -> list[float]:
    """The mean and the per-user values of ``metric`` (NaN and nulls dropped)."""
    name = receval.parse_metric(metric).canonical
    out = [res[name]]
    if name in res.per_user.columns:
        out += [v for v in res.per_user[name].to_list() if v is not None]
    return [v for v in out if not math.isnan(v)]


# ----------------------------------------------------------------------- classification


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_metric_is_classified(spec: MetricSpec) -> None:
    props = set(spec.properties)
    assert props, f"{spec.name} has no properties: classify it in the registry"
    unknown = props - set(KNOWN_PROPERTIES)
    assert not unknown, f"{spec.name}: properties {unknown} have no check in this suite"
    bound = props & set(BOUND_CLASSES)
    assert len(bound) == 1, f"{spec.name} must be exactly one of {sorted(BOUND_CLASSES)}"
    assert spec.bounds == BOUND_CLASSES[bound.pop()], "properties disagree with spec.bounds"
    assert spec.description and spec.formula
    assert not spec.cutoff, "pointwise metrics take no @K"
    if spec.family == "classification":
        assert any(p.name == "rel" for p in spec.params), "classification metrics take rel="
    else:
        assert [p.name for p in spec.params] == ["average"]


def test_unknown_or_missing_property_fails() -> None:
    """The classification check itself rejects what it must reject."""
    base = SPECS[0]
    for props in (frozenset(), frozenset({"bounded01", "shiny"})):
        fake = MetricSpec(
            name="fake", description="d", formula="f", family=base.family, properties=props
        )
        with pytest.raises(AssertionError):
            test_every_metric_is_classified(fake)


# ------------------------------------------------------------------------------- checks


def specs_with(prop: str) -> list[MetricSpec]:
    return [s for s in SPECS if prop in s.properties]


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_bounds(spec: MetricSpec, case: Case) -> None:
    lo, hi = spec.bounds
    metrics = requests(spec)
    res = evaluate(case, metrics)
    for m in metrics:
        for v in values(res, m):
            assert lo - 1e-12 <= v <= hi + 1e-12, f"{m}: {v} outside {spec.bounds}"


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_order_of_rows_never_matters(spec: MetricSpec, case: Case) -> None:
    metrics = requests(spec)
    shuffled = Case(
        dict(reversed(list(case.truth.items()))), random.Random(5).sample(case.recs, len(case.recs))
    )
    a, b = evaluate(case, metrics), evaluate(shuffled, metrics)
    for m in metrics:
        x, y = a[m], b[m]
        assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-12)
    assert a.per_user.columns == b.per_user.columns


@pytest.mark.parametrize("spec", specs_with("score_transform_invariant"), ids=lambda s: str(s.name))
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_score_transform_invariant(spec: MetricSpec, case: Case) -> None:
    metrics = requests(spec)
    moved = Case(case.truth, [(u, i, math.exp(3 * s) - 7) for u, i, s in case.recs])
    a, b = evaluate(case, metrics), evaluate(moved, metrics)
    for m in metrics:
        assert a[m] == pytest.approx(b[m], abs=1e-12)
        name = receval.parse_metric(m).canonical
        if name in a.per_user.columns:
            np.testing.assert_allclose(
                a.per_user[name].to_numpy(), b.per_user[name].to_numpy(), atol=1e-12
            )


def perfect_case(case: Case) -> Case:
    """Predictions equal to the true ratings, for every truth row (plus recs-only rows)."""
    recs = [(u, i, float(r)) for u, d in case.truth.items() for i, r in d.items()]
    return Case(
        case.truth, [*recs, ("nobody" if isinstance(recs[0][0], str) else -1, recs[0][1], 1.0)]
    )


@pytest.mark.parametrize("spec", specs_with("perfect_is_zero"), ids=lambda s: str(s.name))
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_perfect_is_zero(spec: MetricSpec, case: Case) -> None:
    metrics = requests(spec)
    res = evaluate(perfect_case(case), metrics)
    for m in metrics:
        assert all(v == 0.0 for v in values(res, m)), m


@pytest.mark.parametrize("spec", specs_with("perfect_is_one"), ids=lambda s: str(s.name))
@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_perfect_is_one(spec: MetricSpec, case: Case) -> None:
    metrics = requests(spec)
    res = evaluate(perfect_case(case), metrics)
    for m in metrics:
        got = values(res, m)
        assert got, m
        assert all(v == 1.0 for v in got), m


def test_every_property_has_a_check() -> None:
    checked = {
        "bounded01",
        "nonnegative",
        "at_most_one",  # test_bounds
        "score_transform_invariant",
        "perfect_is_zero",
        "perfect_is_one",
    }
    assert set(KNOWN_PROPERTIES) == checked


# ------------------------------------------------------------------------- error tables

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


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize(
    ("change", "match"), COMMON_BAD, ids=[str(i) for i, _ in enumerate(COMMON_BAD)]
)
def test_common_errors(spec: MetricSpec, change: dict[str, Any], match: str) -> None:
    kwargs = dict(change)
    truth = kwargs.pop("truth", TRUTH)
    recs = kwargs.pop("recs", RECS)
    with pytest.raises(InputError, match=match):
        receval.evaluate(truth, recs, [spec.name], **kwargs)


@pytest.mark.parametrize(
    "spec", [s for s in SPECS if s.family == "rating"], ids=lambda s: str(s.name)
)
def test_rating_needs_true_ratings(spec: MetricSpec) -> None:
    with pytest.raises(InputError, match=r"need true ratings: truth has no relevance column"):
        receval.evaluate(TRUTH.drop("relevance"), RECS, [spec.name])


@pytest.mark.parametrize(
    "spec", [s for s in SPECS if s.family == "classification"], ids=lambda s: str(s.name)
)
def test_classification_rel_is_validated(spec: MetricSpec) -> None:
    with pytest.raises(
        receval.MetricError, match=r"parameter `rel` of .* must be a finite number > 0"
    ):
        receval.evaluate(TRUTH, RECS, [f"{spec.name}(rel=0)"])
