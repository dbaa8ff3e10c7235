"""Where the time of ``receval.evaluate`` goes, phase by phase, for rows grouped by user and
for the same rows shuffled, beside its peers, in one run.

Usage::

    python benchmarks/bench_grouping.py --users 100000 --recs 100 [--ids int|str] \\
        [--peers pytrec_eval,ranx,sklearn,polars] [--repeat 3] \\
        [--before /path/to/other/receval/src] [--json out.json]

The data is :func:`receval.datasets.make_interactions` (written once to Parquet, grouped by
user as it is made), and a copy with its rows in random order (the common case after a
``unique``, a join or a shuffle). Each tool runs in a fresh process that reads the Parquet
files before the clock starts (as in ``bench_ranking.py``).

receval runs with its functions wrapped by timers, which split one ``evaluate`` call into:

* read: ``read_table`` (the frames are in memory already: column selection, conversion);
* validate: ``check_inputs``, ``cast_ids``, ``unify_ids`` (types, nulls, NaN, ids);
* factorise: dense user codes (``layout.user_codes``; absent from versions that sort);
* group: ``group_by_user`` less factorising, plus the gathers of the kernel's arrays in
  grouped order (``Grouped.take``);
* kernel: the ranking kernel (``kernels.ranking.rank_users``);
* merge: the family's part and the Result (``ranking_part``, ``merge``);
* other: the rest of the call (item keys, checks of duplicates).

``--before SRC`` runs receval a second time with ``SRC`` first on ``PYTHONPATH`` (another
checkout's ``src``), with the same timers, for a before/after table.

Peers, timed end to end from the same in-memory frames to the means:

* pytrec_eval and ranx exactly as in ``bench_ranking.py`` (nested dicts built from the
  frames, then the evaluator); their values agree with receval's (``bench_ranking.py``);
* sklearn: ``sklearn.metrics.ndcg_score(k=10)`` on dense per-user matrices built with
  Polars and NumPy (:func:`_sklearn_ndcg`): ndcg@10 only, the same value as receval's;
* polars: the six metrics as one lazy Polars query (rank within user, join with truth,
  group by user), ties broken by input order: the same values as receval ``ties="first"``.

Ratios are tool / receval on the same input (grouped or shuffled). Peak RSS is each
process's ``getrusage`` maximum, the loaded frames included. "released after": the seconds,
after a call and outside its clock, until the memory it handed to its release thread is back
with the OS (``receval.kernels.memory``; every call starts once the last one's is).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ranking import (
    GIB,
    METRICS,
    _peak_rss,
    _run_pytrec_eval,
    _run_ranx,
    _table,
)

PHASES = ("read", "validate", "factorise", "group", "kernel", "merge", "other")
PEERS = ("pytrec_eval", "ranx", "sklearn", "polars")


# --------------------------------------------------------------------------------------
# Worker side.
# --------------------------------------------------------------------------------------


def _timed_receval() -> tuple[Callable[..., Any], dict[str, float]]:
    """``receval.evaluate`` with its phases timed (module doc); returns the call and the
    dict of seconds per phase it adds to."""
    import receval
    import receval.kernels.ranking as kernels
    from receval.data import layout
    from receval.engines import local
    from receval.families import ranking

    seconds: dict[str, float] = defaultdict(float)

    def wrap(owner: Any, name: str, phase: str) -> None:
        inner = getattr(owner, name, None)
        if inner is None:  # this version has no such step
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                seconds[phase] += time.perf_counter() - start

        setattr(owner, name, timed)

    wrap(ranking, "read_table", "read")
    for name in ("check_inputs", "cast_ids", "unify_ids"):
        wrap(ranking, name, "validate")
    wrap(ranking, "group_by_user", "group_total")
    wrap(layout, "user_codes", "factorise")
    wrap(layout.Grouped, "take", "gather")
    wrap(kernels, "rank_users", "kernel")
    wrap(local, "ranking_part", "merge")
    wrap(local, "merge", "merge")

    def run(truth: Any, recs: Any, ties: str) -> Any:
        return receval.evaluate(truth, recs, list(METRICS), ties=ties)  # type: ignore[arg-type]

    return run, seconds


def _sklearn_ndcg(truth: Any, recs: Any) -> dict[str, float]:
    """ndcg@10 by ``sklearn.metrics.ndcg_score`` on dense per-user matrices: each evaluated
    user's list, then 10 items of gain 0 and the truth items the list misses, each below the
    one before (so a missed item never enters the top 10, as in receval); sklearn averages
    the gains of tied items, as receval's ``ties="expected"``."""
    import numpy as np
    import polars as pl
    from sklearn.metrics import ndcg_score

    users = truth.filter(pl.col("relevance") >= 1).select("user").unique()
    lists = recs.join(users, on="user", how="semi").join(
        truth.select("user", "item", "relevance"), on=["user", "item"], how="left"
    )
    low = float(recs["score"].min()) - 1.0  # type: ignore[arg-type]
    missed = truth.join(users, on="user", how="semi").join(
        recs.select("user", "item"), on=["user", "item"], how="anti"
    )
    padding = users.join(pl.DataFrame({"relevance": [0.0] * 10}), how="cross")
    rows = pl.concat(
        [
            lists.select("user", pl.col("relevance").fill_null(0.0), "score"),
            padding.select("user", "relevance", pl.lit(low).alias("score")),
            missed.select("user", "relevance", pl.lit(low - 1.0).alias("score")),
        ]
    ).sort("user", maintain_order=True)
    codes = rows["user"].rle_id().to_numpy()
    pos = rows.select(pl.int_range(pl.len()).over("user")).to_series().to_numpy()
    shape = (int(codes.max()) + 1, int(pos.max()) + 1)
    y_true = np.zeros(shape)
    y_score = np.full(shape, low - 2.0)
    y_true[codes, pos] = np.maximum(rows["relevance"].to_numpy(), 0.0)
    y_score[codes, pos] = rows["score"].to_numpy()
    return {"ndcg@10": float(ndcg_score(y_true, y_score, k=10))}  # the mean over users


