"""Classification and rating metrics through ``receval.evaluate``, against rows built by hand
from the inputs and scored by scikit-learn."""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Hashable
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn import metrics as skm

import receval
from helpers.cases import Case, random_case, recs_frame, truth_frame
from receval import InputError
from receval._errors import UndefinedMetricWarning
from receval.engines.local import labelled_rows


def scaled(case: Case, by: float = 2.0) -> Case:
    """The case with scores in [0, 1] (probabilities for log loss)."""
    return Case(case.truth, [(u, i, s / by) for u, i, s in case.recs])


CASES = [scaled(random_case(random.Random(seed), string_ids=seed % 2 == 1)) for seed in range(6)]


def rows_of(case: Case, threshold: float) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
    """Labels, scores and users of the recs rows of users in truth, straight from the dicts."""
    kept = [(u, i, s) for u, i, s in case.recs if u in case.truth]
    y = [int(case.truth[u].get(i, 0) >= threshold) for u, i, _ in kept]
    return np.array(y), np.array([s for _, _, s in kept]), [u for u, _, _ in kept]


def test_cases_have_recs_users_not_in_truth() -> None:
    """The exclusion above is exercised: recs users outside truth exist and are counted."""
    for case in CASES:
        outside = [u for u, _, _ in case.recs if u not in case.truth]
        assert outside
        res = run(case, ["auc"])
        assert res.details["auc"]["rows_of_users_not_in_truth"] == len(outside)
        assert res.details["auc"]["rows"] == len(case.recs) - len(outside)


def run(case: Case, metrics: list[str], **kwargs: Any) -> receval.Result:
    return receval.evaluate(truth_frame(case.truth), recs_frame(case.recs), metrics, **kwargs)


# ----------------------------------------------------------------------- classification


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("threshold", [1.0, 2.0])
def test_global_classification_metrics_equal_sklearn(case: Case, threshold: float) -> None:
    rel = "" if threshold == 1 else f"rel={threshold:g}, "
    names = {
        "auc": f"auc({rel[:-2]})" if rel else "auc",
        "ap": f"average_precision({rel[:-2]})" if rel else "average_precision",
        "logloss": f"logloss({rel[:-2]})" if rel else "logloss",
        "accuracy": f"accuracy({rel}threshold=0.5)",
        "ppv": f"ppv({rel}threshold=0.25)",
        "tpr": f"tpr({rel}threshold=0.5)",
        "fpr": f"fpr({rel}threshold=0.5)",
        "tnr": f"tnr({rel}threshold=1)",
        "f2": f"fbeta_score({rel}beta=2, threshold=0.5)",
    }
    y, s, _ = rows_of(case, threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = run(case, list(names.values()))
    got = {k: res[v] for k, v in names.items()}
    assert got["auc"] == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    assert got["ap"] == pytest.approx(skm.average_precision_score(y, s), abs=1e-12)
    assert got["logloss"] == pytest.approx(skm.log_loss(y, s), rel=1e-12)
    pred = (s >= 0.5).astype(int)
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, pred))
    assert got["ppv"] == pytest.approx(skm.precision_score(y, (s >= 0.25).astype(int)))
    assert got["tpr"] == pytest.approx(skm.recall_score(y, pred))
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, labels=[0, 1]).ravel()
    assert got["fpr"] == pytest.approx(fp / (fp + tn))
    tn1, fp1, _, _ = skm.confusion_matrix(y, (s >= 1).astype(int), labels=[0, 1]).ravel()
    assert got["tnr"] == pytest.approx(tn1 / (tn1 + fp1))
    assert got["f2"] == pytest.approx(skm.fbeta_score(y, pred, beta=2))
    info = res.details[receval.parse_metric(names["accuracy"]).canonical]
    assert (info["tp"], info["fp"], info["fn"], info["tn"]) == (tp, fp, fn, tn)
    assert info["rows"] == len(y)
    assert info["positives"] == int(y.sum())
    scored = {(u, i) for u, i, _ in case.recs}
    unscored = [
        (u, i, r) for u, d in case.truth.items() for i, r in d.items() if (u, i) not in scored
    ]
    assert info["truth_rows_without_score"] == len(unscored)
    assert info["positives_without_score"] == sum(r >= threshold for _, _, r in unscored)


