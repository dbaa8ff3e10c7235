"""receval.Evaluator (streaming, receval.engines.stream) equals receval.evaluate bit for bit,
for every registered metric, over random cuts of the users into blocks, merged evaluators and
sorted blocks that cut users in two; and its bad input raises the exact errors.

The data and the comparison are the shard tests' (tests/helpers/shard.py: ties, short lists,
users without recs or without relevant items, graded relevance, train with repeated rows, an
item table)."""

from __future__ import annotations

import json
import pickle
import random
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from helpers.optional import import_torch
from helpers.shard import DATA, TIES, assert_same, family_metrics, groups
from receval import InputError
from receval.cli import app
from receval.families.pointwise import ScoreHistogram
from receval.kernels.exact import total

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def blocks_of(
    truth: pl.DataFrame, recs: pl.DataFrame, n_blocks: int, seed: int
) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """Users cut at random into ``n_blocks`` blocks (some may be empty), every row of a user
    in its block, rows in input order."""
    users = pl.concat([truth["user"], recs["user"]]).unique().sort()
    rng = np.random.default_rng(seed)
    which = pl.DataFrame({"user": users, "__b": rng.integers(0, n_blocks, users.len())})
    t = truth.join(which, on="user", how="left", maintain_order="left")
    r = recs.join(which, on="user", how="left", maintain_order="left")
    return [
        (
            t.filter(pl.col("__b") == b).drop("__b"),
            r.filter(pl.col("__b") == b).drop("__b"),
        )
        for b in range(n_blocks)
    ]


def streamed(
    truth: pl.DataFrame, recs: pl.DataFrame, metrics: list[str], n_blocks: int, seed: int,
    **options: Any,
) -> receval.Result:  # fmt: skip
    ev = receval.Evaluator(metrics, **options)
    for t, r in blocks_of(truth, recs, n_blocks, seed):
        ev.update(t, r)
    return ev.compute()


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("n_blocks", [1, 4, 13])
def test_streamed_equals_evaluate(n_blocks: int, ties: str, ids: str) -> None:
    for name, (truth, recs, metrics, options) in groups(DATA[ids]).items():
        if name in ("classification", "rating") and ties != "expected":
            continue  # rows, not ranked lists: ties change nothing there
        given = {**options, "rating_range": (1.0, 5.0)} if name == "rating" else options
        local = receval.evaluate(truth, recs, metrics, ties=ties, **given)
        got = streamed(truth, recs, metrics, n_blocks, seed=n_blocks, ties=ties, **given)
        try:
            assert_same(got, local)
        except AssertionError as exc:
            raise AssertionError(f"group {name}: {exc}") from exc


@pytest.mark.parametrize("no_recs", ["zero", "skip"])
@pytest.mark.parametrize("seed", [0, 1])
def test_no_recs_policies_and_seeds(no_recs: str, seed: int) -> None:
    truth, recs, metrics, options = groups(DATA["str"])["ranking"]
    local = receval.evaluate(truth, recs, metrics, no_recs=no_recs, **options)
    assert_same(streamed(truth, recs, metrics, 6, seed, no_recs=no_recs, **options), local)


def test_one_user_a_block() -> None:
    truth, recs, metrics, options = groups(DATA["int"])["beyond_cosine"]
    users = pl.concat([truth["user"], recs["user"]]).unique()
    ev = receval.Evaluator(metrics, **options)
    for u in users.shuffle(seed=3):
        ev.update(truth.filter(pl.col("user") == u), recs.filter(pl.col("user") == u))
    assert ev.blocks == users.len()
    assert_same(ev.compute(), receval.evaluate(truth, recs, metrics, **options))


@pytest.mark.parametrize("group", ["ranking", "classification", "beyond_cosine"])
def test_merged_evaluators_equal_evaluate(group: str) -> None:
    truth, recs, metrics, options = groups(DATA["int"])[group]
    parts = blocks_of(truth, recs, 6, seed=5)
    evaluators = [receval.Evaluator(metrics, **options) for _ in range(3)]
    for j, (t, r) in enumerate(parts):
        evaluators[j % 3].update(t, r)
    # one evaluator travels through pickle, as from another process
    evaluators[1] = pickle.loads(pickle.dumps(evaluators[1]))
    merged = receval.Evaluator(metrics, **options).merge(evaluators[0])
    merged.merge(evaluators[1]).merge(evaluators[2])
    assert_same(merged.compute(), receval.evaluate(truth, recs, metrics, **options))


