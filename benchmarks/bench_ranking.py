"""Benchmark receval against ranx and pytrec_eval on the same data, in one run.

Usage::

    python benchmarks/bench_ranking.py --users 100000 --recs 100 --relevant 10 \\
        [--str-ids] [--peers ranx,pytrec_eval] [--repeat 3] [--json results.json]

The data comes from :func:`receval.datasets.make_interactions` and is written once to
Parquet. Every tool then runs in a fresh Python process (``subprocess``) that reads the
Parquet files into polars DataFrames *before* the clock starts, so each timing runs end to
end from the same in-memory DataFrames:

* receval: ``receval.evaluate(truth, recs, METRICS)`` on the polars frames, then ``.means``.
* pytrec_eval: casting ids to strings and relevance to int, building the nested
  ``{user: {item: value}}`` dicts from the polars frames, ``RelevanceEvaluator(...)``,
  ``evaluate(run)`` and the means.
* ranx: the same nested dicts, ``Qrels(...)``, ``Run(...)``, ``make_comparable``,
  ``ranx.evaluate(..., return_mean=False)`` and the means.

Each process calls its tool ``--repeat`` times; the first call is the cold call (numba
caches already on disk, filled by a warm-up process on tiny data), the best call is the
warm figure, and the ratios are peer / receval. Peak RSS is the process's own
``getrusage(RUSAGE_SELF).ru_maxrss``; "over data" subtracts the peak reached after
imports and loading the frames. A process over ``--mem-limit-gb`` is stopped (polled with
psutil when it is installed) and the tool reported as skipped, as is a tool that is not
installed or that fails.

Agreement: per-user values of each peer are compared with receval's on receval's
evaluated users (users with a relevant item; a user missing from the peer's output counts
0, as trec_eval ``-c`` does). pytrec_eval is compared with ``ties="trec"`` on the benchmark
data; ranx breaks ties in an unspecified order, so it is compared on a tie-free copy of the
data (``score_decimals=None``, same seed) unless the benchmark data already is tie-free.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

METRICS = ("ndcg@10", "map@100", "mrr", "recall@20", "precision@10", "hit_rate@10")
TREC_MEASURES = {  # pytrec_eval reports "ndcg_cut.10" as "ndcg_cut_10", and so on
    "ndcg@10": "ndcg_cut.10",
    "map@100": "map_cut.100",
    "mrr": "recip_rank",
    "recall@20": "recall.20",
    "precision@10": "P.10",
    "hit_rate@10": "success.10",
}
RANX_METRICS = {m: m for m in METRICS}  # ranx spells these six as receval does
PEERS = ("ranx", "pytrec_eval")
GIB = 2**30


# --------------------------------------------------------------------------------------
# Worker side: runs in a fresh process, one tool, one data set.
# --------------------------------------------------------------------------------------


def _peak_rss() -> int:
    """Peak resident set size of this process in bytes (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def _nested(frame: Any, value_col: str, value_dtype: Any) -> dict[str, dict[str, Any]]:
    """``{user: {item: value}}`` with string ids, from a polars frame (peer input format)."""
    import polars as pl

    frame = frame.sort("user", maintain_order=True).select(
        pl.col("user").cast(pl.String),
        pl.col("item").cast(pl.String),
        pl.col(value_col).cast(value_dtype),
    )
    runs = frame["user"].rle()
    users = runs.struct.field("value").to_list()
    lengths = runs.struct.field("len").to_list()
    items = frame["item"].to_list()
    values = frame[value_col].to_list()
    nested: dict[str, dict[str, Any]] = {}
    start = 0
    for user, length in zip(users, lengths, strict=True):
        stop = start + length
        nested[user] = dict(zip(items[start:stop], values[start:stop], strict=True))
        start = stop
    return nested


def _run_receval(truth: Any, recs: Any, ties: str) -> tuple[Any, dict[str, float]]:
    import receval

    result = receval.evaluate(truth, recs, list(METRICS), ties=ties)  # type: ignore[arg-type]
    return result, dict(result.means)


def _per_user_receval(result: Any) -> Any:
    return result.per_user


def _run_pytrec_eval(truth: Any, recs: Any, ties: str) -> tuple[Any, dict[str, float]]:
    import polars as pl
    import pytrec_eval

    qrels = _nested(truth, "relevance", pl.Int64)
    run = _nested(recs, "score", pl.Float64)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES.values()))
    per_query = evaluator.evaluate(run)
    means = {
        metric: sum(values[measure.replace(".", "_")] for values in per_query.values())
        / len(per_query)
        for metric, measure in TREC_MEASURES.items()
    }
    return per_query, means