def brute_gauc(
    y: np.ndarray, s: np.ndarray, users: list[Hashable], weight: str
) -> tuple[dict[Hashable, float], float]:
    per: dict[Hashable, float] = {}
    num = den = 0.0
    arr = np.array(users, dtype=object)
    for u in dict.fromkeys(users):
        sel = arr == u
        if 0 < y[sel].sum() < sel.sum():
            per[u] = skm.roc_auc_score(y[sel], s[sel])
            w = {"impressions": sel.sum(), "clicks": y[sel].sum(), "uniform": 1}[weight]
            num += w * per[u]
            den += w
    return per, num / den


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("weight", ["impressions", "clicks", "uniform"])
def test_gauc_per_user_equals_sklearn(case: Case, weight: str) -> None:
    name = "gauc" if weight == "impressions" else f"gauc(weight={weight})"
    res = run(case, ["ndcg@3", name])
    y, s, users = rows_of(case, 1.0)
    per, value = brute_gauc(y, s, users, weight)
    assert res[name] == pytest.approx(value, abs=1e-12)
    frame = res.per_user.filter(pl.col(name).is_not_null())
    got = dict(zip(frame["user"].to_list(), frame[name].to_list(), strict=True))
    assert got.keys() == per.keys()
    for u, v in per.items():
        assert got[u] == pytest.approx(v, abs=1e-12)
    recs_users = set(users)
    assert res.details[name]["users_used"] == len(per)
    assert res.details[name]["users_skipped"] == len(recs_users) - len(per)
    assert res.per_user["user"].to_list() == sorted(res.per_user["user"].to_list())


def test_seeds_gauc_example_through_evaluate() -> None:
    truth = {"a": {"x1": 1}, "b": {"y1": 1}, "c": {"z1": 1}}
    m1 = {"a": {"x1": 0.9, "x2": 0.8}, "b": {"y1": 0.8, "y2": 0.3}, "c": {"z1": 0.6, "z2": 0.5}}
    m2 = {"a": {"x1": 0.9, "x2": 0.8}, "b": {"y1": 0.7, "y2": 0.6}, "c": {"z1": 0.5, "z2": 0.1}}
    r1 = receval.evaluate(truth, m1, ["gauc", "auc"])
    r2 = receval.evaluate(truth, m2, ["gauc", "auc"])
    assert (r1["gauc"], r2["gauc"]) == (1.0, 1.0)
    assert (round(r1["auc"], 3), round(r2["auc"], 3)) == (0.833, 0.667)


def test_labelled_rows_match_the_dicts() -> None:
    case = CASES[1]
    y, s, u = labelled_rows(truth_frame(case.truth), recs_frame(case.recs))
    assert y.dtype == np.int8 and s.dtype == np.float64 and u.dtype == np.int64
    want_y, want_s, users = rows_of(case, 1.0)
    got = sorted(zip(u.tolist(), y.tolist(), s.tolist(), strict=True))
    # the codes number users by first appearance in the grouped layout: compare multisets per user
    by_user: dict[Hashable, list[tuple[int, float]]] = {}
    for uu, yy, ss in zip(users, want_y.tolist(), want_s.tolist(), strict=True):
        by_user.setdefault(uu, []).append((yy, ss))
    got_by_code: dict[int, list[tuple[int, float]]] = {}
    for code, yy, ss in got:
        got_by_code.setdefault(code, []).append((yy, ss))
    assert sorted(sorted(v) for v in got_by_code.values()) == sorted(
        sorted(v) for v in by_user.values()
    )
    assert np.all(np.diff(u) >= 0)
    assert set(u.tolist()) == set(range(len(by_user)))
    y2, _, _ = labelled_rows(truth_frame(case.truth), recs_frame(case.recs), relevance_threshold=3)
    assert y2.sum() == rows_of(case, 3.0)[0].sum()


