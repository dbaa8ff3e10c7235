"""receval against implicit's ``implicit.evaluation.ranking_metrics_at_k``.

What implicit 0.7 computes (``implicit/evaluation.pyx``): for every user with at least one
test item, ``model.recommend(users, train[users], N=K)`` (training items filtered out, the
top K by ``user_factors @ item_factors.T``), then with ``R`` the user's test items (their
values are ignored: binary relevance) and ``rel_j`` 1 when the item at position ``j`` is in
``R``:

- ``precision``: ``Σ_u hits_u@K / Σ_u min(K, |R_u|)``, a ratio of sums over users (micro), and
  not a precision: receval's ``precision@K`` divides by K. It equals
  ``recall(average=micro)@K`` when every user has ``|R| <= K`` and ``precision@K`` when every
  user has ``|R| >= K``; in general it is ``Σ_u K·precision@K_u / Σ_u min(K, |R_u|)``.
- ``map``: the mean over users of ``Σ_{j<=K, rel_j} P@j / min(K, |R|)``:
  ``map(denominator=min)@K``.
- ``ndcg``: the mean over users of ``Σ_{j<=K} rel_j / log2(j+1)`` over the ideal DCG of
  ``min(K, |R|)`` relevant items: ``ndcg@K`` with binary relevance.
- ``auc``: per user ``(Σ_{misses j<=K} hits before j + (hits@K + |R|)/2 · (n_items − |R| −
  misses@K)) / (|R| · (n_items − |R|))``, averaged over users: the AUC of a list made of the
  top K followed by every other catalog item (training items included, all counted as
  negatives) in one tie, i.e. ``gauc(weight=uniform)`` on that table. It is not the AUC of the
  full ranking (``gauc`` from the model with ``exclude=train``).

implicit breaks score ties its own way (its C++ ``select``); the factors here are random
floats with no ties, and the float32 cases check that no two scores of a user are closer than
the rounding of a float32 dot product could blur.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

import receval

implicit = pytest.importorskip(
    "implicit",
    reason="implicit (pip install implicit) is the reference for ranking_metrics_at_k",
)
from implicit.evaluation import ranking_metrics_at_k  # noqa: E402

TOL = 1e-9
KS = (1, 5, 10)


def _csr(users: np.ndarray, items: np.ndarray, shape: tuple[int, int]) -> object:
    from scipy.sparse import csr_matrix

    return csr_matrix((np.ones(len(users)), (users, items)), shape=shape)


def make_case(
    seed: int,
    *,
    n_users: int = 60,
    n_items: int = 90,
    d: int = 8,
    dtype: type = np.float64,
    test_sizes: tuple[int, int] = (0, 16),
) -> dict[str, object]:
    """Random factors and, per user, disjoint train and test items.

    Some users have no test item (implicit and receval both leave them out), some no train
    item, and the test sizes straddle the cutoffs so that ``min(K, |R|)`` matters."""
    rng = np.random.default_rng(seed)
    user_factors = rng.standard_normal((n_users, d)).astype(dtype)
    item_factors = rng.standard_normal((n_items, d)).astype(dtype)
    train_rows: list[tuple[int, int]] = []
    test_rows: list[tuple[int, int]] = []
    for user in range(n_users):
        perm = rng.permutation(n_items)
        n_train = int(rng.integers(0, 12))
        n_test = int(rng.integers(test_sizes[0], test_sizes[1] + 1))
        train_rows += [(user, int(i)) for i in perm[:n_train]]
        test_rows += [(user, int(i)) for i in perm[n_train : n_train + n_test]]
    train = pl.DataFrame(train_rows, schema=["user", "item"], orient="row")
    truth = pl.DataFrame(test_rows, schema=["user", "item"], orient="row")
    shape = (n_users, n_items)
    return {
        "U": user_factors,
        "I": item_factors,
        "train": train,
        "truth": truth,
        "train_csr": _csr(train["user"].to_numpy(), train["item"].to_numpy(), shape),
        "test_csr": _csr(truth["user"].to_numpy(), truth["item"].to_numpy(), shape),
    }


def implicit_model(user_factors: np.ndarray, item_factors: np.ndarray) -> object:
    """implicit's CPU ALS model holding exactly these factors (no fitting)."""
    from implicit.cpu.als import AlternatingLeastSquares

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "OpenBLAS is configured to use ..."
        model = AlternatingLeastSquares(
            factors=user_factors.shape[1], dtype=user_factors.dtype, num_threads=1
        )
    model.user_factors = user_factors
    model.item_factors = item_factors
    return model


