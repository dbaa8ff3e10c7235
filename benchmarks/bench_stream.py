"""Streaming evaluation: files larger than memory, and the cost of one batch of a training loop.

Usage::

    python benchmarks/bench_stream.py files --rows 1e8 --block-memory 1GiB [--local] \\
        [--rounds 2] [--md benchmarks/stream.md]
    python benchmarks/bench_stream.py batches --batches 50 --sizes 256,1024,4096 \\
        [--md benchmarks/stream.md]

``files``: truth and recommendations of ``--rows`` recommendation rows (100 a user; the
data of :func:`receval.datasets.make_interactions`, made in chunks of users and appended to
one Parquet file each as row groups, so the data never has to fit in memory) are evaluated
by ``receval.evaluate(truth.parquet, recs.parquet, METRICS, engine="stream",
block_memory=...)`` in a fresh process, timed with its peak RSS (``getrusage``); with
``--local`` the local engine (which reads both files whole) runs too, and the two Results
must be equal (means compared bit for bit). The files are sorted by user, so
``engine="stream"`` reads them in order without the partition pass (``sorted_by_user="auto"``);
``stream (partition pass)`` is the same call with ``sorted_by_user=False``. ``--rounds``
repeats the runs alternated (sorted, partition, [local], sorted, ...); the table gives the
best time and the largest peak RSS of each, and the load average (``os.getloadavg``) before
and after.

``batches``: a validation loop's batches of users (100 recommended items a user, truth
from the same generator), fed one batch at a time to ``receval.Evaluator.update`` and to
torchmetrics' ``RetrievalNormalizedDCG(top_k=10)`` and ``RetrievalRecall(top_k=10)``
(``update(preds, target, indexes)`` on the same rows), each timed per batch, then
``compute()``; the state each keeps is measured (receval: ``Evaluator.state_bytes()``;
torchmetrics: the tensors it holds). torchmetrics keeps every row it was given; receval
keeps one row per user and the global states. The definitions differ (torchmetrics' recall
counts only the positives among the rows given to it), so only the costs are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

METRICS = ("ndcg@10", "map@100", "mrr", "recall@20", "precision@10", "hit_rate@10")
USERS_PER_CHUNK = 200_000


def machine() -> str:
    import numba
    import polars as pl

    import receval

    cpus = os.cpu_count()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{cpus} CPUs, {mem:.0f} GiB, {platform.system()} {platform.machine()}, Python "
        f"{platform.python_version()}; receval {receval.__version__}, polars {pl.__version__}, "
        f"numba {numba.__version__}"
    )


def make_files(rows: int, folder: Path, seed: int) -> tuple[Path, Path, float]:
    """Truth and recs Parquet files of about ``rows`` recs rows, written chunk by chunk."""
    import pyarrow.parquet as pq

    from receval.datasets import make_interactions

    n_users = max(1, rows // 100)
    t_path, r_path = folder / "truth.parquet", folder / "recs.parquet"
    writers: dict[str, Any] = {}
    start = time.perf_counter()
    for c, lo in enumerate(range(0, n_users, USERS_PER_CHUNK)):
        n = min(USERS_PER_CHUNK, n_users - lo)
        data = make_interactions(n, n_items=100_000, extra_recs_users_fraction=0.0, seed=seed + c)
        for name, frame, path in (("t", data.truth, t_path), ("r", data.recs, r_path)):
            import polars as pl

            table = frame.with_columns(pl.col("user") + lo).to_arrow()
            if name not in writers:
                writers[name] = pq.ParquetWriter(path, table.schema)
            writers[name].write_table(table, row_group_size=1_000_000)
    for w in writers.values():
        w.close()
    return t_path, r_path, time.perf_counter() - start


def run_files_worker(args: argparse.Namespace) -> None:
    """In a fresh process: one evaluate call, its time and peak RSS (JSON on stdout)."""
    import receval

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    options: dict[str, Any] = {"engine": args.engine}
    if args.engine == "stream":
        options["block_memory"] = args.block_memory
        if args.sorted_by_user != "auto":
            options["sorted_by_user"] = args.sorted_by_user == "true"
    res = receval.evaluate(args.truth, args.recs, list(METRICS), **options)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "seconds": seconds, "peak_gib": peak / 2**20, "before_gib": before / 2**20,
        "means": res.means, "users": res.per_user.height,
    }))  # fmt: skip


def files(args: argparse.Namespace) -> str:
    rows = int(float(args.rows))
    with tempfile.TemporaryDirectory(prefix="bench-stream-", dir=args.workdir) as tmp:
        t_path, r_path, made = make_files(rows, Path(tmp), args.seed)
        sizes = (t_path.stat().st_size + r_path.stat().st_size) / 2**30
        import polars as pl

        n_rows = pl.scan_parquet(r_path).select(pl.len()).collect().item()
        n_truth = pl.scan_parquet(t_path).select(pl.len()).collect().item()
        results: dict[str, dict[str, Any]] = {}
        variants = {"stream": ("stream", "auto"), "stream (partition pass)": ("stream", "false")}
        if args.local:
            variants["local"] = ("local", "auto")
        load_before = os.getloadavg()
        for _ in range(args.rounds):
            for name, (engine, sort) in variants.items():
                cmd = [
                    sys.executable, __file__, "files-worker", "--engine", engine,
                    "--truth", str(t_path), "--recs", str(r_path),
                    "--block-memory", args.block_memory, "--sorted-by-user", sort,
                ]  # fmt: skip
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    results[name] = {"error": done.stderr.strip().splitlines()[-1]}
                    continue
                got = json.loads(done.stdout.strip().splitlines()[-1])
                print(name, got["seconds"], got["peak_gib"], os.getloadavg(), flush=True)
                if name in results and "error" not in results[name]:
                    was = results[name]
                    got["runs"] = [*was["runs"], got["seconds"]]
                    got["peak_gib"] = max(got["peak_gib"], was["peak_gib"])
                    got["seconds"] = min(got["seconds"], was["seconds"])
                    same = got["means"] == was["means"]
                    got["means"] = got["means"] if same else {"differ between runs": True}
                else:
                    got["runs"] = [got["seconds"]]
                results[name] = got
        load_after = os.getloadavg()
    lines = [
        f"### {n_rows:,} recs rows from Parquet\n",
        f"`python benchmarks/bench_stream.py files --rows {args.rows} --block-memory "
        f"{args.block_memory}{' --local' if args.local else ''} --rounds {args.rounds}`. "
        f"Machine: {machine()}; load average (1, 5, 15 min) {_load(load_before)} before, "
        f"{_load(load_after)} after.\n",
        f"{n_rows:,} recs rows and {n_truth:,} truth rows ({sizes * 1024:,.0f} MiB of "
        f"Parquet), made in {made:.0f} s; metrics {', '.join(METRICS)}.\n",
        "| engine | seconds (best) | runs (s) | / stream | peak RSS GiB | rows / s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    base = results.get("stream", {}).get("seconds")
    for engine, r in results.items():
        if "error" in r:
            lines.append(f"| {engine} | failed: {r['error']} | | | | |")
        else:
            runs = ", ".join(f"{x:.1f}" for x in r["runs"])
            ratio = f"{r['seconds'] / base:.2f}" if base else ""
            lines.append(
                f"| {engine} | {r['seconds']:.1f} | {runs} | {ratio} | {r['peak_gib']:.2f} | "
                f"{n_rows / r['seconds'] / 1e6:.1f} M |"
            )
    means = [r["means"] for r in results.values() if "means" in r]
    if len(means) > 1:
        same = all(m == means[0] for m in means)
        lines.append(f"\nMeans of every run equal (bit for bit): {same}.")
    return "\n".join(lines) + "\n"


def _load(load: tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in load)


def batches(args: argparse.Namespace) -> str:
    import numpy as np
    import polars as pl

    import receval
    from receval.datasets import make_interactions

    lines = [
        "### One batch of a validation loop: receval.Evaluator vs torchmetrics\n",
        f"`python benchmarks/bench_stream.py batches --batches {args.batches} --sizes "
        f"{args.sizes}`. Machine: {machine()}.\n",
        "| users a batch | rows a batch | receval update ms | torchmetrics update ms | "
        "receval compute s | torchmetrics compute s | receval total s | torchmetrics total s | "
        "receval state MiB | torchmetrics state MiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    try:
        import torch
        import torchmetrics.retrieval as tr
    except ImportError:  # pragma: no cover - the bench extra installs both
        torch = None
    for size in (int(s) for s in args.sizes.split(",")):
        data = make_interactions(size * args.batches, n_recs=100, seed=args.seed)
        truth, recs = data.truth, data.recs
        users = np.arange(size * args.batches)
        blocks = []
        for b in range(args.batches):
            lo, hi = b * size, (b + 1) * size
            t = truth.filter(pl.col("user").is_between(lo, hi - 1))
            r = recs.filter(pl.col("user").is_between(lo, hi - 1))
            blocks.append((t, r))
        ev = receval.Evaluator(["ndcg@10", "recall@10"])
        start = time.perf_counter()
        for t, r in blocks:
            ev.update(t, r)
        rec_update = (time.perf_counter() - start) / len(blocks)
        start = time.perf_counter()
        res = ev.compute()
        rec_compute = time.perf_counter() - start
        rec_state = ev.state_bytes() / 2**20
        tm_update = tm_compute = tm_state = float("nan")
        if torch is not None:
            tensors = []
            for t, r in blocks:
                labelled = r.join(
                    t.select("user", "item", pl.lit(True).alias("hit")),
                    on=["user", "item"], how="left",
                )  # fmt: skip
                tensors.append((
                    torch.from_numpy(labelled["score"].to_numpy().astype(np.float32)),
                    torch.from_numpy(labelled["hit"].fill_null(False).to_numpy()),
                    torch.from_numpy(labelled["user"].to_numpy()),
                ))  # fmt: skip
            ndcg = tr.RetrievalNormalizedDCG(top_k=10)
            recall = tr.RetrievalRecall(top_k=10)
            start = time.perf_counter()
            for preds, target, indexes in tensors:
                ndcg.update(preds, target, indexes=indexes)
                recall.update(preds, target, indexes=indexes)
            tm_update = (time.perf_counter() - start) / len(tensors)
            start = time.perf_counter()
            ndcg.compute()
            recall.compute()
            tm_compute = time.perf_counter() - start
            held = [x for m in (ndcg, recall) for name in ("indexes", "preds", "target")
                    for x in getattr(m, name)]  # fmt: skip
            tm_state = sum(x.element_size() * x.nelement() for x in held) / 2**20
        rows = recs.height // args.batches
        lines.append(
            f"| {size:,} | {rows:,} | {rec_update * 1e3:.1f} | {tm_update * 1e3:.1f} | "
            f"{rec_compute:.2f} | {tm_compute:.2f} | "
            f"{rec_update * args.batches + rec_compute:.2f} | "
            f"{tm_update * args.batches + tm_compute:.2f} | {rec_state:.1f} | {tm_state:.1f} |"
        )
        print(lines[-1], res.means, flush=True)
        del users
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("files")
    f.add_argument("--rows", default="1e7")
    f.add_argument("--block-memory", default="1GiB")
    f.add_argument("--local", action="store_true", help="run the local engine too")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--rounds", type=int, default=1, help="runs of each engine, alternated")
    f.add_argument("--workdir", default=None, help="folder for the data (default: TMPDIR)")
    f.add_argument("--md", default=None)
    w = sub.add_parser("files-worker")
    w.add_argument("--engine", required=True)
    w.add_argument("--truth", required=True)
    w.add_argument("--recs", required=True)
    w.add_argument("--block-memory", default="1GiB")
    w.add_argument("--sorted-by-user", choices=["auto", "true", "false"], default="auto")
    b = sub.add_parser("batches")
    b.add_argument("--batches", type=int, default=50)
    b.add_argument("--sizes", default="256,1024,4096")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--md", default=None)
    args = parser.parse_args()
    if args.what == "files-worker":
        run_files_worker(args)
        return
    text = files(args) if args.what == "files" else batches(args)
    print(text)
    if args.md:
        with open(args.md, "a", encoding="utf-8") as handle:
            handle.write("\n" + text)


if __name__ == "__main__":
    main()
