"""Expected exposure from several sampled rankings per user (``sample_col``; Diaz et al.
2020, the sampled estimate: an item's exposure is its mean attention over the user's
samples), against the brute force of tests/helpers/fairness.py (plain Python from the
paper's definition), a hand-worked example, the deterministic metric (one sample) and the
tie-aware expectation (every order of each tie group as a sample); bad input.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from helpers import fairness as F
from receval.cli import app
from receval.engines.shard import evaluate_sharded
from receval.kernels import beyond as BK

EE = ("ee_loss", "ee_disparity", "ee_relevance")


def per_user(res: receval.Result, name: str) -> dict[Any, float]:
    col = receval.parse_metric(name).canonical
    return dict(zip(res.per_user["user"].to_list(), res.per_user[col].to_list(), strict=True))


def sampled_frame(samples: dict[Hashable, list[list[Hashable]]], *, by_rank: bool) -> pl.DataFrame:
    """Rows (user, item, sample, score or rank) of each user's sampled orders, best first."""
    rows = []
    for user, orders in samples.items():
        for s, order in enumerate(orders):
            for j, item in enumerate(order, start=1):
                rows.append((user, item, f"s{s}", float(j) if by_rank else 100.0 - j))
    order_col = "rank" if by_rank else "score"
    return pl.DataFrame(rows, schema=["user", "item", "sample", order_col], orient="row")


# ------------------------------------------------------------------- hand-worked example


def test_two_samples_worked_by_hand() -> None:
    """Catalog a, b, c; a relevant; samples (a, b) and (b, a), K = 2, patience 1/2: a and b
    each get (1 + 1/2) / 2 = 3/4. Ideal: a 1, b and c share position 2: 1/4 each.
    EE-D = 2 (3/4)^2 = 9/8; EE-R = 3/4 + 3/4 * 1/4 = 15/16;
    EE-L = (3/4 - 1)^2 + (3/4 - 1/4)^2 + (0 - 1/4)^2 = 3/8."""
    recs = sampled_frame({"u": [["a", "b"], ["b", "a"]]}, by_rank=False)
    items = pl.DataFrame({"item": ["a", "b", "c"]})
    names = [f"{n}@2" for n in EE]
    res = receval.evaluate({"u": {"a": 1}}, recs, names, items=items, sample_col="sample")
    assert res["ee_disparity@2"] == 9 / 8
    assert res["ee_relevance@2"] == 15 / 16
    assert res["ee_loss@2"] == 3 / 8


# ------------------------------------------------------------- against the brute force


def random_samples(seed: int, str_ids: bool) -> tuple[dict[Any, list[list[Any]]], dict[Any, Any]]:
    """Users with 1 to 4 sampled orders of one length (different item sets), truth with
    relevant items in and out of the samples, users without truth."""
    rng = random.Random(seed)
    pool = [f"i{j}" if str_ids else j for j in range(12)]
    samples: dict[Any, list[list[Any]]] = {}
    truth: dict[Any, dict[Any, int]] = {}
    for u in range(9):
        user = f"u{u}" if str_ids else u
        length = rng.randint(1, 6)
        samples[user] = [rng.sample(pool, length) for _ in range(rng.randint(1, 4))]
        if u % 4 != 3:
            truth[user] = {i: rng.choice([1, 2]) for i in rng.sample(pool, rng.randint(1, 4))}
    truth["x" if str_ids else 99] = {pool[0]: 1}  # a truth user without recs
    return samples, truth


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("by_rank", [False, True])
def test_equals_brute_force(seed: int, k: int | None, by_rank: bool) -> None:
    samples, truth = random_samples(seed, str_ids=bool(seed % 2))
    pool = sorted({i for orders in samples.values() for o in orders for i in o}, key=str)
    pool += sorted({i for t in truth.values() for i in t} - set(pool), key=str)
    items = pl.DataFrame({"item": pool})
    at = "" if k is None else f"@{k}"
    names = [f"ee_loss{at}", f"ee_disparity{at}", f"ee_relevance(patience=0.8, rel=2){at}"]
    rank = {"rank_col": "rank"} if by_rank else {}
    res = receval.evaluate(
        truth, sampled_frame(samples, by_rank=by_rank), names, items=items, sample_col="sample",
        **rank,
    )  # fmt: skip
    got = [per_user(res, n) for n in names]
    catalog = set(pool)
    assert set(got[0]) == set(samples)
    for user, orders in samples.items():
        relevant = set(truth.get(user, {}))
        loss, disparity, _ = F.ee(F.expected_exposure(orders, k), relevant, catalog, k, 0.5)
        grade2 = {i for i, r in truth.get(user, {}).items() if r >= 2}
        exposure = F.expected_exposure(orders, k, patience=0.8)
        _, _, relevance = F.ee(exposure, grade2, catalog, k, 0.8)
        assert math.isclose(got[0][user], loss, rel_tol=1e-12, abs_tol=1e-12), user
        assert math.isclose(got[1][user], disparity, rel_tol=1e-12), user
        assert math.isclose(got[2][user], relevance, rel_tol=1e-12, abs_tol=1e-15), user
    assert res["ee_disparity" + at] == pytest.approx(
        math.fsum(got[1].values()) / len(got[1]), rel=1e-15
    )