def implicit_metrics(case: dict[str, object], k: int) -> dict[str, float]:
    model = implicit_model(case["U"], case["I"])  # type: ignore[arg-type]
    return dict(
        ranking_metrics_at_k(model, case["train_csr"], case["test_csr"], K=k, show_progress=False)
    )


def masked_scores(case: dict[str, object]) -> np.ndarray:
    scores = case["U"] @ case["I"].T  # type: ignore[operator]
    scores = scores.astype(np.float64)
    scores[case["train_csr"].nonzero()] = -np.inf  # type: ignore[attr-defined]
    return scores  # type: ignore[no-any-return]


def top_k(case: dict[str, object], k: int) -> np.ndarray:
    return np.argsort(-masked_scores(case), axis=1, kind="stable")[:, :k]


def assert_no_close_scores(case: dict[str, object]) -> None:
    """No two candidate scores of a user closer than 1e-4: float32 rounding cannot reorder."""
    scores = masked_scores(case)
    for row in scores:
        finite = np.sort(row[np.isfinite(row)])
        assert np.diff(finite).min() > 1e-4


CASES = {
    "float64": {"seed": 1},
    "float32": {"seed": 2, "dtype": np.float32, "n_items": 40},
}


@pytest.fixture(params=list(CASES), scope="module")
def case(request: pytest.FixtureRequest) -> dict[str, object]:
    made = make_case(**CASES[request.param])  # type: ignore[arg-type]
    if request.param == "float32":
        assert_no_close_scores(made)
    return made


@pytest.mark.parametrize("k", KS)
def test_implicit_ranks_with_the_given_factors(case: dict[str, object], k: int) -> None:
    """The ALS model really uses the factors we set: its top K is NumPy's."""
    model = implicit_model(case["U"], case["I"])  # type: ignore[arg-type]
    users = np.arange(case["U"].shape[0])  # type: ignore[attr-defined]
    ids, _ = model.recommend(users, case["train_csr"], N=k)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(ids, top_k(case, k))


@pytest.mark.parametrize("k", KS)
def test_what_implicit_computes(case: dict[str, object], k: int) -> None:
    """implicit's four numbers, written out from NumPy (the module docstring's formulas)."""
    order = top_k(case, k)
    test = case["test_csr"]
    n_items = case["I"].shape[0]  # type: ignore[attr-defined]
    hits_sum = min_sum = 0.0
    aps, ndcgs, aucs = [], [], []
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    for user in range(order.shape[0]):
        relevant = set(test[user].indices.tolist())  # type: ignore[index]
        if not relevant:
            continue
        rel = np.array([item in relevant for item in order[user]], dtype=float)
        cut = min(k, len(relevant))
        hits_sum += rel.sum()
        min_sum += cut
        aps.append((rel * np.cumsum(rel) / np.arange(1, k + 1)).sum() / cut)
        ndcgs.append((rel * discount).sum() / discount[:cut].sum())
        n_pos, n_neg = len(relevant), n_items - len(relevant)
        hits_before, misses = np.cumsum(rel), (1 - rel).sum()
        auc = (hits_before * (1 - rel)).sum() + (rel.sum() + n_pos) / 2 * (n_neg - misses)
        aucs.append(auc / (n_pos * n_neg))
    got = implicit_metrics(case, k)
    assert got["precision"] == pytest.approx(hits_sum / min_sum, abs=TOL)
    assert got["map"] == pytest.approx(np.mean(aps), abs=TOL)
    assert got["ndcg"] == pytest.approx(np.mean(ndcgs), abs=TOL)
    assert got["auc"] == pytest.approx(np.mean(aucs), abs=TOL)


@pytest.mark.parametrize("k", KS)
def test_ndcg_and_map_from_the_factors(case: dict[str, object], k: int) -> None:
    """implicit ndcg = ``ndcg@K`` (binary relevance), map = ``map(denominator=min)@K``, with
    receval scoring the same factors over the full catalog minus the training items."""
    got = implicit_metrics(case, k)
    model = receval.FactorModel(case["U"], case["I"])
    metrics = [f"ndcg@{k}", f"map(denominator=min)@{k}", f"map@{k}"]
    res = receval.evaluate(case["truth"], model, metrics, exclude=case["train"])
    assert res[f"ndcg@{k}"] == pytest.approx(got["ndcg"], abs=TOL)
    assert res[f"map(denominator=min)@{k}"] == pytest.approx(got["map"], abs=TOL)
    # trec_eval's map@K (divides by |R|) is not implicit's map once some |R| > K
    if k < 16:
        assert abs(res[f"map@{k}"] - got["map"]) > 1e-3
    assert res.counts.evaluated == case["truth"]["user"].n_unique()  # type: ignore[index]


