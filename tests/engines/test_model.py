"""Evaluation from a model (issue #12): FactorModel, ScoreModel, topk and
evaluate(truth, model, ..., exclude=, candidates=) against a brute force.

The reference is the contract's own definition: for every scored user (a truth user the model
knows), a recs table with one row per candidate item (catalog order, minus the user's exclude
rows), score = the NumPy product of the factors in their dtype, widened to float64; truth minus
the excluded (user, item) rows; then ``receval.evaluate`` on that table. Everything the model
path returns must equal that to 1e-12. Integer-valued factors make scores tie exactly and often.
"""

from __future__ import annotations

import importlib.util
import math
import re
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import receval
from helpers.examples import examples
from helpers.optional import import_torch

TIES = ("expected", "first", "trec", "optimistic", "pessimistic")
SPECS = {m.name: m for m in receval.list_metrics()}
RANKING = tuple(name for name, m in SPECS.items() if m.family == "ranking")
BEYOND = tuple(name for name, m in SPECS.items() if m.family == "beyond")


def beyond_metric(name: str, k: int) -> str:
    """``name@k``, reading item groups from the test item table's ``genre`` column where the
    metric needs them (``group_share`` names one of its groups)."""
    if any(p.name == "group" for p in SPECS[name].params):  # group_share, exposure_share, ...
        return f"{name}(by=genre, group=g0)@{k}"
    return f"{name}(by=genre)@{k}" if SPECS[name].needs_items else f"{name}@{k}"


TOL = 1e-12
# Variants: parameters of every kind, rel= thresholds, ndcg_k at its own K, gauc weights.
VARIANTS = (
    "map(denominator=min)@3",
    "map(denominator=min)",
    "ndcg(gain=exp)@10",
    "ndcg(gain=exp)",
    "dcg(gain=exp)@3",
    "cg(gain=exp)@3",
    "recall(average=micro)@3",
    "recall(average=micro)",
    "fbeta(beta=2)@3",
    "fbeta(beta=0.5)@10",
    "ndcg_k@5",
    "r_precision(rel=2)",
    "ndcg(rel=2)@3",
    "precision(rel=2)@3",
    "recall(rel=2)@10",
    "mrr(rel=3)",
    "map(rel=2)@10",
    "hit_rate(rel=2)@1",
    "arhr(rel=2)@3",
    "err(max_grade=3)@10",
    "rbp(p=0.5, gain=exp)@3",
    "rbp(gain=linear)",
    "rbp_residual(p=0.95)@10",
    "bpref(rel=2)",
    "bpref@3",
    "judged(rel=2)@3",
    "gauc",
    "gauc(weight=clicks)",
    "gauc(weight=uniform)",
    "gauc(rel=2)",
)


def all_ranking_metrics(n_items: int) -> list[str]:
    """Every ranking metric bare and at K = 1, 3, 10 and K > the catalog, plus VARIANTS."""
    out: list[str] = []
    for name in RANKING:
        out.append(name)
        if SPECS[name].cutoff:
            out += [f"{name}@{k}" for k in (1, 3, 10, n_items + 7)]
    return out + list(VARIANTS)


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    """Factors, ids, truth rows (user, item, relevance) and exclude rows {user: [items]}."""

    U: np.ndarray
    V: np.ndarray
    user_ids: list[Hashable]
    item_ids: list[Hashable]
    truth: list[tuple[Hashable, Hashable, int]]
    exclude: dict[Hashable, list[Hashable]] = field(default_factory=dict)
    missing_item: Hashable = None  # a truth item that is not in the catalog

    @property
    def id_dtype(self) -> type[pl.DataType]:
        return pl.String if isinstance(self.user_ids[0], str) else pl.Int64

    def model(self, **kwargs: Any) -> Any:
        return receval.FactorModel(
            self.U, self.V, user_ids=self.user_ids, item_ids=self.item_ids, **kwargs
        )

    def truth_frame(self, rows: Sequence[tuple[Hashable, Hashable, int]] | None = None) -> Any:
        return rows_frame(self.truth if rows is None else rows, self.id_dtype, "relevance")

    def exclude_frame(self, exclude: dict[Hashable, list[Hashable]] | None = None) -> Any:
        exclude = self.exclude if exclude is None else exclude
        rows = [(u, i) for u, items in exclude.items() for i in items]
        return rows_frame(rows, self.id_dtype)

    def truth_users(self) -> list[Hashable]:
        return list(dict.fromkeys(u for u, _, _ in self.truth))

    def known_truth_users(self) -> list[Hashable]:
        known = set(self.user_ids)
        return [u for u in self.truth_users() if u in known]


def rows_frame(
    rows: Sequence[tuple[Any, ...]], id_dtype: type[pl.DataType], third: str | None = None
) -> pl.DataFrame:
    cols: dict[str, pl.Series] = {
        "user": pl.Series("user", [r[0] for r in rows], dtype=id_dtype),
        "item": pl.Series("item", [r[1] for r in rows], dtype=id_dtype),
    }
    if third is not None:
        dtype = pl.Float64 if third == "score" else pl.Int64
        cols[third] = pl.Series(third, [r[2] for r in rows], dtype=dtype)
    return pl.DataFrame(cols)


def make_ids(rng: np.random.Generator, n: int, prefix: str, string_ids: bool) -> list[Hashable]:
    """n distinct ids that are not 0..n-1: sparse and in shuffled order."""
    raw = rng.choice(np.arange(3, 40 * n + 3), size=n, replace=False)
    return [f"{prefix}{int(x)}" for x in raw] if string_ids else [int(x) for x in raw]


def factors(rng: np.random.Generator, n: int, d: int, kind: str) -> np.ndarray:
    if kind == "int":  # int64: taken as float64 by the contract
        return rng.integers(-2, 3, size=(n, d))
    if kind == "int_f64":
        return rng.integers(-2, 3, size=(n, d)).astype(np.float64)
    if kind == "int_f32":
        return rng.integers(-2, 3, size=(n, d)).astype(np.float32)
    if kind == "float32":
        return rng.standard_normal((n, d)).astype(np.float32)
    assert kind == "float64"
    return rng.standard_normal((n, d))


def make_case(
    seed: int,
    *,
    kind: str = "int",
    string_ids: bool = False,
    n_users: int = 9,
    n_items: int = 12,
    d: int = 3,
    unknown_users: int = 2,
    missing_items: bool = True,
    all_excluded_user: bool = True,
    exclude: bool = True,
) -> Case:
    """A random case with ties, graded relevance (0..3 and -1), unknown truth users, truth
    items outside the catalog, excluded truth rows, and a user whose every item is excluded.

    Every known user keeps at least one truth row that is not excluded (so "users scored" is
    the same whether counted before or after dropping excluded truth rows).
    """
    rng = np.random.default_rng(seed)
    U, V = factors(rng, n_users, d, kind), factors(rng, n_items, d, kind)
    user_ids = make_ids(rng, n_users, "u", string_ids)
    item_ids = make_ids(rng, n_items, "i", string_ids)
    missing = "i_missing" if string_ids else 100_000
    unknown = [f"nobody{k}" if string_ids else 90_000 + k for k in range(unknown_users)]
    truth: list[tuple[Hashable, Hashable, int]] = []
    excl: dict[Hashable, list[Hashable]] = {}
    for n, u in enumerate([*user_ids, *unknown]):
        picks = rng.choice(n_items, size=int(rng.integers(1, 6)), replace=False)
        rels = rng.choice([0, 1, 1, 2, 3, -1], size=len(picks))
        if n == 0:
            rels[0] = 3
        rows = [(u, item_ids[int(j)], int(r)) for j, r in zip(picks, rels, strict=True)]
        if missing_items and u in user_ids and rng.random() < 0.4:
            rows.append((u, missing, 1))
        truth += rows
        if not exclude or u not in user_ids:
            continue
        if all_excluded_user and n == 1:
            # Every catalog item excluded; the truth row outside the catalog survives.
            excl[u] = list(item_ids)
            if not any(i == missing for _, i, _ in rows):
                truth.append((u, missing, 2))
        elif rng.random() < 0.6:
            ex = [item_ids[int(j)] for j in rng.choice(n_items, size=int(rng.integers(1, 4)))]
            ex = list(dict.fromkeys(ex))
            if n == 0 or not [i for _, i, _ in rows if i not in ex]:
                ex = [i for i in ex if i != rows[0][1]]  # keeps a truth row
            if ex:
                excl[u] = ex
    return Case(U, V, user_ids, item_ids, truth, excl, missing)