def _polars_query(truth: Any, recs: Any) -> Any:
    """The six metrics as one lazy Polars query; ties by input order (ties="first")."""
    import polars as pl

    t = truth.lazy().with_columns(pl.col("relevance").clip(lower_bound=0.0).alias("gain"))
    n_rel = t.group_by("user").agg(
        (pl.col("relevance") >= 1).sum().alias("n_rel"),
        pl.col("gain").sort(descending=True).head(10).alias("ideal"),
    )
    n_rel = n_rel.filter(pl.col("n_rel") > 0).with_columns(
        pl.col("ideal")
        .list.eval(pl.element() / (pl.int_range(pl.len()) + 2).cast(pl.Float64).log(2))
        .list.sum()
        .alias("idcg")
    )
    ranked = recs.lazy().with_columns(
        pl.col("score").rank("ordinal", descending=True).over("user").alias("rank")
    )
    hits = ranked.join(t, on=["user", "item"], how="inner").join(
        n_rel.select("user"), on="user", how="semi"
    )
    rel = pl.col("relevance") >= 1
    r = pl.col("rank")
    hit_rank = pl.when(rel).then(r)
    per_user = hits.group_by("user").agg(
        (pl.col("gain") / (r + 1).cast(pl.Float64).log(2)).filter(r <= 10).sum().alias("dcg"),
        (rel & (r <= 10)).sum().alias("h10"),
        (rel & (r <= 20)).sum().alias("h20"),
        (1.0 / hit_rank.min()).alias("rr"),
    )
    ap = (
        hits.filter(rel & (r <= 100))
        .with_columns(r.rank("ordinal").over("user").alias("k"))  # k-th relevant hit
        .group_by("user")
        .agg((pl.col("k") / r).sum().alias("ap_sum"))
    )
    table = (
        n_rel.join(per_user, on="user", how="left")
        .join(ap, on="user", how="left")
        .with_columns(pl.exclude("user", "ideal").fill_null(0.0))
        .select(
            "user",
            (pl.col("dcg") / pl.col("idcg")).alias("ndcg@10"),
            (pl.col("ap_sum") / pl.col("n_rel")).alias("map@100"),
            pl.col("rr").alias("mrr"),
            (pl.col("h20") / pl.col("n_rel")).alias("recall@20"),
            (pl.col("h10") / 10.0).alias("precision@10"),
            (pl.col("h10") > 0).cast(pl.Float64).alias("hit_rate@10"),
        )
    )
    return table.collect()


