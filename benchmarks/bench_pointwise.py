"""Benchmark receval's global AUC, average precision and GAUC against scikit-learn, NumPy and
Polars, in one run.

Usage::

    python benchmarks/bench_pointwise.py --rows 10000000 --users 100000 [--repeat 2]

Data (seeded): ``rows`` labels (30 % positive, correlated with the score) and scores with
heavy ties (``--distinct`` values, default 1000), ``users`` user ids drawn uniformly. Every
tool is called ``--repeat`` times after a warm-up on small data (numba caches filled); the
table shows the best time. Peak memory is the process's resident memory sampled every 2 ms
during the call, minus the resident memory just before it (the inputs are already there).

Tools:

* ``receval.auc`` / ``receval.average_precision`` / ``receval.gauc``;
* scikit-learn ``roc_auc_score`` / ``average_precision_score``;
* NumPy: ``argsort`` of the scores, tie-averaged ranks, the rank-sum formula;
* GAUC by a plain Polars query: each user's tie-averaged ranks (``rank("average").over``),
  then per user the rank-sum formula, weighted by the user's rows;
* GAUC by pandas ``groupby`` + scikit-learn ``roc_auc_score`` per user (only at <= 10^6 rows:
  about 100 s at 10^6 rows).

Every figure is checked against receval's value (1e-9) and the ratios are tool / receval.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE


def measure(fn: Callable[[], float], repeat: int) -> tuple[float, float, float]:
    """(value, best seconds, peak extra bytes) of ``fn``."""
    best = float("inf")
    peak_extra = 0
    value = float("nan")
    for _ in range(repeat):
        base = rss()
        peak = [base]
        stop = threading.Event()

        def poll(peak: list[int] = peak, stop: threading.Event = stop) -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], rss())
                time.sleep(0.002)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
        stop.set()
        watcher.join()
        peak_extra = max(peak_extra, max(peak[0], rss()) - base)
    return value, best, peak_extra


def make_data(rows: int, users: int, distinct: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    s = np.empty(rows, dtype=np.float64)
    y = np.empty(rows, dtype=np.int8)
    g = np.empty(rows, dtype=np.int64)
    step = 1 << 22
    for lo in range(0, rows, step):  # in chunks: generation must not dwarf the measured peaks
        n = min(step, rows - lo)
        score = rng.integers(0, distinct, n)
        y[lo : lo + n] = rng.random(n) < 0.15 + 0.3 * score / distinct
        s[lo : lo + n] = score / distinct
        g[lo : lo + n] = rng.integers(0, users, n)
    return y, s, g


def numpy_auc(y: np.ndarray, s: np.ndarray) -> float:
    order = np.argsort(s, kind="stable")
    ss = s[order]
    yy = y[order]
    new = np.empty(ss.shape[0], dtype=np.bool_)
    new[0] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], ss.shape[0])
    avg_rank = (starts + ends + 1) / 2.0
    group = np.cumsum(new) - 1
    m = int(yy.sum())
    n = yy.shape[0] - m
    rank_sum = float(avg_rank[group[yy == 1]].sum())
    return (rank_sum - m * (m + 1) / 2.0) / (m * n)


def polars_gauc(y: np.ndarray, s: np.ndarray, g: np.ndarray) -> float:
    import polars as pl

    frame = pl.DataFrame({"y": y, "s": s, "g": g})
    per_user = (
        frame.with_columns(pl.col("s").rank("average").over("g").alias("r"))
        .group_by("g")
        .agg(
            pl.len().alias("n"),
            pl.col("y").cast(pl.Int64).sum().alias("p"),
            (pl.col("r") * pl.col("y")).sum().alias("rank_sum"),
        )
        .filter((pl.col("p") > 0) & (pl.col("p") < pl.col("n")))
        .with_columns(
            ((pl.col("rank_sum") - pl.col("p") * (pl.col("p") + 1) / 2)
             / (pl.col("p") * (pl.col("n") - pl.col("p")))).alias("auc")
        )
    )  # fmt: skip
    return float((per_user["auc"] * per_user["n"]).sum() / per_user["n"].sum())


def pandas_gauc(y: np.ndarray, s: np.ndarray, g: np.ndarray) -> float:
    import pandas as pd
    from sklearn.metrics import roc_auc_score

    frame = pd.DataFrame({"y": y, "s": s, "g": g})
    num = den = 0.0
    for _, part in frame.groupby("g", sort=False):
        labels = part["y"].to_numpy()
        if 0 < labels.sum() < labels.shape[0]:
            num += part.shape[0] * roc_auc_score(labels, part["s"].to_numpy())
            den += part.shape[0]
    return num / den


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--users", type=float, default=1e5)
    parser.add_argument("--distinct", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--skip-numpy", action="store_true")
    parser.add_argument("--skip-polars", action="store_true")
    args = parser.parse_args()
    rows, users = int(args.rows), int(args.users)

    import numba
    from sklearn.metrics import average_precision_score, roc_auc_score

    import receval

    wy, ws, wg = make_data(1000, 10, 10, 1)  # warm-up: compile / load numba caches
    receval.auc(wy, ws)
    receval.average_precision(wy, ws)
    receval.gauc(wy, ws, wg)
    big = make_data(1 << 16, 10, 10, 1)  # large enough for the radix path: its kernels too
    receval.auc(big[0], big[1])
    receval.average_precision(big[0], big[1])
    receval.gauc(*big)
    receval.gauc(*make_data(1 << 16, 1 << 12, 10, 1))  # small groups: the split by group

    y, s, g = make_data(rows, users, args.distinct, args.seed)
    print(
        f"rows={rows:,} users={users:,} distinct scores={args.distinct} "
        f"threads={numba.get_num_threads()} cpus={os.cpu_count()} repeat={args.repeat}"
    )
    results: list[tuple[str, str, float, float, float]] = []

    def run(task: str, tool: str, fn: Callable[[], Any], repeat: int | None = None) -> None:
        value, seconds, extra = measure(fn, repeat or args.repeat)
        results.append((task, tool, value, seconds, extra))
        print(f"  {task:<5} {tool:<31} {seconds:8.3f} s", flush=True)

    run("AUC", "receval.auc", lambda: receval.auc(y, s))
    if not args.skip_sklearn:
        run("AUC", "scikit-learn roc_auc_score", lambda: float(roc_auc_score(y, s)), 1)
    if not args.skip_numpy:
        run("AUC", "numpy argsort + ranks", lambda: numpy_auc(y, s), 1)
    run("AP", "receval.average_precision", lambda: receval.average_precision(y, s))
    if not args.skip_sklearn:
        ap_sklearn = average_precision_score
        run("AP", "scikit-learn average_precision", lambda: float(ap_sklearn(y, s)), 1)
    run("GAUC", "receval.gauc", lambda: receval.gauc(y, s, g))
    if not args.skip_polars:
        run("GAUC", "polars rank over user", lambda: polars_gauc(y, s, g), 1)
    if rows <= 1_000_000:
        run("GAUC", "pandas groupby + sklearn", lambda: pandas_gauc(y, s, g), 1)

    print()
    print("| task | tool | seconds | x receval | peak extra MiB | x receval | value |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for task, tool, value, seconds, extra in results:
        ref = next(r for r in results if r[0] == task and r[1].startswith("receval"))
        agree = abs(value - ref[2]) <= 1e-9
        print(
            f"| {task} | {tool} | {seconds:.3f} | {seconds / ref[3]:.1f} | "
            f"{extra / 2**20:.0f} | {extra / max(ref[4], 1):.1f} | "
            f"{value:.12f}{'' if agree else ' (DIFFERS)'} |"
        )


if __name__ == "__main__":
    main()