# ----------------------------------------------------------------------------- brute force


def score_matrix(U: Any, V: Any, similarity: str = "dot") -> np.ndarray:
    """Every user's scores: NumPy's product in the factors' dtype (integers as float64)."""
    U, V = np.asarray(U), np.asarray(V)
    if U.dtype.kind in "iub":
        U = U.astype(np.float64)
    if V.dtype.kind in "iub":
        V = V.astype(np.float64)
    if similarity == "cosine":
        U = U / np.linalg.norm(U, axis=1, keepdims=True)
        V = V / np.linalg.norm(V, axis=1, keepdims=True)
    return np.stack([U[r] @ V.T for r in range(U.shape[0])])


def allowed_items(
    user: Hashable,
    item_ids: Sequence[Hashable],
    exclude: dict[Hashable, list[Hashable]],
    candidates: list[Hashable] | dict[Hashable, list[Hashable]] | None,
) -> list[int]:
    """Catalog positions of the user's candidates, in catalog order."""
    if candidates is None:
        allowed = set(item_ids)
    elif isinstance(candidates, dict):
        allowed = set(candidates.get(user, ()))
    else:
        allowed = set(candidates)
    banned = set(exclude.get(user, ()))
    return [j for j, it in enumerate(item_ids) if it in allowed and it not in banned]


def brute_table(
    S: np.ndarray,
    user_ids: Sequence[Hashable],
    item_ids: Sequence[Hashable],
    users: Sequence[Hashable],
    exclude: dict[Hashable, list[Hashable]],
    candidates: list[Hashable] | dict[Hashable, list[Hashable]] | None,
    id_dtype: type[pl.DataType],
) -> pl.DataFrame:
    """One row per (scored user, candidate item), in catalog order, score widened to float64."""
    pos = {u: r for r, u in enumerate(user_ids)}
    rows = []
    for u in users:
        if u not in pos:
            continue
        for j in allowed_items(u, item_ids, exclude, candidates):
            rows.append((u, item_ids[j], float(S[pos[u], j])))
    return rows_frame(rows, id_dtype, "score")


def brute_topk(
    S: np.ndarray,
    user_ids: Sequence[Hashable],
    item_ids: Sequence[Hashable],
    users: Sequence[Hashable],
    k: int,
    exclude: dict[Hashable, list[Hashable]],
    candidates: list[Hashable] | dict[Hashable, list[Hashable]] | None,
) -> list[tuple[Hashable, Hashable, float, int]]:
    """Each user's k best candidates: np.lexsort by (-score, catalog index)."""
    pos = {u: r for r, u in enumerate(user_ids)}
    out = []
    for u in users:
        cols = np.array(allowed_items(u, item_ids, exclude, candidates), dtype=np.int64)
        if len(cols) == 0:
            continue
        s = S[pos[u], cols]
        order = np.lexsort((cols, -s))[:k]
        for rank, o in enumerate(order, start=1):
            out.append((u, item_ids[int(cols[o])], float(s[o]), rank))
    return out


def drop_excluded(
    truth: Sequence[tuple[Hashable, Hashable, int]], exclude: dict[Hashable, list[Hashable]]
) -> list[tuple[Hashable, Hashable, int]]:
    banned = {(u, i) for u, items in exclude.items() for i in items}
    return [r for r in truth if (r[0], r[1]) not in banned]


def expected_model_settings(
    case: Case,
    known_users: Sequence[Hashable],
    exclude: dict[Hashable, list[Hashable]],
    candidates_kind: str,
) -> dict[str, Any]:
    truth_users = case.truth_users()
    catalog = set(case.item_ids)
    banned = {(u, i) for u, items in exclude.items() for i in items}
    known = set(known_users)
    return {
        "users_scored": sum(u in known for u in truth_users),
        "truth_users_not_in_model": sum(u not in known for u in truth_users),
        "truth_rows_not_in_catalog": sum(i not in catalog for _, i, _ in case.truth),
        "truth_rows_excluded": sum((u, i) in banned for u, i, _ in case.truth),
        "exclude_rows_not_in_catalog": sum(
            i not in catalog for items in exclude.values() for i in items
        ),
        "candidates": candidates_kind,
    }


# ----------------------------------------------------------------------------- comparison


def assert_same_result(got: Any, want: Any, *, tol: float = TOL, what: str = "") -> None:
    """Means to tol, per-user frames (same users, nulls, values to tol) and counts equal."""
    assert list(got.means) == list(want.means), what
    bad = []
    for key, w in want.means.items():
        g = got.means[key]
        same = (
            (math.isnan(g) and math.isnan(w))
            if math.isnan(w) or math.isnan(g)
            else math.isclose(g, w, rel_tol=tol, abs_tol=tol)
        )
        if not same:
            bad.append(f"{key}: model {g!r}, brute force {w!r}")
    assert not bad, f"{what} means differ:\n" + "\n".join(bad[:15])
    assert_same_per_user(got.per_user, want.per_user, tol=tol, what=what)
    for name in ("evaluated", "no_recs", "no_relevant"):
        g, w = getattr(got.counts, name), getattr(want.counts, name)
        assert g == w, f"{what} counts.{name}: model {g}, brute force {w}"