# ------------------------------------------------ one sample, and every order of the ties


@pytest.mark.parametrize("ties", ["expected", "first", "trec", "optimistic"])
@pytest.mark.parametrize("str_ids", [False, True])
@pytest.mark.parametrize("k", [None, 2])
def test_one_sample_is_the_ranking_bit_for_bit(ties: str, str_ids: bool, k: int | None) -> None:
    """Integer scores (ties), users' rows interleaved, a sample column with one value: the
    same per-user values as the deterministic metric, bit for bit."""
    rng = np.random.default_rng(7)
    n = 400
    users = rng.integers(0, 40, n)
    items = rng.integers(0, 30, n)
    frame = pl.DataFrame({"user": users, "item": items, "score": rng.integers(0, 4, n)})
    frame = frame.unique(["user", "item"], keep="first", maintain_order=True)
    truth = pl.DataFrame({"user": rng.integers(0, 45, 150), "item": rng.integers(0, 30, 150)})
    truth = truth.unique(maintain_order=True)
    if str_ids:
        frame = frame.with_columns(pl.col("user", "item").cast(pl.String))
        truth = truth.with_columns(pl.col("user", "item").cast(pl.String))
    at = "" if k is None else f"@{k}"
    names = [f"{n}{at}" for n in EE]
    det = receval.evaluate(truth, frame, names, ties=ties)  # type: ignore[arg-type]
    one = receval.evaluate(
        truth, frame.with_columns(sample=pl.lit(3)), names, ties=ties,  # type: ignore[arg-type]
        sample_col="sample",
    )  # fmt: skip
    assert one.per_user.equals(det.per_user)
    for name in names:
        assert one[name] == det[name]


@pytest.mark.parametrize("k", [None, 1, 2, 3])
def test_every_order_of_the_ties_is_the_expectation(k: int | None) -> None:
    """A list with tie groups, given as one sample per order of its tie groups, is the
    tie-aware expectation (ties="expected") of the list, to rounding."""
    truth = {"u": {"b": 1, "e": 1}, "v": {"x": 1}}
    recs = {"u": {"a": 3, "b": 2, "c": 2, "d": 2, "e": 1, "f": 1}, "v": {"x": 1, "y": 1}}
    at = "" if k is None else f"@{k}"
    names = [f"{n}{at}" for n in EE]
    expected = receval.evaluate(truth, recs, names)
    samples = {u: F.orders([(u, i, s) for i, s in r.items()])[u] for u, r in recs.items()}
    assert len(samples["u"]) == 12
    res = receval.evaluate(truth, sampled_frame(samples, by_rank=True), names,
                           rank_col="rank", sample_col="sample")  # fmt: skip
    for name in names:
        want, got = per_user(expected, name), per_user(res, name)
        for user in recs:
            assert math.isclose(got[user], want[user], rel_tol=1e-13, abs_tol=1e-15), name


def test_random_samples_converge_to_the_expectation() -> None:
    """Uniformly shuffled tie groups: the sampled estimate approaches ties="expected" (the
    mean of 4000 samples, to within 0.01; the exact value differs from the first sample's)."""
    truth = {"u": {"b": 1, "e": 1}}
    scores = {"a": 3, "b": 2, "c": 2, "d": 2, "e": 1, "f": 1, "g": 1}
    rng = random.Random(3)
    orders = []
    for _ in range(4000):
        order: list[str] = []
        for value in (3, 2, 1):
            group = [i for i, s in scores.items() if s == value]
            rng.shuffle(group)
            order += group
        orders.append(order)
    names = [f"{n}@3" for n in EE]
    exact = receval.evaluate(truth, {"u": scores}, names)
    res = receval.evaluate(truth, sampled_frame({"u": orders}, by_rank=True), names,
                           rank_col="rank", sample_col="sample")  # fmt: skip
    first = receval.evaluate(truth, sampled_frame({"u": orders[:1]}, by_rank=True), names,
                             rank_col="rank", sample_col="sample")  # fmt: skip
    for name in names:
        assert abs(res[name] - exact[name]) < 0.01, name
    assert abs(first["ee_disparity@3"] - exact["ee_disparity@3"]) > 0.05