def _per_user_pytrec_eval(per_query: dict[str, dict[str, float]]) -> Any:
    import polars as pl

    data: dict[str, list[Any]] = {"user": list(per_query)}
    for metric, measure in TREC_MEASURES.items():
        data[metric] = [values[measure.replace(".", "_")] for values in per_query.values()]
    return pl.DataFrame(data)


def _run_ranx(truth: Any, recs: Any, ties: str) -> tuple[Any, dict[str, float]]:
    import numpy as np
    import polars as pl
    import ranx

    qrels = ranx.Qrels(_nested(truth, "relevance", pl.Int64))
    run = ranx.Run(_nested(recs, "score", pl.Float64)).make_comparable(qrels)
    scores = ranx.evaluate(
        qrels, run, list(RANX_METRICS.values()), return_mean=False, save_results_in_run=False
    )
    means = {metric: float(np.mean(scores[name])) for metric, name in RANX_METRICS.items()}
    return (list(run.keys()), scores), means


def _per_user_ranx(result: tuple[list[str], dict[str, Any]]) -> Any:
    import polars as pl

    users, scores = result
    data: dict[str, Any] = {"user": users}
    for metric, name in RANX_METRICS.items():
        data[metric] = scores[name]
    return pl.DataFrame(data)


RUNNERS: dict[str, tuple[str, Callable[..., Any], Callable[[Any], Any]]] = {
    # tool: (module to import, timed call, untimed conversion to a per-user frame)
    "receval": ("receval", _run_receval, _per_user_receval),
    "pytrec_eval": ("pytrec_eval", _run_pytrec_eval, _per_user_pytrec_eval),
    "ranx": ("ranx", _run_ranx, _per_user_ranx),
}


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time one tool on one data set in this (fresh) process."""
    module, run, to_per_user = RUNNERS[spec["tool"]]
    start = time.perf_counter()
    try:
        __import__(module)
    except ImportError as exc:
        return {"status": "missing", "message": f"not installed ({exc})"}
    import_s = time.perf_counter() - start
    import polars as pl

    truth = pl.read_parquet(spec["truth"])
    recs = pl.read_parquet(spec["recs"])
    loaded_rss = _peak_rss()
    times: list[float] = []
    result: Any = None
    means: dict[str, float] = {}
    try:
        for _ in range(spec["repeat"]):
            result = None
            gc.collect()
            start = time.perf_counter()
            result, means = run(truth, recs, spec["ties"])
            times.append(time.perf_counter() - start)
    except MemoryError:
        return {"status": "oom", "message": "ran out of memory (MemoryError)", "times": times}
    peak_rss = _peak_rss()
    if spec.get("per_user"):
        to_per_user(result).write_parquet(spec["per_user"])
    return {
        "status": "ok",
        "import_s": import_s,
        "times": times,
        "means": means,
        "loaded_rss": loaded_rss,
        "peak_rss": peak_rss,
    }


def generate(spec: dict[str, Any]) -> dict[str, Any]:
    """Make the data sets and write them to Parquet (in its own process, to keep the
    parent small)."""
    import polars as pl

    from receval.datasets import make_interactions

    rows: dict[str, Any] = {}
    for name, options in spec["datasets"].items():
        start = time.perf_counter()
        data = make_interactions(**options)
        seconds = time.perf_counter() - start
        for part in ("truth", "recs"):
            frame: pl.DataFrame = getattr(data, part)
            frame.write_parquet(Path(spec["dir"]) / f"{name}.{part}.parquet", compression="lz4")
        rows[name] = {
            "truth_rows": data.truth.height,
            "recs_rows": data.recs.height,
            "generate_s": seconds,
        }
        del data
    return rows


# --------------------------------------------------------------------------------------
# Parent side.
# --------------------------------------------------------------------------------------


def _spawn(
    mode: str, spec: dict[str, Any], mem_limit: int | None, timeout: float
) -> dict[str, Any]:
    """Run ``mode`` (worker or generate) in a fresh Python process; stop it past
    ``mem_limit`` bytes of RSS (needs psutil) or ``timeout`` seconds."""
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as out_file:
        out_path = out_file.name
    command = [sys.executable, os.path.abspath(__file__), f"--{mode}", json.dumps(spec)]
    process = subprocess.Popen([*command, "--out", out_path])
    try:
        psutil: Any = None
        with contextlib.suppress(ImportError):
            import psutil  # type: ignore[import-untyped,no-redef]
        watched = psutil.Process(process.pid) if psutil and mem_limit else None
        started = time.perf_counter()
        while process.poll() is None:
            if watched is not None:
                with contextlib.suppress(psutil.Error):
                    if watched.memory_info().rss > mem_limit:
                        process.kill()
                        process.wait()
                        limit_gib = mem_limit / GIB  # type: ignore[operator]
                        return {"status": "oom", "message": f"over {limit_gib:.1f} GiB RSS"}
            if time.perf_counter() - started > timeout:
                process.kill()
                process.wait()
                return {"status": "timeout", "message": f"over {timeout:.0f} s"}
            time.sleep(0.05)
        if process.returncode != 0:
            killed = process.returncode in (-9, 137)
            reason = "killed, out of memory?" if killed else f"exit code {process.returncode}"
            return {"status": "oom" if killed else "error", "message": reason}
        return dict(json.loads(Path(out_path).read_text()))
    finally:
        if process.poll() is None:
            process.kill()
        Path(out_path).unlink(missing_ok=True)


def _compare(reference: Any, peer: Any) -> dict[str, Any]:
    """Max |difference| of means and of per-user values over ``reference``'s users; users
    missing from ``peer`` count 0."""
    import polars as pl

    ref = reference.with_columns(pl.col("user").cast(pl.String))
    other = peer.with_columns(pl.col("user").cast(pl.String))
    joined = ref.join(other, on="user", how="left", suffix="_peer")
    mean_diffs: dict[str, float] = {}
    user_diffs: dict[str, float] = {}
    for metric in METRICS:
        ours = joined[metric]
        theirs = joined[f"{metric}_peer"].fill_null(0.0)
        mean_diffs[metric] = abs(float(ours.mean()) - float(theirs.mean()))
        user_diffs[metric] = float((ours - theirs).abs().max())
    return {
        "max_abs_mean_diff": max(mean_diffs.values()),
        "max_abs_user_diff": max(user_diffs.values()),
        "mean_diff": mean_diffs,
        "users_compared": joined.height,
        "users_missing_from_peer": int(joined[f"{METRICS[0]}_peer"].null_count()),
    }


def _fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x"


def _fmt_gib(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _write_json_atomically(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as handle:
        json.dump(payload, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(handle.name, path)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("receval", "polars", "numpy", "numba", "ranx", "pytrec-eval-terrier"):
        with contextlib.suppress(PackageNotFoundError):
            versions[package] = version(package)
    return versions


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time receval, ranx and pytrec_eval on the same generated data.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--users", type=int, default=100_000, help="users in truth")
    parser.add_argument("--recs", type=int, default=100, help="recommendations per user")
    parser.add_argument("--relevant", type=float, default=10.0, help="mean relevant per user")
    parser.add_argument(
        "--decimals",
        type=lambda s: None if s.lower() == "none" else int(s),
        default=2,
        help="score decimals ('none' for full precision, no ties)",
    )
    parser.add_argument("--str-ids", action="store_true", help="compare on string ids")
    parser.add_argument(
        "--peers",
        default=",".join(PEERS),
        help="comma-separated peers among ranx, pytrec_eval ('' for none)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="calls per tool (>= 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mem-limit-gb",
        type=float,
        default=0.85 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB,
        help="stop a tool's process past this RSS (GiB; needs psutil)",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    parser.add_argument("--json", type=Path, help="write the results to this JSON file")
    parser.add_argument("--workdir", type=Path, help="where to write the data (default: temp)")
    args = parser.parse_args(argv)
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(args.peers) - set(PEERS))
    if unknown:
        parser.error(f"--peers must be among {', '.join(PEERS)}; got {', '.join(unknown)}")
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1; got {args.repeat}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import polars as pl

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="receval-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    mem_limit = int(args.mem_limit_gb * GIB)
    ids = "str" if args.str_ids else "int"
    other_ids = "int" if args.str_ids else "str"
    base = {
        "n_users": args.users,
        "n_recs": args.recs,
        "mean_relevant": args.relevant,
        "score_decimals": args.decimals,
        "seed": args.seed,
    }
    datasets: dict[str, dict[str, Any]] = {
        "warmup": {"n_users": 50, "n_recs": 20, "seed": 1},
        "main": {**base, "ids": ids},
        "other_ids": {**base, "ids": other_ids},
    }
    tie_free = args.decimals is None
    if "ranx" in args.peers and not tie_free:
        datasets["tie_free"] = {**base, "ids": ids, "score_decimals": None}

    try:
        print(f"generating data in {workdir} ...", flush=True)
        rows = _spawn("generate", {"dir": str(workdir), "datasets": datasets}, None, args.timeout)
        if "status" in rows:
            print(f"data generation failed: {rows['message']}", file=sys.stderr)
            return 1
        main_rows = rows["main"]
        print(
            f"data: {args.users} users, {main_rows['truth_rows']} truth rows, "
            f"{main_rows['recs_rows']} recs rows, {ids} ids, score decimals {args.decimals} "
            f"(generated in {main_rows['generate_s']:.2f} s)",
            flush=True,
        )

        def spec(tool: str, data: str, repeat: int, ties: str = "expected") -> dict[str, Any]:
            return {
                "tool": tool,
                "truth": str(workdir / f"{data}.truth.parquet"),
                "recs": str(workdir / f"{data}.recs.parquet"),
                "repeat": repeat,
                "ties": ties,
                "per_user": str(workdir / f"{tool}.{data}.{ties}.per_user.parquet"),
            }

        peers = []
        for peer in args.peers:
            if importlib.util.find_spec(peer) is None:
                print(f"{peer}: skipped, not installed", flush=True)
            else:
                peers.append(peer)
        # Warm-up on tiny data fills the numba caches, so that a first call is a cold call
        # of a process, not a compilation.
        for tool in ["receval", *peers]:
            for ties in ("expected", "trec"):
                _spawn("worker", spec(tool, "warmup", 1, ties), mem_limit, args.timeout)

        results: dict[str, dict[str, Any]] = {}
        jobs = [
            ("receval", "receval", "main", "expected"),
            (f"receval ({other_ids} ids)", "receval", "other_ids", "expected"),
            ("receval (ties=trec)", "receval", "main", "trec"),
            *((peer, peer, "main", "expected") for peer in peers),
        ]
        for label, tool, data, ties in jobs:
            print(f"running {label} ...", flush=True)
            outcome = _spawn("worker", spec(tool, data, args.repeat, ties), mem_limit, args.timeout)
            outcome["per_user"] = spec(tool, data, 0, ties)["per_user"]
            if outcome["status"] != "ok":
                print(f"{label}: skipped, {outcome['message']}", flush=True)
            results[label] = outcome

        parity: dict[str, Any] = {}

        def per_user(label: str) -> Any:
            return pl.read_parquet(results[label]["per_user"])

        if results.get("pytrec_eval", {}).get("status") == "ok" and (
            results["receval (ties=trec)"]["status"] == "ok"
        ):
            parity["pytrec_eval"] = {
                "against": "receval ties='trec', benchmark data",
                **_compare(per_user("receval (ties=trec)"), per_user("pytrec_eval")),
            }
        if results.get("ranx", {}).get("status") == "ok":
            if tie_free:
                reference, peer_frame, against = (
                    per_user("receval"),
                    per_user("ranx"),
                    "receval, benchmark data (tie-free)",
                )
            else:
                print("checking ranx on tie-free data ...", flush=True)
                ours = _spawn("worker", spec("receval", "tie_free", 1), mem_limit, args.timeout)
                theirs = _spawn("worker", spec("ranx", "tie_free", 1), mem_limit, args.timeout)
                reference = peer_frame = None
                if ours["status"] == "ok" and theirs["status"] == "ok":
                    reference = pl.read_parquet(spec("receval", "tie_free", 0)["per_user"])
                    peer_frame = pl.read_parquet(spec("ranx", "tie_free", 0)["per_user"])
                against = "receval, tie-free copy of the data (score_decimals=None)"
            if reference is not None:
                parity["ranx"] = {"against": against, **_compare(reference, peer_frame)}

        report = _report(args, results, parity, ids, other_ids)
        print()
        print(report)
        if args.json:
            payload = {
                "settings": {
                    "users": args.users,
                    "recs": args.recs,
                    "relevant": args.relevant,
                    "decimals": args.decimals,
                    "ids": ids,
                    "repeat": args.repeat,
                    "seed": args.seed,
                    "peers": args.peers,
                },
                "machine": {
                    "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                    "python": platform.python_version(),
                    "versions": _versions(),
                },
                "data": rows,
                "results": {
                    label: {k: v for k, v in r.items() if k != "per_user"}
                    for label, r in results.items()
                },
                "parity": parity,
            }
            _write_json_atomically(args.json, payload)
            print(f"\nwrote {args.json}")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _report(
    args: argparse.Namespace,
    results: dict[str, dict[str, Any]],
    parity: dict[str, Any],
    ids: str,
    other_ids: str,
) -> str:
    ours = results["receval"]
    ours_ok = ours["status"] == "ok"
    ours_best = min(ours["times"]) if ours_ok else None
    ours_first = ours["times"][0] if ours_ok else None
    header = [
        "tool",
        "first call s",
        f"best of {args.repeat} s",
        "best ratio",
        "first ratio",
        "peak RSS GiB",
        "over data GiB",
        "max |Δ mean|",
    ]
    rows = []
    notes = []
    for label, result in results.items():
        if result["status"] != "ok":
            rows.append([label, "skipped", *["-"] * (len(header) - 2)])
            notes.append(f"{label}: skipped, {result['message']}")
            continue
        first, best = result["times"][0], min(result["times"])
        tool = label.split(" ")[0]
        check = parity.get(tool) if tool != "receval" else None
        rows.append(
            [
                label,
                _fmt_s(first),
                _fmt_s(best),
                _fmt_ratio(best / ours_best if ours_best else None),
                _fmt_ratio(first / ours_first if ours_first else None),
                _fmt_gib(result["peak_rss"]),
                _fmt_gib(result["peak_rss"] - result["loaded_rss"]),
                f"{check['max_abs_mean_diff']:.2e}" if check else "",
            ]
        )
    lines = [
        f"{args.users} users x {args.recs} recs, {ids} ids, metrics: {', '.join(METRICS)}",
        f"{os.cpu_count()} CPUs; ratios are tool / receval ({ids} ids, ties='expected');",
        "peers' times include building their input (str ids, nested dicts) from the polars",
        "frames; 'over data' is peak RSS minus the peak after imports and loading the frames.",
        "",
        _table(header, rows),
        *notes,
    ]
    other = results[f"receval ({other_ids} ids)"]
    if ours_ok and other["status"] == "ok":
        str_best, int_best = (
            (ours_best, min(other["times"])) if ids == "str" else (min(other["times"]), ours_best)
        )
        lines.append(f"\nreceval string ids / int ids (best): {str_best / int_best:.2f}x")  # type: ignore[operator]
    if ours_ok:
        means = ", ".join(f"{m}={v:.4f}" for m, v in ours["means"].items())
        lines.append(f"receval means: {means}")
    for peer, check in parity.items():
        lines.append(
            f"{peer} vs {check['against']}: max |Δ mean| {check['max_abs_mean_diff']:.2e}, "
            f"max |Δ per user| {check['max_abs_user_diff']:.2e} over "
            f"{check['users_compared']} users ({check['users_missing_from_peer']} absent "
            "from the peer's output, counted 0)"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] in ("--worker", "--generate") and sys.argv[3] == "--out":
        task = worker if sys.argv[1] == "--worker" else generate
        Path(sys.argv[4]).write_text(json.dumps(task(json.loads(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main())