CLS_BAD: list[tuple[dict[str, Any], list[str], str]] = [
    (
        {"truth": {"u": {"a": 1}}, "recs": {"u": {"a": 0.5, "b": 1.5, "c": -0.5}}},
        ["logloss"],
        r"logloss needs probabilities: recs column 'score' has 2 score\(s\) outside \[0, 1\]; "
        r"log loss never clips silently\. First offending rows:\n  row 1: user='u', item='b', "
        r"score=1\.5\n  row 2: user='u', item='c', score=-0\.5",
    ),
    (
        {"truth": {"u": {"a": 0}}, "recs": {"u": {"a": 0.5, "b": 0.1}}},
        ["auc"],
        r"auc is undefined on these rows: every one of the 2 recs rows is labelled 0 \(no "
        r"recommended item is relevant at relevance >= 1\); expected both labels\.",
    ),
    (
        {"truth": {"u": {"a": 1}}, "recs": {"u": {"a": 0.5}}},
        ["auc"],
        r"every one of the 1 recs rows is labelled 1 \(every one is relevant",
    ),
    (
        {"truth": {"u": {"a": 1}}, "recs": {"u": {"b": 0.5}}},
        ["average_precision"],
        r"average_precision is undefined on these rows",
    ),
    (
        {
            "truth": {"u": {"a": 1}, "v": {"b": 1}},
            "recs": {"u": {"a": 0.5, "c": 0.2}},
            "no_recs": "raise",
        },
        ["auc"],
        r"1 evaluated user\(s\) have no recommendations \(no_recs='raise'\), e\.g\. \['v'\]",
    ),
    (
        {
            "truth": pl.DataFrame({"user": [1], "item": [1]}),
            "recs": pl.DataFrame({"user": [1, 1], "item": [1, 2], "rank": [1, 2]}),
            "rank_col": "rank",
        },
        ["auc", "gauc"],
        r"classification metrics \(auc, gauc\) need scores, not ranks: recs were given with "
        r"rank_col='rank'\. Pass score_col= instead\.",
    ),
    (
        {"truth": {"u": {"a": 1}}, "recs": {"u": {"a": float("nan")}}},
        ["auc"],
        r"recs has 1 NaN value\(s\) in column 'score'",
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "metrics", "match"), CLS_BAD, ids=[str(i) for i in range(len(CLS_BAD))]
)
def test_classification_errors(kwargs: dict[str, Any], metrics: list[str], match: str) -> None:
    kwargs = dict(kwargs)
    with pytest.raises(InputError, match=match):
        receval.evaluate(kwargs.pop("truth"), kwargs.pop("recs"), metrics, **kwargs)


def test_gauc_all_users_one_class_is_nan_with_warning() -> None:
    truth = {"u": {"a": 1}, "v": {"b": 1}}
    recs = {"u": {"a": 0.5}, "v": {"c": 0.1}}
    with pytest.warns(UndefinedMetricWarning, match="gauc is undefined"):
        res = receval.evaluate(truth, recs, ["gauc"])
    assert math.isnan(res["gauc"])
    assert res.details["gauc"]["users_skipped"] == 2


def test_thresholded_zero_denominator_warns() -> None:
    truth = {"u": {"a": 1}}
    recs = {"u": {"a": 0.1, "b": 0.2}}
    with pytest.warns(UndefinedMetricWarning, match=r"ppv is undefined \(0/0 with TP=0, FP=0"):
        res = receval.evaluate(truth, recs, ["ppv", "tpr"])
    assert math.isnan(res["ppv"])
    assert res["tpr"] == 0.0


def test_skip_and_zero_policies_leave_classification_rows_alone() -> None:
    case = CASES[0]
    a = run(case, ["auc", "gauc"], no_recs="zero")
    b = run(case, ["auc", "gauc"], no_recs="skip")
    assert a.means == b.means


# ------------------------------------------------------------------------------- rating