def _run_sklearn(truth: Any, recs: Any, ties: str) -> tuple[Any, dict[str, float]]:
    means = _sklearn_ndcg(truth, recs)
    return None, means


def _run_polars(truth: Any, recs: Any, ties: str) -> tuple[Any, dict[str, float]]:
    table = _polars_query(truth, recs)
    return table, {m: float(table[m].mean()) for m in METRICS}  # type: ignore[arg-type]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time one tool on one data set in this (fresh) process."""
    import polars as pl

    tool = spec["tool"]
    seconds: dict[str, float] = {}
    if tool == "receval":
        run, seconds = _timed_receval()
    else:
        run = {
            "pytrec_eval": _run_pytrec_eval,
            "ranx": _run_ranx,
            "sklearn": _run_sklearn,
            "polars": _run_polars,
        }[tool]
    start = time.perf_counter()
    truth = pl.read_parquet(spec["truth"])
    recs = pl.read_parquet(spec["recs"])
    parquet_s = time.perf_counter() - start
    times: list[float] = []
    phases: list[dict[str, float]] = []
    released: list[float] = []
    means: dict[str, float] = {}
    result: Any = None
    for _ in range(spec["repeat"]):
        result = None
        gc.collect()
        seconds.clear()
        start = time.perf_counter()
        out = run(truth, recs, spec["ties"])
        took = time.perf_counter() - start
        times.append(took)
        released.append(_wait_released())  # outside the clock, as gc.collect() above
        if tool == "receval":
            result, means = out, dict(out.means)
            phases.append(_phases(dict(seconds), took))
        else:
            result, means = out
    if tool == "receval" and spec.get("per_user"):
        result.per_user.write_parquet(spec["per_user"])
    if tool == "polars" and spec.get("per_user"):
        result.write_parquet(spec["per_user"])
    best = min(range(len(times)), key=times.__getitem__)
    return {
        "status": "ok",
        "times": times,
        "best": times[best],
        "phases": phases[best] if phases else {},
        "released_after": released[best],
        "means": means,
        "parquet_s": parquet_s,
        "peak_rss": _peak_rss(),
    }


def _wait_released() -> float:
    """Seconds until the memory a receval call handed to its release thread is back with the
    OS (:func:`receval.kernels.memory.wait_released`; 0 for versions without it): each timed
    call starts with the last one's memory returned, and this time is shown apart."""
    try:
        from receval.kernels.memory import wait_released
    except ImportError:
        return 0.0
    start = time.perf_counter()
    wait_released()
    return time.perf_counter() - start


def _phases(seconds: dict[str, float], total: float) -> dict[str, float]:
    factorise = seconds.get("factorise", 0.0)
    group = seconds.get("group_total", 0.0) - factorise + seconds.get("gather", 0.0)
    out = {
        "read": seconds.get("read", 0.0),
        "validate": seconds.get("validate", 0.0),
        "factorise": factorise,
        "group": group,
        "kernel": seconds.get("kernel", 0.0),
        "merge": seconds.get("merge", 0.0),
    }
    out["other"] = total - sum(out.values())
    return out


def generate(spec: dict[str, Any]) -> dict[str, Any]:
    """The data sets, grouped and shuffled, as Parquet (in its own process)."""
    import numpy as np

    from receval.datasets import make_interactions

    out: dict[str, Any] = {}
    for name, options in spec["datasets"].items():
        data = make_interactions(**options)
        rng = np.random.default_rng(12345)
        for part in ("truth", "recs"):
            frame = getattr(data, part)
            frame.write_parquet(Path(spec["dir"]) / f"{name}.grouped.{part}.parquet")
            shuffled = frame[rng.permutation(frame.height)]
            shuffled.write_parquet(Path(spec["dir"]) / f"{name}.shuffled.{part}.parquet")
            out[f"{name}.{part}_rows"] = frame.height
            del shuffled
        del data
    return out


