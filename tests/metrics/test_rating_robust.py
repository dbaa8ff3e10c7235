"""Rating metrics on non-finite, overflowing and out-of-scale inputs (issue 19, points 2 and 7).

Infinite predictions are refused (recs scores may be infinite for ranking only); a sum beyond
float64 is inf, as in scikit-learn, never NaN and never a user left out (per-user value inf,
not null), in the array functions, :func:`receval.evaluate` and the distributed engine alike;
nmae's explicit ``rating_range`` must hold every true rating.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from sklearn import metrics as skm

import receval
from helpers.rating import FUNCS, SKLEARN
from helpers.shard import assert_same
from receval import InputError
from receval._errors import UndefinedMetricWarning
from receval.engines.shard import evaluate_sharded

NAMES = list(FUNCS)
USER_METRICS = [f"{n}(average=user)" for n in NAMES]

# the report: truth of two users, a prediction whose squared error overflows float64
TRUTH = {"u1": {"a": 4, "b": 2}, "u2": {"c": 5, "d": 1}}
Y = np.array([4.0, 2.0, 5.0, 1.0])
GROUPS = np.array(["u1", "u1", "u2", "u2"])
P_SQUARE = np.array([1e200, 1.0, 1.0, 1.0])  # e² overflows, |e| does not
P_BOTH = np.array([1.7e308, -1.7e308, 1.0, 1.0])  # e² and the sum of |e| overflow


def sklearn_value(name: str, y: np.ndarray, p: np.ndarray) -> float:
    """scikit-learn's value (its NumPy sums overflow to inf; nmae = MAE / (max y - min y))."""
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if name == "nmae":
            return float(skm.mean_absolute_error(y, p) / (Y.max() - Y.min()))
        return float(SKLEARN[name](y, p))


def sklearn_grouped(name: str, y: np.ndarray, p: np.ndarray, g: np.ndarray) -> float:
    values = [sklearn_value(name, y[g == key], p[g == key]) for key in np.unique(g)]
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.mean(values))


