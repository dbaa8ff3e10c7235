"""``Evaluator.update_scores``: truth and exclude given once to the Evaluator, the warning for
train pairs that may be recommended, and bad or unusual score inputs (issue 29, items 5 and
8)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval
from receval import InputError

N_USERS, N_ITEMS = 24, 30
METRICS = ["ndcg@10", "recall@5", "precision@3"]


def data(seed: int = 0) -> tuple[np.ndarray, pl.DataFrame, pl.DataFrame]:
    """Scores (users x items, ties), truth and train (disjoint from truth), integer ids."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 8, (N_USERS, N_ITEMS)).astype(np.float64)
    t_rows, tr_rows = [], []
    for u in range(N_USERS):
        picked = rng.choice(N_ITEMS, 9, replace=False)
        t_rows += [(u, int(i)) for i in picked[:3]]
        tr_rows += [(u, int(i)) for i in picked[3:]]
        scores[u, picked[3:]] += 10  # the train items score high: a model that memorised them
    truth = pl.DataFrame(t_rows, schema=["user", "item"], orient="row")
    train = pl.DataFrame(tr_rows, schema=["user", "item"], orient="row")
    return scores, truth, train


def batches() -> list[np.ndarray]:
    return [np.arange(lo, min(lo + 7, N_USERS)) for lo in range(0, N_USERS, 7)]


# ------------------------------------------------------------ truth and exclude, given once


def test_truth_and_exclude_given_once_equal_filtering_each_batch() -> None:
    scores, truth, train = data()
    once = receval.Evaluator(METRICS, truth=truth, exclude=train)
    by_hand = receval.Evaluator(METRICS)
    for users in batches():
        once.update_scores(users, scores[users])
        by_hand.update_scores(
            users, scores[users], truth.filter(pl.col("user").is_in(users.tolist())),
            exclude=train.filter(pl.col("user").is_in(users.tolist())),
        )  # fmt: skip
    assert once.compute() == by_hand.compute()
    # and both equal evaluate on the full table of scores less train
    full = pl.DataFrame(
        {
            "user": np.repeat(np.arange(N_USERS), N_ITEMS),
            "item": np.tile(np.arange(N_ITEMS), N_USERS),
            "score": scores.reshape(-1),
        }
    ).join(train, on=["user", "item"], how="anti")
    assert once.compute() == receval.evaluate(truth, full, METRICS)


def test_truth_given_once_as_a_dict_and_text_ids() -> None:
    truth = {"a": {"x": 1}, "b": {"y": 1}, "c": {"z": 1}}
    ev = receval.Evaluator(["recall@1"], truth=truth, exclude={"a": ["y"]})
    items = ["x", "y", "z"]
    ev.update_scores(["a", "b"], np.array([[0.1, 0.9, 0.2], [0.1, 0.9, 0.2]]), item_ids=items)
    got = ev.compute()
    # a: y excluded, z first (miss); b: y first (hit); c is in no batch: not evaluated
    assert got.per_user.sort("user").to_dicts() == [
        {"user": "a", "recall@1": 0.0},
        {"user": "b", "recall@1": 1.0},
    ]


def test_truth_or_exclude_given_twice_or_never() -> None:
    scores, truth, train = data()
    users = np.arange(5)
    ev = receval.Evaluator(METRICS, truth=truth)
    with pytest.raises(InputError, match="truth was given to the Evaluator already"):
        ev.update_scores(users, scores[users], truth.filter(pl.col("user") < 5))
    ev = receval.Evaluator(METRICS, truth=truth, exclude=train)
    with pytest.raises(InputError, match="exclude was given to the Evaluator already"):
        ev.update_scores(users, scores[users], exclude=train)
    with pytest.raises(InputError, match="update_scores needs the batch's truth"):
        receval.Evaluator(METRICS).update_scores(users, scores[users])
    text = receval.Evaluator(METRICS, truth=truth.with_columns(pl.col("user").cast(pl.String)))
    with pytest.raises(InputError, match="user ids are Int64, those of the Evaluator's truth"):
        text.update_scores(users, scores[users])