def test_rank_gaps_only_order_the_sample() -> None:
    """Ranks 1, 3, 7 order a sample as 1, 2, 3 do (as for one ranking, docs/fairness.md)."""
    gaps = pl.DataFrame({"user": ["u"] * 6, "item": list("abcbca"), "sample": [0] * 3 + [1] * 3,
                         "rank": [1, 3, 7, 2, 5, 9]})  # fmt: skip
    dense = gaps.with_columns(rank=pl.Series([1, 2, 3, 1, 2, 3]))
    a = receval.evaluate({"u": {"a": 1}}, gaps, list(EE), rank_col="rank", sample_col="sample")
    b = receval.evaluate({"u": {"a": 1}}, dense, list(EE), rank_col="rank", sample_col="sample")
    assert a.means == b.means


# ------------------------------------------------------------------------------ bad input


def bad_frame() -> pl.DataFrame:
    return pl.DataFrame({"user": ["u", "u", "u", "v"], "item": ["a", "b", "a", "a"],
                         "sample": [1, 1, 2, 1], "score": [0.9, 0.5, 0.4, 0.3]})  # fmt: skip


def test_item_twice_in_a_sample_names_the_rows() -> None:
    recs = bad_frame().with_columns(item=pl.Series(["a", "a", "a", "a"]))
    with pytest.raises(receval.InputError, match=r"appears twice in the same sample") as err:
        receval.evaluate({"u": {"a": 1}}, recs, "ee_loss", sample_col="sample")
    assert "row 0: user='u', item='a', sample=1" in str(err.value)
    assert "row 1:" in str(err.value)


def test_samples_of_different_lengths_name_the_user() -> None:
    with pytest.raises(receval.InputError, match=r"'u' \(1 to 2 items\)"):
        receval.evaluate({"u": {"a": 1}}, bad_frame(), "ee_loss", sample_col="sample")


def test_missing_or_null_sample_column() -> None:
    recs = bad_frame().filter(pl.col("sample") == 1)
    with pytest.raises(receval.InputError, match=r"missing column 'draw' \(sample_col"):
        receval.evaluate({"u": {"a": 1}}, recs, "ee_loss", sample_col="draw")
    nulls = recs.with_columns(sample=pl.Series([1, None, 1]))
    with pytest.raises(receval.InputError, match=r"null value\(s\) in column 'sample'"):
        receval.evaluate({"u": {"a": 1}}, nulls, "ee_loss", sample_col="sample")


def test_other_metrics_are_refused_by_name() -> None:
    recs = bad_frame().filter(pl.col("sample") == 1)
    with pytest.raises(receval.MetricError, match=r"not \['ndcg@10', 'awrf\(by=g\)@5'\]"):
        receval.evaluate({"u": {"a": 1}}, recs, ["ee_loss", "ndcg@10", "awrf(by=g)@5"],
                         sample_col="sample")  # fmt: skip


def test_engines_without_sampled_rankings_are_refused() -> None:
    """Model sources, sampling= and segments= (the Spark engine takes sampled rankings:
    tests/engines/test_spark_samples.py)."""
    recs = bad_frame().filter(pl.col("sample") == 1)
    model = receval.FactorModel(np.ones((1, 2)), np.ones((2, 2)), user_ids=["u"],
                                item_ids=["a", "b"])  # fmt: skip
    with pytest.raises(receval.InputError, match=r"model source .* one deterministic ranking"):
        receval.evaluate({"u": {"a": 1}}, model, "ee_loss@1", sample_col="sample")
    with pytest.raises(receval.InputError, match=r"not with sampling="):
        receval.evaluate({"u": {"a": 1}}, recs, "ee_loss", sample_col="sample",
                         sampling=receval.Sampling(10))  # fmt: skip
    with pytest.raises(receval.InputError, match=r"not evaluated by segment"):
        receval.evaluate({"u": {"a": 1}}, recs, "ee_loss", sample_col="sample",
                         segments={"u": "s1"})  # fmt: skip
    ev = receval.Evaluator(
        "ee_loss@1", sample_col="sample", items=pl.DataFrame({"item": ["a", "b"]})
    )
    with pytest.raises(receval.InputError, match=r"update_scores gives one deterministic"):
        ev.update_scores(["u"], np.ones((1, 2)), {"u": {0: 1}})
    with pytest.raises(receval.MetricError, match=r"not \['ndcg@1'\]"):
        receval.Evaluator(["ee_loss@1", "ndcg@1"], sample_col="sample")
    with pytest.raises(receval.InputError, match=r"score_col and sample_col both name"):
        receval.evaluate({"u": {"a": 1}}, recs, "ee_loss", sample_col="score")


def test_permutations_helper_is_complete() -> None:
    """The tie orders used above: a first, then the 3! orders of b, c, d."""
    got = F.orders([("u", "a", 3), ("u", "b", 2), ("u", "c", 2), ("u", "d", 2)])["u"]
    assert sorted(map(tuple, got)) == sorted(("a", *p) for p in itertools.permutations("bcd"))