def assert_same_per_user(
    got: pl.DataFrame, want: pl.DataFrame, *, tol: float = TOL, what: str = ""
) -> None:
    assert got.columns == want.columns, what
    user = want.columns[0]
    assert got[user].dtype == want[user].dtype, what
    g_users, w_users = set(got[user].to_list()), set(want[user].to_list())
    assert g_users == w_users, (
        f"{what} per_user users differ: only from the model {sorted(g_users - w_users, key=str)}"
        f", only from brute force {sorted(w_users - g_users, key=str)}"
    )
    assert got.height == want.height, what
    got, want = got.sort(user), want.sort(user)
    bad = []
    for col in want.columns[1:]:
        for u, g, w in zip(want[user], got[col], want[col], strict=True):
            if g is None or w is None:
                same = g is None and w is None
            elif math.isnan(g) or math.isnan(w):
                same = math.isnan(g) and math.isnan(w)
            else:
                same = math.isclose(g, w, rel_tol=tol, abs_tol=tol)
            if not same:
                bad.append(f"{col} user {u!r}: model {g!r}, brute force {w!r}")
    assert not bad, f"{what} per_user differs:\n" + "\n".join(bad[:15])


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def run_both(
    case: Case,
    metrics: Sequence[str],
    *,
    ties: str = "expected",
    exclude: dict[Hashable, list[Hashable]] | None = None,
    exclude_arg: Any = "frame",
    candidates: list[Hashable] | dict[Hashable, list[Hashable]] | None = None,
    candidates_arg: Any = "auto",
    model: Any = None,
    similarity: str = "dot",
    S: np.ndarray | None = None,
    known_users: Sequence[Hashable] | None = None,
    check_settings: bool = True,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """evaluate(truth, model, ...) and evaluate(truth2, brute-force table, ...): asserted equal."""
    exclude = case.exclude if exclude is None else exclude
    if isinstance(exclude_arg, str) and exclude_arg == "frame":
        exclude_arg = case.exclude_frame(exclude) if exclude else None
    if isinstance(candidates_arg, str) and candidates_arg == "auto":
        if isinstance(candidates, dict):
            rows = [(u, i) for u, items in candidates.items() for i in items]
            candidates_arg = rows_frame(rows, case.id_dtype)
        else:
            candidates_arg = candidates
    model = case.model(similarity=similarity) if model is None else model
    S = score_matrix(case.U, case.V, similarity) if S is None else S
    known_users = case.user_ids if known_users is None else known_users
    got = quiet(
        receval.evaluate,
        case.truth_frame(),
        model,
        list(metrics),
        ties=ties,
        exclude=exclude_arg,
        candidates=candidates_arg,
        **kwargs,
    )
    table = brute_table(
        S, case.user_ids, case.item_ids, case.truth_users(), exclude, candidates, case.id_dtype
    )
    truth2 = case.truth_frame(drop_excluded(case.truth, exclude))
    want = quiet(receval.evaluate, truth2, table, list(metrics), ties=ties, **kwargs)
    assert_same_result(got, want, what=f"ties={ties}")
    if check_settings:
        kind = (
            "all"
            if candidates is None
            else "per_user"
            if isinstance(candidates, dict)
            else "global"
        )
        expected = expected_model_settings(case, known_users, exclude, kind)
        model_settings = got.settings["model"]
        found = {key: model_settings.get(key) for key in expected}
        assert found == expected
    return got, want


# ----------------------------------------------------------------------------- a worked example


def worked_case() -> Case:
    """Two users, four items, d = 2 (worked by hand below).

    U: a = (1, 0), b = (0, 1).  V: w = (2, 0), x = (1, 1), y = (0, 3), z = (1, 0).
    Scores a: w 2, x 1, y 0, z 1 -> order w, x, z (x before z: catalog order), y.
    Scores b: w 0, x 1, y 3, z 0 -> order y, x, w, z.
    Truth: a {z: 1}, b {x: 1, w: 1}.
    """
    U = np.array([[1, 0], [0, 1]])
    V = np.array([[2, 0], [1, 1], [0, 3], [1, 0]])
    truth = [("a", "z", 1), ("b", "x", 1), ("b", "w", 1)]
    return Case(U, V, ["a", "b"], ["w", "x", "y", "z"], truth, {})


def test_worked_example() -> None:
    case = worked_case()
    model = case.model()
    # topk k=2: a -> w (2), x (1: ties z, x first in the catalog); b -> y (3), x (1).
    top = receval.topk(model, 2)
    assert top.sort("user", "rank").rows() == [
        ("a", "w", 2.0, 1),
        ("a", "x", 1.0, 2),
        ("b", "y", 3.0, 1),
        ("b", "x", 1.0, 2),
    ]
    truth = case.truth_frame()
    # ties=first: a's z at position 3 -> 1/3; b's first hit x at 2 -> 1/2; mean 5/12.
    assert receval.evaluate(truth, model, "mrr", ties="first")["mrr"] == pytest.approx(5 / 12)
    # ties=expected: a's z ties x at positions 2-3 -> (1/2 + 1/3) / 2 = 5/12; b: 1/2;
    # mean (5/12 + 1/2) / 2 = 11/24.
    assert receval.evaluate(truth, model, "mrr")["mrr"] == pytest.approx(11 / 24)
    # gauc: a: z (1) vs negatives w 2, x 1, y 0 -> (0 + 1/2 + 1) / 3 = 1/2;
    # b: positives x 1, w 0 vs negatives y 3, z 0 -> (0 + 1 + 0 + 1/2) / 4 = 3/8;
    # weights = candidate rows (4 each): (1/2 + 3/8) / 2 = 7/16.
    assert receval.evaluate(truth, model, "gauc")["gauc"] == pytest.approx(7 / 16)
    # exclude a's w: a -> x 1, z 1, y 0; ties=first: z at 2 -> 1/2; b 1/2; mean 1/2.
    excl = {"a": ["w"]}
    res = receval.evaluate(truth, model, "mrr", ties="first", exclude=excl)
    assert res["mrr"] == pytest.approx(1 / 2)
    # expected: z ties x at positions 1-2 -> (1 + 1/2) / 2 = 3/4; mean (3/4 + 1/2) / 2 = 5/8.
    assert receval.evaluate(truth, model, "mrr", exclude=excl)["mrr"] == pytest.approx(5 / 8)
    top = receval.topk(model, 2, exclude=excl)
    assert top.filter(pl.col("user") == "a").sort("rank").rows() == [
        ("a", "x", 1.0, 1),
        ("a", "z", 1.0, 2),
    ]
    # candidates [z, y] for everyone: a -> z 1, y 0 (mrr 1); b -> y 3, z 0 (no hit: 0).
    res = receval.evaluate(truth, model, "mrr", candidates=["z", "y"])
    assert res["mrr"] == pytest.approx(1 / 2)


# ----------------------------------------------------------------------------- ranking metrics


@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
@pytest.mark.parametrize("ties", TIES)
def test_every_ranking_metric_every_ties_policy(ties: str, string_ids: bool) -> None:
    case = make_case(1, string_ids=string_ids)
    assert len(case.exclude) >= 2 and case.missing_item in {i for _, i, _ in case.truth}
    run_both(case, all_ranking_metrics(len(case.item_ids)), ties=ties)


@pytest.mark.parametrize("seed", [2, 3, 4])
@pytest.mark.parametrize("ties", ["expected", "first", "pessimistic"])
def test_other_integer_cases(seed: int, ties: str) -> None:
    case = make_case(seed, n_users=15, n_items=20, string_ids=seed % 2 == 1)
    metrics = ["ndcg@5", "map", "mrr@3", "recall@10", "precision@3", "r_precision", "gauc"]
    run_both(case, metrics, ties=ties, no_recs="skip" if seed == 3 else "zero")


@pytest.mark.parametrize("kind", ["float32", "float64"])
@pytest.mark.parametrize("ties", ["expected", "first"])
def test_random_float_factors(kind: str, ties: str) -> None:
    case = make_case(5, kind=kind, n_users=20, n_items=30, d=4)
    run_both(case, all_ranking_metrics(30), ties=ties)


@pytest.mark.parametrize("ties", ["expected", "first", "trec"])
def test_catalog_longer_than_a_counting_tile(ties: str) -> None:
    # The counts run over tiles of 4096 columns (float32 lanes): a catalog of several tiles,
    # with integer factors (many ties across tile borders) and exclusions, is still exact.
    # (String ids: integer ids of so large a catalog could take the "missing" id.)
    case = make_case(6, n_users=6, n_items=9_001, d=2, string_ids=True)
    run_both(case, ["ndcg@10", "map", "mrr", "recall@100", "precision@5", "gauc"], ties=ties)


@pytest.mark.parametrize("no_recs", ["zero", "skip"])
def test_unknown_truth_users_have_no_recs(no_recs: str) -> None:
    case = make_case(6, unknown_users=3)
    got, _ = run_both(case, ["ndcg@3", "mrr", "recall@5"], no_recs=no_recs)
    unknown = [u for u in case.truth_users() if u not in set(case.user_ids)]
    relevant = {u for u, _, r in drop_excluded(case.truth, case.exclude) if r >= 1}
    # no recs: the unknown users with a relevant item, and the user whose every item is excluded.
    all_excluded = case.user_ids[1]
    assert set(case.exclude[all_excluded]) == set(case.item_ids)
    expected_no_recs = sum(u in relevant for u in [*unknown, all_excluded])
    assert expected_no_recs >= 2
    assert got.counts.no_recs == expected_no_recs
    assert got.settings["model"]["truth_users_not_in_model"] == len(unknown)
    per_user = got.per_user.filter(pl.col("user").is_in(unknown))
    if no_recs == "zero":
        assert per_user["mrr"].drop_nulls().to_list() == [0.0] * sum(u in relevant for u in unknown)
    else:
        assert per_user["mrr"].drop_nulls().to_list() == []


def test_user_with_every_item_excluded() -> None:
    case = make_case(7)
    u = case.user_ids[1]
    assert set(case.exclude[u]) == set(case.item_ids)
    got, _ = run_both(case, ["ndcg@3", "mrr", "gauc"], ties="first")
    row = got.per_user.filter(pl.col("user") == u)
    assert row["mrr"].to_list() == [0.0]  # evaluated (its non-catalog truth row), no recs


def test_truth_items_not_in_catalog_are_counted() -> None:
    case = make_case(8, exclude=False, all_excluded_user=False)
    n_missing = sum(i == case.missing_item for _, i, _ in case.truth)
    assert n_missing >= 1
    got, _ = run_both(case, ["recall@20", "ndcg", "r_precision"])
    assert got.settings["model"]["truth_rows_not_in_catalog"] == n_missing
    assert got.settings["model"]["candidates"] == "all"
    assert got.settings["model"]["truth_rows_excluded"] == 0


def test_excluded_truth_rows_are_dropped_with_a_warning() -> None:
    case = make_case(9)
    n_excluded = len(case.truth) - len(drop_excluded(case.truth, case.exclude))
    assert n_excluded >= 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = receval.evaluate(
            case.truth_frame(), case.model(), ["mrr"], exclude=case.exclude_frame()
        )
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert [m for m in said if "exclude" in m], said
    assert got.settings["model"]["truth_rows_excluded"] == n_excluded
    with pytest.raises(receval.InputError, match="excluded_truth"):
        receval.evaluate(
            case.truth_frame(),
            case.model(),
            ["mrr"],
            exclude=case.exclude_frame(),
            excluded_truth="raise",
        )
    # No excluded truth row: "raise" has nothing to raise about, and no warning.
    clean = {
        u: [i for i in items if (u, i) not in {(r[0], r[1]) for r in case.truth}]
        for u, items in case.exclude.items()
    }
    clean = {u: items for u, items in clean.items() if items}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = receval.evaluate(
            case.truth_frame(),
            case.model(),
            ["mrr"],
            exclude=case.exclude_frame(clean),
            excluded_truth="raise",
        )
    assert res.settings["model"]["truth_rows_excluded"] == 0
    assert not [w for w in caught if "exclu" in str(w.message)], [str(w.message) for w in caught]


def test_exclude_rows_not_in_catalog_are_counted() -> None:
    case = make_case(10)
    gone = "i_gone" if isinstance(case.item_ids[0], str) else 100_001
    exclude = {u: list(items) for u, items in case.exclude.items()}
    exclude.setdefault(case.user_ids[0], []).append(gone)
    # An exclude row of a user in neither truth nor the model changes nothing.
    outsider = "u_outsider" if isinstance(case.item_ids[0], str) else 77_777
    exclude[outsider] = [case.item_ids[0]]
    got, _ = run_both(case, ["ndcg@3", "mrr"], exclude=exclude, check_settings=False)
    assert got.settings["model"]["exclude_rows_not_in_catalog"] == 1


@pytest.mark.parametrize("form", ["pandas", "dict_list", "dict_dict", "parquet", "csv"])
def test_exclude_forms(form: str, tmp_path: Path) -> None:
    case = make_case(11, string_ids=form == "csv")
    frame = case.exclude_frame()
    if form == "pandas":
        arg: Any = frame.to_pandas()
    elif form == "dict_list":
        arg = {u: list(items) for u, items in case.exclude.items()}
    elif form == "dict_dict":
        arg = {u: dict.fromkeys(items, 1) for u, items in case.exclude.items()}
    elif form == "parquet":
        arg = tmp_path / "exclude.parquet"
        frame.write_parquet(arg)
    else:  # CSV ids are read as text: the case has string ids
        arg = str(tmp_path / "exclude.csv")
        frame.write_csv(arg)
    run_both(case, ["ndcg@3", "map", "gauc"], exclude_arg=arg, ties="first")


@pytest.mark.parametrize("form", ["default", "numpy", "polars", "pandas"])
def test_id_forms(form: str) -> None:
    """Default ids are 0..n-1; ids as arrays and Series give the same results."""
    case = make_case(27, unknown_users=0, missing_items=False, all_excluded_user=False)
    n_users, n_items = case.U.shape[0], case.V.shape[0]
    dense = {u: r for r, u in enumerate(case.user_ids)}
    dense_items = {i: j for j, i in enumerate(case.item_ids)}
    truth = [(dense[u], dense_items[i], r) for u, i, r in case.truth]
    exclude = {dense[u]: [dense_items[i] for i in its] for u, its in case.exclude.items()}
    users, items = list(range(n_users)), list(range(n_items))
    dense_case = Case(case.U, case.V, users, items, truth, exclude)
    make = {
        "default": lambda ids: None,
        "numpy": lambda ids: np.array(ids, dtype=np.int64),
        "polars": lambda ids: pl.Series("ids", ids),
        "pandas": pd.Series,
    }[form]
    kwargs = {
        k: v for k, v in (("user_ids", make(users)), ("item_ids", make(items))) if v is not None
    }
    model = receval.FactorModel(case.U, case.V, **kwargs)
    run_both(dense_case, all_ranking_metrics(n_items), model=model, ties="first")


# ----------------------------------------------------------------------------- candidates


@pytest.mark.parametrize("form", ["list", "numpy", "polars", "pandas"])
@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
def test_global_candidates(form: str, string_ids: bool) -> None:
    case = make_case(12, string_ids=string_ids)
    rng = np.random.default_rng(12)
    cands = [case.item_ids[int(j)] for j in rng.choice(len(case.item_ids), 7, replace=False)]
    arg: Any = {
        "list": cands,
        "numpy": np.array(cands),
        "polars": pl.Series("item", cands),
        "pandas": pd.Series(cands, name="item"),
    }[form]
    metrics = [*all_ranking_metrics(len(case.item_ids))[:40], "gauc", "ndcg@3", "map"]
    run_both(case, list(dict.fromkeys(metrics)), candidates=cands, candidates_arg=arg)


@pytest.mark.parametrize("form", ["polars", "pandas", "dict"])
@pytest.mark.parametrize("ties", ["expected", "first", "trec"])
def test_per_user_candidates(form: str, ties: str) -> None:
    case = make_case(13, string_ids=ties == "trec")
    rng = np.random.default_rng(13)
    cands = {
        u: [
            case.item_ids[int(j)]
            for j in rng.choice(len(case.item_ids), int(rng.integers(2, 9)), replace=False)
        ]
        for u in case.known_truth_users()
    }
    rows = [(u, i) for u, items in cands.items() for i in items]
    arg: Any = {
        "polars": rows_frame(rows, case.id_dtype),
        "pandas": rows_frame(rows, case.id_dtype).to_pandas(),
        "dict": cands,
    }[form]
    metrics = ["ndcg@3", "ndcg", "map@10", "mrr", "recall@5", "precision@5", "r_precision", "gauc"]
    run_both(case, metrics, ties=ties, candidates=cands, candidates_arg=arg)


def test_per_user_candidates_user_without_rows_has_no_candidates() -> None:
    """A scored user absent from the per-user candidates table has no candidates (no recs)."""
    case = make_case(14)
    known = case.known_truth_users()
    cands = {u: list(case.item_ids[:6]) for u in known[:-1]}
    got, _ = run_both(case, ["mrr", "ndcg@3"], candidates=cands)
    assert got.settings["model"]["candidates"] == "per_user"


# ----------------------------------------------------------------------------- ScoreModel


def score_fn(
    U: np.ndarray, V: np.ndarray, user_ids: Sequence[Hashable], calls: list[np.ndarray]
) -> Callable[[np.ndarray], Any]:
    pos = {u: r for r, u in enumerate(user_ids)}
    U = U.astype(np.float64) if U.dtype.kind in "iub" else U
    V = V.astype(np.float64) if V.dtype.kind in "iub" else V

    def fn(batch: np.ndarray) -> np.ndarray:
        calls.append(batch)
        return np.stack([U[pos[u]] @ V.T for u in batch.tolist()])

    return fn


@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
@pytest.mark.parametrize("kind", ["int", "int_f32", "float32"])
def test_score_model_equals_factor_model(kind: str, string_ids: bool) -> None:
    case = make_case(15, kind=kind, string_ids=string_ids, unknown_users=0)
    calls: list[np.ndarray] = []
    model = receval.ScoreModel(score_fn(case.U, case.V, case.user_ids, calls), case.item_ids)
    metrics = all_ranking_metrics(len(case.item_ids))
    for ties in ("expected", "first"):
        via_score, _ = run_both(case, metrics, ties=ties, model=model)
        via_factor = quiet(
            receval.evaluate,
            case.truth_frame(),
            case.model(),
            metrics,
            ties=ties,
            exclude=case.exclude_frame(),
        )
        assert_same_result(via_score, via_factor, tol=0.0)
    assert calls
    for batch in calls:
        assert isinstance(batch, np.ndarray)
        if string_ids:
            assert batch.dtype == object and all(isinstance(u, str) for u in batch.tolist())
        else:
            assert batch.dtype == np.int64
    assert set().union(*(b.tolist() for b in calls)) == set(case.known_truth_users())


def test_score_model_returning_float32() -> None:
    case = make_case(16, kind="int_f32", unknown_users=0)
    calls: list[np.ndarray] = []
    fn = score_fn(case.U, case.V, case.user_ids, calls)
    model = receval.ScoreModel(lambda b: fn(b).astype(np.float32), case.item_ids)
    assert fn(np.array(case.user_ids[:2])).dtype == np.float32
    run_both(case, all_ranking_metrics(len(case.item_ids)), ties="expected", model=model)


# ----------------------------------------------------------------------------- cosine


@pytest.mark.parametrize("ties", ["expected", "first"])
def test_cosine_similarity(ties: str) -> None:
    case = make_case(17, kind="float64", n_users=12, n_items=20)
    run_both(case, all_ranking_metrics(20), ties=ties, similarity="cosine")
    # Scaling a row changes dot products but no cosine: scores and results are unchanged.
    scaled = Case(
        case.U * 3.0,
        case.V * np.arange(1, 21)[:, None],
        case.user_ids,
        case.item_ids,
        case.truth,
        case.exclude,
    )
    a = quiet(
        receval.evaluate,
        case.truth_frame(),
        case.model(similarity="cosine"),
        ["ndcg@5", "map"],
        exclude=case.exclude_frame(),
    )
    b = quiet(
        receval.evaluate,
        case.truth_frame(),
        scaled.model(similarity="cosine"),
        ["ndcg@5", "map"],
        exclude=case.exclude_frame(),
    )
    assert_same_result(a, b, tol=1e-9)


# ----------------------------------------------------------------------------- blocks


@pytest.mark.parametrize("block_memory", [1, "1KiB", "1MiB", 10**9])
def test_block_memory_does_not_change_results(block_memory: Any) -> None:
    case = make_case(18, n_users=20, n_items=25)
    metrics = [*all_ranking_metrics(25)]
    for ties in ("expected", "trec"):
        kwargs = {"ties": ties, "exclude": case.exclude_frame()}
        default = quiet(receval.evaluate, case.truth_frame(), case.model(), metrics, **kwargs)
        small = quiet(
            receval.evaluate,
            case.truth_frame(),
            case.model(),
            metrics,
            block_memory=block_memory,
            **kwargs,
        )
        assert small.means == default.means
        assert small.per_user.equals(default.per_user)
        assert small.counts == default.counts
    top = receval.topk(case.model(), 4, exclude=case.exclude_frame())
    top_small = receval.topk(
        case.model(), 4, exclude=case.exclude_frame(), block_memory=block_memory
    )
    assert top_small.sort("user", "rank").equals(top.sort("user", "rank"))


def test_score_model_with_tiny_blocks_is_called_in_several_batches() -> None:
    case = make_case(19, unknown_users=0)
    calls: list[np.ndarray] = []
    model = receval.ScoreModel(score_fn(case.U, case.V, case.user_ids, calls), case.item_ids)
    run_both(case, ["ndcg@3", "mrr"], model=model, block_memory=1)
    assert len(calls) > 1
    assert set().union(*(b.tolist() for b in calls)) == set(case.known_truth_users())


# ----------------------------------------------------------------------------- rating metrics


@pytest.mark.parametrize("no_recs", ["zero", "skip"])
@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
def test_rating_metrics_use_the_truth_pairs_scores(no_recs: str, string_ids: bool) -> None:
    case = make_case(20, string_ids=string_ids, exclude=False, all_excluded_user=False)
    S = score_matrix(case.U, case.V)
    upos = {u: r for r, u in enumerate(case.user_ids)}
    ipos = {i: j for j, i in enumerate(case.item_ids)}
    rows = [(u, i, float(S[upos[u], ipos[i]])) for u, i, _ in case.truth if u in upos and i in ipos]
    assert len(rows) < len(case.truth)  # unknown users and non-catalog items lack a prediction
    metrics = ["rmse", "mae", "mse", "rmse(average=user)", "mae(average=user)", "r2", "nmae"]
    got = quiet(receval.evaluate, case.truth_frame(), case.model(), metrics, no_recs=no_recs)
    want = quiet(
        receval.evaluate,
        case.truth_frame(),
        rows_frame(rows, case.id_dtype, "score"),
        metrics,
        no_recs=no_recs,
    )
    for m in want.means:
        assert math.isclose(got.means[m], want.means[m], rel_tol=TOL, abs_tol=TOL), (
            m,
            got.means[m],
            want.means[m],
        )


# ----------------------------------------------------------------------------- beyond accuracy


def test_beyond_metrics_equal_evaluate_on_the_top_k_lists() -> None:
    case = make_case(21, n_users=15, n_items=20)
    rng = np.random.default_rng(21)
    train_rows = [
        (case.user_ids[int(rng.integers(15))], case.item_ids[int(rng.integers(20))], 1)
        for _ in range(60)
    ]
    train = rows_frame(list(dict.fromkeys(train_rows)), case.id_dtype).unique(maintain_order=True)
    items = pl.DataFrame(
        {
            "item": pl.Series(case.item_ids, dtype=case.id_dtype),
            "vec": [list(map(float, rng.integers(0, 3, 4) + 0.5)) for _ in case.item_ids],
            "genre": [f"g{j % 3}" for j in range(len(case.item_ids))],
        }
    )
    metrics = [beyond_metric(name, 5) for name in BEYOND]
    # ties="first": the lists are cut in catalog order, as receval.topk cuts them (the other
    # policies: test_beyond_metrics_equal_evaluate_on_the_full_table)
    kwargs = {"train": train, "items": items, "item_features": "vec", "ties": "first"}
    got = quiet(
        receval.evaluate,
        case.truth_frame(),
        case.model(),
        metrics,
        exclude=case.exclude_frame(),
        **kwargs,
    )
    S = score_matrix(case.U, case.V)
    top = brute_topk(
        S, case.user_ids, case.item_ids, case.known_truth_users(), 5, case.exclude, None
    )
    table = rows_frame([r[:3] for r in top], case.id_dtype, "score")
    truth2 = case.truth_frame(drop_excluded(case.truth, case.exclude))
    want = quiet(receval.evaluate, truth2, table, metrics, **kwargs)
    assert_same_result(got, want)
    # The same lists come from receval.topk.
    top_model = receval.topk(
        case.model(), 5, users=case.known_truth_users(), exclude=case.exclude_frame()
    )
    via_topk = quiet(
        receval.evaluate, truth2, top_model.select("user", "item", "score"), metrics, **kwargs
    )
    assert_same_result(via_topk, want)


# ----------------------------------------------------------------------------- topk


def check_topk(
    got: pl.DataFrame,
    want: list[tuple[Any, ...]],
    case: Case,
    *,
    user_col: str = "user",
    item_col: str = "item",
    tol: float = 0.0,
) -> None:
    assert got.columns == [user_col, item_col, "score", "rank"]
    assert got[user_col].dtype == case.id_dtype
    assert got[item_col].dtype == case.id_dtype
    assert got["score"].dtype == pl.Float64
    assert got["rank"].dtype.is_integer()
    # Within a user, rows come by rank 1, 2, ...
    for _, part in got.group_by(user_col, maintain_order=True):
        assert part["rank"].to_list() == list(range(1, part.height + 1))
    rows = sorted(got.rows(), key=lambda r: (str(r[0]), r[3]))
    want = sorted(want, key=lambda r: (str(r[0]), r[3]))
    assert [(r[0], r[1], r[3]) for r in rows] == [(r[0], r[1], r[3]) for r in want]
    for g, w in zip(rows, want, strict=True):
        assert math.isclose(g[2], w[2], rel_tol=tol, abs_tol=tol), (g, w)


@pytest.mark.parametrize("mode", ["all", "global", "per_user"])
@pytest.mark.parametrize("k", [1, 3, 12, 20])
@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
def test_topk_matches_brute_force(k: int, mode: str, string_ids: bool) -> None:
    case = make_case(22, string_ids=string_ids, n_items=12)
    rng = np.random.default_rng(22)
    users = [case.user_ids[int(j)] for j in rng.permutation(len(case.user_ids))[:6]]
    users.append(case.user_ids[1])  # every item excluded: no rows
    users = list(dict.fromkeys(users))
    cands: Any = None
    cands_arg: Any = None
    if mode == "global":
        cands = [case.item_ids[int(j)] for j in rng.choice(12, 8, replace=False)]
        cands_arg = cands
    elif mode == "per_user":
        cands = {
            u: [
                case.item_ids[int(j)]
                for j in rng.choice(12, int(rng.integers(1, 10)), replace=False)
            ]
            for u in users
        }
        cands_arg = rows_frame([(u, i) for u, its in cands.items() for i in its], case.id_dtype)
    got = receval.topk(
        case.model(), k, users=users, exclude=case.exclude_frame(), candidates=cands_arg
    )
    S = score_matrix(case.U, case.V)
    want = brute_topk(S, case.user_ids, case.item_ids, users, k, case.exclude, cands)
    check_topk(got, want, case)
    assert case.user_ids[1] not in set(got["user"].to_list())


def test_topk_defaults_and_column_names() -> None:
    case = make_case(23, string_ids=True)
    S = score_matrix(case.U, case.V)
    got = receval.topk(case.model(), 4, user_col="uid", item_col="iid")
    want = brute_topk(S, case.user_ids, case.item_ids, case.user_ids, 4, {}, None)
    check_topk(got, want, case, user_col="uid", item_col="iid")
    assert set(got["uid"].to_list()) == set(case.user_ids)


def test_topk_score_model_needs_no_factors() -> None:
    case = make_case(24, kind="int_f32")
    calls: list[np.ndarray] = []
    model = receval.ScoreModel(score_fn(case.U, case.V, case.user_ids, calls), case.item_ids)
    users = case.user_ids[:5]
    got = receval.topk(model, 3, users=users, exclude=case.exclude)
    want = brute_topk(
        score_matrix(case.U, case.V), case.user_ids, case.item_ids, users, 3, case.exclude, None
    )
    check_topk(got, want, case)


def test_topk_float32_scores_are_widened_exactly() -> None:
    case = make_case(25, kind="float32", n_users=10, n_items=40, d=5)
    got = receval.topk(case.model(), 7)
    want = brute_topk(
        score_matrix(case.U, case.V), case.user_ids, case.item_ids, case.user_ids, 7, {}, None
    )
    check_topk(got, want, case, tol=1e-6)
    scores = got["score"].to_numpy()
    assert np.array_equal(scores.astype(np.float32).astype(np.float64), scores)


# ----------------------------------------------------------------------------- property


@st.composite
def model_cases(draw: st.DrawFn) -> tuple[Case, Any, str]:
    n_users = draw(st.integers(1, 5))
    n_items = draw(st.integers(1, 7))
    d = draw(st.integers(1, 3))
    small = st.integers(-2, 2)
    U = np.array(draw(st.lists(small, min_size=n_users * d, max_size=n_users * d)))
    V = np.array(draw(st.lists(small, min_size=n_items * d, max_size=n_items * d)))
    U, V = U.reshape(n_users, d), V.reshape(n_items, d)
    user_ids: list[Hashable] = [3 * x + 5 for x in draw(st.permutations(range(n_users)))]
    item_ids: list[Hashable] = [7 * x + 2 for x in draw(st.permutations(range(n_items)))]
    truth: list[tuple[Hashable, Hashable, int]] = []
    exclude: dict[Hashable, list[Hashable]] = {}
    rel = st.sampled_from([0, 1, 2, 3])
    for n, u in enumerate([*user_ids, 999]):
        if n > 0 and not draw(st.booleans()):
            continue
        items = draw(st.lists(st.sampled_from([*item_ids, 1]), min_size=1, max_size=5, unique=True))
        rels = draw(st.lists(rel, min_size=len(items), max_size=len(items)))
        if n == 0:
            items[0] = item_ids[0]
            rels[0] = 3
            items = list(dict.fromkeys(items))
            rels = rels[: len(items)]
        truth += [(u, i, r) for i, r in zip(items, rels, strict=True)]
        if u != 999:
            ex = draw(st.lists(st.sampled_from(item_ids), max_size=n_items, unique=True))
            if n == 0 and item_ids[0] in ex:
                ex.remove(item_ids[0])
            if ex:
                exclude[u] = ex
    mode = draw(st.sampled_from(["all", "global", "per_user"]))
    cands: Any = None
    if mode == "global":
        cands = draw(st.lists(st.sampled_from(item_ids), min_size=1, unique=True))
        cands = list(dict.fromkeys([item_ids[0], *cands]))
    elif mode == "per_user":
        cands = {
            u: draw(st.lists(st.sampled_from(item_ids), min_size=1, unique=True)) for u in user_ids
        }
        cands[user_ids[0]] = list(dict.fromkeys([item_ids[0], *cands[user_ids[0]]]))
    case = Case(U, V, user_ids, item_ids, truth, exclude, 1)
    return case, cands, draw(st.sampled_from(TIES))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_cases())
