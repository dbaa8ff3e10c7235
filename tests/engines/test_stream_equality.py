"""``Result == Result`` means the whole result (issue 29, item 8): the docs' ``ev.compute() ==
evaluate(...)`` must check counts and per-user values, not the means alone."""

from __future__ import annotations

import math
import warnings

import pytest

import receval

TRUTH = {"a": {"x": 1}, "b": {"y": 1}}


def test_equal_results_are_equal() -> None:
    recs = {"a": {"x": 0.9, "z": 0.1}, "b": {"z": 0.8, "y": 0.2}}
    one = receval.evaluate(TRUTH, recs, ["ndcg@2", "recall@1"])
    two = receval.evaluate(TRUTH, recs, ["ndcg@2", "recall@1"])
    assert one is not two
    assert one == two
    assert not (one != two)  # noqa: SIM202 - __ne__ follows __eq__


def test_same_means_other_per_user_values_differ() -> None:
    # a hits and b misses, then the other way round: the same mean (0.5), other users
    a_hits = {"a": {"x": 0.9, "z": 0.1}, "b": {"z": 0.9, "y": 0.1}}
    b_hits = {"a": {"z": 0.9, "x": 0.1}, "b": {"y": 0.9, "z": 0.1}}
    first = receval.evaluate(TRUTH, a_hits, "recall@1")
    second = receval.evaluate(TRUTH, b_hits, "recall@1")
    assert first.means == second.means == {"recall@1": 0.5}
    assert first != second


def test_same_means_other_counts_differ() -> None:
    recs = {"a": {"x": 0.9}, "b": {"y": 0.9}}
    plain = receval.evaluate(TRUTH, recs, "recall@1")
    # one more user with no relevant item: left out of the mean, counted apart
    extra = receval.evaluate({**TRUTH, "c": {"x": 0}}, recs, "recall@1")
    assert plain.means == extra.means
    assert plain.counts != extra.counts
    assert plain != extra


def test_other_settings_differ() -> None:
    recs = {"a": {"x": 0.9, "z": 0.9}, "b": {"y": 0.9}}
    expected = receval.evaluate(TRUTH, recs, "recall@1", ties="expected")
    pessimistic = receval.evaluate(TRUTH, recs, "recall@1", ties="pessimistic")
    assert expected != pessimistic
    first = receval.evaluate(TRUTH, recs, "recall@2", ties="first")
    optimistic = receval.evaluate(TRUTH, recs, "recall@2", ties="optimistic")
    assert first.means == optimistic.means
    assert first != optimistic  # the same numbers, but not the same evaluation


def test_nan_equals_nan_in_the_same_place() -> None:
    # every user has only relevant recommended items: gauc skips them all, its mean is NaN
    truth = {"a": {"x": 1, "y": 1}}
    recs = {"a": {"x": 0.9, "y": 0.1}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = receval.evaluate(truth, recs, ["gauc", "recall@1"])
        two = receval.evaluate(truth, recs, ["gauc", "recall@1"])
    assert math.isnan(one["gauc"])
    assert one == two


def test_not_equal_to_a_mapping_of_means_and_not_hashable() -> None:
    res = receval.evaluate(TRUTH, {"a": {"x": 0.9}, "b": {"y": 0.9}}, "recall@1")
    assert res.means == {"recall@1": 1.0}
    assert res != {"recall@1": 1.0}  # compare .means for that
    with pytest.raises(TypeError):
        hash(res)


def test_evaluator_compute_equals_evaluate_in_full() -> None:
    ev = receval.Evaluator(["ndcg@2", "recall@1"])
    ev.update({"a": {"x": 1}}, {"a": {"x": 0.9, "z": 0.1}})
    ev.update({"b": {"y": 1}}, {"b": {"z": 0.8, "y": 0.2}})
    whole = receval.evaluate(
        TRUTH, {"a": {"x": 0.9, "z": 0.1}, "b": {"z": 0.8, "y": 0.2}}, ["ndcg@2", "recall@1"]
    )
    assert ev.compute() == whole
    # a block short of a user: the means of the users seen may agree, the result does not
    short = receval.Evaluator(["ndcg@2", "recall@1"])
    short.update({"a": {"x": 1}}, {"a": {"x": 0.9, "z": 0.1}})
    assert short.compute() != whole
