"""The facts each metric declares on its spec (receval.metrics.registry.MetricSpec), pinned
against a table written here, and the typed accessors of a metric request (Metric).

The engines, families and comparison read these facts instead of lists of names: which
metrics have per-user values, which are computed over every row or item at once, which
weigh their per-user values, which read train, item features, a decision threshold, a
global sort of the scored rows or the rating scale. A wrong declaration fails here, and the
per-user frame of evaluate is checked against the declarations on data where every metric
runs.
"""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import receval
from receval.datasets import make_interactions, make_items, make_train
from receval.metrics.registry import (
    Metric,
    MetricSpec,
    Param,
    list_metrics,
    parse_metric,
    parse_metrics,
)

# name: (aggregation at the default parameters, the boolean facts that hold)
FACTS: dict[str, tuple[str, frozenset[str]]] = {
    # ranking: each user's value, averaged over users
    "precision": ("user", frozenset()),
    "recall": ("user", frozenset()),
    "f1": ("user", frozenset()),
    "fbeta": ("user", frozenset()),
    "hit_rate": ("user", frozenset()),
    "mrr": ("user", frozenset()),
    "arhr": ("user", frozenset()),
    "map": ("user", frozenset()),
    "cg": ("user", frozenset()),
    "dcg": ("user", frozenset()),
    "ndcg": ("user", frozenset()),
    "ndcg_k": ("user", frozenset()),
    "r_precision": ("user", frozenset()),
    "err": ("user", frozenset()),
    "rbp": ("user", frozenset()),
    "rbp_residual": ("user", frozenset()),
    "bpref": ("user", frozenset()),
    "judged": ("user", frozenset()),
    # classification: over every scored row, except gauc (users' AUCs, weighted)
    "auc": ("global", frozenset({"ranks_rows"})),
    "gauc": ("weighted", frozenset()),
    "average_precision": ("global", frozenset({"ranks_rows"})),
    "logloss": ("global", frozenset()),
    "accuracy": ("global", frozenset({"thresholded"})),
    "ppv": ("global", frozenset({"thresholded"})),
    "tpr": ("global", frozenset({"thresholded"})),
    "fpr": ("global", frozenset({"thresholded"})),
    "tnr": ("global", frozenset({"thresholded"})),
    "fbeta_score": ("global", frozenset({"thresholded"})),
    # rating: over every row by default (average=rows)
    "mae": ("global", frozenset()),
    "mse": ("global", frozenset()),
    "rmse": ("global", frozenset()),
    "nmae": ("global", frozenset({"uses_rating_range"})),
    "r2": ("global", frozenset()),
    # beyond accuracy: exposure over the catalog, or each recs user's list
    "coverage": ("global", frozenset()),
    "ils": ("user", frozenset({"needs_item_features"})),
    "diversity": ("user", frozenset({"needs_item_features"})),
    "novelty": ("user", frozenset({"needs_train"})),
    "arp": ("user", frozenset({"needs_train"})),
    "gini": ("global", frozenset()),
    "entropy": ("global", frozenset()),
    "long_tail": ("user", frozenset({"needs_train"})),
    # calibration, serendipity, exposure fairness: each recs user's list
    "miscalibration": ("user", frozenset({"needs_train", "needs_history", "needs_items"})),
    "unexpectedness": ("user", frozenset({"needs_train", "needs_history", "needs_item_features"})),
    "serendipity": ("user", frozenset({"needs_train", "needs_history", "needs_item_features"})),
    "pop_serendipity": ("user", frozenset({"needs_train", "uses_catalog_size"})),
    "awrf": ("user", frozenset({"needs_items", "ties_past_cutoff"})),
    "ee_loss": ("user", frozenset({"ties_past_cutoff", "uses_catalog_size"})),
    "ee_disparity": ("user", frozenset({"ties_past_cutoff", "uses_catalog_size"})),
    "ee_relevance": ("user", frozenset({"ties_past_cutoff", "uses_catalog_size"})),
    "group_share": ("user", frozenset({"needs_items"})),
    # exposure of item groups over every list: one value, no per-user column
    "exposure_share": ("global", frozenset({"needs_items", "ties_past_cutoff"})),
    "exposure_disparity": ("global", frozenset({"needs_items", "ties_past_cutoff"})),
    "exposure_gap": ("global", frozenset({"needs_items", "ties_past_cutoff"})),
    "exposure_gini": ("global", frozenset({"needs_items", "ties_past_cutoff"})),
    "exposure_entropy": ("global", frozenset({"needs_items", "ties_past_cutoff"})),
    "group_coverage": ("global", frozenset({"needs_items"})),
}
FLAGS = (
    "needs_train", "needs_item_features", "thresholded", "ranks_rows", "uses_rating_range",
    "needs_history", "needs_items", "ties_past_cutoff", "uses_catalog_size",
)  # fmt: skip
# the item-table column (and group) of the metrics that read one, for the requests below
NAMED = {
    "miscalibration": "by=genres",
    "awrf": "by=genre",
    "group_share": "by=genre, group=g0",
    "exposure_share": "by=genre, group=g0",
    "exposure_disparity": "by=genre, group=g0",
    "exposure_gap": "by=genre, group=g0",
    "exposure_gini": "by=genre",
    "exposure_entropy": "by=genre",
    "group_coverage": "by=genre",
}

