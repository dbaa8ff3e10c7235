"""Benchmark the cascade metrics and the metrics of incomplete judgments against their peers.

Usage::

    python benchmarks/bench_cascade.py --users 100000 --recs 100 [--peers pytrec_eval,ranx,...]
        [--repeat 3] [--json results.json]

The data comes from :func:`receval.datasets.make_interactions` (graded relevance 1..5, score
ties, ``users x recs`` recommendation rows; 100,000 x 100 = 10^7). Each tool runs on the same
in-memory polars frames; a peer's time includes building its own input (nested dicts, pandas
frames or TREC files) from them, as a user of the peer would. Every tool is called
``--repeat`` times after a warm-up on small data (Numba caches on disk, imports done); the best
call is reported, and the ratio is peer / receval.

Pairs (receval: one ``evaluate`` call per metric, the same data):

* ``bpref``: pytrec_eval ``bpref`` (trec_eval's C code);
* ``rbp(p=0.8, gain=linear)``: ranx ``rbp.80`` (graded, no cutoff; Numba) and ir_measures
  ``RBP(p=0.8)`` (trectools, pandas);
* ``err@10``: gdeval.pl (perl) through ir_measures ``ERR@10`` is limited to a
  maximum grade of 4, so it runs on the grades clipped to 4 against ``err@10`` on the same
  clipped data;
* ``judged@10``: ir_measures ``Judged@10`` (Python).

Agreement is checked on the means (peers on tie-free data would differ only in tie order; the
tests compare per user): the report gives the largest difference of means per pair.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

import receval
from receval.datasets import make_interactions

PAIRS: dict[str, tuple[str, ...]] = {
    "bpref": ("pytrec_eval",),
    "rbp(p=0.8, gain=linear)": ("ranx", "trectools"),
    "err@10": ("gdeval",),
    "judged@10": ("ir_measures_judged",),
}


def nested(frame: pl.DataFrame, value: str, cast: Callable[[Any], Any]) -> dict[str, dict]:
    """``{user: {item: value}}`` with string ids, as trec-style tools read them."""
    out: dict[str, dict[str, Any]] = {}
    users = frame["user"].cast(pl.String).to_list()
    items = frame["item"].cast(pl.String).to_list()
    for u, i, v in zip(users, items, frame[value].to_list(), strict=True):
        out.setdefault(u, {})[i] = cast(v)
    return out


def run_receval(truth: pl.DataFrame, recs: pl.DataFrame, metric: str) -> float:
    return float(receval.evaluate(truth, recs, [metric], ties="trec")[metric])


def run_pytrec_eval(truth: pl.DataFrame, recs: pl.DataFrame, metric: str) -> float:
    import pytrec_eval

    qrels = nested(truth, "relevance", int)
    run = nested(recs, "score", float)
    out = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)
    users = [u for u, j in qrels.items() if any(r >= 1 for r in j.values())]
    return math.fsum(out.get(u, {}).get("bpref", 0.0) for u in users) / len(users)


def run_ranx(truth: pl.DataFrame, recs: pl.DataFrame, metric: str) -> float:
    import ranx

    qrels = nested(truth.filter(pl.col("relevance") >= 1), "relevance", int)
    run = nested(recs, "score", float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(
            ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "rbp.80", make_comparable=True)
        )


def _ir_measures(truth: pl.DataFrame, recs: pl.DataFrame, measure: Any, provider: str) -> float:
    import ir_measures

    qrels = nested(truth, "relevance", int)
    run = nested(recs, "score", float)
    prov = ir_measures.providers.registry[provider]
    values = {m.query_id: m.value for m in prov.iter_calc([measure], qrels, run)}
    users = [u for u, j in qrels.items() if any(r >= 1 for r in j.values())]
    return math.fsum(float(values.get(u, 0.0)) for u in users) / len(users)


def run_trectools(truth: pl.DataFrame, recs: pl.DataFrame, metric: str) -> float:
    import ir_measures

    return _ir_measures(truth, recs, ir_measures.RBP(p=0.8), "trectools")


def run_gdeval(truth: pl.DataFrame, recs: pl.DataFrame, metric: str) -> float:
    import ir_measures

    return _ir_measures(truth, recs, ir_measures.ERR @ 10, "gdeval")


def run_judged(truth: pl.DataFrame, recs: pl.DataFrame, metric: str) -> float:
    import ir_measures

    return _ir_measures(truth, recs, ir_measures.Judged @ 10, "judged")


TOOLS: dict[str, Callable[[pl.DataFrame, pl.DataFrame, str], float]] = {
    "receval": run_receval,
    "pytrec_eval": run_pytrec_eval,
    "ranx": run_ranx,
    "trectools": run_trectools,
    "gdeval": run_gdeval,
    "ir_measures_judged": run_judged,
}


def best_time(
    tool: str, truth: pl.DataFrame, recs: pl.DataFrame, metric: str, repeat: int
) -> tuple[float, float, float]:
    """(best wall seconds, best CPU seconds of this process, value) over ``repeat`` calls.
    gdeval runs in a perl subprocess: its CPU time is not counted (wall time only)."""
    best = cpu = math.inf
    value = math.nan
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        value = TOOLS[tool](truth, recs, metric)
        best = min(best, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return best, cpu, value


def available(tool: str) -> bool:
    modules = {
        "pytrec_eval": "pytrec_eval",
        "ranx": "ranx",
        "trectools": "trectools",
        "gdeval": "ir_measures",
        "ir_measures_judged": "ir_measures",
    }
    if tool == "receval":
        return True
    if tool == "gdeval" and shutil.which("perl") is None:
        return False
    try:
        __import__(modules[tool])
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--recs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--peers", default=",".join(t for t in TOOLS if t != "receval"), help="comma-separated"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]

    data = make_interactions(args.users, n_recs=args.recs, seed=args.seed)
    truth, recs = data.truth, data.recs
    # gdeval refuses grades above 4: ERR runs on the grades clipped to 4 (both tools)
    clipped = truth.with_columns(pl.col("relevance").clip(upper_bound=4.0))
    small = make_interactions(200, n_recs=20, seed=1)
    small_clipped = small.truth.with_columns(pl.col("relevance").clip(upper_bound=4.0))
    print(
        f"{truth.height:,} truth rows, {recs.height:,} recs rows, {args.users:,} users; "
        f"python {platform.python_version()}, receval {receval.__version__}",
        flush=True,
    )
    rows = []
    for metric, pair in PAIRS.items():
        t_in = clipped if metric.startswith("err") else truth
        t_small = small_clipped if metric.startswith("err") else small.truth
        tools = ["receval", *(p for p in pair if p in peers and available(p))]
        timings: dict[str, tuple[float, float, float]] = {}
        for tool in tools:
            TOOLS[tool](t_small, small.recs, metric)  # warm-up: imports, Numba caches
            timings[tool] = best_time(tool, t_in, recs, metric, args.repeat)
            wall, cpu, _ = timings[tool]
            print(f"  {metric:<26} {tool:<20} {wall:9.2f} s wall {cpu:9.2f} s cpu", flush=True)
        base, base_cpu, value = timings["receval"]
        for tool in tools[1:]:
            seconds, cpu, theirs = timings[tool]
            rows.append(
                {
                    "metric": metric,
                    "peer": tool,
                    "receval_s": base,
                    "peer_s": seconds,
                    "ratio": seconds / base,
                    "receval_cpu_s": base_cpu,
                    "peer_cpu_s": cpu,
                    "mean_diff": abs(theirs - value),
                }
            )
        if len(tools) == 1:
            rows.append({"metric": metric, "peer": None, "receval_s": base})
    print(
        "\n| metric | peer | receval (s) | peer (s) | peer / receval | CPU s (receval, peer) "
        "| |mean diff| |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        if r["peer"] is None:
            print(f"| `{r['metric']}` | (none here) | {r['receval_s']:.2f} | | | | |")
            continue
        print(
            f"| `{r['metric']}` | {r['peer']} | {r['receval_s']:.2f} | {r['peer_s']:.2f} | "
            f"{r['ratio']:.1f}x | {r['receval_cpu_s']:.2f}, {r['peer_cpu_s']:.2f} | "
            f"{r['mean_diff']:.1e} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