@pytest.mark.parametrize("block_rows", [1, 7, 50])
def test_sorted_blocks_may_cut_a_user(block_rows: int) -> None:
    truth, recs, metrics, options = groups(DATA["str"])["classification"]
    metrics = [*metrics, *family_metrics("ranking", (None, 5))]
    t = truth.with_row_index("__row").sort("user", "__row").drop("__row")
    r = recs.with_row_index("__row").sort("user", "__row").drop("__row")
    ev = receval.Evaluator(metrics, sorted_by_user=True, **options)
    # cut both sides into slices of block_rows rows: users straddle blocks
    n = max(t.height, r.height)
    t_users = t["user"]
    for start in range(0, n, block_rows):
        t_block = t.slice(start, block_rows)
        # recs rows of the users up to this truth block's last user, not yet sent
        upto = t_users[min(start + block_rows, t.height) - 1] if start < t.height else None
        r_block = r.filter(pl.col("user") <= upto) if upto is not None else r
        r = r.filter(pl.col("user") > upto) if upto is not None else r.head(0)
        ev.update(t_block, r_block)
    if r.height:
        ev.update(t.head(0), r)
    assert_same(ev.compute(), receval.evaluate(truth, recs, metrics, **options))


def test_a_user_in_two_blocks_raises() -> None:
    ev = receval.Evaluator(["ndcg@10"])
    ev.update({"u1": {"a": 1}, "u2": {"b": 1}}, {"u1": {"a": 0.5}})
    with pytest.raises(InputError) as exc:
        ev.update({"u2": {"c": 1}}, {"u2": {"c": 0.5}})
    assert str(exc.value) == (
        "1 user(s) of this block were in an earlier block, e.g. ['u2']; every block must hold "
        "all the rows of its users, or pass sorted_by_user=True when the rows arrive sorted "
        "by user."
    )


def test_unsorted_blocks_raise_when_declared_sorted() -> None:
    ev = receval.Evaluator(["ndcg@10"], sorted_by_user=True)
    ev.update({"u5": {"a": 1}, "u6": {"a": 1}}, {"u5": {"a": 0.5}, "u6": {"a": 0.5}})
    with pytest.raises(InputError) as exc:
        ev.update({"u1": {"a": 1}}, {"u1": {"a": 0.5}})
    assert str(exc.value) == (
        "sorted_by_user=True: this block starts at user 'u1', below user 'u5' of an earlier "
        "block; the rows must arrive sorted by user id."
    )


def test_merging_different_requests_raises() -> None:
    a = receval.Evaluator(["ndcg@10"])
    b = receval.Evaluator(["ndcg@5"])
    with pytest.raises(InputError, match="only evaluators made with the same arguments merge"):
        a.merge(b)
    with pytest.raises(InputError, match="merge takes an Evaluator; got dict"):
        a.merge({})  # type: ignore[arg-type]


def test_merging_overlapping_users_raises() -> None:
    a, b = receval.Evaluator(["mrr"]), receval.Evaluator(["mrr"])
    a.update({"u1": {"a": 1}}, {"u1": {"a": 0.5}})
    b.update({"u1": {"b": 1}}, {"u1": {"b": 0.5}})
    with pytest.raises(InputError, match=r"1 user\(s\) of this block were in an earlier block"):
        a.merge(b)


def test_nmae_needs_a_rating_range() -> None:
    with pytest.raises(InputError) as exc:
        receval.Evaluator(["mae", "nmae"])
    assert str(exc.value) == (
        "nmae needs rating_range=(r_min, r_max) when evaluating in blocks: the range observed "
        "in truth is known only after the last block."
    )


def test_compute_before_any_block_raises() -> None:
    with pytest.raises(InputError, match="no block was evaluated"):
        receval.Evaluator(["mrr"]).compute()


def test_bad_options_raise_as_evaluate() -> None:
    with pytest.raises(InputError, match="ties must be one of"):
        receval.Evaluator(["mrr"], ties="random")  # type: ignore[arg-type]
    with pytest.raises(receval.MetricError, match="unknown metric 'not_a_metric'"):
        receval.Evaluator(["not_a_metric"])
    with pytest.raises(InputError, match="sorted_by_user must be True or False"):
        receval.Evaluator(["mrr"], sorted_by_user="yes")  # type: ignore[arg-type]