def test_train_without_exclude_warns_once_as_the_model_path_does() -> None:
    scores, truth, train = data()
    ev = receval.Evaluator(METRICS, truth=truth, train=train)
    with pytest.warns(UserWarning, match="update_scores may recommend items the user already"):
        ev.update_scores(batches()[0], scores[batches()[0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ev.update_scores(batches()[1], scores[batches()[1]])  # once per Evaluator
    # with exclude, no such warning
    ev = receval.Evaluator(METRICS, truth=truth, train=train, exclude=train)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for users in batches():
            ev.update_scores(users, scores[users])
        ev.compute()


# --------------------------------------------------------------------------- score inputs


def _one(scores: Any, **kw: Any) -> receval.Result:
    ev = receval.Evaluator(["ndcg@2", "recall@1"])
    ev.update_scores([0, 1], scores, {0: {0: 1}, 1: {2: 1}}, **kw)
    return ev.compute()


@pytest.mark.parametrize(
    ("scores", "match"),
    [
        (np.array([["a", "b", "c"], ["d", "e", "f"]]), "scores must be real numbers.*text"),
        (np.ones((2, 3), dtype=complex), "scores must be real numbers.*complex"),
        (np.ones((2, 3), dtype=bool), "scores must be real numbers.*booleans"),
        (np.array([[1, "x", 2.0], [1, 2, 3]], dtype=object), "scores must be real numbers"),
        (np.array([[2**60, 2**60 + 1, 0], [1, 2, 3]], dtype=np.int64), "`scores`"),
        (np.array([[2**70 + 1, 1, 0], [1, 2, 3]], dtype=object), "`scores`"),
        ("not a matrix", "scores must be real numbers"),
        (np.ones((2, 0)), "scores has no column"),
        (np.ones(6), r"got shape \(6,\)"),
    ],
)
def test_bad_scores_raise_input_errors(scores: Any, match: str) -> None:
    with pytest.raises(InputError, match=match):
        _one(scores)


def test_long_doubles_finer_than_float64_raise_and_exact_ones_pass() -> None:
    fine = np.array([[1, 1, 0], [0, 0, 1]], dtype=np.longdouble)
    if np.finfo(np.longdouble).eps < np.finfo(np.float64).eps:  # a platform with long doubles
        fine[0, 1] += np.longdouble(2) ** -60  # 1 + 2^-60 > 1, but not in float64
        with pytest.raises(InputError, match="float64 cannot hold exactly"):
            _one(fine)
    exact = np.array([[0.5, 0.25, 0], [0, 0, 1]], dtype=np.longdouble)
    assert _one(exact) == _one(exact.astype(np.float64))


def test_wide_exact_integers_pass() -> None:
    wide = np.array([[3, 2, 1], [1, 2, 3]], dtype=np.uint64)
    assert _one(wide) == _one(wide.astype(np.float64))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"item_ids": [1 + 2j, 2, 3]}, "item_ids must be integer or text ids"),
        ({"item_ids": [0.5, 1.5, 2.5]}, "item_ids must be integer or text ids; got Float64"),
        ({"item_ids": [0, 0, 1]}, "item_ids must be distinct"),
        ({"item_ids": [0, None, 1]}, "item_ids"),
        ({"item_ids": np.ones((3, 1, 1), dtype=np.int64)}, "item_ids must be distinct"),
    ],
)
def test_bad_item_ids_raise_input_errors(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        _one(np.ones((2, 3)), **kw)


@pytest.mark.parametrize(
    ("users", "match"),
    [
        ([0.5, 1.5], "users must be integer or text ids; got Float64"),
        ([1j, 2j], "users must be integer or text ids"),
        ([0, 0], "users must be distinct"),
        ([object(), object()], "users must be integer or text ids"),
    ],
)
def test_bad_users_raise_input_errors(users: Any, match: str) -> None:
    ev = receval.Evaluator(["ndcg@2"])
    with pytest.raises(InputError, match=match):
        ev.update_scores(users, np.ones((2, 3)), {0: {0: 1}})


def test_bad_exclude_raises_input_errors() -> None:
    with pytest.raises(InputError, match="exclude must map user ids to lists of item ids"):
        _one(np.ones((2, 3)), exclude={0: 5})
    with pytest.raises(InputError, match="exclude is missing column 'item'"):
        _one(np.ones((2, 3)), exclude=pl.DataFrame({"user": [0], "thing": [1]}))
    with pytest.raises(InputError, match="exclude item ids are String, the batch's are Int64"):
        _one(np.ones((2, 3)), exclude=pl.DataFrame({"user": [0], "item": ["a"]}))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_torch_half_scores_are_widened(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    values = np.array([[0.5, 0.25, 0.125], [1.0, 2.0, 0.5]], dtype=np.float32)  # exact in half
    half = torch.from_numpy(values).to(getattr(torch, dtype))
    assert _one(half) == _one(values)
    ints = torch.tensor([[2**60, 2**60 + 1, 0], [1, 2, 3]], dtype=torch.int64)
    with pytest.raises(InputError, match="`scores`"):
        _one(ints)
    with pytest.raises(InputError, match="scores must be real numbers; got a torch tensor"):
        _one(torch.ones((2, 3), dtype=torch.complex64))
    assert _one(torch.tensor([[3, 2, 1], [1, 2, 3]])) == _one(np.array([[3, 2, 1], [1, 2, 3]]))


def test_update_with_text_and_integer_item_ids_raises_input_error() -> None:
    """Found by the generated suite: a Polars cast error while building the block's catalog."""
    ev = receval.Evaluator(["recall@2"])
    with pytest.raises(InputError, match="item ids of truth and recs have different types"):
        ev.update({0: {"a": 1}}, {0: {0: 0.5}})
    ev = receval.Evaluator(["recall@2"])
    ev.update({1: {1: 1}}, {1: {1: 0.5}})
    with pytest.raises(InputError, match="item ids of this block are String"):
        ev.update({2: {"a": 1}}, {2: {"b": 0.5}})