def test_property_model_equals_brute_force(drawn: tuple[Case, Any, str]) -> None:
    case, cands, ties = drawn
    metrics = ["ndcg@3", "map", "mrr", "recall@2", "precision", "hit_rate@1", "r_precision", "gauc"]
    # "users scored" is only unambiguous when no known user loses all its truth rows.
    truth2_users = {u for u, _, _ in drop_excluded(case.truth, case.exclude)}
    unambiguous = set(case.known_truth_users()) <= truth2_users
    run_both(case, metrics, ties=ties, candidates=cands, check_settings=unambiguous)


# ----------------------------------------------------------------------------- torch


def test_torch_factors_equal_numpy_factors() -> None:
    torch = import_torch()
    case = make_case(26, kind="int_f64", string_ids=True)
    metrics = all_ranking_metrics(len(case.item_ids))
    devices = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    for device in devices:
        for np_dtype, t_dtype in ((np.float64, torch.float64), (np.float32, torch.float32)):
            U, V = case.U.astype(np_dtype), case.V.astype(np_dtype)
            numpy_model = receval.FactorModel(U, V, user_ids=case.user_ids, item_ids=case.item_ids)
            torch_model = receval.FactorModel(
                torch.tensor(U, dtype=t_dtype, device=device),
                torch.tensor(V, dtype=t_dtype, device=device),
                user_ids=case.user_ids,
                item_ids=case.item_ids,
                device=device,  # a CPU tensor takes the NumPy path unless a device is named
            )
            assert torch_model.uses_torch
            for ties in ("expected", "first"):
                kwargs = {"ties": ties, "exclude": case.exclude_frame()}
                a = quiet(receval.evaluate, case.truth_frame(), numpy_model, metrics, **kwargs)
                b = quiet(receval.evaluate, case.truth_frame(), torch_model, metrics, **kwargs)
                assert_same_result(b, a, what=f"torch {device} {t_dtype}")
            ta = receval.topk(numpy_model, 5, exclude=case.exclude)
            tb = receval.topk(torch_model, 5, exclude=case.exclude)
            assert tb.sort("user", "rank").equals(ta.sort("user", "rank"))
    # A ScoreModel whose function returns a torch tensor.
    U, V = torch.tensor(case.U), torch.tensor(case.V)
    pos = {u: r for r, u in enumerate(case.user_ids)}

    def fn(batch: np.ndarray) -> Any:
        return U[[pos[u] for u in batch.tolist()]] @ V.T

    model = receval.ScoreModel(fn, case.item_ids)
    known_case = Case(
        case.U,
        case.V,
        case.user_ids,
        case.item_ids,
        [r for r in case.truth if r[0] in pos],
        case.exclude,
        case.missing_item,
    )
    run_both(known_case, metrics, model=model, ties="expected")


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("mode", ["all", "global", "per_user"])
def test_torch_every_policy_and_candidates(ties: str, mode: str) -> None:
    """The torch scan (masking, above/tied counts, tie order, top K) equals the brute force
    for every tie policy, with exclusions and both kinds of candidates, in blocks of 3 users."""
    torch = import_torch()
    case = make_case(27, kind="int_f64", string_ids=False)
    metrics = [*all_ranking_metrics(len(case.item_ids)), "gauc", "coverage@3"]
    rng = np.random.default_rng(5)
    cands: Any = None
    if mode == "global":
        cands = list(rng.choice(case.item_ids, size=len(case.item_ids) - 3, replace=False))
    elif mode == "per_user":
        cands = {u: list(rng.choice(case.item_ids, size=6, replace=False)) for u in case.user_ids}
    model = receval.FactorModel(
        torch.tensor(case.U), torch.tensor(case.V), user_ids=case.user_ids,
        item_ids=case.item_ids, device="cpu",
    )  # fmt: skip
    assert model.uses_torch
    numpy_model = case.model()
    kwargs = {"ties": ties, "exclude": case.exclude_frame(), "candidates": cands}
    a = quiet(receval.evaluate, case.truth_frame(), numpy_model, metrics, **kwargs)
    b = quiet(
        receval.evaluate, case.truth_frame(), model, metrics, block_memory=3 * 8 * 3 * 40, **kwargs
    )
    assert_same_result(b, a, what=f"torch {ties} {mode}")
    ta = receval.topk(numpy_model, 4, exclude=case.exclude, candidates=cands)
    tb = receval.topk(model, 4, exclude=case.exclude, candidates=cands, block_memory=1)
    assert tb.equals(ta)
    run_both(case, metrics[:-2], model=model, ties=ties, candidates=cands)


