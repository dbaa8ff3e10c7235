"""Lists cut at a common length (issue #29, item 4): a top-K table read as a whole ranking.

``mrr`` from a top-100 table is ``mrr@100`` of the model's ranking: a relevant item ranked
past 100 counts as never recommended. receval says so (a warning and ``result.details``)
when the lists look cut, and stays quiet when they hold every relevant item (each user's
candidates ranked in full), when their lengths vary, or when every metric names a cutoff.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval
from receval.engines.shard import evaluate_sharded

N_USERS, N_ITEMS, K = 120, 200, 15
RNG = np.random.default_rng(29)
MODEL = receval.FactorModel(RNG.normal(size=(N_USERS, 6)), RNG.normal(size=(N_ITEMS, 6)))
TRUTH = pl.DataFrame({"user": np.arange(N_USERS), "item": RNG.integers(0, N_ITEMS, N_USERS)})
TOP = receval.topk(MODEL, K)
CUT = "look cut at 15"


def run(*args: Any, **kwargs: Any) -> tuple[receval.Result, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = receval.evaluate(*args, **kwargs)
    return res, [str(w.message) for w in caught]


def brute_missing(truth: pl.DataFrame, recs: pl.DataFrame) -> int:
    """Users whose list has K items and misses their relevant item (a slow count)."""
    lists = {u: set(g["item"].to_list()) for (u,), g in recs.group_by("user")}
    return sum(
        1 for u, i in truth.iter_rows() if u in lists and len(lists[u]) == K and i not in lists[u]
    )


def test_a_top_k_table_says_its_whole_list_metrics_are_at_k() -> None:
    res, said = run(TRUTH, TOP, ["mrr", "map", "ndcg@10", "mrr@15"])
    assert len([s for s in said if CUT in s]) == 1  # one warning for every metric
    assert "mrr, map are really mrr@15, map@15" in said[0]
    assert res["mrr"] == res["mrr@15"]
    missing = brute_missing(TRUTH, TOP)
    want = {"lists_cut_at": K, "lists_at_cut": N_USERS, "lists": N_USERS,
            "at_cut_missing_relevant": missing}  # fmt: skip
    assert 0 < missing < N_USERS
    assert res.details["mrr"] == want and res.details["map"] == want
    assert "ndcg@10" not in res.details and "mrr@15" not in res.details
    # the model's exact value over the whole ranking is higher, and says nothing
    exact, said = run(TRUTH, MODEL, ["mrr"])
    assert exact["mrr"] > res["mrr"]
    assert not [s for s in said if "look cut" in s] and "mrr" not in exact.details


def test_the_warning_points_at_the_callers_line() -> None:
    with pytest.warns(UserWarning, match=CUT) as record:
        receval.evaluate(TRUTH, TOP, "mrr")
    assert [w.filename for w in record if CUT in str(w.message)] == [__file__]


def test_lists_holding_every_relevant_item_are_not_cut() -> None:
    # each user's sampled candidates (their truth item among them) ranked in full
    cand = pl.concat([
        TRUTH,
        pl.DataFrame({"user": np.repeat(np.arange(N_USERS), 9),
                      "item": RNG.integers(0, N_ITEMS, 9 * N_USERS)}),
    ]).unique(maintain_order=True)  # fmt: skip
    recs = cand.with_columns(score=pl.Series(RNG.normal(size=cand.height)))
    res, said = run(TRUTH, recs, ["mrr", "map"])
    assert not [s for s in said if "look cut" in s] and res.details == {}


def test_lists_of_varied_lengths_are_not_cut() -> None:
    # most lists shorter than the longest: not one common length
    short = TOP.filter(pl.col("rank") <= pl.col("user") % 15 + 1)
    res, said = run(TRUTH, short, ["mrr"])
    assert not [s for s in said if "look cut" in s] and "mrr" not in res.details


def test_only_metrics_with_a_cutoff_say_nothing() -> None:
    res, said = run(TRUTH, TOP, ["mrr@15", "ndcg@5", "recall@20"])
    assert not [s for s in said if "look cut" in s] and res.details == {}


def test_sharded_and_streaming_engines_record_the_same_details() -> None:
    local, _ = run(TRUTH, TOP, ["mrr", "recall"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sharded = evaluate_sharded(TRUTH, TOP, ["mrr", "recall"], n_shards=5, seed=3)
    assert len([w for w in caught if CUT in str(w.message)]) == 1
    assert sharded.details == local.details and sharded.means == local.means
    ev = receval.Evaluator(["mrr", "recall"])
    for lo in range(0, N_USERS, 17):  # blocks of whole users; some blocks' longest is shorter
        users = pl.col("user").is_between(lo, lo + 16)
        ev.update(
            TRUTH.filter(users),
            TOP.filter(users & ((pl.col("user") != lo) | (pl.col("rank") <= 3))),
        )
    with pytest.warns(UserWarning, match="look cut at 15"):
        streamed = ev.compute()
    want, _ = run(
        TRUTH, TOP.filter((pl.col("user") % 17 != 0) | (pl.col("rank") <= 3)), ["mrr", "recall"]
    )
    assert streamed.details == want.details
    assert streamed.details["mrr"]["lists_at_cut"] == N_USERS - len(range(0, N_USERS, 17))


def test_a_few_lists_of_one_length_are_chance() -> None:
    few = TOP.filter(pl.col("user") < receval.families.ranking.ListLengths.MIN_LISTS - 1)
    res, said = run(TRUTH.filter(pl.col("user") < 9), few, ["mrr"])
    assert not [s for s in said if "look cut" in s] and res.details == {}
    more = TOP.filter(pl.col("user") < 10)
    res, said = run(TRUTH.filter(pl.col("user") < 10), more, ["mrr"])
    assert [s for s in said if "so mrr is really mrr@15" in s]