@contextmanager
def no_warning() -> Iterator[None]:
    """Fails on any warning (a false "constant" r2 warning, a NumPy overflow warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def preds(p: np.ndarray) -> dict[str, dict[str, float]]:
    return {"u1": {"a": float(p[0]), "b": float(p[1])}, "u2": {"c": float(p[2]), "d": float(p[3])}}


# ------------------------------------------------------------------- infinite predictions


def test_evaluate_refuses_infinite_prediction_as_the_array_functions() -> None:
    with pytest.raises(
        InputError,
        match=re.escape("`y_pred` has 1 non-finite value(s); expected finite numbers. Positions:"),
    ):
        receval.mse([1], [math.inf])
    metrics = [*(f"{n}(average=user)" for n in ("mse", "rmse", "mae")), *NAMES]
    recs = {"u1": {"a": math.inf, "b": 1.0}, "u2": {"c": 1.0, "d": 1.0}}
    want = (
        "recs has 1 non-finite value(s) in column 'score' (predicted ratings of "
        f"{', '.join(metrics)}); expected finite numbers (infinite scores are allowed for "
        "ranking metrics only). First offending rows:\n  row 0: user='u1', item='a', score=inf"
    )
    with pytest.raises(InputError, match=f"^{re.escape(want)}$"):
        receval.evaluate(TRUTH, recs, metrics)


@pytest.mark.parametrize("engine", ["local", "sharded"])
def test_infinite_predictions_are_counted_and_shown(engine: str) -> None:
    """-inf too, whatever no_recs says; an infinite score no rating row uses is fine."""
    truth = pl.DataFrame(
        {"u": [1, 1, 2, 2, 3], "i": [10, 11, 10, 12, 13], "r": [4.0, 2.0, 5.0, 1.0, 3.0]}
    )
    recs = pl.DataFrame(
        {"u": [2, 1, 1, 2, 3], "i": [12, 10, 99, 10, 13], "s": [-math.inf, 1.0, math.inf, 3.0,
                                                                 math.inf]}
    )  # fmt: skip
    run = receval.evaluate if engine == "local" else evaluate_sharded
    cols = {"user_col": "u", "item_col": "i", "score_col": "s", "relevance_col": "r"}
    with pytest.raises(InputError) as err:
        run(truth, recs, ["rmse(average=user)"], no_recs="skip", **cols)  # type: ignore[operator]
    if engine == "local":
        assert str(err.value).endswith(
            "recs has 2 non-finite value(s) in column 's' (predicted ratings of "
            "rmse(average=user)); expected finite numbers (infinite scores are allowed for "
            "ranking metrics only). First offending rows:\n  row 0: u=2, i=12, s=-inf\n"
            "  row 4: u=3, i=13, s=inf"
        )
    else:  # each shard refuses its own rows
        assert "non-finite value(s) in column 's' (predicted ratings of" in str(err.value)
    ok = recs.filter(pl.col("s").is_finite() | (pl.col("i") == 99))  # item 99 is not in truth
    got = run(truth, ok, ["rmse", "ndcg"], no_recs="skip", **cols)  # type: ignore[operator]
    assert got["rmse"] == math.sqrt((3**2 + 2**2) / 2)  # u1/10: 4 vs 1, u2/10: 5 vs 3


# -------------------------------------------------------------------------------- overflow


@pytest.mark.parametrize(
    ("name", "p"),
    [(n, P_SQUARE) for n in ("mse", "rmse", "r2")] + [(n, P_BOTH) for n in NAMES],
    ids=[f"square-{n}" for n in ("mse", "rmse", "r2")] + [f"both-{n}" for n in NAMES],
)
def test_overflow_is_inf_as_sklearn(name: str, p: np.ndarray) -> None:
    want = sklearn_value(name, Y, p)
    want_grouped = sklearn_grouped(name, Y, p, GROUPS)
    with no_warning():
        got = FUNCS[name](Y, p)
        grouped = FUNCS[name](Y, p, groups=GROUPS)
    assert got == want
    assert grouped == want_grouped
    if name in ("mse", "rmse") or p is P_BOTH:
        assert got == grouped == (-math.inf if name == "r2" else math.inf)


def test_reported_finite_case() -> None:
    assert receval.mse([4, 2, 5, 1], [1e200, 1, 1, 1], groups=["u1", "u1", "u2", "u2"]) == math.inf
    assert sklearn_value("r2", Y, P_SQUARE) == -math.inf
    assert receval.r2([4, 2, 5, 1], [1e200, 1, 1, 1]) == -math.inf


def test_overflow_over_several_chunks() -> None:
    """Rows summed in parallel chunks: one chunk overflows, the others do not."""
    n = 40_000
    y = np.tile([1.0, 5.0], n // 2)
    for p in (y.copy(), y.copy()):
        p[-1] = 1e200
        with no_warning():
            assert receval.mse(y, p) == math.inf
            assert receval.rmse(y, p) == math.inf
            assert receval.r2(y, p) == -math.inf
        assert receval.mae(y, p) == sklearn_value("mae", y, p)
    p = y.copy()
    p[: n // 2] = 1.3e154  # each e² is finite (1.69e308), their sum is not
    assert receval.mse(y, p) == sklearn_value("mse", y, p) == math.inf


@pytest.mark.parametrize("p", [P_SQUARE, P_BOTH], ids=["square", "both"])
def test_evaluate_overflow_per_user_and_means(p: np.ndarray) -> None:
    metrics = USER_METRICS + NAMES
    with no_warning():
        res = receval.evaluate(TRUTH, preds(p), metrics)
    for name in NAMES:
        assert res[name] == FUNCS[name](Y, p)
        assert res[f"{name}(average=user)"] == FUNCS[name](Y, p, groups=GROUPS)
        assert res[f"{name}(average=user)"] == sklearn_grouped(name, Y, p, GROUPS)
    u1 = [sklearn_value(name, Y[:2], p[:2]) for name in NAMES]
    u2 = [sklearn_value(name, Y[2:], p[2:]) for name in NAMES]
    u1[NAMES.index("nmae")] = sklearn_value("mae", Y[:2], p[:2]) / 4
    u2[NAMES.index("nmae")] = sklearn_value("mae", Y[2:], p[2:]) / 4
    want = pl.DataFrame(
        {"user": ["u1", "u2"], **{m: [a, b] for m, a, b in zip(USER_METRICS, u1, u2, strict=True)}}
    )
    assert_frame_equal(res.per_user, want)
    assert res.per_user.row(0)[2:4] == (math.inf, math.inf)  # mse, rmse of u1: inf, not null
    assert res.details["r2(average=user)"]["users_skipped"] == 0
    assert all(res.details[m]["users"] == 2 for m in USER_METRICS)


def test_evaluate_reported_values() -> None:
    metrics = [*(f"{n}(average=user)" for n in ("mse", "rmse", "mae")), *NAMES]
    with no_warning():
        res = receval.evaluate(TRUTH, preds(P_SQUARE), metrics)
    assert res.means == {
        "mse(average=user)": math.inf,
        "rmse(average=user)": math.inf,
        "mae(average=user)": (5e199 + 2.0) / 2,
        "mse": math.inf,
        "rmse": math.inf,
        "mae": (1e200 + 1 + 4 + 0) / 4,
        "r2": -math.inf,
        "nmae": (1e200 + 5) / 4 / 4,
    }


@pytest.mark.parametrize("n_shards", [1, 2, 3])
@pytest.mark.parametrize("p", [P_SQUARE, P_BOTH], ids=["square", "both"])
def test_sharded_equals_local_on_overflow(p: np.ndarray, n_shards: int) -> None:
    metrics = USER_METRICS + NAMES
    local = receval.evaluate(TRUTH, preds(p), metrics)
    assert local["mse(average=user)"] == local["mse"] == math.inf
    assert local.per_user.null_count().sum_horizontal().item() == 0  # u1 is inf, not null
    for seed in range(4):
        assert_same(evaluate_sharded(TRUTH, preds(p), metrics, n_shards=n_shards, seed=seed), local)


def test_mean_over_users_overflows_to_inf() -> None:
    """Each user's MSE is finite (1.69e308), their sum is not: inf, no OverflowError."""
    big = 1.3e154
    y, p, g = [0.0, 0.0, 1.0], [big, -big, 1.0], ["a", "b", "c"]
    with no_warning():
        assert receval.mse(y, p, groups=g) == math.inf
    truth = {"a": {"x": 0}, "b": {"x": 0}, "c": {"x": 1}}
    recs = {"a": {"x": big}, "b": {"x": -big}, "c": {"x": 1.0}}
    metrics = ["mse(average=user)", "mse"]
    local = receval.evaluate(truth, recs, metrics)
    assert local.means == {"mse(average=user)": math.inf, "mse": math.inf}
    assert local.per_user["mse(average=user)"].to_list() == [big * big, big * big, 0.0]
    for seed in range(4):
        assert_same(evaluate_sharded(truth, recs, metrics, n_shards=3, seed=seed), local)


