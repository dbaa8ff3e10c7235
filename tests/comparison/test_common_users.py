"""compare(users="common") (issue #29, item 6): every run judged on the users all can score.

On a global temporal split a factor model knows none of the cold test users (each scores 0),
while a popularity baseline recommends to everyone, so the baseline "wins" on users the model
could never serve. ``users="common"`` evaluates every run on the truth users every run can
score and counts those left out; the default says, in a warning, that the runs differ.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval

RNG = np.random.default_rng(6)
N_TRUTH, N_KNOWN, N_ITEMS = 60, 40, 25
ALS = receval.FactorModel(RNG.normal(size=(N_KNOWN, 4)), RNG.normal(size=(N_ITEMS, 4)))
TRUTH = pl.DataFrame({
    "user": np.repeat(np.arange(N_TRUTH), 2), "item": RNG.integers(0, N_ITEMS, 2 * N_TRUTH),
}).unique(maintain_order=True)  # fmt: skip
POP = pl.DataFrame({
    "user": np.repeat(np.arange(N_TRUTH), 5), "item": np.tile(np.arange(5), N_TRUTH),
    "score": np.tile(np.arange(5.0, 0.0, -1.0), N_TRUTH),
})  # fmt: skip
METRICS = ["ndcg@10", "recall@5", "mrr@10"]


def quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_common_users_equal_evaluating_each_run_on_those_users() -> None:
    cmp = quiet(receval.compare, TRUTH, {"pop": POP, "als": ALS}, METRICS, users="common")
    known = TRUTH.filter(pl.col("user") < N_KNOWN)  # the model's users: 0 .. N_KNOWN - 1
    for name, run in {"pop": POP, "als": ALS}.items():
        want = quiet(receval.evaluate, known, run, METRICS)
        got = cmp.results[name]
        assert got.means == want.means, name
        assert got.per_user.equals(want.per_user), name
    assert cmp.settings["users"] == {
        "users": "common", "truth_users": N_TRUTH, "evaluated": N_KNOWN,
        "left_out": N_TRUTH - N_KNOWN, "left_out_by_run": {"pop": 0, "als": N_TRUTH - N_KNOWN},
    }  # fmt: skip
    assert set(cmp.table["n_users"].to_list()) == {N_KNOWN}
    assert cmp.results["als"].counts.no_recs == 0  # no cold user left to score 0


def test_all_users_warn_that_the_runs_score_different_users() -> None:
    with pytest.warns(UserWarning, match=r"\(pop 0, als 20\).*users='common'") as record:
        cmp = receval.compare(TRUTH, {"pop": POP, "als": ALS}, METRICS)
    assert any(w.filename == __file__ for w in record)
    assert cmp.settings["users"] == {"users": "all"}
    assert cmp.results["als"].counts.no_recs == N_TRUTH - N_KNOWN
    # runs that score the same users: nothing to say
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        receval.compare(TRUTH, {"pop": POP, "pop2": POP}, METRICS)
    assert not [w for w in caught if "different numbers of truth users" in str(w.message)]


def test_common_users_of_tables_and_a_score_model_without_user_ids() -> None:
    half = POP.filter(pl.col("user") % 2 == 0)  # a table: its users are those with a list
    scorer = receval.ScoreModel(lambda u: np.tile(np.arange(N_ITEMS, dtype=float), (len(u), 1)),
                                item_ids=np.arange(N_ITEMS))  # fmt: skip  # scores everyone
    cmp = quiet(receval.compare, TRUTH, {"half": half, "all": scorer, "pop": POP}, METRICS,
                users="common")  # fmt: skip
    facts = cmp.settings["users"]
    assert facts["evaluated"] == N_TRUTH // 2
    assert facts["left_out_by_run"] == {"half": N_TRUTH // 2, "all": 0, "pop": 0}
    want = quiet(receval.evaluate, TRUTH.filter(pl.col("user") % 2 == 0), scorer, METRICS)
    assert cmp.results["all"].means == want.means


def test_common_users_from_files_with_text_ids(tmp_path: Any) -> None:
    truth_path, pop_path = tmp_path / "truth.csv", tmp_path / "pop.csv"
    TRUTH.write_csv(truth_path)
    POP.filter(pl.col("user") < 30).write_csv(pop_path)
    model = receval.FactorModel(ALS.user_factors, ALS.item_factors,
                                user_ids=[str(u) for u in range(N_KNOWN)],
                                item_ids=[str(i) for i in range(N_ITEMS)])  # fmt: skip
    cmp = quiet(receval.compare, truth_path, {"pop": pop_path, "als": model}, METRICS,
                users="common")  # fmt: skip
    assert cmp.settings["users"]["evaluated"] == 30
    assert cmp.settings["users"]["left_out_by_run"] == {"pop": 30, "als": 20}


def test_no_common_user_is_an_error() -> None:
    other = POP.with_columns(pl.col("user") + 1000)
    with pytest.raises(receval.InputError, match="no truth user can be scored by every run"):
        quiet(receval.compare, TRUTH, {"pop": other, "als": ALS}, METRICS, users="common")


@pytest.mark.parametrize("users", ["some", None, 1, "COMMON"])
def test_users_must_name_a_choice(users: Any) -> None:
    with pytest.raises(receval.InputError, match="users") as info:
        receval.compare(TRUTH, {"pop": POP}, METRICS, users=users)
    assert "common" in str(info.value)
