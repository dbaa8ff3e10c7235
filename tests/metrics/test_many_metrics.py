"""Many metrics in one request (issue 19, points 5 and 7): the cost is linear in the number
of metrics, many cutoffs give the values of each cutoff alone, ``metric_at_k`` bounds an
integer ``ks`` and checks its type."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval import InputError
from receval.cli import app
from receval.comparison.report import best_models
from receval.datasets import make_interactions
from receval.plot import MAX_KS

TRUTH = {"u1": {"a": 1, "b": 2}, "u2": {"c": 1}, "u3": {"a": 1, "d": 3}}
RECS = {"u1": {"a": 0.9, "x": 0.8, "b": 0.1}, "u2": {"x": 0.5, "c": 0.5}, "u3": {"d": 0.3}}
RUNS = {"m1": RECS, "m2": {"u1": {"b": 0.9, "a": 0.2}, "u2": {"c": 1.0}, "u3": {"y": 0.4}}}
PNG = b"\x89PNG\r\n\x1a\n"


def _best_time(call: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def test_evaluate_cost_is_linear_in_the_number_of_metrics() -> None:
    """8 times the metrics cost about 8 times as much (the per-user frame used to be scanned
    once per metric: 2,000 -> 16,000 metrics took 29 times as long)."""

    def run(n: int) -> Callable[[], Any]:
        metrics = [f"ndcg@{k}" for k in range(1, n + 1)]
        return lambda: receval.evaluate(TRUTH, RECS, metrics)

    run(2_000)()  # warm-up: kernels loaded, first allocations done
    small = _best_time(run(2_000), repeat=3)
    large = _best_time(run(16_000), repeat=2)
    assert large / small < 16, (small, large)  # linear: ~8, quadratic: ~64


def test_many_cutoffs_equal_each_cutoff_alone() -> None:
    """Every metric of a long request (interleaved gains and thresholds, so the kernel's
    sorted ideal gains and the threshold and gain tables switch often) equals the same metric
    evaluated alone, mean and per-user values, bit for bit."""
    data = make_interactions(200, n_recs=30, seed=3)
    families = ["ndcg", "ndcg(gain=exp)", "dcg(gain={1: 1, 2: 3, 3: 7, 4: 15, 5: 31})",
                "recall(rel=2)", "map", "precision(rel=3)", "mrr"]  # fmt: skip
    metrics = [f"{f}@{k}" for k in range(1, 121) for f in families]
    res = receval.evaluate(data.truth, data.recs, metrics, no_recs="skip")
    assert res.metrics == tuple(receval.parse_metric(m).canonical for m in metrics)
    for k in (1, 2, 7, 30, 31, 79, 80, 120):  # around the longest recs (30) and truth (79)
        for f in families:
            name = receval.parse_metric(f"{f}@{k}").canonical
            alone = receval.evaluate(data.truth, data.recs, name, no_recs="skip")
            assert res[name] == alone[name], name
            assert_frame_equal(
                res.per_user.select("user", name).drop_nulls(),
                alone.per_user.select("user", name).drop_nulls(),
                check_exact=True,
            )


def test_result_lookup_by_canonical_and_other_spellings() -> None:
    res = receval.evaluate(TRUTH, RECS, [f"recall(rel=2)@{k}" for k in range(1, 501)])
    assert res["recall(rel=2)@7"] == res["RECALL(rel=2.0) @ 7"] == res["r(rel=2)@7"]
    with pytest.raises(KeyError, match=re.escape("'recall@7' (recall@7) was not evaluated")):
        res["recall@7"]


def test_compare_with_many_cutoffs_equals_compare_with_few() -> None:
    """The rows of a comparison do not depend on the other metrics compared (the user axis is
    now joined once for every metric): users evaluated by one model only, nulls from a
    per-metric threshold, global and micro-averaged metrics."""
    data = make_interactions(150, n_recs=15, seed=1)
    other = make_interactions(150, n_recs=15, seed=2).recs.filter(pl.col("user") % 3 != 0)
    runs = {"a": data.recs, "b": other}
    many = [f"{f}@{k}" for k in range(1, 41) for f in ("ndcg", "recall(rel=3)")]
    extra = ["mrr", "recall(average=micro)@10", "auc"]
    few = ["ndcg@3", "recall(rel=3)@40", "mrr", "recall(average=micro)@10", "auc"]
    options: dict[str, Any] = {"no_recs": "skip", "n_resamples": 200, "baseline": "b"}
    big = receval.compare(data.truth, runs, many + extra, test="wilcoxon", **options)
    small = receval.compare(data.truth, runs, few, test="wilcoxon", **options)
    chosen = big.table.filter(pl.col("metric").is_in(few)).drop("p_adjusted", "significant")
    expected = small.table.drop("p_adjusted", "significant")
    order = ["model", "metric"]
    assert_frame_equal(chosen.sort(order), expected.sort(order), check_exact=True)
    assert big.table.height == 2 * len(many + extra)
    best = best_models(big)
    assert set(best) == set(big.metrics)
    assert big.to_markdown().count("\n") > len(big.models)


@pytest.mark.parametrize(
    "ks",
    [2.0, True, np.bool_(True), 0, -3, np.int64(-1), [], "10", b"1", [1, 2.0], [True], [0, 2],
     None, np.array(3.0), np.array(5)],
)  # fmt: skip
def test_metric_at_k_rejects_bad_ks(ks: object) -> None:
    msg = "ks must be an integer N >= 1 or a non-empty list of integers >= 1; got "
    with pytest.raises(InputError, match="^" + re.escape(msg) + ".+[.]$"):
        receval.plot.metric_at_k(TRUTH, RUNS, "ndcg", ks=ks)  # type: ignore[arg-type]


@pytest.mark.parametrize(("ks", "shown"), [(2.0, "2.0"), (True, "True"), (-3, "-3"), ([], "[]"),
                                           ("10", "'10'"), ([1, 2.5], "[1, 2.5]")])  # fmt: skip
def test_metric_at_k_ks_message(ks: object, shown: str) -> None:
    with pytest.raises(InputError) as info:
        receval.plot.metric_at_k(TRUTH, RUNS, "ndcg", ks=ks)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"ks must be an integer N >= 1 or a non-empty list of integers >= 1; got {shown}."
    )


@pytest.mark.parametrize(
    ("ks", "expected"),
    [
        (np.int64(3), [1, 2, 3]),
        (np.uint8(2), [1, 2]),
        ([np.int64(4), 1, 4], [1, 4]),
        (np.array([3, 1]), [1, 3]),
        (range(2, 4), [2, 3]),
        ((k for k in (5, 2)), [2, 5]),
    ],
)
def test_metric_at_k_accepts_integers_of_any_kind(ks: Any, expected: list[int]) -> None:
    fig = receval.plot.metric_at_k(TRUTH, RUNS, "recall", ks=ks)
    line = fig.axes[0].get_lines()[0]
    assert line.get_xdata().tolist() == expected
    alone = receval.evaluate(TRUTH, RUNS["m1"], [f"recall@{k}" for k in expected])
    assert line.get_ydata().tolist() == [alone[f"recall@{k}"] for k in expected]


def test_metric_at_k_bound() -> None:
    """An integer ks is at most MAX_KS; an explicit list has no limit, in size or length."""
    assert MAX_KS == 10_000
    with pytest.raises(InputError) as info:
        receval.plot.metric_at_k(TRUTH, RUNS, "ndcg", ks=MAX_KS + 1)
    assert str(info.value) == (
        "ks must be an integer N from 1 to 10000 (K = 1..N, receval.plot.MAX_KS) or a "
        "non-empty list of integers >= 1; got 10001. Pass the cutoffs to draw as a list, "
        "e.g. ks=[1, 10, 100, 1000, 10001]."
    )
    start = time.perf_counter()
    fig = receval.plot.metric_at_k(TRUTH, RUNS, "ndcg", ks=MAX_KS)
    assert time.perf_counter() - start < 60
    assert len(fig.axes[0].get_lines()[0].get_xdata()) == MAX_KS
    ks = [*range(1, 12_001, 3), 50_000, 10**9]
    fig = receval.plot.metric_at_k(TRUTH, RUNS, "precision", ks=ks)
    ys = fig.axes[0].get_lines()[0].get_ydata()
    assert len(ys) == len(ks)
    alone = receval.evaluate(TRUTH, RUNS["m1"], ["precision@50000", "precision@1000000000"])
    assert ys[-2:].tolist() == [alone["precision@50000"], alone["precision@1000000000"]]


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("many")
    paths = {"truth": root / "truth.parquet", "recs": root / "recs.parquet"}
    users = [1, 1, 2, 3, 3]
    truth = {"user": users, "item": [10, 11, 12, 10, 13], "relevance": [1.0, 2, 1, 1, 1]}
    recs = {"user": users, "item": [10, 12, 12, 11, 13], "score": [0.9, 0.5, 0.4, 0.3, 0.2]}
    pl.DataFrame(truth).write_parquet(paths["truth"])
    pl.DataFrame(recs).write_parquet(paths["recs"])
    return paths


def _plot_args(files: dict[str, Path], out: Path, k: str) -> list[str]:
    return ["plot", "metric-at-k", "--truth", str(files["truth"]), "--recs", str(files["recs"]),
            "--run", f"other={files['recs']}", "--k", k, "-o", str(out)]  # fmt: skip


def test_cli_metric_at_k_largest_k_is_quick(tiny_files: dict[str, Path], tmp_path: Path) -> None:
    """--k 10000 on five rows: two runs of 10,000 metrics each (46 s for --k 20000 before)."""
    out = tmp_path / "curve.png"
    start = time.perf_counter()
    result = CliRunner().invoke(app, _plot_args(tiny_files, out, str(MAX_KS)))
    elapsed = time.perf_counter() - start
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(PNG)
    assert elapsed < 60, elapsed


@pytest.mark.parametrize(
    ("k", "message"),
    [
        ("20000", "--k must be an integer from 1 to 10000 (K = 1..k); got 20000. For more "
                  "cutoffs, give receval.plot.metric_at_k a list (ks=[...])."),
        ("0", "--k must be an integer from 1 to 10000 (K = 1..k); got 0."),
        ("-5", "--k must be an integer from 1 to 10000 (K = 1..k); got -5."),
    ],
)  # fmt: skip
def test_cli_metric_at_k_refuses_k_out_of_range(
    tiny_files: dict[str, Path], tmp_path: Path, k: str, message: str
) -> None:
    out = tmp_path / "curve.png"
    start = time.perf_counter()
    result = CliRunner().invoke(app, _plot_args(tiny_files, out, k))
    assert result.exit_code == 2
    assert f"error: {message}" in " ".join(result.output.split())
    assert not out.exists()
    assert time.perf_counter() - start < 30