def test_blocks_disagreeing_on_the_relevance_column_raise() -> None:
    ev = receval.Evaluator(["mrr"])
    ev.update(pl.DataFrame({"user": [1], "item": [2], "relevance": [1.0]}),
              pl.DataFrame({"user": [1], "item": [2], "score": [0.5]}))  # fmt: skip
    with pytest.raises(InputError, match="truth blocks disagree on the relevance column"):
        ev.update(pl.DataFrame({"user": [3], "item": [2]}),
                  pl.DataFrame({"user": [3], "item": [2], "score": [0.5]}))  # fmt: skip


def test_the_state_is_not_the_rows() -> None:
    """Per-user metrics keep one row per user; the rows of a block are not kept."""
    rng = random.Random(0)
    ev = receval.Evaluator(["ndcg@10", "recall@10", "mrr"])
    for b in range(20):
        users = range(b * 50, (b + 1) * 50)
        truth = {u: {rng.randrange(1000): 1 for _ in range(5)} for u in users}
        recs = {u: {i: rng.random() for i in rng.sample(range(1000), 100)} for u in users}
        ev.update(truth, recs)
    rows_bytes = 20 * 50 * 100 * 24  # the recs rows alone: user, item, score
    assert ev.state_bytes() < rows_bytes / 10
    assert ev.compute().per_user.height == 1000


def test_score_histogram_equals_sorting_the_rows() -> None:
    """The AUC pair count and AP terms of the histogram state, merged from pieces in any
    order, equal those of receval.auc / average_precision on every row."""
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 30, 2000) / 7.0
    labels = (rng.random(2000) < 0.3).astype(np.int64)
    bits = labels | ((rng.random(2000) < 0.5).astype(np.int64) << 1)
    cut = np.sort(rng.choice(2000, 5, replace=False))
    pieces = [
        ScoreHistogram.of_rows(s, b, 2)
        for s, b in zip(np.split(scores, cut), np.split(bits, cut), strict=True)
    ]
    state = pieces[3]
    for p in [*pieces[:3], *pieces[4:]]:
        state.merge(p)
    scored, ap = state.totals()
    for j in range(2):
        y = (bits >> j) & 1
        twice, n_pos, n_neg = scored[j]
        assert (n_pos, n_neg) == (int(y.sum()), int((1 - y).sum()))
        assert twice / (2.0 * n_pos * n_neg) == receval.auc(y, scores)
        assert total(ap[j]) / n_pos == receval.average_precision(y, scores)


# ------------------------------------------------------------------- evaluate(engine="stream")


@pytest.mark.parametrize("ties", ["expected", "first", "trec"])
@pytest.mark.parametrize("block_memory", ["2KiB", "40KiB", "1GiB"])
def test_stream_engine_on_parquet_files_equals_evaluate(
    tmp_path: Any, block_memory: str, ties: str
) -> None:
    """Parquet files cut into blocks of users on disk (several blocks at 2 KiB: about 10 rows
    a block) give evaluate's Result; ties="first" shows that rows keep their order."""
    for name, (truth, recs, metrics, options) in groups(DATA["str"]).items():
        if name in ("classification", "rating") and ties != "expected":
            continue
        given = {**options, "rating_range": (1.0, 5.0)} if name == "rating" else options
        t_path, r_path = tmp_path / f"{name}_truth.parquet", tmp_path / f"{name}_recs.parquet"
        truth.write_parquet(t_path)
        recs.write_parquet(r_path)
        local = receval.evaluate(truth, recs, metrics, ties=ties, **given)
        got = receval.evaluate(
            t_path, r_path, metrics, ties=ties, engine="stream", block_memory=block_memory,
            **given,
        )  # fmt: skip
        try:
            assert_same(got, local)
        except AssertionError as exc:
            raise AssertionError(f"group {name}: {exc}") from exc


def test_stream_engine_on_csv_and_frames(tmp_path: Any) -> None:
    truth, recs, metrics, _ = groups(DATA["int"])["ranking"]
    truth.write_csv(tmp_path / "t.csv")
    recs.rename({"user": "uid"}).write_csv(tmp_path / "r.csv")
    local = receval.evaluate(
        tmp_path / "t.csv", tmp_path / "r.csv", metrics, columns={"recs": {"user": "uid"}}
    )
    got = receval.evaluate(
        tmp_path / "t.csv", tmp_path / "r.csv", metrics, columns={"recs": {"user": "uid"}},
        engine="stream", block_memory="3KiB",
    )  # fmt: skip
    assert_same(got, local)
    frames = receval.evaluate(truth, recs, metrics, engine="stream", block_memory="3KiB")
    assert_same(frames, receval.evaluate(truth, recs, metrics))