def test_score_model_with_user_ids_scores_only_its_users() -> None:
    """A ScoreModel given user_ids is called only for those users; other truth users have no
    recommendations, exactly as with a FactorModel of the same users."""
    case = make_case(28, kind="int_f64", string_ids=True)
    calls: list[np.ndarray] = []
    fn = score_fn(case.U, case.V, case.user_ids, calls)
    model = receval.ScoreModel(fn, case.item_ids, user_ids=case.user_ids)
    metrics = ["ndcg@3", "mrr", "gauc"]
    got = quiet(receval.evaluate, case.truth_frame(), model, metrics, exclude=case.exclude_frame())
    want = quiet(
        receval.evaluate, case.truth_frame(), case.model(), metrics, exclude=case.exclude_frame()
    )
    assert_same_result(got, want)
    assert calls
    assert {u for batch in calls for u in batch.tolist()} <= set(case.user_ids)
    assert got.settings["model"] == want.settings["model"]
    assert receval.topk(model, 3).equals(receval.topk(case.model(), 3))


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("string_ids", [False, True], ids=["int_ids", "str_ids"])
def test_beyond_metrics_equal_evaluate_on_the_full_table(ties: str, string_ids: bool) -> None:
    """With integer factors (many ties at the cutoff), the top-K lists are cut as the beyond
    family cuts the full ranked table under each tie policy (catalog order for first, item id
    descending as text for trec, item id ascending otherwise), so every beyond metric equals
    evaluate on the full table; the torch path too."""
    case = make_case(29, kind="int_f64", string_ids=string_ids, n_users=30, n_items=40, d=2)
    rng = np.random.default_rng(29)
    n_users, n_items = len(case.user_ids), len(case.item_ids)
    train_rows = [
        (case.user_ids[int(rng.integers(n_users))], case.item_ids[int(rng.integers(n_items))], 1)
        for _ in range(80)
    ]
    train = rows_frame(list(dict.fromkeys(train_rows)), case.id_dtype).unique(maintain_order=True)
    items = pl.DataFrame(
        {
            "item": pl.Series(case.item_ids, dtype=case.id_dtype),
            "genre": [f"g{j % 3}" for j in range(len(case.item_ids))],
        }
    )
    metrics = [  # item similarity (ils, serendipity, ...): test_beyond_metrics_..._top_k_lists
        beyond_metric(name, k)
        for name in BEYOND
        if not SPECS[name].needs_item_features
        and not (ties == "expected" and SPECS[name].ties_past_cutoff)  # refused: see below
        for k in (2, 4)
    ]
    kwargs = {"train": train, "items": items, "ties": ties}
    got = quiet(
        receval.evaluate, case.truth_frame(), case.model(), metrics, exclude=case.exclude_frame(),
        **kwargs,
    )  # fmt: skip
    S = score_matrix(case.U, case.V)
    table = brute_table(
        S, case.user_ids, case.item_ids, case.known_truth_users(), case.exclude, None,
        case.id_dtype,
    )  # fmt: skip
    truth2 = case.truth_frame(drop_excluded(case.truth, case.exclude))
    want = quiet(receval.evaluate, truth2, table, metrics, **kwargs)
    assert_same_result(got, want)
    if importlib.util.find_spec("torch") is not None:
        import torch

        model = receval.FactorModel(
            torch.tensor(case.U, dtype=torch.float64), torch.tensor(case.V, dtype=torch.float64),
            user_ids=case.user_ids, item_ids=case.item_ids, device="cpu",
        )  # fmt: skip
        on_torch = quiet(
            receval.evaluate, case.truth_frame(), model, metrics, exclude=case.exclude_frame(),
            **kwargs,
        )  # fmt: skip
        assert_same_result(on_torch, want)


