"""Time receval.split against a pandas groupby implementation of the same split.

Usage::

    python benchmarks/bench_split.py --rows 1e7 1e8 [--methods leave_one_out,random]
        [--pandas-max-rows 1e7] [--before SRC] [--json benchmarks/results/split.json]

Data: ``rows`` interactions (user Int64, item Int64, timestamp Int64): ``rows / 50`` users
drawn uniformly (50 interactions a user on average), items Zipf-distributed (exponent 1.3,
modulo 10^6), timestamps uniform in [0, 10^9) (a few ties), seed 0. Each case runs in a fresh
Python process (``subprocess``) that makes the data, times one call (the Numba kernels are
compiled and cached by a warm-up call on 1,000 rows first) and reports the wall time and the
process's peak RSS (``getrusage``) less the RSS after the data is made.

Cases (``receval.split`` with its defaults: ``duplicates="first"``, the leakage audit):

=================  ============================  =========================================
method             options                       pandas
=================  ============================  =========================================
temporal_global    fraction=0.2                  sort by time, last 20 % of rows
temporal_user      fraction=0.2                  sort by (user, time), groupby cumcount
leave_one_out      (by time)                     sort by (user, time), groupby cumcount
random_user        n=2                           random key, groupby rank
random             fraction=0.2                  DataFrame.sample(frac=0.2)
kfold_user         k=5, n=1                      user folds, groupby rank, 5 train/test
=================  ============================  =========================================

The pandas versions only split: they neither drop repeated pairs, nor count short users, nor
audit; receval does all three in the times shown.

``--before SRC`` also times the receval whose package is under ``SRC`` (a ``src`` folder of
another checkout, e.g. ``git archive <commit> src | tar -x -C /tmp/before``) in the same run,
case by case just before this checkout's (``PYTHONPATH``), and reports before / after. Each
row also records the load average (``os.getloadavg``) when its cases ended.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CASES: dict[str, dict[str, Any]] = {
    "temporal_global": {"fraction": 0.2},
    "temporal_user": {"fraction": 0.2},
    "leave_one_out": {},
    "random_user": {"n": 2},
    "random": {"fraction": 0.2},
    "kfold_user": {"k": 5, "n": 1},
}

_CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np

rows, method, options, tool = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(0)
user = rng.integers(0, max(1, rows // 50), rows)
item = rng.zipf(1.3, rows) % 1_000_000
stamp = rng.integers(0, 10**9, rows)

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

if tool in ("receval", "before"):
    import polars as pl
    import receval
    warnings.simplefilter("ignore")
    warm = np.arange(1000)
    receval.split(pl.DataFrame({"user": warm % 20, "item": warm, "timestamp": warm}), method,
                  **options)  # compiles the kernels (cached on disk after the first run)
    frame = pl.DataFrame({"user": user, "item": item, "timestamp": stamp})
    del user, item, stamp
    base = rss()
    start = time.perf_counter()
    s = receval.split(frame, method, **options)
    if method == "kfold_user":
        sizes = [f.test.height for f in s.folds]
    else:
        sizes = [s.test.height]
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "test_rows": sizes, "train_rows": s.train.height,
           "warnings": len(s.audit.warnings)}
else:
    import pandas as pd
    frame = pd.DataFrame({"user": user, "item": item, "timestamp": stamp})
    del user, item, stamp
    base = rss()
    start = time.perf_counter()
    if method == "temporal_global":
        ordered = frame.sort_values("timestamp", kind="stable")
        c = int(len(frame) * options["fraction"])
        parts = [(ordered.iloc[: len(frame) - c], ordered.iloc[len(frame) - c :])]
    elif method in ("temporal_user", "leave_one_out"):
        ordered = frame.sort_values(["user", "timestamp"], kind="stable")
        groups = ordered.groupby("user", sort=False)
        back = groups.cumcount(ascending=False)
        if method == "leave_one_out":
            held = (back < 1) & (groups["user"].transform("size") > 1)
        else:
            size = groups["user"].transform("size")
            held = back < np.floor(size * options["fraction"])
        parts = [(ordered[~held], ordered[held])]
    elif method == "random":
        test = frame.sample(frac=options["fraction"], random_state=0)
        parts = [(frame.drop(test.index), test)]
    else:
        key = np.random.default_rng(1).random(len(frame))
        groups = frame.assign(key=key).groupby("user", sort=False)
        rank = groups["key"].rank(method="first")
        n = options["n"]
        held = (rank <= n) & (groups["key"].transform("size") > n)
        if method == "random_user":
            parts = [(frame[~held], frame[held])]
        else:
            codes, uniques = pd.factorize(frame["user"])
            perm = np.random.default_rng(2).permutation(len(uniques))
            fold = (perm % options["k"])[codes]
            parts = [(frame[~(held & (fold == f))], frame[held & (fold == f)])
                     for f in range(options["k"])]
    sizes = [len(test) for _, test in parts]
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "test_rows": sizes, "train_rows": len(parts[0][0])}
out["peak_over_data_gib"] = (rss() - base) / 2**30
out["peak_gib"] = rss() / 2**30
print(json.dumps(out))
"""


