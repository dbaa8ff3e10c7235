"""Speed of the comparison statistics: vectorised bootstrap and randomization test against a
naive NumPy loop (one resample / one permutation per Python iteration), side by side.

Usage::

    python benchmarks/bench_compare.py --users 100000 --models 3 --resamples 1000 \\
        --permutations 1000 [--naive-resamples 100] [--json out.json]

Data: per-user values of ``--models`` models on the same users (a model's values are a
baseline drawn from a Beta distribution plus a small shift and noise, clipped to [0, 1], as
per-user NDCG would be). Timed, best of ``--repeat``:

* ``bootstrap`` - :func:`receval.comparison.stats.bootstrap_ci` (BCa) of every model's mean at once
  (one shared resample-count matrix per chunk, reduced by a matrix product);
* ``naive bootstrap`` - per resample: draw indices, gather each model's values, mean. Timed on
  ``--naive-resamples`` resamples and scaled linearly to ``--resamples`` (it is linear);
* ``randomization`` - :func:`receval.comparison.stats.randomization` of each model against
  the first;
* ``naive randomization`` - per permutation: draw signs, sum; timed on a fraction, scaled;
* ``paired t`` and ``wilcoxon`` (scipy) of each model against the first.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from receval.comparison.stats import bootstrap_ci, paired_t, randomization, wilcoxon


def make_values(users: int, models: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.beta(0.6, 1.4, size=users)
    cols = [base] + [
        np.clip(base + 0.01 * j + rng.normal(0, 0.1, size=users), 0, 1) for j in range(1, models)
    ]
    return np.column_stack(cols)


def naive_bootstrap(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    out = np.empty((resamples, values.shape[1]))
    for b in range(resamples):
        idx = rng.integers(0, n, size=n)
        out[b] = values[idx].mean(axis=0)
    return out


def naive_randomization(d: np.ndarray, permutations: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    observed = abs(d.sum())
    hits = 0
    for _ in range(permutations):
        signs = rng.integers(0, 2, size=d.size) * 2 - 1
        hits += abs((signs * d).sum()) >= observed
    return (1 + hits) / (1 + permutations)


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--naive-resamples", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--naive-permutations", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    values = make_values(args.users, args.models, args.seed)
    others = range(1, args.models)
    fig: dict[str, float] = {}
    fig["bootstrap_s"] = best(
        lambda: bootstrap_ci(values, n_resamples=args.resamples, seed=args.seed), args.repeat
    )
    naive = best(lambda: naive_bootstrap(values, args.naive_resamples, args.seed), args.repeat)
    fig["naive_bootstrap_s"] = naive * args.resamples / args.naive_resamples
    fig["randomization_s"] = best(
        lambda: [
            randomization(values[:, j], values[:, 0], n_permutations=args.permutations)
            for j in others
        ],
        args.repeat,
    )
    naive = best(
        lambda: [
            naive_randomization(values[:, j] - values[:, 0], args.naive_permutations, 0)
            for j in others
        ],
        args.repeat,
    )
    fig["naive_randomization_s"] = naive * args.permutations / args.naive_permutations
    fig["paired_t_s"] = best(lambda: [paired_t(values[:, j], values[:, 0]) for j in others], 2)
    fig["wilcoxon_s"] = best(lambda: [wilcoxon(values[:, j], values[:, 0]) for j in others], 2)
    fig["bootstrap_speedup"] = fig["naive_bootstrap_s"] / fig["bootstrap_s"]
    fig["randomization_speedup"] = fig["naive_randomization_s"] / fig["randomization_s"]
    # the vectorised bootstrap sees the same draws as the naive loop: check the means agree
    small = 20
    ours = bootstrap_ci(values, n_resamples=small, seed=args.seed, method="percentile")
    ref = np.quantile(naive_bootstrap(values, small, args.seed), [0.025, 0.975], axis=0).T
    fig["max_abs_diff_vs_naive"] = float(np.abs(ours - ref).max())
    doc = {"settings": vars(args), "figures": fig}
    print(json.dumps(doc, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=2)


if __name__ == "__main__":
    main()
