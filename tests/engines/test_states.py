"""The global-state protocol (receval.families.states): a state merges exactly over random cuts
of its rows into blocks and reduces to the same value whole or part by part; and a new global
metric plugs into every in-process engine (local, sharded, streaming) through its provider and
its state alone, no engine code naming it."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval
from receval.engines.shard import evaluate_sharded
from receval.families.contract import Part, Prepared
from receval.families.exposure import ExposureCounts
from receval.families.pointwise import RatingRows, ScoreHistogram
from receval.families.providers import PARTS
from receval.families.states import GlobalState, counts_matrix, cut_rows, state_rows
from receval.metrics.registry import Metric, parse_metrics

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def reduced(state: GlobalState, n_parts: int | None) -> GlobalState:
    """``state`` reduced whole (``n_parts`` None), or its detached copy reduced over its rows
    cut into ``n_parts`` parts as a distributed engine cuts them."""
    if n_parts is None:
        state.reduce_whole()
        return state
    rows = state.rows()
    assert rows is not None
    small = state.detach()
    for step in range(small.passes()):
        pieces = [small.reduce_part(step, p) for p in cut_rows(rows, small.spread, n_parts)]
        small.absorb(step, pieces)
    return small


def merged(pieces: list[GlobalState], seed: int) -> GlobalState:
    order = list(range(len(pieces)))
    random.Random(seed).shuffle(order)
    state = pieces[order[0]]
    for j in order[1:]:
        state.merge(pieces[j])
    return state


def cuts(n: int, n_blocks: int, seed: int) -> list[np.ndarray]:
    """Rows ``0..n-1`` cut at random into ``n_blocks`` blocks (some may be empty)."""
    which = np.random.default_rng(seed).integers(0, n_blocks, n)
    return [np.flatnonzero(which == b) for b in range(n_blocks)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_parts", [None, 1, 3, 7])
def test_score_histogram_over_random_cuts(seed: int, n_parts: int | None) -> None:
    """auc and average_precision over rows from blocks merged in any order, reduced whole or
    over score ranges, equal receval.auc / average_precision on every row, bit for bit."""
    rng = np.random.default_rng(seed)
    n = 3000
    scores = rng.integers(0, 40, n) / 7.0 - 2.0  # ties, negative and zero scores
    scores[rng.random(n) < 0.05] = -0.0
    labels = (rng.random(n) < 0.3).astype(np.int8)
    high = (labels & (rng.random(n) < 0.5)).astype(np.int8)  # a stricter relevance
    ranked = {"auc": (1.0, labels), "average_precision": (1.0, labels), "auc(rel=2)": (2.0, high)}
    pieces: list[GlobalState] = [
        ScoreHistogram.of_metrics({k: (t, y[idx]) for k, (t, y) in ranked.items()}, scores[idx])
        for idx in cuts(n, 6, seed)
    ]
    state = reduced(merged(pieces, seed), n_parts)
    plan = parse_metrics(list(ranked))
    got = [state.finish(m, {}) for m in plan]
    want = [
        receval.auc(labels, scores),
        receval.average_precision(labels, scores),
        receval.auc(high, scores),
    ]
    assert got == want


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_parts", [None, 1, 4])
def test_rating_rows_over_random_cuts(seed: int, n_parts: int | None) -> None:
    """Rating metrics over rows from merged blocks equal receval.mae / rmse / r2 on all rows."""
    rng = np.random.default_rng(seed)
    n = 2000
    y = rng.integers(1, 6, n).astype(np.float64)
    pred = y + rng.normal(0, 1, n)
    names = ("mae", "rmse", "r2")
    pieces: list[GlobalState] = []
    for idx in cuts(n, 5, seed):
        piece = RatingRows.of_rows(y[idx], pred[idx])
        piece.metrics = names
        pieces.append(piece)
    state = reduced(merged(pieces, seed), n_parts)
    got = [state.finish(m, {}) for m in parse_metrics(list(names))]
    assert got == [receval.mae(y, pred), receval.rmse(y, pred), receval.r2(y, pred)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_parts", [None, 1, 5])
def test_exposure_counts_over_random_cuts(seed: int, n_parts: int | None) -> None:
    """coverage, gini and entropy from exposure merged over blocks (an item in several of
    them) equal the brute-force values of the summed exposure."""
    rng = np.random.default_rng(seed)
    n_items, catalog = 60, 80
    blocks = [rng.integers(0, 4, n_items) * (rng.random(n_items) < 0.5) for _ in range(5)]
    absent = rng.random(n_items) < 0.2
    pieces: list[GlobalState] = []
    for exposure in blocks:
        codes = np.flatnonzero(exposure)
        piece = ExposureCounts(("coverage", "gini", "entropy", "novelty"))
        piece.add(pl.Series([f"i{c}" for c in codes]), exposure[codes], absent[codes])
        pieces.append(piece)
    state = reduced(merged(pieces, seed), n_parts)
    info = {"catalog_size": catalog}
    got = [state.finish(m, info) for m in parse_metrics(["coverage", "gini", "entropy"])]
    summed = np.sum(blocks, axis=0)
    exposed = summed[summed > 0]
    every = np.sort(np.concatenate([summed, np.zeros(catalog - n_items)]))
    ranks = np.arange(1, catalog + 1)
    gini = float(np.sum((2 * ranks - catalog - 1) * every)) / (catalog * every.sum())
    p = exposed / exposed.sum()
    assert got[0] == exposed.size / catalog
    assert got[1] == pytest.approx(gini, abs=1e-12)
    assert got[2] == pytest.approx(float(-(p * np.log2(p)).sum()), abs=1e-12)
    details = {"not_in_train": -1}
    assert state.finish(parse_metrics(["novelty"])[0], details) is None
    assert details["not_in_train"] == int(np.count_nonzero(absent & (summed > 0)))


# ------------------------------------------------------------- a new global metric, plugged in


@dataclass
class DistinctItems(GlobalState):
    """A toy global metric: the number of distinct items recommended. Its rows are the item
    ids (hashed to parts); each part counts its distinct items, the parts add up."""

    metrics: tuple[str, ...] = ()
    items: pl.Series = field(default_factory=lambda: pl.Series("key", [], dtype=pl.String))
    found: int = -1

    def merge(self, other: DistinctItems) -> DistinctItems:
        self.items = pl.concat([self.items, other.items]).unique().sort()
        return self

    def rows(self) -> pl.DataFrame:
        return state_rows(self.items, np.ones((self.items.len(), 1), dtype=np.int64))

    def detach(self) -> DistinctItems:
        return DistinctItems(self.metrics, self.items.head(0))

    def passes(self) -> int:
        return 1

    def reduce_part(self, step: int, rows: pl.DataFrame) -> int:
        assert counts_matrix(rows, 1).min() == 1
        return int(rows["key"].n_unique())

    def absorb(self, step: int, pieces: list[Any]) -> None:
        self.found = sum(pieces)

    def finish(self, metric: Metric, info: dict[str, Any]) -> float:
        return float(self.found)


def distinct_items_part(plan: tuple[Metric, ...], prep: Prepared) -> Part:
    """The toy's provider, standing in for the beyond family's: one state for its metric."""
    items = prep.r_grp.frame[prep.item_col].cast(pl.String).unique().sort()
    state = DistinctItems(tuple(m.canonical for m in plan), items.alias("key"))
    return Part({}, None, {m.canonical: {} for m in plan}, states={"distinct": state})


@pytest.mark.parametrize("seed", range(3))
def test_a_new_global_metric_needs_only_its_state_and_provider(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """A global state unknown to every engine, returned by a provider: the local engine, the
    sharded scheme (rows cut in parts) and the streaming evaluator all merge and finish it
    to the brute-force value."""
    monkeypatch.setitem(PARTS, "beyond", distinct_items_part)
    rng = random.Random(seed)
    recs = {u: {f"i{rng.randrange(50)}": rng.random() for _ in range(4)} for u in range(40)}
    truth = {u: {f"i{rng.randrange(50)}": 1} for u in range(40)}
    want = float(len({i for listed in recs.values() for i in listed}))
    metric = "coverage@3"  # a registered name; its family's provider is now the toy's
    assert receval.evaluate(truth, recs, metric)[metric] == want
    for n_shards, n_ranges in ((1, 1), (3, 2), (7, 5)):
        got = evaluate_sharded(truth, recs, metric, n_shards=n_shards, n_ranges=n_ranges, seed=seed)
        assert got[metric] == want
    ev = receval.Evaluator(metric)
    users = list(recs)
    rng.shuffle(users)
    for block in (users[:10], users[10:25], users[25:]):
        ev.update({u: truth[u] for u in block}, {u: recs[u] for u in block})
    assert ev.compute()[metric] == want