# requests whose parameters decide the aggregation, with the aggregation they get
VARIANTS: dict[str, str] = {
    "recall@10": "user",
    "recall(average=macro)@10": "user",
    "recall(average=micro)@10": "weighted",
    "gauc": "weighted",
    "gauc(weight=impressions)": "weighted",
    "gauc(weight=clicks)": "weighted",
    "gauc(weight=uniform)": "user",
    **{f"{name}(average=rows)": "global" for name in ("mae", "mse", "rmse", "nmae", "r2")},
    **{f"{name}(average=user)": "user" for name in ("mae", "mse", "rmse", "nmae", "r2")},
}
# the choice parameters that decide a metric's aggregation (no other parameter does)
DECIDED_BY = {"recall": "average", "gauc": "weight"} | {
    name: "average" for name in ("mae", "mse", "rmse", "nmae", "r2")
}


def request_of(spec: MetricSpec) -> str:
    name = f"{spec.name}({NAMED[spec.name]})" if spec.name in NAMED else spec.name
    return f"{name}@10" if spec.cutoff else name


def test_the_table_names_every_registered_metric() -> None:
    assert sorted(FACTS) == sorted(s.name for s in list_metrics())


@pytest.mark.parametrize("spec", list_metrics(), ids=lambda s: s.name)
def test_declared_facts(spec: MetricSpec) -> None:
    aggregation, flags = FACTS[spec.name]
    assert spec.aggregation == aggregation
    assert {f for f in FLAGS if getattr(spec, f)} == set(flags)
    by = spec.aggregation_by
    assert (by[0] if by is not None else None) == DECIDED_BY.get(spec.name)
    m = parse_metric(request_of(spec))  # the defaults
    assert m.aggregation() == aggregation
    assert m.has_per_user() is (aggregation != "global")
    assert m.is_global() is (aggregation == "global")
    assert m.is_weighted() is (aggregation == "weighted")


@pytest.mark.parametrize(("text", "aggregation"), VARIANTS.items())
def test_aggregation_follows_the_parameters(text: str, aggregation: str) -> None:
    m = parse_metric(text)
    assert m.aggregation() == aggregation
    assert m.has_per_user() is (aggregation != "global")
    assert m.is_global() is (aggregation == "global")
    assert m.is_weighted() is (aggregation == "weighted")


def test_every_choice_of_a_deciding_parameter_is_pinned() -> None:
    for name, param in DECIDED_BY.items():
        spec = next(s for s in list_metrics() if s.name == name)
        for choice in spec.param(param).choices:
            k = "@10" if spec.cutoff else ""
            assert f"{name}({param}={choice}){k}" in VARIANTS


