"""Classification array functions against scikit-learn, brute force and hypothesis properties."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import receval
from helpers.examples import examples
from receval import InputError
from receval._errors import UndefinedMetricWarning


def random_binary(seed: int, n: int, n_scores: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Labels with both classes and scores with heavy ties (few distinct values)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.int64)
    y[0], y[1] = 1, 0
    s = rng.integers(0, n_scores, n) / n_scores
    return y, s


CASES = [
    random_binary(seed, n, k)
    for seed, (n, k) in enumerate(
        [(2, 1), (5, 2), (10, 3), (40, 2), (100, 7), (1000, 10), (5000, 1000), (20000, 50)]
    )
]


def brute_auc(y: list[int], s: list[float]) -> float:
    """Pairs won by positives over negatives, ties one half (quadratic, obviously right)."""
    pos = [v for v, t in zip(s, y, strict=True) if t == 1]
    neg = [v for v, t in zip(s, y, strict=True) if t == 0]
    won = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
    return won / (len(pos) * len(neg))


# ------------------------------------------------------------------- scikit-learn oracle


@pytest.mark.parametrize(("y", "s"), CASES)
def test_auc_equals_sklearn(y: np.ndarray, s: np.ndarray) -> None:
    got = receval.auc(y, s)
    assert isinstance(got, float)
    assert got == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)


@pytest.mark.parametrize(("y", "s"), CASES[:5])
def test_auc_equals_brute_force(y: np.ndarray, s: np.ndarray) -> None:
    assert receval.auc(y, s) == pytest.approx(brute_auc(y.tolist(), s.tolist()), abs=1e-12)


@pytest.mark.parametrize(("y", "s"), CASES)
def test_roc_curve_equals_sklearn(y: np.ndarray, s: np.ndarray) -> None:
    fpr, tpr, thr = receval.roc_curve(y, s)
    efpr, etpr, ethr = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, efpr, rtol=0, atol=1e-15)
    np.testing.assert_allclose(tpr, etpr, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(thr, ethr)
    assert fpr.dtype == tpr.dtype == thr.dtype == np.float64


@pytest.mark.parametrize(("y", "s"), CASES)
def test_pr_curve_equals_sklearn(y: np.ndarray, s: np.ndarray) -> None:
    p, r, t = receval.pr_curve(y, s)
    ep, er, et = skm.precision_recall_curve(y, s)
    np.testing.assert_allclose(p, ep, rtol=0, atol=1e-15)
    np.testing.assert_allclose(r, er, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(t, et)


def test_pr_curve_all_positive_matches_sklearn() -> None:
    y, s = [1, 1, 1], [0.2, 0.2, 0.9]
    for got, want in zip(receval.pr_curve(y, s), skm.precision_recall_curve(y, s), strict=True):
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize(("y", "s"), CASES)
def test_average_precision_equals_sklearn(y: np.ndarray, s: np.ndarray) -> None:
    got = receval.average_precision(y, s)
    assert isinstance(got, float)
    assert got == pytest.approx(skm.average_precision_score(y, s), abs=1e-12)


@pytest.mark.parametrize(("y", "s"), CASES)
def test_log_loss_equals_sklearn(y: np.ndarray, s: np.ndarray) -> None:
    got = receval.log_loss(y, s)  # scores in [0, 1), zeros included (clipped to eps)
    assert got == pytest.approx(skm.log_loss(y, s), rel=1e-12)


def test_log_loss_extremes_are_clipped_like_sklearn() -> None:
    y, p = [1, 0, 1, 0], [0.0, 1.0, 1.0, 0.0]
    assert receval.log_loss(y, p) == pytest.approx(skm.log_loss(y, p), rel=1e-12)
    assert receval.log_loss([1, 1], [0.5, 0.25]) == pytest.approx(
        skm.log_loss([1, 1], [0.5, 0.25], labels=[0, 1]), rel=1e-12
    )


@pytest.mark.parametrize(("y", "s"), CASES)
@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.5, 0.8, 1.0])
def test_thresholded_equal_sklearn(y: np.ndarray, s: np.ndarray, threshold: float) -> None:
    pred = (s >= threshold).astype(int)
    cm = receval.confusion_matrix(y, s, threshold=threshold)
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, labels=[0, 1]).ravel()
    assert (cm.tp, cm.fp, cm.fn, cm.tn) == (tp, fp, fn, tn)
    assert isinstance(cm.tp, int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        checks: list[tuple[float, Callable[[], float], bool]] = [
            (
                receval.accuracy(y, s, threshold=threshold),
                lambda: skm.accuracy_score(y, pred),
                True,
            ),
            (
                receval.precision(y, s, threshold=threshold),
                lambda: skm.precision_score(y, pred, zero_division=np.nan),
                tp + fp > 0,
            ),
            (receval.recall(y, s, threshold=threshold), lambda: skm.recall_score(y, pred), True),
        ]
        for beta in (0.5, 1.0, 2.0):
            checks.append(
                (
                    receval.fbeta(y, s, beta=beta, threshold=threshold),
                    lambda b=beta: skm.fbeta_score(y, pred, beta=b),
                    True,
                )
            )
    for got, want, defined in checks:
        assert isinstance(got, float)
        if defined:
            assert got == pytest.approx(want(), abs=1e-12)
        else:
            assert math.isnan(got)
    assert cm.tnr == pytest.approx(1 - cm.fpr, abs=1e-15)
    assert cm.fpr == pytest.approx(fp / (fp + tn))


# --------------------------------------------------------------------------- seeds' cases


def test_seeds_auc_example() -> None:
    assert receval.auc([1, 1, 0, 0, 0], [0.4, 0.8, 0.2, 0.4, 0.5]) == 0.75


def test_seeds_gauc_example() -> None:
    users = ["a", "a", "b", "b", "c", "c"]
    y = [1, 0, 1, 0, 1, 0]
    m1 = [0.9, 0.8, 0.8, 0.3, 0.6, 0.5]  # orders each user perfectly; b's 0.8 ties a's 0.8
    m2 = [0.9, 0.8, 0.7, 0.6, 0.5, 0.1]
    for weight in ("impressions", "clicks", "uniform"):
        assert receval.gauc(y, m1, users, weight=weight) == 1.0
        assert receval.gauc(y, m2, users, weight=weight) == 1.0
    assert receval.auc(y, m1) == pytest.approx(5 / 6, abs=1e-15)
    assert receval.auc(y, m2) == pytest.approx(2 / 3, abs=1e-15)
    assert round(receval.auc(y, m1), 3) == 0.833
    assert round(receval.auc(y, m2), 3) == 0.667


# -------------------------------------------------------------------------------- GAUC


def brute_gauc(y: np.ndarray, s: np.ndarray, g: np.ndarray, weight: str) -> tuple[float, int]:
    num = den = 0.0
    skipped = 0
    for key in np.unique(g):
        sel = g == key
        yy, ss = y[sel], s[sel]
        if yy.min() == yy.max():
            skipped += 1
            continue
        w = {"impressions": sel.sum(), "clicks": yy.sum(), "uniform": 1}[weight]
        num += w * skm.roc_auc_score(yy, ss)
        den += w
    return num / den, skipped


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weight", ["impressions", "clicks", "uniform"])
def test_gauc_equals_per_group_sklearn(seed: int, weight: Any) -> None:
    rng = np.random.default_rng(seed)
    n = 600
    g = rng.integers(0, 40, n)
    y = (rng.random(n) < 0.3).astype(int)
    s = rng.integers(0, 4, n).astype(float)
    want, skipped = brute_gauc(y, s, g, weight)
    assert receval.gauc(y, s, g, weight=weight) == pytest.approx(want, abs=1e-12)
    table = receval.group_auc(y, s, g)
    assert table["auc"].null_count() == skipped
    assert table["group"].to_list() == sorted(set(g.tolist()))
    assert table["rows"].sum() == n


def test_gauc_string_groups_and_order_of_rows() -> None:
    y, s = random_binary(7, 300, 3)
    g = np.array([f"user{i % 17}" for i in range(300)])
    perm = np.random.default_rng(0).permutation(300)
    a = receval.gauc(y, s, g)
    b = receval.gauc(y[perm], s[perm], g[perm])
    assert a == pytest.approx(b, abs=1e-15)
    assert a == pytest.approx(brute_gauc(y, s, g, "impressions")[0], abs=1e-12)


def test_gauc_no_group_with_both_classes_is_nan_with_warning() -> None:
    with pytest.warns(UndefinedMetricWarning, match="no group has both classes"):
        assert math.isnan(receval.gauc([1, 0], [0.5, 0.4], ["a", "b"]))


def test_gauc_bad_weight() -> None:
    with pytest.raises(InputError, match=r"`weight` must be one of impressions, clicks, uniform"):
        receval.gauc([1, 0], [0.5, 0.4], [1, 1], weight="users")  # type: ignore[arg-type]


# ----------------------------------------------------------------------- undefined rates


def test_zero_denominators_give_nan_and_a_warning() -> None:
    y, s = [0, 0, 0], [0.1, 0.2, 0.3]  # no positive, nothing predicted positive
    with pytest.warns(UndefinedMetricWarning, match="precision is undefined"):
        assert math.isnan(receval.precision(y, s))
    with pytest.warns(UndefinedMetricWarning, match="recall is undefined"):
        assert math.isnan(receval.recall(y, s))
    with pytest.warns(UndefinedMetricWarning, match=r"F-beta \(beta=1\) is undefined"):
        assert math.isnan(receval.fbeta(y, s))
    cm = receval.confusion_matrix([1, 1], [0.9, 0.1])
    with pytest.warns(UndefinedMetricWarning, match="FPR is undefined"):
        assert math.isnan(cm.fpr)
    with pytest.warns(UndefinedMetricWarning, match="TNR is undefined"):
        assert math.isnan(cm.tnr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cm.tpr == 0.5
        assert receval.fbeta([1, 0], [0.1, 0.9]) == 0.0  # defined: TP = 0, FP + FN > 0


def test_confusion_matrix_is_frozen() -> None:
    cm = receval.confusion_matrix([1, 0], [0.9, 0.1])
    with pytest.raises(AttributeError):
        cm.tp = 3  # type: ignore[misc]
    assert cm.f1 == 1.0
    assert cm.fbeta(2) == 1.0


# -------------------------------------------------------------------------- input kinds


def kinds(values: list[Any]) -> list[Any]:
    return [
        values,
        tuple(values),
        np.array(values),
        pd.Series(values),
        pl.Series(values),
        pa.array(values),
        pa.chunked_array([values[:2], values[2:]]),
    ]


@pytest.mark.parametrize("index", range(7))
def test_every_input_kind(index: int) -> None:
    y = kinds([1, 1, 0, 0, 0])[index]
    s = kinds([0.4, 0.8, 0.2, 0.4, 0.5])[index]
    assert receval.auc(y, s) == 0.75
    assert receval.gauc(y, s, kinds(["a", "b", "b", "a", "b"])[index]) == pytest.approx(0.8)
    assert receval.confusion_matrix(y, s).tp == 1


def test_booleans_and_float_labels() -> None:
    assert receval.auc([True, True, False], [0.3, 0.9, 0.5]) == 0.5
    assert receval.auc([1.0, 1.0, 0.0], [0.3, 0.9, 0.5]) == 0.5
    assert receval.auc(pd.array([1, 0], dtype="Int64"), [0.9, 0.2]) == 1.0


def test_inputs_are_not_modified() -> None:
    y, s = random_binary(3, 5000, 9)
    y0, s0 = y.copy(), s.copy()
    g = np.arange(5000) % 13
    receval.auc(y, s)
    receval.roc_curve(y, s)
    receval.pr_curve(y, s)
    receval.gauc(y, s, g)
    receval.log_loss(y, s)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(s, s0)


def test_infinite_scores_are_ordered() -> None:
    y, s = [1, 0, 1, 0], [np.inf, -np.inf, 0.5, 0.5]
    assert receval.auc(y, s) == pytest.approx(brute_auc(y, s))


BAD: list[tuple[Callable[[], object], str]] = [
    (
        lambda: receval.auc([1, 0, 1], [0.1, 0.2]),
        r"`y_true` and `y_score` must have the same length; got 3 and 2\.",
    ),
    (lambda: receval.auc([], []), r"`y_true` is empty; expected at least one value\."),
    (
        lambda: receval.auc([1, 0, 2, 3], [0.1] * 4),
        r"`y_true` must hold binary labels 0/1 \(or booleans\); found 2, 3 at 2 position\(s\): "
        r"\[2, 3\]\.",
    ),
    (lambda: receval.auc([1, -1], [0.1, 0.2]), r"found -1 at 1 position\(s\): \[1\]"),
    (
        lambda: receval.auc([1, 0, 0], [0.1, np.nan, 0.3]),
        r"`y_score` has 1 NaN value\(s\); expected numbers\. Positions: \[1\]\.",
    ),
    (
        lambda: receval.auc(pl.Series([1, None, 0]), [0.1, 0.2, 0.3]),
        r"`y_true` has 1 null value\(s\); expected none\. Positions: \[1\]\.",
    ),
    (
        lambda: receval.auc(pa.array([1, 0, 0]), pa.array([0.1, None, None])),
        r"`y_score` has 2 null value\(s\); expected none\. Positions: \[1, 2\]\.",
    ),
    (
        lambda: receval.auc(pd.Series([1, 0, None], dtype="Int64"), [0.1] * 3),
        r"`y_true` has 1 null value\(s\)",
    ),
    (
        lambda: receval.auc([1, None], [0.1, 0.2]),
        r"`y_true` has 1 null value\(s\); expected none\. Positions: \[1\]\.",
    ),
    (
        lambda: receval.auc([1, 1, 1], [0.1, 0.2, 0.3]),
        r"AUC is undefined when `y_true` has one class only: all 3 labels are positive \(1\); "
        r"expected both 0 and 1\.",
    ),
    (lambda: receval.auc([0, 0], [0.1, 0.2]), r"all 2 labels are negative \(0\)"),
    (
        lambda: receval.roc_curve([0, 0], [0.1, 0.2]),
        r"the ROC curve is undefined when `y_true` has one class only",
    ),
    (
        lambda: receval.pr_curve([0, 0], [0.1, 0.2]),
        r"the precision-recall curve is undefined when `y_true` has no positive \(1\); all 2 "
        r"labels are 0\.",
    ),
    (
        lambda: receval.average_precision([0], [0.1]),
        r"average precision is undefined when `y_true` has no positive",
    ),
    (
        lambda: receval.auc(np.ones((2, 2)), np.ones((2, 2))),
        r"`y_true` must be 1-D; got an array of shape \(2, 2\)\.",
    ),
    (
        lambda: receval.auc({1, 0}, [0.1, 0.2]),
        r"`y_true` must be a NumPy array, a list, a pandas or Polars Series or a PyArrow array; "
        r"got set\.",
    ),
    (
        lambda: receval.auc([1, 0], ["a", "b"]),
        r"`y_score` must hold numbers; got values of type <U1\.",
    ),
    (
        lambda: receval.log_loss([1, 0, 1], [0.5, -0.1, 1.5]),
        r"`y_prob` must hold probabilities in \[0, 1\]; found 2 value\(s\) outside, e.g. -0.1, "
        r"1.5 at positions \[1, 2\]\.",
    ),
    (lambda: receval.log_loss([1, 2], [0.5, 0.5]), r"`y_true` must hold binary labels 0/1"),
    (
        lambda: receval.gauc([1, 0], [0.1, 0.2], [1]),
        r"`y_true` and `groups` must have the same length; got 2 and 1\.",
    ),
    (
        lambda: receval.gauc([1, 0], [0.1, 0.2], [1.0, np.nan]),
        r"`groups` has 1 NaN value\(s\); expected ids\. Positions: \[1\]\.",
    ),
    (
        lambda: receval.confusion_matrix([1, 0], [0.1, 0.2], threshold=math.nan),
        r"`threshold` must be a number; got nan\.",
    ),
    (
        lambda: receval.fbeta([1, 0], [0.1, 0.2], beta=0),
        r"`beta` must be a finite number > 0; got 0\.",
    ),
]


@pytest.mark.parametrize(("call", "match"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input(call: Callable[[], object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()


# ---------------------------------------------------------------------------- hypothesis

labels_scores = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n).filter(lambda y: 0 < sum(y) < len(y)),
        st.lists(st.integers(-3, 3).map(float), min_size=n, max_size=n),
    )
)


@settings(max_examples=examples(150), deadline=None)
@given(labels_scores)
def test_auc_properties(case: tuple[list[int], list[float]]) -> None:
    y, s = case
    a = receval.auc(y, s)
    assert a == pytest.approx(brute_auc(y, s), abs=1e-12)
    arr = np.array(s)
    for transform in (np.exp, lambda x: 3 * x + 7, lambda x: x**3, np.arctan):
        assert receval.auc(y, transform(arr)) == pytest.approx(a, abs=1e-12)
    assert receval.auc(y, -arr) == pytest.approx(1 - a, abs=1e-12)
    perm = np.random.default_rng(len(y)).permutation(len(y))
    assert receval.auc(np.array(y)[perm], arr[perm]) == a


@settings(max_examples=examples(100), deadline=None)
@given(labels_scores)
def test_curves_properties(case: tuple[list[int], list[float]]) -> None:
    y, s = case
    fpr, tpr, thr = receval.roc_curve(y, s)
    assert np.trapezoid(tpr, fpr) == pytest.approx(receval.auc(y, s), abs=1e-12)
    assert np.all(np.diff(fpr) >= 0)
    assert np.all(np.diff(tpr) >= 0)
    assert np.all(np.diff(thr) < 0)
    p, r, t = receval.pr_curve(y, s)
    assert np.all(np.diff(r) <= 0)
    assert np.all(np.diff(t) > 0)
    assert -np.sum(np.diff(r) * p[:-1]) == pytest.approx(receval.average_precision(y, s))
    assert 0 <= receval.average_precision(y, s) <= 1


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 1), st.integers(0, 3).map(float)),
        min_size=1,
        max_size=40,
    )
)
def test_gauc_properties(rows: list[tuple[int, int, float]]) -> None:
    g, y, s = (np.array(c) for c in zip(*rows, strict=True))
    both = [k for k in set(g.tolist()) if 0 < y[g == k].sum() < (g == k).sum()]
    if not both:
        return
    value = receval.gauc(y, s, g)
    assert value == pytest.approx(brute_gauc(y, s, g, "impressions")[0], abs=1e-12)
    assert receval.gauc(y, -s, g, weight="uniform") == pytest.approx(
        1 - receval.gauc(y, s, g, weight="uniform"), abs=1e-12
    )
    assert receval.gauc(y, np.exp(s), g) == pytest.approx(value, abs=1e-12)


def test_auc_large_ties_parallel_path() -> None:
    """Many rows (the threaded sort and chunked count) against scikit-learn."""
    y, s = random_binary(11, 300_000, 37)
    assert receval.auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    y2 = np.zeros(300_000, dtype=np.int8)
    y2[::3] = 1
    s2 = np.repeat(np.arange(3000.0), 100)  # tie groups straddle the chunks of positives
    assert receval.auc(y2, s2) == pytest.approx(skm.roc_auc_score(y2, s2), abs=1e-12)


def test_tiny_inputs() -> None:
    for y, s in itertools.product([[1, 0], [0, 1]], [[0.5, 0.5], [0.1, 0.9], [0.9, 0.1]]):
        assert receval.auc(y, s) == pytest.approx(skm.roc_auc_score(y, s))