# --------------------------------------------------------------------------------------
# Parent side.
# --------------------------------------------------------------------------------------


def _spawn(mode: str, spec: dict[str, Any], src: str | None, timeout: float) -> dict[str, Any]:
    """Run ``mode`` in a fresh process (``src`` first on its PYTHONPATH when given)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as handle:
        out_path = handle.name
    command = [sys.executable, os.path.abspath(__file__), f"--{mode}", json.dumps(spec)]
    try:
        done = subprocess.run([*command, "--out", out_path], check=False, env=env, timeout=timeout)
        if done.returncode != 0:
            return {"status": "error", "message": f"exit code {done.returncode}"}
        return dict(json.loads(Path(out_path).read_text()))
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "message": f"over {timeout:.0f} s"}
    finally:
        Path(out_path).unlink(missing_ok=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Phases of receval.evaluate on grouped and shuffled rows, and peers.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--users", type=int, default=100_000, help="users in truth")
    parser.add_argument("--recs", type=int, default=100, help="recommendations per user")
    parser.add_argument(
        "--ids", choices=("int", "str"), default="int", help="user and item ids (make_interactions)"
    )
    parser.add_argument("--peers", default=",".join(PEERS), help="peers to run ('' for none)")
    parser.add_argument("--repeat", type=int, default=3, help="calls per process (>= 1)")
    parser.add_argument(
        "--before",
        help="another receval src folder to time as 'before' (this checkout's src is 'after')",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: temp)")
    parser.add_argument(
        "--reuse", action="store_true", help="reuse the data of an earlier run in --workdir"
    )
    args = parser.parse_args(argv)
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(args.peers) - set(PEERS))
    if unknown:
        parser.error(f"--peers must be among {', '.join(PEERS)}; got {', '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="receval-grouping-"))
    workdir.mkdir(parents=True, exist_ok=True)
    datasets = {
        "warmup": {"n_users": 50, "n_recs": 20, "seed": 1, "ids": args.ids},
        "main": {"n_users": args.users, "n_recs": args.recs, "seed": 0, "ids": args.ids},
    }
    names = [
        f"{d}.{o}.{p}" for d in datasets for o in ("grouped", "shuffled") for p in ("truth", "recs")
    ]
    saved = workdir / "rows.json"
    if args.reuse and saved.exists() and all((workdir / f"{n}.parquet").exists() for n in names):
        print(f"reusing the data in {workdir}", flush=True)
        rows = json.loads(saved.read_text())
    else:
        print(f"generating data in {workdir} ...", flush=True)
        rows = _spawn("generate", {"dir": str(workdir), "datasets": datasets}, None, args.timeout)
        if rows.get("status") is None:
            saved.write_text(json.dumps(rows))
    if rows.get("status") is not None:
        print(f"data generation failed: {rows['message']}", file=sys.stderr)
        return 1
    print(f"recs rows: {rows['main.recs_rows']:,}, truth rows: {rows['main.truth_rows']:,}")

    def spec(tool: str, data: str, order: str, repeat: int, ties: str) -> dict[str, Any]:
        return {
            "tool": tool,
            "truth": str(workdir / f"{data}.{order}.truth.parquet"),
            "recs": str(workdir / f"{data}.{order}.recs.parquet"),
            "repeat": repeat,
            "ties": ties,
            "per_user": str(workdir / f"{tool}.{order}.{ties}.per_user.parquet"),
        }

    here = str(Path(__file__).resolve().parents[1] / "src")  # this checkout's receval
    versions: dict[str, str | None] = {"after": here}
    if args.before:
        versions = {"before": args.before, "after": here}
    for src in versions.values():  # warm-up: fill the numba caches of each version
        _spawn("worker", spec("receval", "warmup", "shuffled", 1, "first"), src, args.timeout)
    results: dict[str, Any] = {"rows": rows, "receval": {}, "peers": {}}
    for order in ("grouped", "shuffled"):
        for version, src in versions.items():
            for ties in ("expected", "first"):
                key = f"{version}.{order}.{ties}"
                got = _spawn("worker", spec("receval", "main", order, args.repeat, ties), src,
                             args.timeout)  # fmt: skip
                results["receval"][key] = got
                print(f"receval {key}: {got.get('best', got.get('message'))}", flush=True)
        for peer in args.peers:
            ties = "first" if peer == "polars" else "expected"
            got = _spawn("worker", spec(peer, "main", order, args.repeat, ties), None,
                         args.timeout)  # fmt: skip
            results["peers"][f"{peer}.{order}"] = got
            print(f"{peer} {order}: {got.get('best', got.get('message'))}", flush=True)
    _report(results, args, versions)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def _report(results: dict[str, Any], args: argparse.Namespace, versions: dict[str, Any]) -> None:
    recv = results["receval"]
    header = ["receval", "total (s)", *PHASES, "released after (s)", "peak RSS (GiB)"]
    header.append("vs grouped")
    lines = []
    for version in versions:
        for ties in ("expected", "first"):
            grouped = recv.get(f"{version}.grouped.{ties}", {}).get("best")
            for order in ("grouped", "shuffled"):
                got = recv.get(f"{version}.{order}.{ties}", {})
                if got.get("status") != "ok":
                    lines.append([f"{version}, {order}, ties={ties}", got.get("message", "-")])
                    continue
                ph = got["phases"]
                ratio = got["best"] / grouped if grouped else float("nan")
                lines.append(
                    [f"{version}, {order}, ties={ties}", f"{got['best']:.3f}"]
                    + [f"{ph[p]:.3f}" for p in PHASES]
                    + [f"{got.get('released_after', 0.0):.3f}", f"{got['peak_rss'] / GIB:.2f}"]
                    + [f"{ratio:.2f}x"]
                )
    width = max(len(line) for line in lines)
    print(_table(header[:width], [line + [""] * (width - len(line)) for line in lines]))
    print()
    checks = {  # bit for bit: before = after; and under "expected", grouped = shuffled
        "expected": lambda key: key.endswith(".expected"),
        "grouped, first": lambda key: ".grouped.first" in key,
        "shuffled, first": lambda key: ".shuffled.first" in key,
    }
    for ties, chosen in checks.items():
        means = {k: g["means"] for k, g in recv.items() if chosen(k) and g.get("status") == "ok"}
        same = len({json.dumps(m, sort_keys=True) for m in means.values()}) == 1
        print(f"ties={ties}: means identical across {sorted(means)}: {same}")
    print()
    peer_lines = []
    for key, got in results["peers"].items():
        peer, order = key.split(".")
        ours = recv.get(f"after.{order}.{'first' if peer == 'polars' else 'expected'}", {})
        if got.get("status") != "ok":
            peer_lines.append([peer, order, got.get("message", "-"), "-", "-", "-"])
            continue
        ratio = got["best"] / ours["best"] if ours.get("best") else float("nan")
        diff = "see bench_ranking.py"  # pytrec_eval agrees with ties="trec", ranx tie-free
        if peer in ("sklearn", "polars"):
            diff = f"{max(abs(v - ours['means'][m]) for m, v in got['means'].items()):.2g}"
        peer_lines.append(
            [peer, order, f"{got['best']:.3f}", f"{ratio:.1f}x",
             f"{got['peak_rss'] / GIB:.2f}", diff]
        )  # fmt: skip
    if peer_lines:
        header = ["peer", "input", "best (s)", "peer / receval", "peak RSS (GiB)", "max |Δ mean|"]
        print(_table(header, peer_lines))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--worker", "--generate"):
        mode, payload, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[4]
        answer = worker(payload) if mode == "--worker" else generate(payload)
        Path(out).write_text(json.dumps(answer))
        sys.exit(0)
    sys.exit(main())
