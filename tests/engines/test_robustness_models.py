"""Robustness of the model sources (hypothesis): ``FactorModel``, ``ScoreModel``, ``topk``
and ``evaluate`` from a model (issue #29: the fault trial's sweep of what is new).

Each example draws factor matrices (0 to 4 users, 0 to 5 items; float16 to long double,
integers, booleans, complex, objects; NaN and infinities; not a matrix), ids (lists, arrays,
Series, scalars, nulls, repeats, wrong counts), a ScoreModel's function output (wrong shapes
and types, ints beyond 2^53), and the options (``exclude``, ``candidates``, ``k``,
``block_memory``, ``similarity``) from good and bad values. The call must return or raise a
:class:`receval.RecevalError`, never another exception; what returns is checked: ranking
metrics in [0, 1], every truth user counted, and the model's numbers equal to those of its own
full top-K table.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import receval
from helpers.examples import examples

SETTINGS = settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
METRICS = ["ndcg@3", "mrr", "recall@2", "hit_rate@1"]
DTYPES = ["float64", "float32", "float16", "longdouble", "int64", "uint8", "bool", "complex",
          "object"]  # fmt: skip
SHAPES = ["list", "1d", "3d", "none"]
TRUTH = {0: {0: 1}, 1: {2: 2, 3: 1}, 2: {1: 1}, 7: {4: 1}}


@st.composite
def matrices(draw: st.DrawFn, rows: int, dim: int) -> Any:
    kind = "array" if draw(st.integers(0, 5)) < 5 else draw(st.sampled_from(SHAPES))
    values = np.array(
        draw(
            st.lists(
                st.sampled_from([0.0, 1.0, -2.5, 0.5, 3.0, np.nan, np.inf]),
                min_size=rows * dim,
                max_size=rows * dim,
            )
        )
    ).reshape(rows, dim)
    if draw(st.integers(0, 3)) > 0:  # mostly finite
        values = np.nan_to_num(values, nan=0.25, posinf=2.0)
    dtype = "float64" if draw(st.integers(0, 3)) < 3 else draw(st.sampled_from(DTYPES))
    if dtype == "object":
        out: Any = values.astype(object)
    elif dtype in ("int64", "uint8", "bool"):
        out = np.nan_to_num(np.abs(values), nan=1, posinf=1).astype(dtype)
    else:
        out = values.astype(dtype)
    if kind == "list":
        return out.tolist()
    if kind == "1d":
        return out.ravel()
    if kind == "3d":
        return out[..., None]
    return None if kind == "none" else out


def ids(n: int) -> st.SearchStrategy[Any]:
    good = st.sampled_from([None, list(range(n)), np.arange(n), [0, 1, 2, 7, 9][:n]])
    bad = st.sampled_from([
        [], [None] * n, list(range(n + 1)), [0] * n, 5, "abc", [1.5] * n,
        pd.Series(list(range(n))), pl.Series(list(range(n))),
        np.array(list(range(n)), dtype=object),
    ])  # fmt: skip
    return st.one_of(good, bad) if n == 0 else mostly(list(range(n)), st.one_of(good, bad))


@st.composite
def mostly(draw: st.DrawFn, good: Any, bad: st.SearchStrategy[Any]) -> Any:
    """``good`` four times in five (hypothesis favours a list's first elements), else a
    value of ``bad``."""
    return good if draw(st.integers(0, 4)) < 4 else draw(bad)


PAIRS = mostly(None, st.sampled_from([
    [], {}, {0: [0, 1]}, {0: [99]}, [0, 1, 2], [99], ["a"],
    pl.DataFrame({"user": [0, 1], "item": [1, 2]}), pl.DataFrame({"user": [], "item": []}),
    {"x": {1: 1}}, 3, "nope",
]))  # fmt: skip
BLOCK = mostly("256MiB", st.sampled_from([1, 1024, "1KiB", 0, -5, "abc", 2.5, True]))


def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn``'s value or the RecevalError it raised (any other exception fails the test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs)
        except receval.RecevalError as exc:
            return exc


def without(truth: dict[int, dict[int, int]], exclude: Any) -> dict[int, dict[int, int]]:
    """``truth`` less the (user, item) rows that ``exclude`` (a pairs value PAIRS draws)
    lists, and less the users left with no row."""
    if isinstance(exclude, pl.DataFrame):
        pairs = set(zip(exclude["user"].to_list(), exclude["item"].to_list(), strict=True))
    elif isinstance(exclude, dict):
        pairs = {(u, i) for u, items in exclude.items() for i in items}
    else:
        pairs = set()
    kept = {u: {i: g for i, g in row.items() if (u, i) not in pairs} for u, row in truth.items()}
    return {u: row for u, row in kept.items() if row}


def check_result(res: receval.Result) -> None:
    for name in METRICS:
        assert np.isnan(res[name]) or 0.0 <= res[name] <= 1.0, (name, res[name])
    # every truth user is counted but those whose every row exclude lists: those rows leave
    # truth (excluded_truth="drop", counted in settings), and so do the users (docs/model.md)
    dropped = res.settings["model"]["truth_rows_excluded"]
    counted = res.counts.evaluated + res.counts.no_relevant
    assert len(TRUTH) - dropped <= counted <= len(TRUTH), (counted, dropped)


@SETTINGS
@given(
    data=st.data(), n_users=st.sampled_from([0, 1, 3, 4, 4, 4]),
    n_items=st.sampled_from([0, 1, 5, 5, 5]), dim=st.integers(1, 3),
    similarity=mostly("dot", st.sampled_from(["cosine", "bad"])),
)  # fmt: skip
def test_factor_model_never_raises_a_foreign_exception(
    data: st.DataObject, n_users: int, n_items: int, dim: int, similarity: str
) -> None:
    user_factors = data.draw(matrices(n_users, dim))
    item_factors = data.draw(matrices(n_items, dim))
    model = outcome(receval.FactorModel, user_factors, item_factors,
                    user_ids=data.draw(ids(n_users)), item_ids=data.draw(ids(n_items)),
                    similarity=similarity)  # fmt: skip
    if isinstance(model, receval.RecevalError):
        return
    exclude, candidates = data.draw(PAIRS), data.draw(PAIRS)
    block = data.draw(BLOCK)
    res = outcome(receval.evaluate, TRUTH, model, METRICS, exclude=exclude,
                  candidates=candidates, block_memory=block, ties="first")  # fmt: skip
    k = data.draw(st.sampled_from([1, 3, 10**9, 0, -1, 2.0, True, "3"]))
    top = outcome(receval.topk, model, k, exclude=exclude, candidates=candidates,
                  block_memory=block)  # fmt: skip
    if isinstance(res, receval.Result):
        event("evaluate returned")
        check_result(res)
        known = [u for u in TRUTH if u in set(model.user_ids.to_list())]
        full = outcome(receval.topk, model, n_items, users=known, exclude=exclude,
                       candidates=candidates)  # fmt: skip
        if isinstance(full, pl.DataFrame) and full.height:
            # the model's numbers are those of its own complete top-K table (ties in
            # catalog order both ways)
            # the truth rows that exclude lists leave truth (excluded_truth="drop")
            kept = without(TRUTH, exclude)
            dropped = sum(map(len, TRUTH.values())) - sum(map(len, kept.values()))
            assert dropped == res.settings["model"]["truth_rows_excluded"], (dropped, res)
            table = outcome(receval.evaluate, kept, full, METRICS, ties="first")
            if isinstance(table, receval.Result):
                event("compared with the model's own table")
                for name in ("ndcg@3", "recall@2", "hit_rate@1"):
                    assert abs(res[name] - table[name]) < 1e-12, (name, res, table)
    if isinstance(top, pl.DataFrame):
        assert top.columns == ["user", "item", "score", "rank"]
        longest = top.group_by("user").len()["len"].max() if top.height else 0
        assert isinstance(longest, int) and longest <= min(n_items, int(k))
        event("topk returned")


@SETTINGS
@given(
    data=st.data(),
    output=st.sampled_from(
        [
            "good",
            "int",
            "big",
            "nan",
            "shape",
            "1d",
            "str",
            "complex",
            "object",
            "none",
            "longdouble",
            "list",
        ]
    ),
)
def test_score_model_never_raises_a_foreign_exception(data: st.DataObject, output: str) -> None:
    item_ids = data.draw(st.one_of(st.sampled_from([[0, 1, 2, 3, 4], np.arange(5)]), ids(5)))
    user_ids = data.draw(st.one_of(st.none(), ids(3)))

    def fn(users: np.ndarray) -> Any:
        n = len(users)
        base = np.tile(np.arange(5, dtype=np.float64), (n, 1))
        return {
            "good": base, "int": base.astype(np.int64), "big": base.astype(np.int64) + 2**60,
            "nan": base * np.nan, "shape": base[:, :3], "1d": base.ravel(),
            "str": base.astype(str), "complex": base.astype(complex),
            "object": base.astype(object), "none": None,
            "longdouble": base.astype(np.longdouble) / 3, "list": base.tolist(),
        }[output]  # fmt: skip

    model = outcome(receval.ScoreModel, fn, item_ids, user_ids=user_ids)
    if isinstance(model, receval.RecevalError):
        return
    res = outcome(receval.evaluate, TRUTH, model, METRICS, candidates=data.draw(PAIRS))
    if isinstance(res, receval.Result):
        event(f"score model {output}: evaluate returned")
        check_result(res)
        if output not in ("good", "int", "list"):  # refused whenever fn is called
            assert res.counts.no_recs == res.counts.evaluated, (output, res)
    outcome(receval.topk, model, data.draw(st.sampled_from([2, 10**9])), users=[0, 1, 2])


def test_a_user_whose_truth_exclude_lists_whole_leaves_the_counts() -> None:
    """The case Hypothesis found: user 0's one truth item is excluded, so the row is dropped
    and user 0 leaves truth (docs/model.md); user 7 is unknown to the model (no recs)."""
    model = receval.FactorModel(np.zeros((4, 2)), np.zeros((5, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = receval.evaluate(TRUTH, model, METRICS, exclude={0: [0, 1]}, ties="first")
    assert res.settings["model"]["truth_rows_excluded"] == 1
    assert res.counts.evaluated == 3 and res.counts.no_recs == 1 and res.counts.no_relevant == 0
    check_result(res)


def test_a_model_with_exclude_equals_its_table_on_the_truth_exclude_leaves() -> None:
    """The second case Hypothesis found: every score ties and exclude lists user 1's graded
    truth item 2, so that row leaves truth; the model's ndcg@3 is its own top-K table's on
    the truth without the row (0.5327), not on the whole truth (0.4552, item 2's gain 3 in
    user 1's ideal ranking)."""
    model = receval.FactorModel(np.zeros((4, 2)), np.zeros((5, 2)))
    exclude = pl.DataFrame({"user": [0, 1], "item": [1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = receval.evaluate(TRUTH, model, METRICS, exclude=exclude, ties="first")
        full = receval.topk(model, 5, users=[0, 1, 2], exclude=exclude)
        kept = receval.evaluate(without(TRUTH, exclude), full, METRICS, ties="first")
        whole = receval.evaluate(TRUTH, full, METRICS, ties="first")
    assert res.settings["model"]["truth_rows_excluded"] == 1
    for name in METRICS:
        assert res[name] == pytest.approx(kept[name], abs=1e-12), name
    assert whole["ndcg@3"] == pytest.approx(0.4552, abs=1e-4)
    assert res["ndcg@3"] == pytest.approx(0.5327, abs=1e-4)