def test_recs_in_train_counts_the_train_pairs_the_model_may_recommend() -> None:
    """With train= and a model, counts.recs_in_train is the number of train (user, item) pairs
    of scored truth users that are candidates (brute force), with a warning; exclude=train
    makes it 0."""
    case = make_case(31, kind="int_f64", string_ids=True, exclude=False)
    rng = np.random.default_rng(31)
    pairs = {
        (case.user_ids[int(rng.integers(len(case.user_ids)))],
         case.item_ids[int(rng.integers(len(case.item_ids)))])
        for _ in range(40)
    }  # fmt: skip
    pairs |= {(case.user_ids[0], "i_nowhere"), ("nobody_at_all", case.item_ids[0])}
    train = rows_frame([(u, i, 1) for u, i in sorted(pairs, key=str)], case.id_dtype)
    truth_pairs = {(u, i) for u, i, _ in case.truth}
    scored = set(case.known_truth_users())
    want = sum(
        1 for u, i in pairs if u in scored and i in set(case.item_ids) and (u, i) not in truth_pairs
    )
    truth_frame = case.truth_frame()
    with pytest.warns(UserWarning, match="candidates of the model"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not in the model's user_ids")
        got = receval.evaluate(
            truth_frame, case.model(), ["ndcg@3"], train=train.join(
                truth_frame.select("user", "item"), on=["user", "item"], how="anti"
            ),
        )  # fmt: skip
    assert want > 0
    assert got.counts.recs_in_train == want
    clean = train.join(truth_frame.select("user", "item"), on=["user", "item"], how="anti")
    res = quiet(receval.evaluate, truth_frame, case.model(), ["ndcg@3"], train=clean,
                exclude=clean)  # fmt: skip
    assert res.counts.recs_in_train == 0


def test_torch_device_option() -> None:
    """device= names the torch device: NumPy factors are moved there; CPU tensors without a
    device take the NumPy path (same numbers); a bad device is an InputError."""
    torch = import_torch()
    case = make_case(32, kind="int_f64", string_ids=True)
    metrics = ["ndcg@3", "mrr", "gauc"]
    want = quiet(receval.evaluate, case.truth_frame(), case.model(), metrics)
    on_cpu = receval.FactorModel(
        case.U, case.V, user_ids=case.user_ids, item_ids=case.item_ids, device="cpu"
    )
    assert on_cpu.uses_torch
    assert_same_result(quiet(receval.evaluate, case.truth_frame(), on_cpu, metrics), want)
    plain = receval.FactorModel(
        torch.tensor(case.U), torch.tensor(case.V), user_ids=case.user_ids,
        item_ids=case.item_ids,
    )  # fmt: skip
    assert not plain.uses_torch
    assert_same_result(quiet(receval.evaluate, case.truth_frame(), plain, metrics), want)
    with pytest.raises(receval.InputError, match="device='nowhere'"):
        receval.FactorModel(case.U, case.V, device="nowhere")


def test_compare_takes_models_and_their_masks() -> None:
    """receval.compare evaluates model sources with exclude / candidates like evaluate, and the
    report's provenance names the models and the exclude input."""
    case = make_case(33, kind="float64", string_ids=True, n_users=20, n_items=30)
    other = receval.FactorModel(
        case.U + 0.5, case.V, user_ids=case.user_ids, item_ids=case.item_ids
    )
    metrics = ["ndcg@5", "mrr", "gauc"]
    runs = {"a": case.model(), "b": other}
    cmp = quiet(receval.compare, case.truth_frame(), runs, metrics, exclude=case.exclude_frame())
    for name, run in runs.items():
        alone = quiet(
            receval.evaluate, case.truth_frame(), run, metrics, exclude=case.exclude_frame()
        )
        assert cmp.results[name].means == alone.means
    text = cmp.to_markdown()
    assert "FactorModel(users=20, items=30" in text
    assert "- exclude: polars DataFrame" in text


@pytest.mark.parametrize("name", [n for n in BEYOND if SPECS[n].ties_past_cutoff])
def test_metrics_reading_ties_past_the_cutoff_refuse_expected_ties_from_a_model(name: str) -> None:
    case = make_case(5, n_users=4, n_items=8)
    items = pl.DataFrame({"item": pl.Series(case.item_ids, dtype=case.id_dtype),
                          "genre": [f"g{j % 2}" for j in range(8)]})  # fmt: skip
    metric = beyond_metric(name, 3)
    with pytest.raises(
        receval.MetricError,
        match=rf"^{re.escape(receval.parse_metric(metric).canonical)} with ties='expected' share "
        r"the list's attention with the items tied with the K-th one past the cutoff",
    ):
        receval.evaluate(case.truth_frame(), case.model(), [metric], items=items)
    got = quiet(receval.evaluate, case.truth_frame(), case.model(), [metric], items=items,
                ties="first")  # fmt: skip
    assert receval.parse_metric(metric).canonical in got.means


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_torch_half_factors_are_widened_exactly(dtype: str) -> None:
    """torch float16 / bfloat16 factors (a NotImplementedError or TypeError from Numba before)
    score as their exact float32 widening does."""
    torch = import_torch()
    case = make_case(28, kind="int_f64", string_ids=False)
    half = getattr(torch, dtype)
    U, V = torch.tensor(case.U).to(half), torch.tensor(case.V).to(half)
    metrics = ["ndcg@5", "mrr", "gauc", "recall@3"]
    widened = receval.FactorModel(U.to(torch.float32).numpy(), V.to(torch.float32).numpy(),
                                  user_ids=case.user_ids, item_ids=case.item_ids)  # fmt: skip
    model = receval.FactorModel(U, V, user_ids=case.user_ids, item_ids=case.item_ids)
    a = quiet(receval.evaluate, case.truth_frame(), widened, metrics)
    b = quiet(receval.evaluate, case.truth_frame(), model, metrics)
    assert_same_result(b, a, what=f"torch {dtype}")
    assert receval.topk(model, 4).equals(receval.topk(widened, 4))
