"""Rating array functions against scikit-learn, brute force and hypothesis properties."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

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
from helpers.rating import FUNCS, SKLEARN
from receval import InputError
from receval._errors import UndefinedMetricWarning


def ratings(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer true ratings 1..5 (many ties) and predictions, some exact."""
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, n).astype(float)
    p = np.where(rng.random(n) < 0.2, y, np.round(rng.uniform(0.5, 5.5, n), 1))
    y[0], y[-1] = 1.0, 5.0
    return y, p


CASES = [ratings(seed, n) for seed, n in enumerate([2, 3, 10, 100, 1000, 50_000])]


@pytest.mark.parametrize(("y", "p"), CASES)
@pytest.mark.parametrize("name", list(SKLEARN))
def test_equals_sklearn(y: np.ndarray, p: np.ndarray, name: str) -> None:
    got = FUNCS[name](y, p)
    assert isinstance(got, float)
    assert got == pytest.approx(SKLEARN[name](y, p), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("y", "p"), CASES)
def test_nmae(y: np.ndarray, p: np.ndarray) -> None:
    mae = skm.mean_absolute_error(y, p)
    assert receval.nmae(y, p) == pytest.approx(mae / (y.max() - y.min()), rel=1e-12)
    assert receval.nmae(y, p, rating_range=(0, 10)) == pytest.approx(mae / 10, rel=1e-12)


def brute_grouped(name: str, y: np.ndarray, p: np.ndarray, g: np.ndarray) -> float:
    values = []
    for key in np.unique(g):
        sel = g == key
        if name == "r2" and np.ptp(y[sel]) == 0:
            continue
        if name == "nmae":
            values.append(skm.mean_absolute_error(y[sel], p[sel]) / (y.max() - y.min()))
        else:
            values.append(SKLEARN[name](y[sel], p[sel]))
    return sum(values) / len(values)


@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("seed", range(3))
def test_grouped_equals_per_group_sklearn(name: str, seed: int) -> None:
    y, p = ratings(seed + 10, 400)
    g = np.random.default_rng(seed).integers(0, 30, 400)
    g[:3] = 99  # a group of 3 rows
    y[:3] = 4.0  # with constant truth: r2 undefined there, left out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = FUNCS[name](y, p, groups=g)
    assert got == pytest.approx(brute_grouped(name, y, p, g), rel=1e-12)


def test_grouped_r2_warns_for_constant_groups() -> None:
    with pytest.warns(UndefinedMetricWarning, match=r"constant within 1 of 2 group\(s\)"):
        got = receval.r2([1, 2, 3, 3], [1, 2, 2, 3], groups=["a", "a", "b", "b"])
    assert got == 1.0


def test_r2_constant_truth_is_nan_with_warning() -> None:
    with pytest.warns(UndefinedMetricWarning, match=r"r2 is undefined \(SS_tot = 0\)"):
        assert math.isnan(receval.r2([3, 3, 3], [3, 2, 4]))


def test_nmae_zero_width_is_nan_with_warning() -> None:
    with pytest.warns(UndefinedMetricWarning, match="zero width"):
        assert math.isnan(receval.nmae([3, 3], [3, 2]))


@pytest.mark.parametrize(
    ("y", "p"),
    [
        (np.array([4, 2, 5]), pd.Series([3.5, 2.0, 5.0])),
        (pl.Series([4, 2, 5]), pa.array([3.5, 2.0, 5.0])),
        ([4, 2, 5], (3.5, 2, 5)),
        (pa.chunked_array([[4], [2, 5]]), np.array([3.5, 2.0, 5.0], dtype=np.float32)),
    ],
)
def test_input_kinds(y: object, p: object) -> None:
    assert receval.mae(y, p) == pytest.approx(0.5 / 3)
    assert receval.rmse(y, p) == pytest.approx(math.sqrt(0.25 / 3))


def test_inputs_not_modified() -> None:
    y, p = ratings(1, 100)
    y0, p0 = y.copy(), p.copy()
    for f in FUNCS.values():
        f(y, p)
        f(y, p, groups=np.arange(100) % 7)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(p, p0)


BAD: list[tuple[Callable[[], object], str]] = [
    (
        lambda: receval.mae([1, 2], [1]),
        r"`y_true` and `y_pred` must have the same length; got 2 and 1\.",
    ),
    (lambda: receval.rmse([], []), r"`y_true` is empty; expected at least one value\."),
    (
        lambda: receval.mse([1, np.nan], [1, 2]),
        r"`y_true` has 1 non-finite value\(s\); expected finite numbers\. Positions: \[1\]\.",
    ),
    (lambda: receval.mse([1, 2], [np.inf, 2]), r"`y_pred` has 1 non-finite value\(s\)"),
    (
        lambda: receval.r2(pl.Series([1.0, None]), [1, 2]),
        r"`y_true` has 1 null value\(s\); expected none\. Positions: \[1\]\.",
    ),
    (
        lambda: receval.nmae([1, 2], [1, 2], rating_range=(5, 1)),
        r"`rating_range` must be a pair \(r_min, r_max\) of finite numbers with r_min < r_max; "
        r"got \(5, 1\)\.",
    ),
    (lambda: receval.nmae([1, 2], [1, 2], rating_range=(1,)), r"`rating_range` must be a pair"),  # type: ignore[arg-type]
    (
        lambda: receval.mae([1, 2], [1, 2], groups=[1]),
        r"`y_true` and `groups` must have the same length; got 2 and 1\.",
    ),
    (lambda: receval.mae(["a"], [1]), r"`y_true` must hold numbers"),
]


@pytest.mark.parametrize(("call", "match"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input(call: Callable[[], object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        call()


pairs = st.integers(1, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 5).map(float), min_size=n, max_size=n),
        st.lists(st.floats(0, 6, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
    )
)


@settings(max_examples=examples(100), deadline=None)
@given(pairs)
def test_properties(case: tuple[list[float], list[float], list[int]]) -> None:
    y, p, g = (np.array(c) for c in case)
    perm = np.random.default_rng(len(y)).permutation(len(y))
    for name in ("mae", "mse", "rmse"):
        f = FUNCS[name]
        assert f(y, p) >= 0
        assert f(y, y) == 0
        assert f(y, p, groups=g) >= 0
        assert f(y[perm], p[perm]) == pytest.approx(f(y, p), rel=1e-12)
        assert f(y[perm], p[perm], groups=g[perm]) == pytest.approx(f(y, p, groups=g), rel=1e-12)
    assert receval.rmse(y, p) >= receval.mae(y, p) - 1e-12
    if np.ptp(y) > 0:
        assert receval.r2(y, p) <= 1.0
        assert receval.r2(y, y) == 1.0
        assert receval.r2(y, p) == pytest.approx(skm.r2_score(y, p), rel=1e-9, abs=1e-9)