def test_aggregation_by_must_cover_the_choices_and_the_default() -> None:
    choice = Param("average", "rows", "choice", "d", choices=("rows", "user"))
    with pytest.raises(ValueError, match="to each choice of average"):
        MetricSpec("x", "d", "f", params=(choice,), aggregation_by=("average", (("rows", "user"),)))
    with pytest.raises(ValueError, match="aggregation of average=rows"):
        MetricSpec(
            "x", "d", "f", params=(choice,), aggregation="user",
            aggregation_by=("average", (("rows", "global"), ("user", "user"))),
        )  # fmt: skip


# ------------------------------------------------------------------ the per-user frame


def every_request() -> list[str]:
    """Every registered metric at its defaults (a grade bound: the data's top grade, 5), and
    each variant that changes aggregation."""
    out = [
        request_of(s).replace("@", f"({grade[0].name}=5)@", 1)
        if (grade := [p for p in s.params if p.kind == "grade"])
        else request_of(s)
        for s in list_metrics()
    ]
    return out + [v for v in VARIANTS if parse_metric(v).canonical not in out]


@pytest.mark.parametrize("ids", ["int", "str"])
def test_per_user_columns_are_the_metrics_with_per_user_values(ids: str) -> None:
    inter = make_interactions(120, n_items=150, ids=ids, seed=11)
    probability = (1.0 / (1.0 + (-pl.col("score")).exp())).alias("score")
    recs = inter.recs.with_columns(probability)  # logloss reads probabilities
    metrics = every_request()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # users without a value, rows without a prediction
        res = receval.evaluate(
            inter.truth, recs, metrics,
            train=make_train(100, n_items=150, ids=ids, seed=12),
            items=make_items(150, dim=4, ids=ids, seed=13), item_features="embedding",
        )  # fmt: skip
    plan = parse_metrics(metrics)
    assert list(res.means) == [m.canonical for m in plan]  # every family ran
    expected = [m.canonical for m in plan if m.has_per_user()]
    assert res.per_user.columns == ["user", *expected]
    assert {m.spec.family for m in plan if m.has_per_user()} == {
        "ranking", "classification", "rating", "beyond",
    }  # fmt: skip


# -------------------------------------------------------------------- typed accessors


def test_threshold_is_rel_else_the_default() -> None:
    assert parse_metric("ndcg@10").threshold(1.0) == 1.0
    assert parse_metric("ndcg(rel=2)@10").threshold(1.0) == 2.0
    assert isinstance(parse_metric("ndcg(rel=2)@10").threshold(1.0), float)
    assert parse_metric("auc(rel=3.5)").threshold(1.0) == 3.5
    assert parse_metric("auc").threshold(2.0) == 2.0
    # metrics without rel= (rating, beyond) take evaluate's threshold
    assert parse_metric("rmse").threshold(3.0) == 3.0
    assert parse_metric("coverage@10").threshold(3.0) == 3.0


def test_typed_parameters() -> None:
    m = parse_metric("fbeta_score(beta=2, threshold=0.25)")
    assert m.float_param("beta") == 2.0 and isinstance(m.float_param("beta"), float)
    assert m.int_param("beta") == 2
    assert m.float_param("threshold") == 0.25
    assert parse_metric("long_tail@10").float_param("head") == 0.2
    assert parse_metric("gauc").str_param("weight") == "impressions"
    assert parse_metric("map(denominator=min)@5").str_param("denominator") == "min"
    assert parse_metric("rmse(average=user)").str_param("average") == "user"


@pytest.mark.parametrize(
    ("text", "getter", "name"),
    [
        ("gauc", Metric.float_param, "weight"),
        ("gauc", Metric.int_param, "weight"),
        ("fbeta_score(threshold=0.5)", Metric.int_param, "threshold"),
        ("fbeta_score", Metric.str_param, "beta"),
        ("ndcg@10", Metric.float_param, "rel"),  # rel not given: None
    ],
)
def test_typed_parameters_refuse_another_type(text: str, getter: object, name: str) -> None:
    m = parse_metric(text)
    with pytest.raises(TypeError, match=f"parameter '{name}' of {m.canonical}"):
        getter(m, name)  # type: ignore[operator]
