"""Benchmark the group-exposure metrics (exposure_share, exposure_disparity, exposure_gini)
beside a plain Polars query that computes the same numbers.

Usage::

    python benchmarks/bench_group_exposure.py [--users 100000] [--recs 100] [--items 100000]
        [--groups 1000] [--repeat 3]

``--users x --recs`` recommendation rows (10^7 by default), scores with ties (2 decimals),
an item table with a ``provider`` column of ``--groups`` values. receval runs
``receval.evaluate`` end to end (validation, grouping, top-K, attention, exact per-group sums)
with ``ties="first"``; the Polars query ranks each user's rows by score (ties in row order:
``rank("ordinal")``), keeps the top 10, joins the providers and sums ``0.5^(rank - 1)`` per
provider. The two run alternately in one process (warm: numba's cache filled by a first call);
the script checks that they agree (relative 1e-9) and prints the best time of each and the
ratio Polars / receval.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import polars as pl

import receval

K = 10


def make(
    n_users: int, per_user: int, n_items: int, n_groups: int, seed: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users, dtype=np.int64), per_user)
    step = 7919 if math.gcd(7919, n_items) == 1 else 1
    j = np.tile(np.arange(per_user, dtype=np.int64), n_users)
    items = (np.repeat(rng.integers(0, n_items, n_users), per_user) + j * step) % n_items
    recs = pl.DataFrame(
        {"user": users, "item": items, "score": np.round(rng.random(users.size), 2)}
    )
    table = pl.DataFrame(
        {
            "item": np.arange(n_items),
            "provider": [f"p{g}" for g in rng.integers(0, n_groups, n_items)],
        }
    )
    return recs, table


def metrics_of() -> list[str]:
    return [
        f"exposure_share(by=provider, group=p0)@{K}",
        f"exposure_disparity(by=provider, group=p0)@{K}",
        f"exposure_gini(by=provider)@{K}",
    ]


def with_receval(recs: pl.DataFrame, table: pl.DataFrame, names: list[str]) -> list[float]:
    res = receval.evaluate({0: {0: 1}}, recs, names, items=table, ties="first")
    return [res[n] for n in names]


def with_polars(recs: pl.DataFrame, table: pl.DataFrame) -> list[float]:
    per_group = (
        recs.lazy()
        .with_columns(pl.col("score").rank("ordinal", descending=True).over("user").alias("rank"))
        .filter(pl.col("rank") <= K)
        .join(table.lazy(), on="item")
        .group_by("provider")
        .agg((0.5 ** (pl.col("rank") - 1)).sum().alias("e"))
        .collect()
    )
    sizes = table.group_by("provider").len()
    frame = sizes.join(per_group, on="provider", how="left").fill_null(0.0)
    e = dict(zip(frame["provider"].to_list(), frame["e"].to_list(), strict=True))
    n = dict(zip(frame["provider"].to_list(), frame["len"].to_list(), strict=True))
    total = math.fsum(e.values())
    share = e["p0"] / total
    rest = (total - e["p0"]) / (sum(n.values()) - n["p0"])
    x = np.sort(np.array(list(e.values())))
    g = x.size
    gini = float(np.sum((2 * np.arange(1, g + 1) - g - 1) * x) / (g * total))
    return [share, (e["p0"] / n["p0"]) / rest, gini]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--recs", type=int, default=100)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    recs, table = make(args.users, args.recs, args.items, args.groups)
    names = metrics_of()
    with_receval(recs.head(1000), table, names)  # compile / load numba's cache
    times: dict[str, list[float]] = {"receval": [], "polars": []}
    values: dict[str, list[float]] = {}
    for _ in range(args.repeat):  # alternated, same process, same data
        for tool, fn in (
            ("receval", lambda: with_receval(recs, table, names)),
            ("polars", lambda: with_polars(recs, table)),
        ):
            t0 = time.perf_counter()
            values[tool] = fn()
            times[tool].append(time.perf_counter() - t0)
    for a, b in zip(values["receval"], values["polars"], strict=True):
        assert math.isclose(a, b, rel_tol=1e-9), (values["receval"], values["polars"])
    print(f"{recs.height:,} rec rows, {args.users:,} users, {args.groups} providers; values agree")
    print(f"  metrics: {', '.join(names)}")
    for tool, ts in times.items():
        print(f"  {tool:8s} best {min(ts):6.2f} s  (all: {', '.join(f'{t:.2f}' for t in ts)})")
    print(f"  polars / receval (best): {min(times['polars']) / min(times['receval']):.2f}x")


if __name__ == "__main__":
    main()
