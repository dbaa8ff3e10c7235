"""Evaluator from several threads, and merges of evaluators that were not made alike (issue
29, item 8: 8 threads on disjoint users lost updates; merge accepted another train or item
table and gave a coverage that evaluate does not)."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import polars as pl
import pytest

import receval

METRICS = ["ndcg@10", "recall@5", "mrr", "auc", "coverage@5"]
N_THREADS = 8
USERS_PER_BLOCK = 30


def _blocks(seed: int) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """N_THREADS blocks of disjoint users, small integer scores (ties)."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(N_THREADS):
        users = np.arange(b * USERS_PER_BLOCK, (b + 1) * USERS_PER_BLOCK)
        t_users = np.repeat(users, 3)
        truth = pl.DataFrame({"user": t_users, "item": rng.integers(0, 40, t_users.size)}).unique(
            maintain_order=True
        )
        r_users = np.repeat(users, 12)
        recs = pl.DataFrame(
            {
                "user": r_users,
                "item": rng.integers(0, 40, r_users.size),
                "score": rng.integers(0, 5, r_users.size).astype(np.float64),
            }
        ).unique(["user", "item"], maintain_order=True)
        out.append((truth, recs))
    return out


@pytest.mark.parametrize("run", range(20))
def test_updates_from_eight_threads_lose_nothing(run: int) -> None:
    blocks = _blocks(run)
    ev = receval.Evaluator(METRICS)
    start = threading.Barrier(N_THREADS)
    errors: list[BaseException] = []

    def work(truth: pl.DataFrame, recs: pl.DataFrame) -> None:
        try:
            start.wait()
            ev.update(truth, recs)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=block) for block in blocks]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    got = ev.compute()
    truth = pl.concat([t for t, _ in blocks])
    recs = pl.concat([r for _, r in blocks])
    assert ev.blocks == N_THREADS
    assert got.per_user.height == N_THREADS * USERS_PER_BLOCK
    for name in ("ndcg@10", "recall@5", "mrr"):
        assert got[name] == pytest.approx(got.per_user[name].mean(), rel=1e-12)
    assert got == receval.evaluate(truth, recs, METRICS)


def test_the_same_user_from_two_threads_raises_once() -> None:
    truth = pl.DataFrame({"user": [1], "item": [1]})
    recs = pl.DataFrame({"user": [1], "item": [1], "score": [1.0]})
    ev = receval.Evaluator(["recall@1"])
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def work() -> None:
        start.wait()
        try:
            ev.update(truth, recs)
        except receval.RecevalError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(errors) == 3
    assert all("earlier block" in str(e) for e in errors)
    assert ev.blocks == 1


def test_a_locked_evaluator_still_pickles_and_merges() -> None:
    one, two = receval.Evaluator(["recall@1"]), receval.Evaluator(["recall@1"])
    one.update({1: {1: 1}}, {1: {1: 0.5}})
    two.update({2: {2: 1}}, {2: {3: 0.5}})
    copied = pickle.loads(pickle.dumps(two))
    copied.update({3: {3: 1}}, {3: {3: 0.5}})  # the copy's lock works
    empty = receval.Evaluator(["recall@1"]).merge(one)  # deep-copies one's state
    assert empty.compute() == one.compute()
    assert one.merge(copied).compute()["recall@1"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------ merge: the same request

TRUTH = {0: {0: 1}, 1: {1: 1}}
RECS = {0: {0: 0.9, 1: 0.1}, 1: {1: 0.9, 2: 0.1}}


def _filled(users: list[int], **options: object) -> receval.Evaluator:
    ev = receval.Evaluator(["coverage@2", "recall@1"], **options)  # type: ignore[arg-type]
    ev.update({u: TRUTH[u] for u in users}, {u: RECS[u] for u in users})
    return ev


def test_merge_refuses_another_item_table() -> None:
    small = pl.DataFrame({"item": list(range(3))})
    large = pl.DataFrame({"item": list(range(15))})
    with pytest.raises(receval.InputError, match="items"):
        _filled([0], items=small).merge(_filled([1], items=large))
    # the same table, another object: merges
    same = pl.DataFrame({"item": list(range(3))})
    merged = _filled([0], items=small).merge(_filled([1], items=same))
    assert merged.compute() == receval.evaluate(
        TRUTH, RECS, ["coverage@2", "recall@1"], items=small
    )


@pytest.mark.filterwarnings("ignore:.*already has in train")
def test_merge_refuses_another_train() -> None:
    train_a = pl.DataFrame({"user": [0, 1], "item": [2, 2]})
    train_b = pl.DataFrame({"user": [0, 1], "item": [5, 6]})
    with pytest.raises(receval.InputError, match="train"):
        _filled([0], train=train_a).merge(_filled([1], train=train_b))
    with pytest.raises(receval.InputError, match="train"):
        _filled([0], train=train_a).merge(_filled([1]))
    # an evaluator with no block yet is checked too: it would take the other's state
    with pytest.raises(receval.InputError, match="train"):
        receval.Evaluator(["coverage@2", "recall@1"], train=train_a).merge(
            _filled([1], train=train_b)
        )
    same = train_a.clone()
    merged = _filled([0], train=train_a).merge(_filled([1], train=same))
    want = receval.evaluate(TRUTH, RECS, ["coverage@2", "recall@1"], train=train_a)
    assert merged.compute() == want