def rating_case(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = [(u, i) for u in range(12) for i in rng.choice(20, rng.integers(1, 6), replace=False)]
    users = [u for u, _ in rows]
    items = [int(i) for _, i in rows]
    truth = pl.DataFrame(
        {"user": users, "item": items, "relevance": rng.integers(1, 6, len(rows)).astype(float)}
    )
    keep = rng.random(len(rows)) < 0.8  # some truth rows have no prediction
    preds = pl.DataFrame(
        {
            "user": [u for u, k in zip(users, keep, strict=True) if k] + [99],
            "item": [i for i, k in zip(items, keep, strict=True) if k] + [1],
            "score": [*np.round(rng.uniform(1, 5, int(keep.sum())), 2).tolist(), 3.0],
        }
    )
    return truth, preds


def joined(truth: pl.DataFrame, preds: pl.DataFrame, policy: str) -> pl.DataFrame:
    out = truth.join(preds, on=["user", "item"], how="left")
    if policy == "skip":
        return out.drop_nulls("score")
    return out.with_columns(pl.col("score").fill_null(0.0))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("policy", ["zero", "skip"])
def test_rating_rows_equal_sklearn(seed: int, policy: str) -> None:
    truth, preds = rating_case(seed)
    names = ["mae", "mse", "rmse", "r2", "nmae"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = receval.evaluate(truth, preds, names, no_recs=policy)
    rows = joined(truth, preds, policy)
    y, p = rows["relevance"].to_numpy(), rows["score"].to_numpy()
    assert res["mae"] == pytest.approx(skm.mean_absolute_error(y, p), rel=1e-12)
    assert res["mse"] == pytest.approx(skm.mean_squared_error(y, p), rel=1e-12)
    assert res["rmse"] == pytest.approx(skm.root_mean_squared_error(y, p), rel=1e-12)
    assert res["r2"] == pytest.approx(skm.r2_score(y, p), rel=1e-12)
    lo, hi = truth["relevance"].min(), truth["relevance"].max()
    assert res["nmae"] == pytest.approx(skm.mean_absolute_error(y, p) / (hi - lo), rel=1e-12)
    missing = truth.height - truth.join(preds, on=["user", "item"], how="semi").height
    assert res.details["rmse"] == {"rows": len(y), "missing_predictions": missing}
    assert res.details["nmae"]["rating_range"] == [lo, hi]


@pytest.mark.parametrize("seed", range(3))
def test_rating_per_user_equals_sklearn(seed: int) -> None:
    truth, preds = rating_case(seed)
    names = ["mae(average=user)", "rmse(average=user)", "r2(average=user)", "nmae(average=user)"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = receval.evaluate(truth, preds, names, no_recs="skip", rating_range=(0, 10))
    rows = joined(truth, preds, "skip")
    want: dict[str, dict[int, float]] = {n: {} for n in names}
    for (u,), grp in rows.group_by(["user"]):
        y, p = grp["relevance"].to_numpy(), grp["score"].to_numpy()
        want[names[0]][u] = skm.mean_absolute_error(y, p)
        want[names[1]][u] = skm.root_mean_squared_error(y, p)
        if np.ptp(y) > 0:
            want[names[2]][u] = skm.r2_score(y, p)
        want[names[3]][u] = skm.mean_absolute_error(y, p) / 10
    frame = res.per_user
    assert frame["user"].to_list() == sorted(want[names[0]])
    for n in names:
        got = {u: v for u, v in zip(frame["user"], frame[n], strict=True) if v is not None}
        assert got.keys() == want[n].keys()
        for u, v in want[n].items():
            assert got[u] == pytest.approx(v, rel=1e-12, abs=1e-12)
        assert res[n] == pytest.approx(math.fsum(want[n].values()) / len(want[n]), rel=1e-12)
    assert res.details[names[2]]["users_skipped"] == len(want[names[0]]) - len(want[names[2]])


def test_rating_zero_policy_warns_with_count() -> None:
    truth = {"u": {"a": 4, "b": 2}}
    recs = {"u": {"a": 3.0}}
    with pytest.warns(UserWarning, match=r"1 truth row\(s\) have no predicted rating"):
        res = receval.evaluate(truth, recs, ["mae"], relevance_col="relevance")
    assert res["mae"] == 1.5
    assert res.details["mae"]["missing_predictions"] == 1


def test_nmae_range_from_option() -> None:
    truth = pl.DataFrame({"user": [1, 1], "item": [1, 2], "relevance": [4.0, 2.0]})
    recs = pl.DataFrame({"user": [1, 1], "item": [1, 2], "score": [3.0, 2.0]})
    res = receval.evaluate(truth, recs, ["nmae", "nmae(average=user)"], rating_range=(1, 5))
    assert res["nmae"] == 0.5 / 4
    assert res.details["nmae"]["rating_range"] == [1.0, 5.0]


RATING_BAD: list[tuple[dict[str, Any], str]] = [
    (
        {
            "truth": pl.DataFrame({"user": [1], "item": [1]}),
            "recs": pl.DataFrame({"user": [1], "item": [1], "score": [2.0]}),
        },
        r"rating metrics \(rmse\) need true ratings: truth has no relevance column\. Pass "
        r"relevance_col= to name the column that holds the ratings\.",
    ),
    (
        {
            "truth": pl.DataFrame(
                {"user": [2, 1, 1], "item": [5, 1, 2], "relevance": [3.0, 4.0, 2.0]}
            ),
            "recs": pl.DataFrame({"user": [1], "item": [1], "score": [2.0]}),
            "no_recs": "raise",
        },
        r"2 truth row\(s\) have no predicted rating \(no recs row for the same user and item; "
        r"no_recs='raise'\), so rmse cannot be computed\. First offending truth rows:\n"
        r"  row 0: user=2, item=5, relevance=3\.0\n  row 2: user=1, item=2, relevance=2\.0",
    ),
    (
        {
            "truth": pl.DataFrame({"user": [1], "item": [1], "relevance": [3.0]}),
            "recs": pl.DataFrame({"user": [1], "item": [1], "rank": [1]}),
            "rank_col": "rank",
        },
        r"rating metrics \(rmse\) need predicted ratings in a score column, not ranks",
    ),
    (
        {
            "truth": pl.DataFrame({"user": [1], "item": [1], "relevance": [3.0]}),
            "recs": pl.DataFrame({"user": [1], "item": [1], "score": [1.0]}),
            "rating_range": (5, 1),
        },
        r"`rating_range` must be a pair \(r_min, r_max\) of finite numbers with r_min < r_max",
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "match"), RATING_BAD, ids=[str(i) for i in range(len(RATING_BAD))]
)
def test_rating_errors(kwargs: dict[str, Any], match: str) -> None:
    kwargs = dict(kwargs)
    metric = "nmae" if "rating_range" in kwargs else "rmse"
    with pytest.raises(InputError, match=match):
        receval.evaluate(kwargs.pop("truth"), kwargs.pop("recs"), [metric], **kwargs)


def test_r2_constant_truth_through_evaluate() -> None:
    truth = {"u": {"a": 3, "b": 3}}
    recs = {"u": {"a": 3.0, "b": 2.0}}
    with pytest.warns(
        UndefinedMetricWarning, match=r"r2 is undefined \(the true ratings are constant"
    ):
        res = receval.evaluate(truth, recs, ["r2"], relevance_col="relevance")
    assert math.isnan(res["r2"])


def test_mixed_families_in_one_call() -> None:
    truth, preds = rating_case(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = receval.evaluate(truth, preds, ["ndcg@5", "rmse(average=user)", "gauc(rel=3)"])
    assert set(res.per_user.columns) == {"user", "ndcg@5", "rmse(average=user)", "gauc(rel=3)"}
    assert res.per_user["user"].is_sorted()


def test_labelled_rows_raise_evaluate_errors() -> None:
    with pytest.raises(InputError, match=r"recs has 1 NaN value\(s\) in column 'score'"):
        labelled_rows({"u": {"a": 1}}, {"u": {"a": float("nan")}})
    with pytest.raises(InputError, match=r"recs has 2 duplicate \(user, item\) row\(s\)"):
        labelled_rows(
            pl.DataFrame({"user": [1], "item": [1]}),
            pl.DataFrame({"user": [1, 1], "item": [1, 1], "score": [0.1, 0.2]}),
        )