# ------------------------------------------------------------------------------ engines


def big_case(str_ids: bool) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """300 users, 1 to 5 samples of 1 to 8 items each (integer scores: ties), rows of the
    users interleaved."""
    rng = random.Random(11)
    rows, truth = [], []
    for u in range(300):
        length = rng.randint(1, 8)
        for s in range(rng.randint(1, 5)):
            for item in rng.sample(range(40), length):
                rows.append((u, item, s, float(rng.randint(0, 3))))
        truth += [(u, i) for i in rng.sample(range(40), rng.randint(0, 4))]
    rng.shuffle(rows)
    recs = pl.DataFrame(rows, schema=["user", "item", "sample", "score"], orient="row")
    t = pl.DataFrame(truth, schema=["user", "item"], orient="row")
    items = pl.DataFrame({"item": range(45)})
    if str_ids:
        recs = recs.with_columns(pl.col("user", "item").cast(pl.String))
        t = t.with_columns(pl.col("user", "item").cast(pl.String))
        items = items.with_columns(pl.col("item").cast(pl.String))
    return t, recs, items


@pytest.mark.parametrize("str_ids", [False, True])
@pytest.mark.parametrize("ties", ["expected", "first"])
def test_stream_and_shards_equal_local_bit_for_bit(str_ids: bool, ties: str) -> None:
    t, recs, items = big_case(str_ids)
    names = ["ee_loss@3", "ee_disparity", "ee_relevance(patience=0.7)@2"]
    opts: dict[str, Any] = {"ties": ties, "sample_col": "sample"}
    local = receval.evaluate(t, recs, names, items=items, **opts)
    stream = receval.evaluate(t, recs, names, items=items, engine="stream", block_memory=20_000,
                              **opts)  # fmt: skip
    sharded = evaluate_sharded(t, recs, names, items=items, n_shards=5, **opts)
    without_items = receval.evaluate(t, recs, names, **opts)  # the catalog: truth + recs
    sharded_without = evaluate_sharded(t, recs, names, n_shards=5, **opts)
    # train=: recs_in_train counts each (user, item) pair of the samples once
    train = t.with_columns(pl.col("user").cast(pl.String).cast(t.schema["user"]))
    with_train = receval.evaluate(t, recs, names, items=items, train=train, **opts)
    sharded_train = evaluate_sharded(t, recs, names, items=items, train=train, n_shards=5, **opts)
    assert with_train.counts.recs_in_train
    assert sharded_train.counts == with_train.counts
    assert sharded_train.per_user.equals(with_train.per_user)
    for other, base in ((stream, local), (sharded, local), (sharded_without, without_items)):
        assert other.per_user.equals(base.per_user)
        assert other.means == base.means
        assert other.counts == base.counts
    ev = receval.Evaluator(names, items=items, **opts)
    users = recs["user"].unique().sort()
    for part in (users.head(100), users.slice(100)):
        ev.update(t.filter(pl.col("user").is_in(part.implode())),
                  recs.filter(pl.col("user").is_in(part.implode())))  # fmt: skip
    assert ev.compute().per_user.equals(local.per_user)
    # integer and text ids, scores and ranks: one compiled signature of the sampling pass
    assert len(BK._samples_chunk.signatures) == 1


# ---------------------------------------------------------------------------- command line


def test_command_line_flag_and_config_key(tmp_path: Path) -> None:
    """--sample-col and the config key sample_col give the library's result; another metric
    with them fails naming it."""
    recs = sampled_frame({"u": [["a", "b", "c"], ["c", "a", "b"]], "v": [["b", "a", "d"]]},
                         by_rank=True)  # fmt: skip
    recs.write_csv(tmp_path / "recs.csv")
    pl.DataFrame({"user": ["u", "v"], "item": ["a", "d"]}).write_csv(tmp_path / "truth.csv")
    lib = receval.evaluate(tmp_path / "truth.csv", tmp_path / "recs.csv", ["ee_loss@2"],
                           rank_col="rank", sample_col="sample")  # fmt: skip
    base = ["evaluate", "--truth", str(tmp_path / "truth.csv"), "--recs",
            str(tmp_path / "recs.csv"), "--rank-col", "rank", "--format", "json"]  # fmt: skip
    runner = CliRunner()
    done = runner.invoke(app, [*base, "-m", "ee_loss@2", "--sample-col", "sample"])
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["metrics"]["ee_loss@2"] == lib["ee_loss@2"]
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"sample_col": "sample", "metrics": ["ee_loss@2"]}))
    done = runner.invoke(app, [*base, "--config", str(config)])
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["metrics"]["ee_loss@2"] == lib["ee_loss@2"]
    done = runner.invoke(app, [*base, "-m", "ndcg@2", "--sample-col", "sample"])
    assert done.exit_code != 0
    assert "not ['ndcg@2']" in done.stderr
