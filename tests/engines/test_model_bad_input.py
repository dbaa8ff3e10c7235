"""Bad input to FactorModel, ScoreModel, topk and evaluate from a model (issue #12).

Each error is a receval error whose message names the argument, and where it can, what was
expected and what was found.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import receval

U = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [1.0, 1.0, 1.0]])
V = np.array([[2.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 0.0]])
TRUTH = pl.DataFrame({"user": [0, 1, 2], "item": [1, 2, 3], "relevance": [1, 1, 2]})


def model() -> Any:
    return receval.FactorModel(U, V)


def message(info: pytest.ExceptionInfo[BaseException]) -> str:
    return str(info.value)


# ----------------------------------------------------------------------------- FactorModel


def test_factor_dimensions_disagree() -> None:
    with pytest.raises(receval.InputError, match="item_factors") as info:
        receval.FactorModel(U, np.ones((4, 2)))
    assert "user_factors" in message(info)
    assert "3" in message(info) and "2" in message(info)  # both dimensions


@pytest.mark.parametrize("which", ["user_factors", "item_factors"])
@pytest.mark.parametrize("shape", [(3,), (3, 3, 1)])
def test_factors_not_a_matrix(which: str, shape: tuple[int, ...]) -> None:
    bad = np.ones(shape)
    args = (bad, V) if which == "user_factors" else (U, bad)
    with pytest.raises(receval.InputError, match=which):
        receval.FactorModel(*args)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"user_ids": [5, 6]}, "user_ids"),
        ({"user_ids": [5, 6, 7, 8]}, "user_ids"),
        ({"item_ids": ["a", "b", "c"]}, "item_ids"),
    ],
)
def test_ids_count_differs_from_rows(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(receval.InputError, match=name) as info:
        receval.FactorModel(U, V, **kwargs)
    found = len(next(iter(kwargs.values())))
    rows = U.shape[0] if name == "user_ids" else V.shape[0]
    assert str(found) in message(info) and str(rows) in message(info)


@pytest.mark.parametrize(
    ("kwargs", "name", "dup"),
    [
        ({"user_ids": [5, 6, 5]}, "user_ids", "5"),
        ({"item_ids": ["a", "b", "c", "b"]}, "item_ids", "b"),
        ({"item_ids": pl.Series([1, 2, 2, 4])}, "item_ids", "2"),
    ],
)
def test_duplicate_ids(kwargs: dict[str, Any], name: str, dup: str) -> None:
    with pytest.raises(receval.InputError, match=name) as info:
        receval.FactorModel(U, V, **kwargs)
    assert "repeated" in message(info) or "duplicate" in message(info).lower()
    assert dup in message(info)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"user_ids": [5, None, 7]}, "user_ids"),
        ({"user_ids": pl.Series([5, None, 7])}, "user_ids"),
        ({"item_ids": ["a", None, "c", "d"]}, "item_ids"),
    ],
)
def test_null_ids(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(receval.InputError, match=name) as info:
        receval.FactorModel(U, V, **kwargs)
    assert "null" in message(info).lower() or "none" in message(info).lower()


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("which", ["user_factors", "item_factors"])
def test_nan_or_inf_in_factors(which: str, value: float) -> None:
    bad = (U if which == "user_factors" else V).copy()
    bad[1, 2] = value
    args = (bad, V) if which == "user_factors" else (U, bad)
    with pytest.raises(receval.InputError, match=which):
        receval.FactorModel(*args)


@pytest.mark.parametrize("which", ["user_factors", "item_factors"])
def test_non_numeric_factors(which: str) -> None:
    bad = np.array([["a", "b", "c"]] * (3 if which == "user_factors" else 4))
    args = (bad, V) if which == "user_factors" else (U, bad)
    with pytest.raises(receval.InputError, match=which):
        receval.FactorModel(*args)


def test_unknown_similarity() -> None:
    with pytest.raises(receval.InputError, match="similarity") as info:
        receval.FactorModel(U, V, similarity="euclidean")
    assert "euclidean" in message(info) and "cosine" in message(info)


@pytest.mark.parametrize("which", ["user_factors", "item_factors"])
def test_cosine_of_a_zero_vector(which: str) -> None:
    bad = (U if which == "user_factors" else V).copy()
    bad[1] = 0.0
    args = (bad, V) if which == "user_factors" else (U, bad)
    with pytest.raises(receval.InputError, match=which):
        receval.evaluate(TRUTH, receval.FactorModel(*args, similarity="cosine"), "ndcg")


def test_float32_scores_that_overflow_to_inf() -> None:
    big = np.full((3, 3), 1e30, dtype=np.float32)
    big_items = (V * 1e30).astype(np.float32)  # finite factors, products beyond float32
    ids = {"user_ids": ["a", "b", "c"], "item_ids": ["w", "x", "y", "z"]}
    truth = pl.DataFrame({"user": ["a", "b"], "item": ["x", "y"]})
    with pytest.raises(receval.InputError, match=r"(?i)inf") as info:
        receval.evaluate(truth, receval.FactorModel(big, big_items, **ids), "ndcg@2")
    # What was found names the offending user and item by their ids.
    assert "'a'" in message(info) and "'w'" in message(info)


# ----------------------------------------------------------------------------- ScoreModel


# The errors about what fn returned call it "the score function".
FN = r"\bfn\b|score function"


def score_model(fn: Any) -> Any:
    return receval.ScoreModel(fn, [1, 2, 3, 4])


def test_score_model_fn_not_callable() -> None:
    with pytest.raises(receval.InputError, match=r"\bfn\b"):
        receval.ScoreModel(np.ones((3, 4)), [1, 2, 3, 4])


@pytest.mark.parametrize(
    "make",
    [
        lambda b: np.ones((len(b), 3)),  # one column short
        lambda b: np.ones((len(b) + 1, 4)),  # one row too many
        lambda b: np.ones(len(b) * 4),  # flat
    ],
    ids=["columns", "rows", "flat"],
)
def test_score_model_fn_returns_the_wrong_shape(make: Any) -> None:
    with pytest.raises(receval.InputError, match=FN) as info:
        receval.evaluate(TRUTH, score_model(make), "ndcg@2")
    assert "4" in message(info)  # the expected number of columns (catalog items)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_score_model_fn_returns_nan_or_inf(value: float) -> None:
    def fn(b: np.ndarray) -> np.ndarray:
        out = np.ones((len(b), 4))
        out[0, 1] = value
        return out

    with pytest.raises(receval.InputError, match=FN):
        receval.evaluate(TRUTH, score_model(fn), "ndcg@2")
    with pytest.raises(receval.InputError, match=FN):
        receval.topk(score_model(fn), 2, users=[0, 1, 2])


def test_score_model_fn_returns_text() -> None:
    with pytest.raises(receval.InputError, match=FN):
        receval.evaluate(TRUTH, score_model(lambda b: np.full((len(b), 4), "x")), "ndcg@2")


def test_score_model_duplicate_item_ids() -> None:
    with pytest.raises(receval.InputError, match="item_ids"):
        receval.ScoreModel(lambda b: np.ones((len(b), 3)), [1, 2, 1])


def test_topk_of_a_score_model_needs_users() -> None:
    with pytest.raises(receval.InputError, match="users"):
        receval.topk(score_model(lambda b: np.ones((len(b), 4))), 2)


# ----------------------------------------------------------------------------- topk's k


@pytest.mark.parametrize("k", [0, -1, 2.5, "3", None])
def test_topk_k_not_a_positive_int(k: Any) -> None:
    with pytest.raises(receval.InputError, match=r"\bk\b") as info:
        receval.topk(model(), k)
    assert repr(k) in message(info) or str(k) in message(info)


# ----------------------------------------------------------------------------- block_memory


@pytest.mark.parametrize("block_memory", [0, -5, "0MiB", "lots", "-1KiB"])
def test_block_memory_not_a_positive_size(block_memory: Any) -> None:
    with pytest.raises(receval.InputError, match="block_memory"):
        receval.evaluate(TRUTH, model(), "ndcg@2", block_memory=block_memory)
    with pytest.raises(receval.InputError, match="block_memory"):
        receval.topk(model(), 2, block_memory=block_memory)


# ----------------------------------------------------------------------------- id types


def test_truth_ids_text_model_ids_int() -> None:
    truth = pl.DataFrame({"user": ["0", "1"], "item": ["1", "2"]})
    with pytest.raises(receval.InputError, match="id_type"):
        receval.evaluate(truth, model(), "ndcg@2")


def test_truth_items_text_model_items_int() -> None:
    truth = pl.DataFrame({"user": [0, 1], "item": ["1", "2"]})
    with pytest.raises(receval.InputError, match="id_type"):
        receval.evaluate(truth, model(), "ndcg@2")


def test_exclude_ids_of_another_type() -> None:
    exclude = pl.DataFrame({"user": ["0"], "item": ["1"]})
    with pytest.raises(receval.InputError, match="id_type"):
        receval.evaluate(TRUTH, model(), "ndcg@2", exclude=exclude)


# ----------------------------------------------------------------------------- evaluate options


def test_excluded_truth_raise() -> None:
    exclude = pl.DataFrame({"user": [0], "item": [1]})  # truth row (0, 1)
    with pytest.raises(receval.InputError, match="excluded_truth") as info:
        receval.evaluate(TRUTH, model(), "ndcg@2", exclude=exclude, excluded_truth="raise")
    assert "1" in message(info)  # the number of excluded truth rows


@pytest.mark.parametrize("sampling", [None, receval.Sampling(negatives=1)])
def test_excluded_truth_unknown_value(sampling: receval.Sampling | None) -> None:
    # with sampling=, an unknown value was once taken as "drop"
    want = "^excluded_truth must be one of drop, raise; got 'keep'.$"
    with pytest.raises(receval.InputError, match=want):
        receval.evaluate(TRUTH, model(), "ndcg@2", excluded_truth="keep", sampling=sampling)


@pytest.mark.parametrize("arg", ["exclude", "candidates"])
def test_exclude_or_candidates_of_a_wrong_kind(arg: str) -> None:
    with pytest.raises(receval.InputError, match=arg):
        receval.evaluate(TRUTH, model(), "ndcg@2", **{arg: 42})


def test_exclude_table_without_an_item_column() -> None:
    with pytest.raises(receval.InputError, match="exclude") as info:
        receval.evaluate(TRUTH, model(), "ndcg@2", exclude=pl.DataFrame({"user": [0]}))
    assert "'item'" in message(info)
    assert "__receval" not in message(info)  # the columns found are the caller's own


# ----------------------------------------------------------------------------- metrics


GLOBAL_CLASSIFICATION = (
    "auc",
    "average_precision",
    "logloss",
    "accuracy",
    "ppv",
    "tpr",
    "fpr",
    "tnr",
    "fbeta_score",
)


def test_global_classification_list_is_complete() -> None:
    listed = {
        m.name for m in receval.list_metrics() if m.family == "classification" and m.name != "gauc"
    }
    assert listed == set(GLOBAL_CLASSIFICATION)


@pytest.mark.parametrize("name", GLOBAL_CLASSIFICATION)
def test_global_classification_metric_from_a_model(name: str) -> None:
    with pytest.raises(receval.MetricError, match=name) as info:
        receval.evaluate(TRUTH, model(), ["ndcg@2", name])
    assert "gauc" in message(info) and "topk" in message(info)


BEYOND = tuple(m.name for m in receval.list_metrics() if m.family == "beyond")


@pytest.mark.parametrize("name", BEYOND)
def test_beyond_metric_without_cutoff_from_a_model(name: str) -> None:
    train = pl.DataFrame({"user": [0, 1], "item": [1, 2]})
    items = pl.DataFrame({"item": [1, 2, 3, 4], "vec": [[1.0, 0.0]] * 4})
    with pytest.raises(receval.MetricError, match=name) as info:
        receval.evaluate(TRUTH, model(), [name], train=train, items=items, item_features="vec")
    assert "@" in message(info)


def test_beyond_metric_with_cutoff_is_fine() -> None:
    res = receval.evaluate(TRUTH, model(), ["coverage@2", "ndcg@2"])
    assert 0.0 <= res["coverage@2"] <= 1.0


def test_spark_engine_refuses_a_model() -> None:
    """A model source runs on the local engine; engine='spark' says so (no Spark started)."""
    with pytest.raises(receval.InputError, match="local engine"):
        receval.evaluate(TRUTH, model(), "ndcg@2", engine="spark")


def test_exclude_and_candidates_need_a_model() -> None:
    recs = {0: {0: 0.5, 1: 0.2}}
    with pytest.raises(receval.InputError, match="apply to a model source"):
        receval.evaluate(TRUTH, recs, "ndcg@2", exclude={0: [1]})
    with pytest.raises(receval.InputError, match="apply to a model source"):
        receval.evaluate(TRUTH, recs, "ndcg@2", candidates=[0, 1])


# --------------------------------------------------- nothing to score (issue #29, item 1)
# A model that scores nobody or nothing gives the documented result: every such user counts
# as without recommendations (no_recs) and scores 0, never a ZeroDivisionError.

TWO = np.ones((2, 2))
THREE = np.ones((3, 2))


def test_a_model_that_knows_none_of_the_truth_users() -> None:
    res = receval.evaluate(
        {5: {0: 1}}, receval.FactorModel(TWO, THREE, user_ids=[0, 1]), ["ndcg@10", "mrr"]
    )
    assert res.means == {"ndcg@10": 0.0, "mrr": 0.0}
    assert (res.counts.evaluated, res.counts.no_recs) == (1, 1)


def test_a_model_with_no_users() -> None:
    res = receval.evaluate(
        {0: {0: 1}, 1: {2: 1}}, receval.FactorModel(np.ones((0, 2)), THREE), "ndcg@10"
    )
    assert res["ndcg@10"] == 0.0
    assert (res.counts.evaluated, res.counts.no_recs) == (2, 2)


@pytest.mark.parametrize("segment", ["cold_warm", "activity"])
def test_segments_with_cold_users_the_model_does_not_know(segment: str) -> None:
    # the question the segments exist for: test users absent from train (and from the model)
    m = receval.FactorModel(np.array([[1.0, 0.0], [0.0, 1.0]]), THREE, user_ids=[0, 1])
    truth = {0: {1: 1}, 5: {0: 1}, 7: {2: 1}}
    res = receval.evaluate(truth, m, ["ndcg@10"], segments=[segment], train={0: {0: 1}})
    want = receval.evaluate({0: {1: 1}}, m, ["ndcg@10"], train={0: {0: 1}})["ndcg@10"]
    cold = res.segments[(segment, "cold" if segment == "cold_warm" else "0")]
    warm = res.segments[(segment, "warm" if segment == "cold_warm" else "1-4")]
    assert cold["ndcg@10"] == 0.0 and cold.counts.no_recs == cold.counts.evaluated == 2
    assert warm["ndcg@10"] == want and warm.counts.no_recs == 0
    assert res["ndcg@10"] == pytest.approx(want / 3)


@pytest.mark.parametrize("candidates", [[], {}, pl.DataFrame({"user": [], "item": []})])
def test_empty_candidates_mean_no_candidates(candidates: Any) -> None:
    # an empty restriction restricts to nothing, as a non-empty one leaves absent users none
    res = receval.evaluate(TRUTH, model(), ["ndcg@5", "mrr"], candidates=candidates)
    assert res.means == {"ndcg@5": 0.0, "mrr": 0.0}
    assert res.counts.no_recs == res.counts.evaluated == 3
    assert receval.topk(model(), 3, candidates=candidates).height == 0


def test_non_empty_per_user_candidates_leave_absent_users_none() -> None:
    # the rule the empty table follows: a user absent from per-user candidates has none
    cand = pl.DataFrame({"user": [0], "item": [1]})
    res = receval.evaluate(TRUTH, model(), ["mrr"], candidates=cand)
    assert res.per_user.filter(pl.col("user") == 0)["mrr"].item() == 1.0
    assert res.counts.no_recs == 2


def test_every_item_excluded_leaves_a_user_without_recs() -> None:
    m = receval.FactorModel(TWO, THREE, user_ids=[0, 1])
    res = receval.evaluate({0: {5: 1}, 1: {0: 1}}, m, ["ndcg@10", "mrr"], exclude={0: [0, 1, 2]})
    assert res.counts.no_recs == 1
    assert res.per_user.filter(pl.col("user") == 0)["mrr"].item() == 0.0


def test_the_smallest_scoring_block_gives_the_same_numbers() -> None:
    metrics = ["ndcg@3", "mrr", "gauc", "recall@2"]
    want = receval.evaluate(TRUTH, model(), metrics)
    got = receval.evaluate(TRUTH, model(), metrics, block_memory=1)
    assert got.means == want.means
    assert got.per_user.equals(want.per_user)


def test_topk_beyond_the_catalog_is_capped() -> None:
    # buffers are users x min(k, catalog): 10**9 asks for 4 columns, not terabytes
    users = np.random.default_rng(0).normal(size=(5000, 3))
    top = receval.topk(receval.FactorModel(users, V), 10**9)
    assert top.height == 5000 * 4
    assert top.equals(receval.topk(receval.FactorModel(users, V), 4))
    res = receval.evaluate(TRUTH, model(), ["ndcg@1000000000", "mrr"])
    assert res["ndcg@1000000000"] == receval.evaluate(TRUTH, model(), ["ndcg@4"])["ndcg@4"]


def test_a_model_with_no_items() -> None:
    with pytest.raises(receval.InputError, match="item_factors has no rows") as info:
        receval.FactorModel(TWO, np.ones((0, 2)))
    assert "at least one catalog item" in message(info)


# -------------------------------------------------------- ids given badly (issue #29, item 8)


def test_empty_user_ids_say_how_many_were_expected() -> None:
    with pytest.raises(receval.InputError, match=r"user_ids has 0 ids; expected one per row"):
        receval.FactorModel(TWO, THREE, user_ids=[])


def test_null_ids_say_null() -> None:
    with pytest.raises(
        receval.InputError, match=r"user_ids must hold integer or string ids; got 2 null"
    ):
        receval.FactorModel(TWO, THREE, user_ids=[None, None])


@pytest.mark.parametrize("item_ids", [5, "abc", None, 2.5])
def test_score_model_item_ids_not_a_sequence(item_ids: Any) -> None:
    with pytest.raises(receval.InputError, match="item_ids must be a 1-D sequence of ids") as info:
        receval.ScoreModel(lambda u: np.ones((len(u), 5)), item_ids)
    assert type(item_ids).__name__ in message(info)


def test_score_model_user_ids_not_a_sequence() -> None:
    with pytest.raises(receval.InputError, match="user_ids must be a 1-D sequence of ids"):
        receval.ScoreModel(lambda u: np.ones((len(u), 2)), [0, 1], user_ids=3)


def test_score_model_with_no_items() -> None:
    with pytest.raises(receval.InputError, match="item_ids is empty"):
        receval.ScoreModel(lambda u: np.ones((len(u), 0)), [])


def test_candidates_given_as_an_empty_list_are_not_a_type_mismatch() -> None:
    res = receval.evaluate(TRUTH, model(), "ndcg@2", candidates=np.array([], dtype=object))
    assert res["ndcg@2"] == 0.0


# --------------------------------------- scores float64 cannot hold (issue #29, item 8)
BIG = 2**53


@pytest.mark.parametrize(
    "row",
    [
        np.array([BIG + 1, BIG, BIG - 1, 0], dtype=np.int64),  # BIG + 1 becomes BIG: a tie
        np.array([1 + np.finfo(np.longdouble).eps, 1, 0, 0], dtype=np.longdouble),
    ],
    ids=["int beyond 2^53", "longdouble"],
)
def test_score_model_output_float64_cannot_hold(row: np.ndarray) -> None:
    if row.dtype == np.longdouble and np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps:
        pytest.skip(
            "this platform's long double is float64"
        )  # pragma: no cover (x86, arm64 differ)
    m = receval.ScoreModel(lambda u: np.tile(row, (len(u), 1)), item_ids=[1, 2, 3, 4])
    with pytest.raises(receval.InputError, match="the score function's output") as info:
        receval.evaluate(TRUTH, m, "ndcg@2")
    assert "float64 cannot hold exactly" in message(info)


def test_score_model_output_float64_holds_is_fine() -> None:
    row = np.array([BIG, BIG - 2, 3, 0], dtype=np.int64)  # every value exact in float64
    m = receval.ScoreModel(lambda u: np.tile(row, (len(u), 1)), item_ids=[1, 2, 3, 4])
    assert receval.evaluate({0: {1: 1}}, m, "mrr")["mrr"] == 1.0
