"""Benchmark the beyond-accuracy metrics of receval beside a straightforward NumPy version.

Usage::

    python benchmarks/bench_beyond.py --users 1000000 --rows 10000000 [--items 100000]
        [--dim 64] [--repeat 2] [--only ils|pop] [--json out.json]

Two cases, each tool in a fresh Python process (``subprocess``) so that its peak memory is
its own:

* ``ils``: ``ils@10`` with ``--dim``-dimensional item vectors (an ``Array(Float32, dim)``
  column of the item table) for ``--users`` users with 10 recommendations each.
* ``pop``: ``novelty@10``, ``coverage@10`` and ``gini@10`` on ``--rows`` recommendation rows
  (100 per user, so the top-10 selection matters), popularity from a train set.

receval runs ``receval.evaluate`` end to end on Polars frames in memory (validation,
grouping, the top-K selection kernel, factorising item ids, the metrics). The NumPy version
is what one writes by hand with integer item ids ``0 .. n - 1``: ``np.lexsort`` for the
per-user order, the top 10 by rank within the user, ``np.bincount`` / ``np.unique`` for
exposure and popularity, and for ILS the per-user Gram matrices of the unit vectors
(``einsum``, in chunks of 100,000 users). Both compute the same values; the script checks it.

Reported: the first call (cold: includes numba's cached-code load) and the best of
``--repeat`` calls (warm), peak RSS of the process (``getrusage``) and peak RSS over the
loaded data, and the ratio NumPy / receval of the warm times.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from typing import Any

K = 10
POP_RECS = 100  # recommendations per user in the pop case


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def _recs(n_users: int, per_user: int, n_items: int, seed: int) -> Any:
    """Recs grouped by user, distinct items per user, scores with ties (2 decimals)."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users, dtype=np.int64), per_user)
    step = 7919 if math.gcd(7919, n_items) == 1 else 1
    base = rng.integers(0, n_items, n_users)
    j = np.tile(np.arange(per_user, dtype=np.int64), n_users)
    items = (np.repeat(base, per_user) + j * step) % n_items  # distinct within a user
    perm = rng.permutation(n_items)
    score = np.round(rng.random(users.size), 2)
    return pl.DataFrame({"user": users, "item": perm[items], "score": score})


def _numpy_topk(users: Any, items: Any, score: Any, n_users: int) -> Any:
    """Item ids of each user's top K (score descending, item ascending), shape (users, <=K)."""
    import numpy as np

    order = np.lexsort((items, -score, users))
    offsets = np.searchsorted(users[order], np.arange(n_users + 1))
    rank = np.arange(order.size) - np.repeat(offsets[:-1], np.diff(offsets))
    keep = order[rank < K]
    return items[keep], users[keep]


def _numpy_ils(frame: Any, vectors: Any, n_users: int) -> float:
    import numpy as np

    top, _ = _numpy_topk(
        frame["user"].to_numpy(), frame["item"].to_numpy(), frame["score"].to_numpy(), n_users
    )
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    top = top.reshape(n_users, K)  # every user has >= K recs here
    total = 0.0
    upper = np.triu(np.ones((K, K), dtype=bool), 1)
    for start in range(0, n_users, 100_000):
        block = unit[top[start : start + 100_000]]  # (u, K, d)
        gram = np.einsum("ukd,uld->ukl", block, block)
        total += float(gram[:, upper].mean(axis=1).sum())
    return total / n_users


