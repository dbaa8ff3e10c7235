"""Benchmark receval's Spark engine beside its local engine, on the same Parquet files.

Usage::

    python benchmarks/bench_spark.py --rows 1e7 [--repeat 2] [--master local[2]]
        [--driver-memory 6g] [--partitions default,8] [--workdir DIR] [--out FILE]
        [--json FILE]

``--rows 1e6`` is a quick run. The data comes from :func:`receval.datasets.make_interactions`
(``rows / 100`` users, lists of 100, 2-decimal scores: ties) and
:func:`receval.datasets.make_train` and is written to Parquet once. Every engine then reads
the same files (paths handed to ``receval.evaluate``), in a fresh Python process of its own:

* local: ``receval.evaluate(truth_path, recs_path, metrics)``;
* spark: ``receval.evaluate(..., engine="spark", spark=session, partitions=p)`` on a local
  Spark session (``--master``, ``spark.driver.memory`` = ``--driver-memory``, UI off,
  ``PYSPARK_PYTHON`` = this Python), for each ``p`` of ``--partitions`` (``default``: no
  ``partitions=``, the engine's own choice);
* the cost of sharding alone, on the same session: read truth and recs, ``repartition(p,
  user)`` (``default``: the engine's choice for this data) and a ``mapInArrow`` that only
  counts rows; the same without the repartition (the transfer of every row to Python
  workers); and Spark's own ``count()`` of the files.

Two metric sets: ``ndcg@10, recall@20, map@100`` and ``auc, coverage@10, novelty@10`` (with the
train set). The script asserts that the Spark engine's means, counts and per-user frames equal
the local engine's.

Reported: the first call of the process and the best of ``--repeat`` calls; ratios spark /
local (best); peak RSS (psutil, sampled every 50 ms) of the Python driver process, of the
largest Spark Python worker, and of the whole process tree (driver, Spark's JVM and its
Python workers). A markdown table is printed and written to ``--out`` (default
``benchmarks/results/spark.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CASES: dict[str, tuple[str, ...]] = {
    "ranking": ("ndcg@10", "recall@20", "map@100"),
    "auc+beyond": ("auc", "coverage@10", "novelty@10"),
}
RECS_PER_USER = 100
GIB = 2**30
HERE = Path(__file__).resolve().parent


# --------------------------------------------------------------------------------------
# Worker side: each runs in a fresh process.
# --------------------------------------------------------------------------------------


class RssSampler:
    """Peak RSS of this process and of its whole process tree, sampled in a thread."""

    def __init__(self, interval: float = 0.05) -> None:
        import psutil  # type: ignore[import-untyped]

        self._psutil = psutil
        self._me = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self.self_peak = 0
        self.tree_peak = 0
        self.worker_peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        own = self._me.memory_info().rss
        tree = own
        worker = 0  # the largest Python worker (pyspark.daemon's forks)
        for child in self._me.children(recursive=True):
            with contextlib.suppress(self._psutil.Error):
                rss = child.memory_info().rss
                tree += rss
                if "python" in child.name():
                    worker = max(worker, rss)
        self.self_peak = max(self.self_peak, own)
        self.tree_peak = max(self.tree_peak, tree)
        self.worker_peak = max(self.worker_peak, worker)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self._interval)

    def reset(self) -> None:
        self.self_peak = self.tree_peak = self.worker_peak = 0
        self._sample()

    def peaks(self) -> dict[str, int]:
        self._sample()
        return {
            "driver_rss": self.self_peak,
            "tree_rss": self.tree_peak,
            "worker_rss": self.worker_peak,
        }

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def generate(spec: dict[str, Any]) -> dict[str, Any]:
    """Write truth, recs and train Parquet files (in a process of its own)."""
    from receval.datasets import make_interactions, make_train

    folder = Path(spec["dir"])
    start = time.perf_counter()
    n_users = spec["users"]
    data = make_interactions(n_users, n_recs=RECS_PER_USER, seed=spec["seed"])
    n_items = max(1000, 10 * RECS_PER_USER, n_users // 2)  # make_interactions' catalog
    train = make_train(n_users, n_items=n_items, seed=spec["seed"] + 1)
    for name, frame in (("truth", data.truth), ("recs", data.recs), ("train", train)):
        frame.write_parquet(folder / f"{name}.parquet")
    return {
        "users": n_users,
        "truth_rows": data.truth.height,
        "recs_rows": data.recs.height,
        "train_rows": train.height,
        "generate_s": time.perf_counter() - start,
    }


def _evaluate_case(
    sampler: RssSampler, spec: dict[str, Any], case: str, label: str, **engine: Any
) -> dict[str, Any]:
    import dataclasses
    import gc

    import receval

    metrics = list(CASES[case])
    options: dict[str, Any] = {"train": spec["train"]} if "coverage@10" in metrics else {}
    times: list[float] = []
    res: Any = None
    sampler.reset()
    for _ in range(spec["repeat"]):
        res = None
        gc.collect()
        start = time.perf_counter()
        res = receval.evaluate(spec["truth"], spec["recs"], metrics, **options, **engine)
        times.append(time.perf_counter() - start)
    per_user = Path(spec["dir"]) / f"{label}.per_user.parquet"
    res.per_user.write_parquet(per_user)
    return {
        "case": case,
        "times": times,
        "means": dict(res.means),
        "counts": dataclasses.asdict(res.counts),
        "settings": dict(res.settings),
        "details": res.details,
        "per_user": str(per_user),
        **sampler.peaks(),
    }


def worker_local(spec: dict[str, Any]) -> dict[str, Any]:
    """The local engine on the Parquet paths, each metric set ``repeat`` times."""
    sampler = RssSampler()
    try:
        return {
            f"{case}/local": _evaluate_case(sampler, spec, case, f"{case}.local") for case in CASES
        }
    finally:
        sampler.close()


def _last_line(exc: BaseException) -> str:
    """The last non-blank line of an error (Spark's carry the Python traceback before it)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    found = [line for line in lines if "Error" in line and "SQLSTATE" not in line]
    return f"{type(exc).__name__}: {(found or lines or [''])[-1]}"[:300]


def _engine_default_partitions(spark: Any, spec: dict[str, Any]) -> int:
    """The shard count the Spark engine picks without ``partitions=`` (its private rule:
    about ``ROWS_PER_SHARD`` rows a shard, at most ``spark.sql.shuffle.partitions``)."""
    from receval.engines import spark as _spark

    truth, recs = spark.read.parquet(spec["truth"]), spark.read.parquet(spec["recs"])
    return int(_spark._default_partitions(spark, truth, recs))


def _timed(repeat: int, job: Any) -> tuple[list[float], Any]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = job()
        times.append(time.perf_counter() - start)
    return times, value


def worker_spark(spec: dict[str, Any]) -> dict[str, Any]:
    """The Spark engine on the same paths, then the cost of sharding alone."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    sampler = RssSampler()
    try:
        start = time.perf_counter()
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        spark = (
            SparkSession.builder.master(spec["master"])
            .appName("receval-bench")
            .config("spark.driver.memory", spec["driver_memory"])
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        out: dict[str, Any] = {
            "startup_s": time.perf_counter() - start,
            "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions") or 200),
            "spark_version": spark.version,
        }
        for partitions in spec["partitions"]:
            tag = "default" if partitions is None else str(partitions)
            for case in CASES:
                label = f"{case}/spark p={tag}"
                print(f"  {label} ...", flush=True)
                try:
                    out[label] = _evaluate_case(
                        sampler, spec, case, label.replace("/", ".").replace(" ", "_"),
                        engine="spark", spark=spark, partitions=partitions,
                    )  # fmt: skip
                except Exception as exc:  # reported in the table, the other cases still run
                    out[label] = {"error": _last_line(exc)}
                    print(f"  {label} failed: {out[label]['error']}", flush=True)

        def _count_rows(batches: Any) -> Any:
            """mapInArrow function (a closure, so pickled by value): this task's row count."""
            import pyarrow as pa

            n = 0
            for batch in batches:
                n += batch.num_rows
            yield pa.RecordBatch.from_pydict({"n": pa.array([n], pa.int64())})

        def count_shuffled(n: int) -> int:
            total = 0
            for name in ("truth", "recs"):
                frame = spark.read.parquet(spec[name]).repartition(n, "user")
                counted = frame.mapInArrow(_count_rows, "n long").agg(F.sum("n"))
                total += int(counted.collect()[0][0])
            return total

        def count_in_python() -> int:
            total = 0
            for name in ("truth", "recs"):
                counted = spark.read.parquet(spec[name]).mapInArrow(_count_rows, "n long")
                total += int(counted.agg(F.sum("n")).collect()[0][0])
            return total

        def count_spark() -> int:
            return sum(spark.read.parquet(spec[name]).count() for name in ("truth", "recs"))

        jobs: list[tuple[str, Any]] = []
        out["default_partitions"] = _engine_default_partitions(spark, spec)
        for partitions in spec["partitions"]:
            n = out["default_partitions"] if partitions is None else partitions
            tag = "default" if partitions is None else str(partitions)
            jobs.append((f"shard only p={tag}", lambda n=n: count_shuffled(n)))
        jobs += [("read to python, no shuffle", count_in_python), ("read + count", count_spark)]
        for label, job in jobs:
            print(f"  {label} ...", flush=True)
            sampler.reset()
            times, rows = _timed(spec["repeat"], job)
            out[label] = {"times": times, "rows": rows, **sampler.peaks()}
        spark.stop()
        return out
    finally:
        sampler.close()


# --------------------------------------------------------------------------------------
# Parent side.
# --------------------------------------------------------------------------------------


def _spawn(mode: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``mode`` in a fresh Python process; its JSON result."""
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as out_file:
        out_path = Path(out_file.name)
    command = [sys.executable, os.path.abspath(__file__), f"--{mode}", json.dumps(spec)]
    try:
        done = subprocess.run([*command, "--out", str(out_path)], timeout=timeout, check=False)
        if done.returncode != 0:
            msg = f"{mode} process failed with exit code {done.returncode}"
            raise RuntimeError(msg)
        return dict(json.loads(out_path.read_text()))
    finally:
        out_path.unlink(missing_ok=True)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _check(local: dict[str, Any], spark: dict[str, Any]) -> list[str]:
    """What differs between a local result and a Spark result (empty: equal)."""
    import polars as pl
    from polars.testing import assert_frame_equal

    problems = []
    for name, value in local["means"].items():
        other = spark["means"].get(name)
        if other is None or not _same(value, other):
            problems.append(f"{name}: local {value!r}, spark {other!r}")
    for key in ("counts", "settings", "details"):
        if local[key] != spark[key]:
            problems.append(f"{key}: local {local[key]}, spark {spark[key]}")
    try:
        assert_frame_equal(pl.read_parquet(spark["per_user"]), pl.read_parquet(local["per_user"]))
    except AssertionError as exc:
        problems.append(f"per_user: {str(exc).splitlines()[0]}")
    return problems


def _gib(n: int) -> str:
    return f"{n / GIB:.2f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _report(
    args: argparse.Namespace,
    data: dict[str, Any],
    results: dict[str, Any],
    checks: dict[str, list[str]],
) -> str:
    header = [
        "case", "engine", "first s", f"best of {args.repeat} s", "spark / local",
        "driver peak RSS GiB", "largest Python worker GiB", "all processes peak RSS GiB",
        "equal to local",
    ]  # fmt: skip
    rows = []
    local_best: dict[str, float] = {}
    for label, r in results.items():
        if isinstance(r, dict) and "error" in r:
            case, _, engine = label.partition("/")
            rows.append([case, engine, "failed", "", "", "", "", "", r["error"]])
            continue
        if not isinstance(r, dict) or "times" not in r:
            continue
        case, _, engine = label.partition("/")
        best = min(r["times"])
        if engine == "local":
            local_best[case] = best
        if engine:
            ratio = f"{best / local_best[case]:.1f}x" if engine != "local" else "1.0x"
            equal = "" if engine == "local" else ("yes" if not checks[label] else "NO")
        else:  # the sharding-only jobs: relative to the local ranking case
            case, engine = "(sharding only)", label
            ratio = f"{best / local_best['ranking']:.1f}x (vs ranking)"
            equal = ""
        rows.append(
            [
                case, engine, f"{r['times'][0]:.2f}", f"{best:.2f}", ratio,
                _gib(r["driver_rss"]), _gib(r["worker_rss"]) if r["worker_rss"] else "",
                _gib(r["tree_rss"]), equal,
            ]
        )  # fmt: skip
    lines = [
        f"{data['recs_rows']:,} recs rows, {data['truth_rows']:,} truth rows, "
        f"{data['train_rows']:,} train rows, {data['users']:,} users (make_interactions, "
        f"seed {args.seed}); Spark {results['spark_version']} {args.master}, driver memory "
        f"{args.driver_memory}, spark.sql.shuffle.partitions="
        f"{results['shuffle_partitions']}, default partitions (the engine's choice) "
        f"{results['default_partitions']}; {os.cpu_count()} CPUs; session start "
        f"{results['startup_s']:.1f} s (not in the table).",
        "",
        _table(header, rows),
    ]
    for label, problems in checks.items():
        for problem in problems:
            lines.append(f"\n{label} differs from local: {problem}")
    return "\n".join(lines)


def _rows(text: str) -> int:
    value = float(text)
    if value < 1000 or value != int(value):
        msg = f"--rows must be a whole number >= 1000; got {text}"
        raise argparse.ArgumentTypeError(msg)
    return int(value)


def _partitions(text: str) -> list[int | None]:
    out: list[int | None] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "default":
            out.append(None)
        elif part.isdigit() and int(part) > 0:
            out.append(int(part))
        else:
            msg = f"--partitions takes 'default' or positive integers, comma separated; got {part}"
            raise argparse.ArgumentTypeError(msg)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=_rows, default=10**7, help="recs rows (about)")
    parser.add_argument("--repeat", type=int, default=2, help="calls per engine and case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--master", default="local[2]", help="Spark master")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory")
    parser.add_argument(
        "--partitions", type=_partitions, default=[None, 8],
        help="user shards, comma separated; 'default' = the engine's own choice",
    )  # fmt: skip
    parser.add_argument("--workdir", type=Path, help="keep the Parquet files here")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "spark.md")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="receval_bench_spark_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        users = max(1, args.rows // RECS_PER_USER)
        print(f"generating {users:,} users in {workdir} ...", flush=True)
        data = _spawn("generate", {"dir": str(workdir), "users": users, "seed": args.seed}, 600)
        print(
            f"data: {data['recs_rows']:,} recs rows, {data['truth_rows']:,} truth rows, "
            f"{data['train_rows']:,} train rows ({data['generate_s']:.1f} s)",
            flush=True,
        )
        spec = {
            "dir": str(workdir),
            "truth": str(workdir / "truth.parquet"),
            "recs": str(workdir / "recs.parquet"),
            "train": str(workdir / "train.parquet"),
            "repeat": args.repeat,
            "master": args.master,
            "driver_memory": args.driver_memory,
            "partitions": args.partitions,
        }
        # warm-up on tiny data: numba's on-disk caches filled, so no first call compiles
        warm = workdir / "warmup"
        warm.mkdir(exist_ok=True)
        _spawn("generate", {"dir": str(warm), "users": 50, "seed": 1}, 600)
        warm_spec = {
            **spec, "dir": str(warm), "repeat": 1,
            **{name: str(warm / f"{name}.parquet") for name in ("truth", "recs", "train")},
        }  # fmt: skip
        _spawn("local", warm_spec, args.timeout)

        print("local engine ...", flush=True)
        results: dict[str, Any] = _spawn("local", spec, args.timeout)
        print("spark engine ...", flush=True)
        results.update(_spawn("spark", spec, args.timeout))
        checks = {
            label: _check(results[f"{label.partition('/')[0]}/local"], r)
            for label, r in results.items()
            if isinstance(r, dict) and "/spark" in label and "error" not in r
        }
        errors = [label for label, r in results.items() if isinstance(r, dict) and "error" in r]
        report = _report(args, data, results, checks)
        print()
        print(report)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"`python benchmarks/bench_spark.py {' '.join(sys.argv[1:])}` on "
            f"{platform.platform()}, Python {platform.python_version()}\n\n{report}\n"
        )
        print(f"\nwrote {args.out}")
        if args.json:
            payload = {"args": {k: str(v) for k, v in vars(args).items()}, "data": data}
            args.json.write_text(json.dumps({**payload, "results": results}, indent=2))
        failed = [label for label, problems in checks.items() if problems]
        assert not failed, f"the Spark engine differs from the local engine: {failed}"
        if errors:
            print(f"failed: {', '.join(errors)}", file=sys.stderr)
            return 1
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[3] == "--out" and sys.argv[1] in (
        "--generate", "--local", "--spark",
    ):  # fmt: skip
        task = {"--generate": generate, "--local": worker_local, "--spark": worker_spark}
        result = task[sys.argv[1]](json.loads(sys.argv[2]))
        Path(sys.argv[4]).write_text(json.dumps(result, default=str))
        sys.exit(0)
    sys.exit(main())
