"""Compile the Numba kernels before the tests run, two processes side by side.

Numba compiles each kernel on its first call, on one core, and caches the machine code next to
the source (``cache=True``; ranx caches its own in site-packages). In a fresh clone the
compiling is the larger part of the README's test command. ``tests/conftest.py`` therefore
starts ``python -m helpers.warmup PART`` for each of :data:`PARTS` at the start of the session
(both at once, on a machine's two cores) and waits for them: each exercises its share of the
kernels on tiny data, the caches are written, and the tests then load the compiled code
instead of compiling it, one test at a time, on one core. A warm cache makes each part a few
seconds of imports.

The workloads are plain calls of the public API; none checks a value (the tests do that). A
call that fails is reported on the part's standard error and does not stop the others: a kernel
it misses simply compiles in the test that first needs it, as without a warm-up.
"""

from __future__ import annotations

import sys
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

PARTS = ("tables", "models")


def _tables() -> list[Callable[[], Any]]:
    """The table engines: every ranking, pointwise and beyond metric, both id types, the
    streaming engine, the split and audit, the comparison's statistics."""
    import polars as pl

    import receval
    from receval.data.datasets import make_interactions, make_items, make_train

    calls: list[Callable[[], Any]] = []
    specs = receval.list_metrics()
    ranking = [f"{s.name}@5" if s.cutoff else s.name for s in specs if s.family == "ranking"]
    ranking += ["ndcg(gain=exp)@5", "map", "mrr", "ndcg", "precision", "recall"]
    pointwise = [s.name for s in specs if s.family in ("classification", "rating")]
    beyond = [_beyond_metric(s) for s in specs if s.family == "beyond"]
    for ids in ("int", "str"):
        data = make_interactions(60, n_items=80, n_recs=12, ids=ids, seed=1)  # type: ignore[arg-type]
        train = make_train(60, n_items=80, mean_items=5, ids=ids, seed=2)  # type: ignore[arg-type]
        items = make_items(80, dim=4, ids=ids, seed=3)  # type: ignore[arg-type]
        truth = data.truth.with_columns(pl.col("relevance").clip(0, 4))  # err's default scale
        recs = data.recs
        probabilities = recs.with_columns(pl.col("score").clip(0, 1))  # logloss's
        for ties in ("expected", "first", "trec", "optimistic", "pessimistic"):
            calls.append(
                lambda t=truth, r=recs, ties=ties: receval.evaluate(t, r, ranking, ties=ties)
            )
        calls.append(lambda t=truth, r=probabilities: receval.evaluate(t, r, pointwise))
        for metric in beyond:  # one by one: each names the inputs it needs
            calls.append(
                lambda t=truth, r=recs, m=metric, tr=train, it=items: receval.evaluate(
                    t, r, m, train=tr, items=it, item_features="embedding"
                )
            )
        calls.append(lambda t=truth, r=recs: receval.evaluate(t, r, ranking, engine="stream"))
        calls.append(lambda tr=train: receval.split(tr, "random", fraction=0.2, time_col=None))
        stamped = train.with_columns(pl.int_range(pl.len()).alias("timestamp"))
        calls.append(lambda tr=stamped: receval.split(tr, "leave_one_out"))
    base = make_interactions(60, n_items=80, n_recs=12, seed=1)
    other = make_interactions(60, n_items=80, n_recs=12, seed=1, signal=0.5)
    calls.append(
        lambda: receval.compare(
            base.truth, {"a": base.recs, "b": other.recs}, ["ndcg@5", "recall@5"],
            n_resamples=50, n_permutations=50,
        )
    )  # fmt: skip
    return calls


def _beyond_metric(spec: Any) -> str:
    """``spec`` at K = 5, its categories (if it reads any) the demo items' ``genre``."""
    names = {p.name for p in spec.params}
    params = ["by=genre"] if "by" in names else []
    if "group" in names:
        params.append("group=g0")
    if "reference" in names:
        params.append("reference=g1")
    text = f"{spec.name}({', '.join(params)})" if params else spec.name
    return f"{text}@5" if spec.cutoff else text


def _models() -> list[Callable[[], Any]]:
    """The model engine (factors, scores with ties, exclude, candidates, sampled metrics),
    top-K lists, and ranx's kernels (the reference tests'): about as long as the tables'
    part from an empty cache (measured 92 s against 27 s with ranx on the other side)."""
    import numpy as np

    import receval
    from receval.data.datasets import make_interactions, make_train

    calls: list[Callable[[], Any]] = []
    rng = np.random.default_rng(0)
    data = make_interactions(60, n_items=80, n_recs=12, seed=1)
    train = make_train(60, n_items=80, mean_items=5, seed=2)
    users, items = np.arange(60), np.arange(80)
    factors = receval.FactorModel(
        rng.normal(size=(60, 4)), rng.normal(size=(80, 4)), user_ids=users, item_ids=items
    )
    binary = rng.integers(0, 2, (140, 4)).astype(np.float64)  # tied scores
    rounded = receval.FactorModel(binary[:60], binary[60:], user_ids=users, item_ids=items)
    metrics = ["ndcg@5", "recall@5", "map", "mrr", "precision@5", "hit_rate@5", "gauc", "rmse",
               "coverage@5", "novelty@5"]  # fmt: skip
    for model in (factors, rounded):
        for ties in ("expected", "first", "trec", "optimistic", "pessimistic"):
            calls.append(
                lambda m=model, ties=ties: receval.evaluate(
                    data.truth, m, metrics, ties=ties, exclude=train, train=train
                )
            )
        calls.append(lambda m=model: receval.topk(m, 5, exclude=train))
        calls.append(
            lambda m=model: receval.evaluate(
                data.truth,
                m,
                ["ndcg@5", "recall@5"],
                sampling=receval.Sampling(negatives=20, correction="rescale"),
            )
        )
    calls.append(
        lambda: receval.evaluate(data.truth, factors, metrics, candidates=items[:40], train=train)
    )
    calls.append(_ranx)
    return calls


def _ranx() -> None:
    try:
        import ranx
    except ImportError:
        return
    qrels = {f"q{q}": {f"d{d}": 1 + (d % 2) for d in range(q % 4 + 1)} for q in range(6)}
    run = {f"q{q}": {f"d{d}": 1.0 / (d + 1) for d in range(6)} for q in range(6)}
    names = [f"{m}@{k}" for m in ("precision", "recall", "f1", "hit_rate", "mrr", "map", "ndcg",
             "ndcg_burges", "dcg", "dcg_burges") for k in (1, 3, 5, 10, 20)]  # fmt: skip
    names += ["precision", "recall", "f1", "hit_rate", "mrr", "map", "map@100", "ndcg",
              "ndcg_burges", "r-precision", "rbp.5", "precision@5-l2", "mrr-l2"]  # fmt: skip
    for return_mean in (True, False):
        ranx.evaluate(
            ranx.Qrels(qrels), ranx.Run(run), names, return_mean=return_mean,
            make_comparable=True,
        )  # fmt: skip


def run(part: str) -> int:
    """Run one part's calls; returns how many failed (each reported on stderr)."""
    calls = {"tables": _tables, "models": _models}[part]()
    failed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in calls:
            try:
                call()
            except Exception:  # reported, never fatal: the tests check the code
                failed += 1
                print(traceback.format_exc(limit=-1), file=sys.stderr)
    return failed


def main() -> None:
    start = time.perf_counter()
    part = sys.argv[1]
    failed = run(part)
    print(f"warm-up {part}: {time.perf_counter() - start:.1f} s, {failed} call(s) failed")


if __name__ == "__main__":
    main()