def test_stream_engine_refuses_a_model() -> None:
    model = receval.FactorModel(np.eye(2), np.eye(2))
    with pytest.raises(InputError, match="engine='stream' takes recommendation tables"):
        receval.evaluate({0: {1: 1}}, model, "ndcg@10", engine="stream")


def test_cli_engine_stream(tmp_path: Any) -> None:
    truth, recs, metrics, _ = groups(DATA["str"])["ranking"]
    truth.write_parquet(tmp_path / "t.parquet")
    recs.write_parquet(tmp_path / "r.parquet")
    picked = metrics[:6]
    args = ["evaluate", "--truth", str(tmp_path / "t.parquet"), "--recs",
            str(tmp_path / "r.parquet"), "--format", "json"]  # fmt: skip
    for m in picked:
        args += ["-m", m]
    local = CliRunner().invoke(app, args)
    streamed = CliRunner().invoke(app, [*args, "--engine", "stream", "--block-memory", "4096"])
    assert local.exit_code == 0, local.output
    assert streamed.exit_code == 0, streamed.output
    assert json.loads(streamed.stdout)["metrics"] == json.loads(local.stdout)["metrics"]
    assert json.loads(local.stdout)["metrics"] == receval.evaluate(truth, recs, picked).means


# ------------------------------------------------------------------- update_scores (training)


Batches = tuple[np.ndarray, list[str], list[int], pl.DataFrame, dict[str, list[int]]]