def run_case(
    rows: int, method: str, tool: str, timeout: float, src: str | None = None
) -> dict[str, Any]:
    """One case in a fresh process (receval from ``src`` when given); its JSON figures, or
    the reason it has none."""
    args = [sys.executable, "-c", _CHILD, str(rows), method, json.dumps(CASES[method]), tool]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["killed"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", default=["1e7"], help="interactions (1e7 1e8)")
    parser.add_argument("--methods", default=",".join(CASES), help="comma-separated methods")
    parser.add_argument("--pandas-max-rows", default="1e7", help="pandas runs up to this many")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--json", type=Path, default=None, help="also write figures here")
    parser.add_argument("--before", default=None, help="src folder of a receval to compare")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    results = []
    print(f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python "
          f"{platform.python_version()}")  # fmt: skip
    print(
        "| rows | method | before s | receval s | before / receval | pandas s | pandas / receval "
        "| before peak GiB | receval peak GiB | pandas peak GiB | load avg |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for text in args.rows:
        rows = int(float(text))
        for method in methods:
            before = (
                run_case(rows, method, "before", args.timeout, args.before)
                if args.before
                else {"error": "not run"}
            )
            ours = run_case(rows, method, "receval", args.timeout)
            theirs = (
                run_case(rows, method, "pandas", args.timeout)
                if rows <= float(args.pandas_max_rows)
                else {"error": "not run (memory)"}
            )
            load = os.getloadavg()[0]
            results.append(
                {"rows": rows, "method": method, "before": before, "receval": ours,
                 "pandas": theirs, "load": load}
            )  # fmt: skip
            print(
                f"| {rows:.0e} | {method} | {_fig(before, 'seconds')} | {_fig(ours, 'seconds')} "
                f"| {_ratio(before, ours)} | {_fig(theirs, 'seconds')} | {_ratio(theirs, ours)} "
                f"| {_fig(before, 'peak_gib')} | {_fig(ours, 'peak_gib')} "
                f"| {_fig(theirs, 'peak_gib')} | {load:.1f} |",
                flush=True,
            )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=args.json.parent, delete=False) as tmp:
            json.dump(results, tmp, indent=2)
        os.replace(tmp.name, args.json)


def _ratio(slow: dict[str, Any], fast: dict[str, Any]) -> str:
    if "seconds" in slow and "seconds" in fast:
        return f"{slow['seconds'] / fast['seconds']:.1f}x"
    return "-"


def _fig(result: dict[str, Any], key: str) -> str:
    if key in result:
        return f"{result[key]:.2f}"
    return str(result.get("error", "-"))


if __name__ == "__main__":
    main()
