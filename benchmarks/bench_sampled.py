"""Sampled metrics against the exact full-catalog metric, on MovieLens-scale generated data.

A factor model (6,000 users x 4,000 items, d = 32) and a leave-one-out split: each user's test
item is drawn from the user's own scores (a softmax at temperature 1, so that test items sit
anywhere from the top of the ranking to its tail, as with a real model), 20 distinct training items
per user excluded. The exact ndcg@10, recall@10 and mrr come from the full-catalog path
(``evaluate(test, model, ...)``); each estimator (``Sampling(m, seed, correction)``) is run
with m = 100 and 500 sampled negatives over 5 seeds, and its bias (mean of estimate - exact),
standard deviation over seeds and RMSE are reported, with the time of one sampled evaluation.

    python benchmarks/bench_sampled.py          # writes benchmarks/sampled.md and sampled.png
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

import receval

HERE = Path(__file__).resolve().parent
N_USERS, N_ITEMS, D, N_TRAIN = 6_000, 4_000, 32, 20
SEEDS = range(5)
NEGATIVES = (100, 500)
METRICS = ["ndcg@10", "recall@10", "mrr"]
ESTIMATORS = (None, "rescale", "minimal_bias", "bias_variance", "mle")


def data() -> tuple[receval.FactorModel, pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(0)
    users = rng.normal(size=(N_USERS, D)) / np.sqrt(D) * 2
    items = rng.normal(size=(N_ITEMS, D))
    scores = users @ items.T
    # train: each user's 20 items drawn from the softmax of the scores
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    cum = np.cumsum(p, axis=1)
    rand = rng.random((N_USERS, 3 * N_TRAIN))
    draws = np.stack([np.searchsorted(cum[u], rand[u]) for u in range(N_USERS)])
    draws = np.minimum(draws, N_ITEMS - 1)
    train_rows, test_item = [], np.empty(N_USERS, dtype=np.int64)
    for u in range(N_USERS):  # a generator, not a hot path: distinct train items, a new test one
        seen = list(dict.fromkeys(draws[u].tolist()))
        if len(seen) <= N_TRAIN:  # a peaked user: topped up with random items
            extra = rng.permutation(N_ITEMS)[: 2 * N_TRAIN].tolist()
            seen = list(dict.fromkeys(seen + extra))
        test_item[u] = seen[N_TRAIN]
        train_rows += [(u, i) for i in seen[:N_TRAIN]]
    train = pl.DataFrame(train_rows, schema=["user", "item"], orient="row")
    test = pl.DataFrame({"user": np.arange(N_USERS), "item": test_item})
    return receval.FactorModel(users, items), train, test


def main() -> None:
    model, train, test = data()
    t0 = time.perf_counter()
    full = receval.evaluate(test, model, METRICS, exclude=train)
    t_full = time.perf_counter() - t0
    rows = []
    for m in NEGATIVES:
        for correction in ESTIMATORS:
            name = correction or "sampled"
            values: dict[str, list[float]] = {k: [] for k in METRICS}
            times = []
            for seed in SEEDS:
                sampling = receval.Sampling(m, seed=seed, correction=correction)
                t0 = time.perf_counter()
                res = receval.evaluate(test, model, METRICS, exclude=train, sampling=sampling)
                times.append(time.perf_counter() - t0)
                for k in METRICS:
                    values[k].append(res[f"{k}~{sampling.tag.text}"])
            for k in METRICS:
                v = np.array(values[k])
                err = v - full[k]
                rows.append({
                    "m": m, "estimator": name, "metric": k, "exact": full[k],
                    "mean": float(v.mean()), "bias": float(err.mean()),
                    "sd": float(v.std(ddof=1)), "rmse": float(np.sqrt(np.mean(err**2))),
                    "seconds": float(np.median(times)),
                })  # fmt: skip
            print(m, name, {k: round(float(np.mean(values[k])), 4) for k in METRICS},
                  file=sys.stderr)  # fmt: skip
    table = pl.DataFrame(rows)
    write_report(table, t_full)
    plot(table)


def write_report(table: pl.DataFrame, t_full: float) -> None:
    lines = [
        "# Sampled metrics against the exact metric",
        "",
        f"`python benchmarks/bench_sampled.py`: {N_USERS:,} users x {N_ITEMS:,} items, a factor "
        f"model (d = {D}), one test item per user drawn from the user's own scores, "
        f"{N_TRAIN} training items per user excluded; {len(SEEDS)} seeds per estimator. "
        "`exact` is the full-catalog metric (`evaluate(test, model, metrics, exclude=train)`, "
        f"{t_full:.2f} s); `bias` the mean of estimate - exact over the seeds, `sd` the "
        "standard deviation of the estimate over the seeds, `rmse` the root mean squared "
        "error; `seconds` the median time of one sampled evaluation (all three metrics).",
        "",
        "| m | estimator | metric | exact | mean | bias | sd | rmse | seconds |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in table.iter_rows(named=True):
        lines.append(
            f"| {r['m']} | {r['estimator']} | {r['metric']} | {r['exact']:.4f} | "
            f"{r['mean']:.4f} | {r['bias']:+.4f} | {r['sd']:.4f} | {r['rmse']:.4f} | "
            f"{r['seconds']:.2f} |"
        )
    lines += ["", "![bias and spread of each estimator](sampled.png)", ""]
    (HERE / "sampled.md").write_text("\n".join(lines))


def plot(table: pl.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.6), sharey=False)
    names = [e or "sampled" for e in ESTIMATORS]
    for ax, metric in zip(axes, METRICS, strict=True):
        for offset, m in zip((-0.15, 0.15), NEGATIVES, strict=True):
            sub = table.filter((pl.col("metric") == metric) & (pl.col("m") == m))
            x = np.arange(len(names)) + offset
            ax.errorbar(x, sub["bias"].to_numpy(), yerr=sub["sd"].to_numpy(), fmt="o",
                        capsize=3, label=f"m = {m}")  # fmt: skip
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
        ax.set_title(f"{metric}: estimate - exact")
        ax.set_yscale("symlog", linthresh=0.01)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(HERE / "sampled.png", dpi=110)


if __name__ == "__main__":
    main()
