"""Engine internals: hash keys and their exact fallback, chunking, grouping, id kinds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import receval
from receval.data import layout as _layout
from receval.data import tables as _tables
from receval.families import ranking as _ranking

METRICS = ["ndcg@10", "map@20", "mrr", "recall@5", "precision@3", "hit_rate@2", "r_precision"]


def _data(n_users: int, seed: int, n_items: int = 60) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Random truth and recs with many ties; item ids 100.. all have three digits."""
    rng = np.random.default_rng(seed)
    t_rows, r_rows = [], []
    for u in range(n_users):
        items = 100 + rng.choice(n_items, size=rng.integers(1, 8), replace=False)
        t_rows += [(u, int(i), float(rng.integers(0, 4))) for i in items]
        recs = 100 + rng.choice(n_items, size=rng.integers(1, 25), replace=False)
        r_rows += [(u, int(i), float(rng.integers(0, 5))) for i in recs]
    truth = pl.DataFrame(t_rows, schema=["user", "item", "relevance"], orient="row")
    recs = pl.DataFrame(r_rows, schema=["user", "item", "score"], orient="row")
    return truth, recs


def _as_strings(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col("user").cast(pl.String), pl.col("item").cast(pl.String))


@pytest.mark.parametrize("ties", ["expected", "first", "trec", "optimistic", "pessimistic"])
def test_string_ids_equal_integer_ids(ties: str) -> None:
    truth, recs = _data(300, seed=1)
    by_int = receval.evaluate(truth, recs, METRICS, ties=ties)  # type: ignore[arg-type]
    # ids of equal width compare as text like as numbers, so even the trec tiebreak agrees
    by_str = receval.evaluate(_as_strings(truth), _as_strings(recs), METRICS, ties=ties)  # type: ignore[arg-type]
    assert by_int.means == by_str.means
    # per_user rows are sorted by id: "10" < "2" as text, so sort the text ids as numbers
    as_int = by_str.per_user.with_columns(pl.col("user").cast(pl.Int64)).sort("user")
    assert as_int.equals(by_int.per_user)


def _patch_item_keys(
    monkeypatch: pytest.MonkeyPatch, keys: Callable[[pl.Series], np.ndarray]
) -> None:
    """The ranking family's item keys made by ``keys``: as arrays, and as the columns that
    the grouping moves with the rows."""
    monkeypatch.setattr(_ranking, "item_keys", keys)
    monkeypatch.setattr(_tables, "item_key_column", lambda s: pl.Series(s.name, keys(s)))


