"""How a model evaluation reads truth and exclude (issue #12): repeated truth rows, truth rows
that exclude lists (items in and out of the catalog, users left without truth), and the
per-user lists behind them, each against a brute-force or Polars reference."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import receval
from helpers.examples import examples
from receval.data import tables as R
from receval.data.tables import match_users
from receval.engines.model import pair_offsets
from receval.kernels import grouping as G
from receval.kernels import model as MK

RNG = np.random.default_rng(7)
U = RNG.integers(-2, 3, size=(6, 3)).astype(np.float64)  # integer factors: exact ties
V = RNG.integers(-2, 3, size=(8, 3)).astype(np.float64)
METRICS = ["ndcg@3", "mrr", "recall@5", "map", "gauc"]


def model(**kwargs: Any) -> receval.FactorModel:
    return receval.FactorModel(U, V, **kwargs)


def frame(rows: list[tuple[int, int]]) -> pl.DataFrame:
    return pl.DataFrame({"user": [r[0] for r in rows], "item": [r[1] for r in rows]})


def quiet(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = receval.evaluate(*args, **kwargs)
    return result, [str(w.message) for w in caught]


def same(got: Any, want: Any) -> None:
    assert got.means.keys() == want.means.keys()
    for key, value in want.means.items():
        assert got.means[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key
    assert got.per_user.sort("user").equals(want.per_user.sort("user"))


# ------------------------------------------------------------------------ repeated truth


@pytest.mark.parametrize(
    ("rows", "shown"),
    [
        ([(0, 1), (1, 1), (0, 1)], "item=1"),  # a catalog item twice for user 0
        ([(0, 1), (0, 99), (2, 3), (0, 99)], "item=99"),  # an item the model does not know
        ([(3, 99), (3, 98), (3, 99), (1, 99)], "item=99"),
    ],
)
def test_repeated_truth_rows_raise(rows: list[tuple[int, int]], shown: str) -> None:
    with pytest.raises(receval.InputError, match="duplicate") as info:
        receval.evaluate(frame(rows), model(), METRICS)
    assert shown in str(info.value)
    assert "2 duplicate" in str(info.value)


def test_same_item_for_other_users_is_not_repeated() -> None:
    rows = [(0, 1), (1, 1), (2, 99), (3, 99), (0, 2)]
    result, _ = quiet(frame(rows), model(), ["mrr"])
    assert result.settings["model"]["truth_rows_not_in_catalog"] == 2


# ------------------------------------------------------------------- excluded truth rows


EXCLUDE = frame([(0, 1), (0, 99), (1, 5), (2, 2), (2, 3), (4, 0), (5, 77)])
TRUTH = frame([(0, 1), (0, 2), (0, 99), (1, 4), (2, 2), (2, 3), (3, 6), (5, 77), (5, 7)])
# excluded: (0, 1), (0, 99) (not in the catalog), (2, 2) and (2, 3) (all of user 2's
# rows: the user goes), (5, 77) (not in the catalog)
KEPT = frame([(0, 2), (1, 4), (3, 6), (5, 7)])


@pytest.mark.parametrize("candidates", [None, [0, 2, 4, 6, 7]])
def test_excluded_truth_rows_left_out(candidates: list[int] | None) -> None:
    got, said = quiet(TRUTH, model(), METRICS, exclude=EXCLUDE, candidates=candidates)
    want, said_kept = quiet(KEPT, model(), METRICS, exclude=EXCLUDE, candidates=candidates)
    same(got, want)
    assert got.settings["model"]["truth_rows_excluded"] == 5
    assert want.settings["model"]["truth_rows_excluded"] == 0
    assert got.settings["model"]["exclude_rows_not_in_catalog"] == 2
    assert 2 not in got.per_user["user"].to_list()
    assert [m for m in said if "5 (user, item) row(s) that exclude also lists" in m], said
    assert not [m for m in said_kept if "exclude also lists" in m], said_kept


def test_excluded_truth_rows_left_out_with_per_user_candidates() -> None:
    candidates = {0: [1, 2, 3, 5], 1: [4, 5, 6], 2: [2, 3, 7], 3: [6, 0], 5: [7, 1]}
    got, _ = quiet(TRUTH, model(), METRICS, exclude=EXCLUDE, candidates=candidates)
    want, _ = quiet(KEPT, model(), METRICS, exclude=EXCLUDE, candidates=candidates)
    same(got, want)
    assert got.settings["model"]["truth_rows_excluded"] == 5
    assert got.settings["model"]["candidates"] == "per_user"


def test_topk_excludes_what_exclude_lists() -> None:
    table = receval.topk(model(), 8, exclude=EXCLUDE)
    listed = set(zip(EXCLUDE["user"].to_list(), EXCLUDE["item"].to_list(), strict=True))
    shown = set(zip(table["user"].to_list(), table["item"].to_list(), strict=True))
    assert not listed & shown
    per_user = table.group_by("user").len().sort("user")
    # 8 items less each user's excluded catalog items (user 4: item 0; user 5: none known)
    want = {0: 7, 1: 7, 2: 6, 3: 8, 4: 7, 5: 8}
    assert dict(zip(per_user["user"].to_list(), per_user["len"].to_list(), strict=True)) == want


def test_excluded_truth_rows_raise_names_them() -> None:
    with pytest.raises(receval.InputError, match="excluded_truth='raise'") as info:
        receval.evaluate(TRUTH, model(), METRICS, exclude=EXCLUDE, excluded_truth="raise")
    text = str(info.value)
    assert "5 (user, item) row(s)" in text
    assert "user=0, item=99" in text and "user=5, item=77" in text


def test_every_truth_row_excluded_raises() -> None:
    with pytest.raises(receval.InputError, match="no row left"):
        quiet(frame([(2, 2), (2, 3)]), model(), METRICS, exclude=EXCLUDE)


def test_excluded_truth_with_string_ids() -> None:
    items = [f"i{j}" for j in range(V.shape[0])]
    users = [f"u{j}" for j in range(U.shape[0])]

    def named(f: pl.DataFrame) -> pl.DataFrame:
        return f.with_columns(
            pl.format("u{}", "user").alias("user"), pl.format("i{}", "item").alias("item")
        )

    m = model(user_ids=users, item_ids=items)
    got, _ = quiet(named(TRUTH), m, METRICS, exclude=named(EXCLUDE))
    want, _ = quiet(named(KEPT), m, METRICS, exclude=named(EXCLUDE))
    same(got, want)
    assert got.settings["model"]["truth_rows_excluded"] == 5


# --------------------------------------------------------------------------- the kernels


def reference_lists(users: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    pairs = sorted(set(zip(users.tolist(), cols.tolist(), strict=True)))
    offsets = np.zeros(n + 1, dtype=np.int64)
    for u, _ in pairs:
        offsets[u + 1] += 1
    return np.cumsum(offsets), np.array([c for _, c in pairs], dtype=np.int64)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 30)), max_size=300),
        )
    )
)
def test_pair_offsets_against_sorted_set(case: tuple[int, list[tuple[int, int]]]) -> None:
    n, pairs = case
    users = np.array([p[0] for p in pairs], dtype=np.int64)
    cols = np.array([p[1] for p in pairs], dtype=np.int64)
    before = cols.copy()
    offsets, values = pair_offsets(users, cols, n)
    want_off, want_val = reference_lists(users, cols, n)
    assert np.array_equal(offsets, want_off)
    assert np.array_equal(values, want_val)
    assert np.array_equal(cols, before)  # the input is not modified


def test_distinct_within_sorts_in_place_and_compacts() -> None:
    offsets = np.array([0, 3, 3, 7, 8], dtype=np.int64)
    values = np.array([5, 1, 5, 9, 9, 9, 2, 4], dtype=np.int64)
    new_off, new_val = G.distinct_within(offsets, values)
    assert new_off.tolist() == [0, 2, 2, 4, 5]
    assert new_val.tolist() == [1, 5, 2, 9, 4]
    ordered = np.array([1, 2, 3], dtype=np.int64)  # already distinct: the same arrays back
    off2, val2 = G.distinct_within(np.array([0, 1, 3], dtype=np.int64), ordered)
    assert val2 is ordered and off2.tolist() == [0, 1, 3]


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.lists(st.integers(-1, 12), max_size=8), min_size=1, max_size=12),
    st.lists(st.lists(st.integers(0, 12), max_size=6), min_size=12, max_size=12),
)
def test_listed_rows_and_repeats_against_brute_force(
    rows: list[list[int]], lists: list[list[int]]
) -> None:
    t_off = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    idx = np.array([c for r in rows for c in r], dtype=np.int64)
    ex = [sorted(set(x)) for x in lists[: len(rows)]]
    l_off = np.cumsum([0] + [len(x) for x in ex]).astype(np.int64)
    l_val = np.array([c for x in ex for c in x], dtype=np.int64)
    hit = MK.listed_rows(t_off, idx, (l_off, l_val))
    want = [c >= 0 and c in ex[u] for u, r in enumerate(rows) for c in r]
    assert hit.tolist() == want
    first = MK.repeated_item(t_off, idx, 13)
    expected = -1
    for u, r in enumerate(rows):
        for j, c in enumerate(r):
            if c >= 0 and c in r[:j] and expected < 0:
                expected = int(t_off[u]) + j
    assert first == expected


def polars_positions(t_keys: pl.Series, r_keys: pl.Series) -> np.ndarray:
    left = pl.DataFrame({"k": t_keys})
    right = pl.DataFrame({"k": r_keys, "g": np.arange(r_keys.len(), dtype=np.int64)})
    joined = left.join(right, on="k", how="left", maintain_order="left")
    return joined["g"].fill_null(-1).to_numpy()


@settings(max_examples=examples(80), deadline=None)
@given(
    st.integers(-(2**63), 2**63 - 1),
    st.lists(st.integers(0, 60), min_size=1, max_size=40, unique=True),
    st.lists(st.integers(-80, 80), max_size=60),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5),
)
def test_match_users_lookup_against_a_join(
    low: int, offsets: list[int], near: list[int], anywhere: list[int]
) -> None:
    keys = [low + d for d in offsets if low + d < 2**63]
    if not keys:
        return
    values = [v for v in (low + d for d in near) if -(2**63) <= v < 2**63] + anywhere
    r_keys = pl.Series(keys, dtype=pl.Int64)
    t_keys = pl.Series(values, dtype=pl.Int64)
    assert R._table_lookup(t_keys, r_keys)  # the table path is what is tested
    assert np.array_equal(match_users(t_keys, r_keys), polars_positions(t_keys, r_keys))


def test_match_users_extremes_and_the_join_path() -> None:
    r_keys = pl.Series([2**63 - 100, 2**63 - 1])
    t_keys = pl.Series([-(2**63), -(2**63) + 1, 2**63 - 1, 2**63 - 100, 0, -1])
    assert match_users(t_keys, r_keys).tolist() == [-1, -1, 1, 0, -1, -1]
    spread = pl.Series([0, 10**12, -(10**12)])  # too sparse for a table: Polars' join
    assert not R._table_lookup(t_keys, spread)
    assert match_users(pl.Series([10**12, 5, -(10**12)]), spread).tolist() == [1, -1, 2]
    assert not R._table_lookup(pl.Series(["a"]), pl.Series(["a"]))
    assert match_users(pl.Series(["b", "a"]), pl.Series(["a"])).tolist() == [-1, 0]


# ------------------------------------------------------------------ the counting pass


@settings(max_examples=examples(80), deadline=None)
@given(
    st.integers(0, 9000),
    st.integers(0, 9000),
    st.integers(1, 9),
    st.sampled_from([np.float32, np.float64]),
    st.integers(0, 2**32 - 1),
)
def test_count_range_against_brute_force(a: int, b: int, d: int, dtype: type, seed: int) -> None:
    """The counts above and tied for 1..9 distinct truth scores (pairs of scores a pass, an
    odd one alone, the binary search past eight), over any range of columns across tiles,
    with many ties (scores are small whole numbers) and signed zeros."""
    rng = np.random.default_rng(seed)
    row = rng.integers(-6, 7, size=9000).astype(dtype)
    row[rng.integers(0, 9000, size=50)] = -0.0
    start, stop = min(a, b), max(a, b)
    vals = np.sort(rng.choice(np.arange(-7, 8), size=d, replace=False)).astype(dtype)
    cnt_gt = np.zeros(d, dtype=np.int64)
    cnt_eq = np.zeros(d, dtype=np.int64)
    MK._count_range(row, start, stop, vals, d, cnt_gt, cnt_eq)
    if d > MK._LINEAR_MAX:  # counts of "above exactly q + 1 scores", summed by the caller
        cnt_gt = np.cumsum(cnt_gt[::-1])[::-1]
    seg = row[start:stop]
    assert cnt_gt.tolist() == [int((seg > v).sum()) for v in vals]
    assert cnt_eq.tolist() == [int((seg == v).sum()) for v in vals]


def test_grouped_nbytes_counts_what_the_grouping_holds() -> None:
    from receval.data.layout import group_by_user

    frame = pl.DataFrame({"user": [3, 1, 3, 2, 1], "item": [1, 2, 3, 4, 5]})
    grp = group_by_user(frame, "user")
    before = grp.nbytes
    want = frame.estimated_size() + grp.keys.estimated_size() + grp.offsets.nbytes
    want += grp.order.nbytes if grp.order is not None else 0
    want += sum(a.nbytes for a in grp.carried.values())
    assert before == want
    items = grp.column("item")  # a gathered column is held from now on
    assert grp.nbytes == before + items.estimated_size()