@pytest.mark.parametrize("k", KS)
def test_ndcg_and_map_from_topk_table(case: dict[str, object], k: int) -> None:
    """The same numbers from ``receval.topk``'s table (what a hand-written loop would build)."""
    got = implicit_metrics(case, k)
    model = receval.FactorModel(case["U"], case["I"])
    table = receval.topk(model, k, exclude=case["train"])
    np.testing.assert_array_equal(
        table.sort("user", "rank")["item"].to_numpy().reshape(-1, k), top_k(case, k)
    )
    res = receval.evaluate(case["truth"], table, [f"ndcg@{k}", f"map(denominator=min)@{k}"])
    assert res[f"ndcg@{k}"] == pytest.approx(got["ndcg"], abs=TOL)
    assert res[f"map(denominator=min)@{k}"] == pytest.approx(got["map"], abs=TOL)


@pytest.mark.parametrize("k", KS)
def test_implicit_precision_is_not_precision_at_k(case: dict[str, object], k: int) -> None:
    """implicit's precision = Σ hits@K / Σ min(K, |R|) (a ratio of sums), not precision@K."""
    got = implicit_metrics(case, k)
    model = receval.FactorModel(case["U"], case["I"])
    res = receval.evaluate(case["truth"], model, [f"precision@{k}"], exclude=case["train"])
    sizes = case["truth"].group_by("user").len()  # type: ignore[attr-defined]
    per_user = res.per_user.join(sizes, on="user")
    hits = per_user[f"precision@{k}"] * k
    ratio = hits.sum() / per_user["len"].clip(upper_bound=k).sum()
    assert got["precision"] == pytest.approx(ratio, abs=TOL)
    if (sizes["len"] < k).any():  # then the two differ (here by far)
        assert abs(got["precision"] - res[f"precision@{k}"]) > 1e-3


@pytest.mark.parametrize(
    ("test_sizes", "k", "spelling"),
    [
        ((1, 5), 5, "recall(average=micro)@5"),  # every |R| <= K: Σ hits / Σ |R|
        ((1, 5), 10, "recall(average=micro)@10"),
        ((5, 12), 5, "precision@5"),  # every |R| >= K: Σ hits / (n·K)
        ((1, 1), 1, "precision@1"),
    ],
)
def test_implicit_precision_special_cases(
    test_sizes: tuple[int, int], k: int, spelling: str
) -> None:
    made = make_case(7, test_sizes=test_sizes)
    got = implicit_metrics(made, k)
    model = receval.FactorModel(made["U"], made["I"])
    res = receval.evaluate(made["truth"], model, [spelling], exclude=made["train"])
    assert res[spelling] == pytest.approx(got["precision"], abs=TOL)


@pytest.mark.parametrize("k", KS)
def test_implicit_auc_is_gauc_of_topk_then_one_tie(case: dict[str, object], k: int) -> None:
    """implicit's auc: the top K, then the rest of the catalog (training items included) in one
    tie at the bottom; ``gauc(weight=uniform)`` on that table. Not the full-ranking AUC."""
    got = implicit_metrics(case, k)
    model = receval.FactorModel(case["U"], case["I"])
    top = receval.topk(model, k, exclude=case["train"]).select("user", "item", "score")
    n_users, n_items = case["U"].shape[0], case["I"].shape[0]  # type: ignore[attr-defined]
    catalog = pl.DataFrame(
        {
            "user": np.repeat(np.arange(n_users), n_items),
            "item": np.tile(np.arange(n_items), n_users),
        }
    )
    bottom = float(top["score"].min()) - 1.0  # type: ignore[arg-type]
    rest = catalog.join(top, on=["user", "item"], how="anti").with_columns(
        score=pl.lit(bottom, dtype=pl.Float64)
    )
    table = pl.concat([top, rest])
    res = receval.evaluate(case["truth"], table, ["gauc(weight=uniform)"])
    assert res["gauc(weight=uniform)"] == pytest.approx(got["auc"], abs=TOL)
    full = receval.evaluate(case["truth"], model, ["gauc(weight=uniform)"], exclude=case["train"])
    assert abs(full["gauc(weight=uniform)"] - got["auc"]) > 1e-3