def test_hash_collisions_fall_back_to_exact_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Colliding string keys (forced here) must never change a result."""
    truth, recs = _data(200, seed=2)
    expected = receval.evaluate(_as_strings(truth), _as_strings(recs), METRICS)
    calls = []

    def colliding(series: pl.Series) -> np.ndarray:
        calls.append(series.dtype)
        # every string id gets one of 3 keys: false matches and false duplicates everywhere
        return np.ascontiguousarray(series.str.len_bytes().to_numpy() % 3, dtype=np.int64)

    _patch_item_keys(monkeypatch, colliding)
    got = receval.evaluate(_as_strings(truth), _as_strings(recs), METRICS)
    assert calls, "the hash-key path was not exercised"
    assert got.means == expected.means


def test_false_match_without_duplicates_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """One truth item and one different recommended item share a key: verified, then redone."""
    truth = pl.DataFrame({"user": ["u"], "item": ["a"], "relevance": [1.0]})
    recs = pl.DataFrame({"user": ["u", "u"], "item": ["b", "c"], "score": [2.0, 1.0]})

    def keys(series: pl.Series) -> np.ndarray:
        mapping = {"a": 7, "b": 7, "c": 8}
        return np.array([mapping[x] for x in series.to_list()], dtype=np.int64)

    _patch_item_keys(monkeypatch, keys)
    res = receval.evaluate(truth, recs, ["hit_rate@2", "mrr"])
    assert res["hit_rate@2"] == 0.0
    assert res["mrr"] == 0.0


def test_trec_ties_compare_integer_ids_as_text() -> None:
    """trec_eval compares ids as strings: 10 sorts before 9, so 9 wins a tie."""
    truth = pl.DataFrame({"user": [1], "item": [9]})
    recs = pl.DataFrame({"user": [1, 1], "item": [10, 9], "score": [1.0, 1.0]})
    assert receval.evaluate(truth, recs, "mrr", ties="trec")["mrr"] == 1.0
    truth = pl.DataFrame({"user": [1], "item": [10]})
    assert receval.evaluate(truth, recs, "mrr", ties="trec")["mrr"] == 0.5


def test_real_duplicates_with_string_ids_still_raise() -> None:
    truth = pl.DataFrame({"user": ["u"], "item": ["a"]})
    recs = pl.DataFrame({"user": ["u", "u"], "item": ["a", "a"], "score": [2.0, 1.0]})
    with pytest.raises(receval.InputError, match=r"recs has 2 duplicate \(user, item\)"):
        receval.evaluate(truth, recs, "mrr")


def test_many_chunks_equal_one_user_at_a_time() -> None:
    """Users spread over many parallel chunks score as when evaluated alone."""
    truth, recs = _data(1500, seed=3)
    res = receval.evaluate(truth, recs, METRICS)
    for user in (0, 257, 731, 1499):
        alone = receval.evaluate(
            truth.filter(pl.col("user") == user), recs.filter(pl.col("user") == user), METRICS
        )
        row = res.per_user.filter(pl.col("user") == user).drop("user").row(0)
        assert row == tuple(alone.per_user.drop("user").row(0))


def test_ungrouped_input_equals_grouped_input() -> None:
    truth, recs = _data(400, seed=4)
    grouped = receval.evaluate(truth, recs, METRICS, ties="first")
    # interleave users but keep each user's own row order: "first" must not change
    within = pl.int_range(pl.len()).over("user")
    shuffled = recs.with_columns(within.alias("k")).sort("k", "user", maintain_order=True)
    shuffled = shuffled.drop("k")
    assert not shuffled["user"].equals(recs["user"])
    again = receval.evaluate(truth.reverse(), shuffled, METRICS, ties="first")
    assert grouped.means == again.means


def test_group_by_user_keeps_order_within_user() -> None:
    frame = pl.DataFrame({"user": [2, 1, 2, 1], "item": [10, 11, 12, 13]})
    grouped = _layout.group_by_user(frame, "user")
    assert grouped.keys.to_list() == [1, 2]
    assert grouped.frame["item"].to_list() == [11, 13, 10, 12]
    assert grouped.offsets.tolist() == [0, 2, 4]


def test_long_list_with_large_tie_groups() -> None:
    """A user with thousands of recommendations in big tie groups (the argsort path)."""
    n = 5000
    items = np.arange(n)
    scores = (items // 100).astype(float)  # tie groups of 100
    truth = pl.DataFrame({"user": 1, "item": items[::50], "relevance": 1.0})
    recs = pl.DataFrame({"user": 1, "item": items, "score": scores})
    res = {
        ties: receval.evaluate(truth, recs, ["map", "ndcg@1000"], ties=ties)  # type: ignore[arg-type]
        for ties in ("optimistic", "expected", "pessimistic")
    }
    for name in ("map", "ndcg@1000"):
        assert res["optimistic"][name] >= res["expected"][name] >= res["pessimistic"][name]
    # each tie group of 100 holds 2 relevant items; optimistic puts them first in every group
    # group g (0-based, from the top) fills positions 100g+1..100g+100; its relevant items sit
    # at 100g+1 and 100g+2 with (2g+1) and (2g+2) relevant items up to them
    groups = n // 100
    ap = sum((2 * g + 1) / (100 * g + 1) + (2 * g + 2) / (100 * g + 2) for g in range(groups))
    assert res["optimistic"]["map"] == pytest.approx(ap / (2 * groups), rel=1e-12)


def test_many_metrics_cost_one_pass() -> None:
    """Ten metrics at several cutoffs in one call equal ten separate calls."""
    truth, recs = _data(300, seed=5)
    many = [
        "ndcg@1", "ndcg@5", "ndcg(gain=exp)@5", "map@5", "map(denominator=min)@5", "mrr@3",
        "recall(average=micro)@5", "fbeta(beta=2)@4", "cg@3", "dcg@3", "arhr@4", "f1@2",
    ]  # fmt: skip
    together = receval.evaluate(truth, recs, many)
    for name in many:
        assert together[name] == receval.evaluate(truth, recs, name)[name]


@pytest.mark.parametrize(
    "offset", [0, -50, 10**15 - 30, 2**62], ids=["small", "negative", "near-limit", "huge"]
)
def test_trec_integer_ids_rank_like_their_text(offset: int) -> None:
    """Both text-order paths (direct keys below 10^15, ranking otherwise) equal string ids."""
    truth, recs = _data(250, seed=6)
    # item ids of mixed widths (offset + 0..159) so text order differs from numeric order
    shift = pl.col("item") - 100 + offset
    truth, recs = truth.with_columns(shift), recs.with_columns(shift)
    by_int = receval.evaluate(truth, recs, METRICS, ties="trec")
    by_str = receval.evaluate(_as_strings(truth), _as_strings(recs), METRICS, ties="trec")
    assert by_int.means == by_str.means


def test_text_order_keys_match_python_string_order() -> None:
    from receval.kernels.ranking import TEXT_KEY_LIMIT, text_order_keys

    rng = np.random.default_rng(7)
    values = np.concatenate(
        [rng.integers(0, TEXT_KEY_LIMIT, 3000), rng.integers(0, 2000, 3000), [0, 9, 10, 99, 100]]
    )
    keys = text_order_keys(values)
    assert keys.max() < 2**53
    by_key = [str(v) for v in values[np.argsort(keys, kind="stable")]]
    assert by_key == sorted(str(v) for v in values)


def test_expected_ties_are_bitwise_independent_of_row_order() -> None:
    """Fractional gains in a tie are summed in one canonical order, whatever the input order."""
    rng = np.random.default_rng(8)
    n = 400
    truth = pl.DataFrame(
        {"user": np.repeat(np.arange(20), 20), "item": np.tile(np.arange(20), 20),
         "relevance": rng.choice([0.1, 0.2, 0.7, 1.3, 2.9], n)}
    )  # fmt: skip
    recs = truth.select("user", "item", score=pl.lit(rng.integers(0, 3, n)).cast(pl.Float64))
    metrics = ["ndcg@7", "dcg@5", "cg@3", "ndcg(gain=exp)"]
    base = receval.evaluate(truth, recs, metrics, relevance_threshold=0.5)
    for seed in range(5):
        shuffled = receval.evaluate(
            truth.sample(fraction=1.0, shuffle=True, seed=seed),
            recs.sample(fraction=1.0, shuffle=True, seed=seed + 10),
            metrics,
            relevance_threshold=0.5,
        )
        assert shuffled.per_user.equals(base.per_user)
        assert shuffled.means == base.means


@pytest.mark.filterwarnings("ignore:no user is evaluated by recall")
def test_each_kernel_compiles_one_signature(tmp_path: Path) -> None:
    """Inputs of every origin reach the kernels with one type each (no recompiles)."""
    from receval.kernels import ranking as _kernels

    truth, recs = _data(50, seed=9)
    ranked = recs.with_columns(rank=pl.col("score").rank("ordinal", descending=True).over("user"))
    recs.write_parquet(tmp_path / "recs.parquet")
    calls = [
        (truth, recs, {}),
        (truth.to_pandas(), recs.to_pandas(), {"ties": "trec"}),
        (truth.to_arrow(), tmp_path / "recs.parquet", {"ties": "first"}),
        (_as_strings(truth), _as_strings(recs), {"ties": "trec"}),
        (truth, ranked, {"rank_col": "rank"}),
        (truth.drop("relevance"), recs.with_columns(pl.col("score").cast(pl.Int32)), {}),
        (truth, recs, {"ties": "optimistic"}),
    ]
    for t, r, kwargs in calls:
        receval.evaluate(t, r, [*METRICS, "ndcg(gain=exp)@3", "recall(rel=2)@4"], **kwargs)
    for kernel in (_kernels._duplicate_groups, _kernels._text_order_keys):
        # at most one: _duplicate_groups is not even called when every recs user is in truth
        assert len(kernel.signatures) <= 1, (kernel, kernel.signatures)
    # _rank_chunk: one signature for every input origin; its last argument, cascade, is None,
    # or an array when a cascade metric is asked for (another test of the session may have)
    signatures = _kernels._rank_chunk.signatures
    assert len({sig[:-1] for sig in signatures}) == 1, signatures
    assert {str(sig[-1]) for sig in signatures} <= {"none", "array(int64, 1d, C)"}
    assert len(signatures) <= 2