def score_batches(seed: int) -> Batches:
    """Integer scores (many ties) of 30 users x 40 items, truth, and excluded items."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, (30, 40)).astype(np.float32)
    users = [f"u{j}" for j in range(30)]
    items = [int(x) for x in rng.choice(1000, 40, replace=False)]
    rows = []
    exclude: dict[str, list[int]] = {}
    for j, u in enumerate(users):
        picked = rng.choice(40, 6, replace=False)
        for c in picked[:3]:
            rows.append((u, items[c], float(rng.integers(0, 3))))
        exclude[u] = [items[c] for c in picked[3:]]
        if j == 0:
            scores[j, picked[4]] = -np.inf  # an excluded item scored -inf, and one kept below
    truth = pl.DataFrame(rows, schema=["user", "item", "relevance"], orient="row")
    return scores, users, items, truth, exclude


def full_table(
    scores: np.ndarray, users: list[str], items: list[int], exclude: dict[str, list[int]]
) -> pl.DataFrame:
    """Every (user, item) score except the excluded ones, in catalog order per user."""
    rows = [
        (u, items[c], float(scores[j, c]))
        for j, u in enumerate(users)
        for c in range(len(items))
        if items[c] not in exclude.get(u, [])
    ]
    return pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_update_scores_equals_evaluate_on_the_full_table(backend: str, ties: str) -> None:
    scores, users, items, truth, exclude = score_batches(1)
    before = scores.copy()
    cut = ["ndcg@5", "recall@10", "precision@3", "hit_rate@1", "map@10", "mrr@5"]
    whole = [*cut, "mrr", "map", "r_precision", "ndcg"]
    as_given: Any = scores
    if backend == "torch":
        as_given = import_torch().from_numpy(scores)
    table = full_table(scores, users, items, exclude)
    for metrics, k in ((cut, None), (whole, "all"), (cut, 12)):
        ev = receval.Evaluator(metrics, ties=ties)
        for lo in range(0, 30, 8):  # batches of 8 users
            batch = users[lo : lo + 8]
            ev.update_scores(
                batch, as_given[lo : lo + 8], truth.filter(pl.col("user").is_in(batch)),
                item_ids=items, exclude=exclude, k=k,
            )  # fmt: skip
        want = receval.evaluate(truth, table, metrics, ties=ties)
        got = ev.compute()
        assert got.means == want.means, (metrics, k)
        assert_same(got, want)
    np.testing.assert_array_equal(scores, before)  # the scores are left as given


def test_update_scores_bad_input() -> None:
    scores, users, items, truth, _ = score_batches(2)
    ev = receval.Evaluator(["ndcg@5", "mrr"])
    with pytest.raises(
        InputError, match="mrr has no cutoff: its value needs each user's whole list"
    ):
        ev.update_scores(users, scores, truth, item_ids=items)
    ev = receval.Evaluator(["ndcg@5"])
    shape = r"scores must be a \(batch x items\) matrix with one row per user \(29 users\)"
    with pytest.raises(InputError, match=shape + r"; got shape \(30, 40\)"):
        ev.update_scores(users[:29], scores, truth, item_ids=items)
    with pytest.raises(
        InputError, match=r"item_ids has 39 ids; expected one per score column \(40\)"
    ):
        ev.update_scores(users, scores, truth, item_ids=items[:39])
    with pytest.raises(InputError, match=r"k must be an integer >= 1, 'all' or None; got 0"):
        ev.update_scores(users, scores, truth, item_ids=items, k=0)
    with pytest.raises(
        InputError, match=r"truth has 3 row\(s\) of users not in this batch, e.g. \['u29'\]"
    ):
        ev.update_scores(users[:29], scores[:29], truth, item_ids=items)
    bad = scores.copy()
    bad[3, 3] = np.nan
    with pytest.raises(InputError, match="scores hold NaN"):
        ev.update_scores(users, bad, truth, item_ids=items)


def test_coverage_without_train_or_items() -> None:
    """The catalog of truth and recs, built block by block when neither train nor items is
    given (the first block once raised on an empty list of ids)."""
    truth = {1: {"a": 1}, 2: {"c": 1}}
    recs = {1: {"a": 0.5, "b": 0.2}, 2: {"a": 0.3, "d": 0.1}}
    ev = receval.Evaluator(["coverage@1", "gini@2"])
    ev.update({1: truth[1]}, {1: recs[1]})
    ev.update({2: truth[2]}, {2: recs[2]})
    got = ev.compute()
    want = receval.evaluate(truth, recs, ["coverage@1", "gini@2"])
    assert got["coverage@1"] == want["coverage@1"] == 0.25
    assert got["gini@2"] == want["gini@2"]
    assert got.details["coverage@1"]["catalog_size"] == 4


# ------------------------------------------------- per-user values that read the catalog's size

SIZED = ["pop_serendipity@3", "ee_loss@3", "ee_disparity@3", "ee_relevance@3", "coverage@3"]


def test_catalog_sized_metrics_need_the_catalog_before_the_first_block() -> None:
    """pop_serendipity and ee_* give each user a value that reads the catalog's size: blocks
    that arrive one at a time cannot know it, so the Evaluator asks for the item table."""
    data = DATA["int"]
    with pytest.raises(
        InputError,
        match=r"^\['pop_serendipity@3', 'ee_loss@3', 'ee_disparity@3', 'ee_relevance@3'\] give "
        r"each user a value that depends on the catalog's size, which is not known while "
        r"blocks arrive: pass items=",
    ):
        receval.Evaluator(SIZED, train=data["train"])
    receval.Evaluator(["coverage@3", "ndcg@3"], train=data["train"])  # the size comes last


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("n_blocks", [4, 13])
def test_catalog_sized_metrics_stream_with_the_item_table(ids: str, n_blocks: int) -> None:
    data = DATA[ids]
    truth, recs, train = data["truth"], data["recs"], data["train"]
    catalog = pl.concat([truth["item"], recs["item"], train["item"]]).unique().to_frame()
    local = receval.evaluate(truth, recs, SIZED, train=train)  # truth+recs+train: the same
    assert local.details["ee_loss@3"]["catalog_size"] == catalog.height
    got = streamed(truth, recs, SIZED, n_blocks, seed=n_blocks, train=train, items=catalog)
    for name in SIZED:
        assert got[name] == local[name], name
    assert got.per_user.equals(local.per_user)


@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("order", ["shuffled", "sorted"])
def test_stream_engine_reads_the_catalog_first(tmp_path: Any, ids: str, order: str) -> None:
    """engine="stream" without an item table: the catalog (truth + recs + train) is read in a
    pass of its own before the blocks, through the partition pass and the sorted read alike,
    so that the per-user values equal evaluate's (each block's own items gave a smaller
    catalog before)."""
    data = DATA[ids]
    truth, recs, train = data["truth"], data["recs"], data["train"]
    if order == "sorted":
        truth, recs = (
            truth.sort("user", maintain_order=True),
            recs.sort("user", maintain_order=True),
        )
    t_path, r_path = tmp_path / "t.parquet", tmp_path / "r.parquet"
    truth.write_parquet(t_path, row_group_size=50)
    recs.write_parquet(r_path, row_group_size=50)
    local = receval.evaluate(truth, recs, SIZED, train=train)
    got = receval.evaluate(
        t_path, r_path, SIZED, train=train, engine="stream", block_memory="2KiB",
        sorted_by_user=order == "sorted",
    )  # fmt: skip
    for name in SIZED:
        assert got[name] == local[name], name
    assert got.per_user.equals(local.per_user)
    assert (
        got.details["pop_serendipity@3"]["catalog_size"]
        == local.details["pop_serendipity@3"]["catalog_size"]
    )
