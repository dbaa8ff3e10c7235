"""Time receval's first call in a fresh environment (Numba compiling its kernels) and warm.

Usage::

    python benchmarks/bench_cold_start.py [--repeat 1] [--only evaluate|demo] [--json out.json]

Each run is a fresh Python process (``subprocess``) whose ``NUMBA_CACHE_DIR`` is a new empty
folder, so every kernel it calls is compiled (*cold*); a second process on the same, now
filled, folder loads them from the cache (*warm process*). Cases:

* ``evaluate``: ``make_interactions(1000, seed=0)``, then ``receval.evaluate`` with the six
  common top-K metrics (``ndcg@10``, ``map@100``, ``mrr``, ``recall@20``, ``precision@10``,
  ``hit_rate@10``); timed separately, then the same ``evaluate`` call again in the same
  process (*warm call*). *compile s* is the time Numba spent compiling (its ``numba:compile``
  events, outermost only).
* ``demo``: the command ``receval demo`` (10,000 users, 100 recommendations each, the six
  metrics plus ``coverage@10``, ``novelty@10``, ``gini@10`` against a generated train set),
  timed from the process start to its exit (Python start-up and imports included).

To compare two versions of receval, run the script once with each on ``PYTHONPATH``: the
child processes inherit it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

METRICS = ["ndcg@10", "map@100", "mrr", "recall@20", "precision@10", "hit_rate@10"]

_EVALUATE = f"""
import json, time
from numba.core import event

class Watch(event.Listener):
    depth, seconds, count, started = 0, 0.0, 0, 0.0
    def on_start(self, ev):
        self.depth += 1
        if self.depth == 1:
            self.count += 1
            self.started = time.perf_counter()
    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.perf_counter() - self.started

start = time.perf_counter()
import receval
from receval.datasets import make_interactions
imported = time.perf_counter()
watch = Watch()
event.register("numba:compile", watch)
data = make_interactions(1000, seed=0)
made = time.perf_counter()
make_compile, make_count, watch.seconds, watch.count = watch.seconds, watch.count, 0.0, 0
res = receval.evaluate(data.truth, data.recs, {METRICS!r})
evaluated = time.perf_counter()
again = receval.evaluate(data.truth, data.recs, {METRICS!r})
warm = time.perf_counter() - evaluated
assert again.means == res.means
print(json.dumps({{
    "import_s": imported - start, "make_s": made - imported, "make_compile_s": make_compile,
    "evaluate_s": evaluated - made, "evaluate_compile_s": watch.seconds, "warm_call_s": warm,
    "make_compilations": make_count, "compilations": watch.count, "means": res.means,
}}))
"""

_DEMO = "from receval.cli import main; main()"


def _run(code: str, args: list[str], cache: str, timeout: float) -> tuple[float, str]:
    """Run ``python -c code args`` with ``NUMBA_CACHE_DIR=cache``: (wall seconds, stdout)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        msg = f"child failed ({out.returncode}):\n{out.stderr[-4000:]}"
        raise RuntimeError(msg)
    return seconds, out.stdout


def evaluate_case(timeout: float) -> dict[str, Any]:
    """The evaluate case: one cold process, then one warm process on the same cache."""
    with tempfile.TemporaryDirectory(prefix="receval-numba-") as cache:
        cold = json.loads(_run(_EVALUATE, [], cache, timeout)[1].strip().splitlines()[-1])
        warm = json.loads(_run(_EVALUATE, [], cache, timeout)[1].strip().splitlines()[-1])
    return {"cold": cold, "warm": warm}


def demo_case(timeout: float) -> dict[str, Any]:
    """The demo case: ``receval demo --format json``, cold then warm (whole process)."""
    args = ["demo", "--format", "json"]
    with tempfile.TemporaryDirectory(prefix="receval-numba-") as cache:
        cold, _ = _run(_DEMO, args, cache, timeout)
        warm, _ = _run(_DEMO, args, cache, timeout)
    return {"cold": {"process_s": cold}, "warm": {"process_s": warm}}


def _summary(runs: list[dict[str, Any]], state: str, key: str) -> str:
    values = [r[state][key] for r in runs]
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="cold/warm pairs per case")
    parser.add_argument("--only", choices=["evaluate", "demo"], help="run one case")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    results: dict[str, list[dict[str, Any]]] = {}
    cases = {"evaluate": evaluate_case, "demo": demo_case}
    for name, case in cases.items():
        if args.only not in (None, name):
            continue
        results[name] = [case(args.timeout) for _ in range(args.repeat)]

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; median (min-max) of runs")
    if "evaluate" in results:
        runs = results["evaluate"]
        head = "make_interactions(1000) + evaluate, six metrics"
        print(f"\ncase evaluate: {head} ({len(runs)} runs)")
        print(f"  {'step':<26} {'cold s':>20}  {'warm process s':>20}")
        rows = [
            ("import receval", "import_s"),
            ("make_interactions", "make_s"),
            ("  of which compiling", "make_compile_s"),
            ("evaluate (first call)", "evaluate_s"),
            ("  of which compiling", "evaluate_compile_s"),
            ("evaluate (second call)", "warm_call_s"),
        ]
        for label, key in rows:
            cold, warm = _summary(runs, "cold", key), _summary(runs, "warm", key)
            print(f"  {label:<26} {cold:>20}  {warm:>20}")
        first = runs[0]["cold"]
        print(
            f"  kernels compiled, cold: {first['make_compilations']} by make_interactions, "
            f"{first['compilations']} by evaluate"
        )
    if "demo" in results:
        runs = results["demo"]
        print(f"\ncase demo: `receval demo --format json`, whole process ({len(runs)} runs)")
        cold, warm = _summary(runs, "cold", "process_s"), _summary(runs, "warm", "process_s")
        print(f"  {'cold s':>20}  {'warm process s':>20}\n  {cold:>20}  {warm:>20}")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