def _numpy_pop(frame: Any, train: Any, n_users: int, n_items: int) -> dict[str, float]:
    import numpy as np

    top, owner = _numpy_topk(
        frame["user"].to_numpy(), frame["item"].to_numpy(), frame["score"].to_numpy(), n_users
    )
    pairs = np.unique(train["user"].to_numpy() * n_items + train["item"].to_numpy())
    pop = np.bincount(pairs % n_items, minlength=n_items)
    n_train = np.unique(pairs // n_items).size
    info = -np.log2(np.maximum(pop, 1) / n_train)
    per_user = np.bincount(owner, weights=info[top], minlength=n_users) / np.bincount(owner)
    exposure = np.bincount(top, minlength=n_items)
    x = np.sort(exposure)
    idx = np.arange(1, n_items + 1)
    return {
        "novelty@10": float(per_user.mean()),
        "coverage@10": np.count_nonzero(exposure) / n_items,
        "gini@10": float(((2 * idx - n_items - 1) * x).sum() / (n_items * x.sum())),
    }


def run_case(args: argparse.Namespace) -> dict[str, Any]:
    """One tool on one case, in this process."""
    import numpy as np
    import polars as pl

    import receval
    from receval.datasets import make_items, make_train

    if args.case == "ils":
        n_users = args.users
        frame = _recs(n_users, K, args.items, args.seed)
        items = make_items(args.items, dim=args.dim, seed=args.seed)
        vectors = items["embedding"].to_numpy().astype(np.float64)
    else:
        n_users = max(1, args.rows // POP_RECS)
        frame = _recs(n_users, POP_RECS, args.items, args.seed)
        train = make_train(max(1000, n_users // 10), n_items=args.items, seed=args.seed)
    truth = pl.DataFrame({"user": [0], "item": [int(frame["item"][0])]})
    loaded = _peak_rss()

    def call() -> dict[str, float]:
        if args.tool == "receval":
            if args.case == "ils":
                res = receval.evaluate(
                    truth, frame, "ils@10", items=items, item_features="embedding"
                )
            else:
                res = receval.evaluate(
                    truth, frame, ["novelty@10", "coverage@10", "gini@10"], train=train
                )
            return res.means
        if args.case == "ils":
            return {"ils@10": _numpy_ils(frame, vectors, n_users)}
        return _numpy_pop(frame, train, n_users, args.items)

    times = []
    values: dict[str, float] = {}
    for _ in range(args.repeat):
        start = time.perf_counter()
        values = call()
        times.append(time.perf_counter() - start)
    peak = _peak_rss()
    return {
        "case": args.case, "tool": args.tool, "rows": frame.height, "users": n_users,
        "cold_s": times[0], "warm_s": min(times), "peak_rss": peak,
        "over_data": peak - loaded, "values": values,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000, help="users of the ils case")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rec rows of the pop case")
    parser.add_argument("--items", type=int, default=100_000, help="catalog size")
    parser.add_argument("--dim", type=int, default=64, help="item vector length")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["ils", "pop"])
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--case", choices=["ils", "pop"], help=argparse.SUPPRESS)
    parser.add_argument("--tool", choices=["receval", "numpy"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:  # a child process
        sys.stdout.write(json.dumps(run_case(args)) + "\n")
        return

    common = [f"--users={args.users}", f"--rows={args.rows}", f"--items={args.items}",
              f"--dim={args.dim}", f"--repeat={args.repeat}", f"--seed={args.seed}"]  # fmt: skip
    results = []
    for case in ("ils", "pop"):
        if args.only and case != args.only:
            continue
        pair = {}
        for tool in ("receval", "numpy"):
            out = subprocess.run(
                [sys.executable, __file__, *common, f"--case={case}", f"--tool={tool}"],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            pair[tool] = json.loads(out.stdout.strip().splitlines()[-1])
        for name, value in pair["receval"]["values"].items():
            other = pair["numpy"]["values"][name]
            if not math.isclose(value, other, rel_tol=1e-9, abs_tol=1e-12):
                msg = f"{name}: receval {value!r} != numpy {other!r}"
                raise SystemExit(msg)
        results += [pair["receval"], pair["numpy"]]
        ratio = pair["numpy"]["warm_s"] / pair["receval"]["warm_s"]
        print(f"\ncase {case}: {pair['receval']['rows']:,} rec rows, "
              f"{pair['receval']['users']:,} users; values agree")  # fmt: skip
        print(f"  {'tool':<8} {'cold s':>8} {'warm s':>8} {'peak RSS MB':>12} {'over data MB':>13}")
        for tool in ("receval", "numpy"):
            r = pair[tool]
            print(f"  {tool:<8} {r['cold_s']:8.2f} {r['warm_s']:8.2f} "
                  f"{r['peak_rss'] / 2**20:12.0f} {r['over_data'] / 2**20:13.0f}")  # fmt: skip
        print(f"  numpy / receval (warm): {ratio:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