def test_r2_sstot_overflow_is_nan_with_its_reason() -> None:
    """True ratings so large that SS_tot overflows: NaN (scikit-learn: inf / inf = NaN), with
    a warning that says so, never the false "constant" one."""
    y, p = [1e200, -1e200], [0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(skm.r2_score(y, p))
    with pytest.warns(UndefinedMetricWarning, match=r"SS_tot overflows") as caught:
        assert math.isnan(receval.r2(y, p))
    assert not any("constant" in str(w.message) for w in caught)
    truth = {"u1": {"a": 1e200, "b": -1e200}, "u2": {"c": 5, "d": 1}}
    recs = {"u1": {"a": 0.0, "b": 0.0}, "u2": {"c": 4.0, "d": 2.0}}
    with pytest.warns(UndefinedMetricWarning) as caught:
        res = receval.evaluate(truth, recs, ["r2", "r2(average=user)"])
    messages = [str(w.message) for w in caught]
    assert messages == [
        "r2 is undefined (SS_tot overflows float64: true ratings too large); its value is NaN.",
        "r2(average=user): 1 user(s) have an undefined r2 (SS_tot overflows float64: true "
        "ratings too large); null, and left out of the mean.",
    ]
    assert math.isnan(res["r2"])
    assert res["r2(average=user)"] == 1 - 2 / 8
    assert res.details["r2(average=user)"]["users_skipped"] == 1


# ------------------------------------------------------------------------ nmae rating_range


def test_nmae_true_ratings_outside_rating_range() -> None:
    with pytest.raises(
        InputError,
        match=re.escape(
            "`y_true` has 2 value(s) outside `rating_range` (1, 5); expected true ratings on the "
            "scale [r_min, r_max] (predictions may lie outside it). Positions: [0, 3]."
        ),
    ):
        receval.nmae([0, 3, 5, 6], [1, 3, 5, 5], rating_range=(1, 5))
    with pytest.raises(InputError, match="outside `rating_range`"):
        receval.nmae([0, 3], [1, 3], rating_range=(1, 5), groups=["a", "b"])
    # predictions off the scale are model output: scored as they are
    assert receval.nmae([1, 5], [0, 7], rating_range=(1, 5)) == (1 + 2) / 2 / 4
    with pytest.raises(InputError, match=r"r_min < r_max; got \(5, 5\)"):
        receval.nmae([5], [5], rating_range=(5, 5))


@pytest.mark.parametrize("engine", ["local", "sharded"])
def test_evaluate_nmae_true_ratings_outside_rating_range(engine: str) -> None:
    truth = {"u1": {"a": 4, "b": 7}, "u2": {"c": 5, "d": 0}}
    recs = {"u1": {"a": 4.0, "b": 9.0}, "u2": {"c": 4.0, "d": -1.0}}
    run = receval.evaluate if engine == "local" else evaluate_sharded
    with pytest.raises(InputError) as err:
        run(truth, recs, ["rmse", "nmae(average=user)"], rating_range=(1, 5))  # type: ignore[operator]
    msg = str(err.value)
    assert "outside rating_range=(1, 5); expected true ratings on the scale [r_min, r_max]" in msg
    if engine == "local":
        assert msg == (
            "truth has 2 rating(s) in column 'relevance' outside rating_range=(1, 5); expected "
            "true ratings on the scale [r_min, r_max] (predictions may lie outside it). First "
            "offending rows:\n  row 1: user='u1', item='b', relevance=7.0\n"
            "  row 3: user='u2', item='d', relevance=0.0"
        )
    ok = {"u1": {"a": 4, "b": 1}, "u2": {"c": 5, "d": 2}}  # predictions 9 and -1: off the scale
    got = run(ok, recs, ["nmae"], rating_range=(1, 5))  # type: ignore[operator]
    assert got["nmae"] == (0 + 8 + 1 + 3) / 4 / 4
    with pytest.raises(InputError, match=r"r_min < r_max; got \(5, 1\)"):
        run(ok, recs, ["nmae"], rating_range=(5, 1))  # type: ignore[operator]


def test_nmae_scale_wider_than_float64() -> None:
    with pytest.raises(InputError, match=r"rating scale \(-1e\+308, 1e\+308\) is wider than"):
        receval.nmae([-1e308, 1e308], [0.0, 0.0])
    with pytest.raises(InputError, match=r"rating scale \(-1e\+308, 1e\+308\) is wider than"):
        receval.nmae([0.0], [0.0], rating_range=(-1e308, 1e308))
