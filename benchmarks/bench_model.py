"""Benchmark evaluation from a factor model: receval beside implicit and hand-written loops.

Usage::

    python benchmarks/bench_model.py [--users 20000 --items 50000 | --large] [--dim 64]
        [--methods matmul,implicit,numpy,torch,receval,topk] [--repeat 2]
        [--block-memory 256MiB] [--json out.json] [--md benchmarks/model.md]

Data (seeded, made once in its own process and written to .npy / Parquet): ``--users`` x
``--items`` float32 factors of dimension ``--dim`` with cluster structure and a popularity
direction, and for every user ``--train`` training and ``--test`` test items drawn without
overlap, popularity-skewed (Zipf within the user's cluster and over the catalog), so the
metrics are not those of a random model. ``--large`` is 10^5 x 10^5.

Methods, each in a fresh Python process that loads the data (and builds the CSR matrices the
peers take) before the clock starts, ``--repeat`` calls each:

* ``matmul``  (a): the BLAS product alone, ``U[block] @ I.T`` into one float32 buffer, block
  after block; nothing else. The floor every method pays.
* ``implicit`` (b): ``implicit.evaluation.ranking_metrics_at_k(model, train_csr, test_csr,
  K)`` on an implicit CPU ALS model whose ``user_factors`` / ``item_factors`` are the
  benchmark's arrays (checked, untimed: its top K equals NumPy's). BLAS is limited to one
  thread, as implicit asks; ``implicit (BLAS threads)`` leaves the BLAS threads as they are.
* ``numpy``   (c): the loop one writes by hand: matmul per block, training items set to -inf,
  ``np.argpartition`` top K, sorted, a Polars (user, item, score) table, then
  ``receval.evaluate`` on it.
* ``torch``   (d): RecBole's full-sort loop: ``torch.matmul`` per block, the training items
  set to -inf by index (``scores[rows, cols] = -inf``), ``torch.topk``, the table, then
  ``receval.evaluate``.
* ``receval`` (e): ``receval.evaluate(test, receval.FactorModel(U, I), METRICS,
  exclude=train)``: exact ranks over the full catalog, no top-K cut.
* ``topk``    (f): ``receval.topk(receval.FactorModel(U, I), K, exclude=train)`` alone.

The loops use blocks of users whose float32 score block fits ``--block-memory`` (receval's
default, 256 MiB). Before the timed runs every method runs once on tiny data so that numba's
on-disk caches are filled. Reported: first call, best call, the ratios to (a) and (b), peak RSS
of the process (``getrusage``), peak RSS over the loaded data, and over the loaded data and the
code (less what the method's tiny warm-up run, in its own process, added over its own data:
the libraries' code, Numba's compiled kernels, thread pools), which is what ``block_memory``
bounds; and agreement: (c), (d), (f)
against (e) on the @K metrics (mrr from a top-K list is mrr@K, so it is left out), implicit's
ndcg and map against receval's ``ndcg@K`` and ``map(denominator=min)@K``. A method that fails
(not installed, not implemented yet, out of memory) is reported as skipped with its error.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

K = 10
METRICS = (
    f"ndcg@{K}",
    f"map@{K}",
    f"recall@{K}",
    f"precision@{K}",
    "mrr",
    f"hit_rate@{K}",
)
AT_K = tuple(m for m in METRICS if m != "mrr")
GIB = 2**30
METHODS = ("matmul", "implicit", "implicit_blas", "numpy", "torch", "receval", "topk")
LABELS = {
    "matmul": "(a) matmul alone",
    "implicit": "(b) implicit ranking_metrics_at_k",
    "implicit_blas": "(b') implicit, BLAS threads",
    "numpy": "(c) NumPy loop + evaluate",
    "torch": "(d) torch loop + evaluate",
    "receval": "(e) receval.evaluate(FactorModel)",
    "topk": "(f) receval.topk",
}
USES_RECEVAL = ("numpy", "torch", "receval", "topk")


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def _parse_size(text: str) -> int:
    units = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 10**3, "mb": 10**6,
             "gb": 10**9}  # fmt: skip
    text = text.strip().lower()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(float(number) * units[text[len(number) :].strip()])


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def generate(
    n_users: int, n_items: int, dim: int, n_train: int, n_test: int, seed: int
) -> tuple[Any, Any, Any, Any]:
    """``(U, I, train, test)``: float32 factors and disjoint train / test items per user
    (Polars frames of int64 ``user``, ``item``), popularity-skewed. Also used by
    ``gpu_model.py``."""
    import numpy as np
    import polars as pl

    per_user = n_train + n_test
    if per_user > n_items:
        raise SystemExit(f"--train + --test ({per_user}) exceeds --items ({n_items})")
    rng = np.random.default_rng(seed)
    n_clusters = int(max(1, min(100, n_items // 500)))
    # popularity: Zipf(0.8) over a random order of the catalog
    popularity = np.empty(n_items)
    popularity[rng.permutation(n_items)] = 1.0 / np.arange(1, n_items + 1) ** 0.8
    item_cluster = rng.integers(0, n_clusters, n_items)
    centers = rng.standard_normal((n_clusters, dim))
    pop_dir = rng.standard_normal(dim)
    pop_dir /= np.linalg.norm(pop_dir)
    log_pop = np.log(popularity / popularity.max())
    items = (
        0.5 * centers[item_cluster]
        + 0.3 * rng.standard_normal((n_items, dim))
        + 0.3 * log_pop[:, None] * pop_dir
    ).astype(np.float32)
    user_cluster = rng.integers(0, n_clusters, n_users)
    users = (
        0.5 * centers[user_cluster] + 0.2 * rng.standard_normal((n_users, dim)) + 3.0 * pop_dir
    ).astype(np.float32)

    # samplers: within a cluster by popularity (searchsorted on cluster + cdf), and global
    order = np.lexsort((-popularity, item_cluster))
    cluster_sorted = item_cluster[order]
    weights = popularity[order]
    sums = np.bincount(cluster_sorted, weights=weights, minlength=n_clusters)
    within = np.cumsum(weights) - np.concatenate([[0.0], np.cumsum(sums)])[cluster_sorted]
    key = cluster_sorted + within / np.maximum(sums[cluster_sorted], 1e-300)
    global_cdf = np.cumsum(popularity) / popularity.sum()

    def draw(rows: np.ndarray, m: int) -> np.ndarray:
        u = rng.random((rows.size, m))
        own = rng.random((rows.size, m)) < 0.6
        target = user_cluster[rows][:, None] + u
        pick = np.where(
            own,
            order[np.minimum(np.searchsorted(key, target), n_items - 1)],
            np.minimum(np.searchsorted(global_cdf, u), n_items - 1),
        )
        # the first per_user distinct items of each row, in random order
        srt = np.sort(pick, axis=1)
        dup = np.zeros_like(srt, dtype=bool)
        dup[:, 1:] = srt[:, 1:] == srt[:, :-1]
        keys = rng.random(srt.shape)
        keys[dup] = np.inf
        chosen = np.argsort(keys, axis=1)[:, :per_user]
        ok = np.isfinite(np.take_along_axis(keys, chosen, axis=1)).all(axis=1)
        return np.take_along_axis(srt, chosen, axis=1), ok

    chosen = np.empty((n_users, per_user), dtype=np.int64)
    todo = np.arange(n_users)
    m = max(2 * per_user, 64)
    while todo.size:
        picked, ok = draw(todo, m)
        chosen[todo[ok]] = picked[ok]
        todo = todo[~ok]
        m *= 2
        if m > 64 * n_items:  # tiny catalogs: fall back to uniform
            for user in todo:
                chosen[user] = rng.choice(n_items, per_user, replace=False)
            break
    user_col = np.repeat(np.arange(n_users, dtype=np.int64), per_user).reshape(n_users, -1)
    train, test = (
        pl.DataFrame({"user": user_col[:, cols].ravel(), "item": chosen[:, cols].ravel()})
        for cols in (slice(0, n_train), slice(n_train, per_user))
    )
    return users, items, train, test


def make_data(spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`generate`, written to ``spec["dir"]`` (U.npy, I.npy, train / test.parquet)."""
    import numpy as np

    start = time.perf_counter()
    users, items, train, test = generate(
        spec["users"], spec["items"], spec["dim"], spec["train"], spec["test"], spec["seed"]
    )
    out = Path(spec["dir"])
    np.save(out / "U.npy", users)
    np.save(out / "I.npy", items)
    train.write_parquet(out / "train.parquet")
    test.write_parquet(out / "test.parquet")
    return {"seconds": time.perf_counter() - start}


def _load(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import polars as pl

    data_dir = Path(spec["dir"])
    return {
        "U": np.load(data_dir / "U.npy"),
        "I": np.load(data_dir / "I.npy"),
        "train": pl.read_parquet(data_dir / "train.parquet"),
        "test": pl.read_parquet(data_dir / "test.parquet"),
    }


def _csr(frame: Any, shape: tuple[int, int]) -> Any:
    import numpy as np
    from scipy.sparse import csr_matrix

    users = frame["user"].to_numpy()
    return csr_matrix(
        (np.ones(users.size, dtype=np.float32), (users, frame["item"].to_numpy())),
        shape=shape,
    )


def _block_users(spec: dict[str, Any], n_items: int) -> int:
    return max(1, spec["block_memory"] // (4 * n_items))


# --------------------------------------------------------------------------------------
# Methods: each returns (prepare() -> state, call(state) -> result, summary(result) -> dict)
# --------------------------------------------------------------------------------------


def _matmul(data: dict[str, Any], spec: dict[str, Any]) -> Callable[[], Any]:
    import numpy as np

    users, items = data["U"], data["I"]
    block = _block_users(spec, items.shape[0])
    buffer = np.empty((block, items.shape[0]), dtype=np.float32)
    items_t = items.T

    def call() -> dict[str, float]:
        checksum = 0.0
        for start in range(0, users.shape[0], block):
            stop = min(start + block, users.shape[0])
            out = buffer[: stop - start]
            np.matmul(users[start:stop], items_t, out=out)
            checksum += float(out[0, 0])
        return {"checksum": checksum}

    return call


def _implicit_model(data: dict[str, Any]) -> Any:
    import warnings

    from implicit.cpu.als import AlternatingLeastSquares

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # OpenBLAS threads advice
        model = AlternatingLeastSquares(factors=data["U"].shape[1], dtype=data["U"].dtype)
    model.user_factors = data["U"]
    model.item_factors = data["I"]
    return model


def _implicit(data: dict[str, Any], spec: dict[str, Any], limit_blas: bool) -> Callable[[], Any]:
    import numpy as np
    from implicit.evaluation import ranking_metrics_at_k

    shape = (data["U"].shape[0], data["I"].shape[0])
    train, test = _csr(data["train"], shape), _csr(data["test"], shape)
    model = _implicit_model(data)

    # untimed: the model ranks with exactly these factors (its top K is NumPy's)
    n_check = min(200, shape[0])
    ids, _ = model.recommend(np.arange(n_check), train[:n_check], N=K)
    scores = data["U"][:n_check] @ data["I"].T
    scores[train[:n_check].nonzero()] = -np.inf
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :K]
    same = int((ids == expected).all(axis=1).sum())
    spec["extra"]["factors_check"] = f"{same}/{n_check} users' top {K} equal NumPy's"

    def call() -> dict[str, float]:
        if limit_blas:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(1, "blas"):
                metrics = ranking_metrics_at_k(model, train, test, K=K, show_progress=False)
        else:
            metrics = ranking_metrics_at_k(model, train, test, K=K, show_progress=False)
        return {f"implicit {name}": float(value) for name, value in metrics.items()}

    return call


def _table(users: Any, items: Any, scores: Any) -> Any:
    import polars as pl

    return pl.DataFrame({"user": users, "item": items, "score": scores})


def _evaluate_table(data: dict[str, Any], table: Any) -> dict[str, float]:
    import receval

    result = receval.evaluate(data["test"], table, list(METRICS))
    return dict(result.means)


def _numpy_loop(data: dict[str, Any], spec: dict[str, Any]) -> Callable[[], Any]:
    import numpy as np

    users, items = data["U"], data["I"]
    n_users, n_items = users.shape[0], items.shape[0]
    train = _csr(data["train"], (n_users, n_items))
    indptr, indices = train.indptr, train.indices
    block = _block_users(spec, n_items)
    buffer = np.empty((block, n_items), dtype=np.float32)
    items_t = items.T

    def table() -> Any:
        user_parts, item_parts, score_parts = [], [], []
        for start in range(0, n_users, block):
            stop = min(start + block, n_users)
            scores = buffer[: stop - start]
            np.matmul(users[start:stop], items_t, out=scores)
            rows = np.repeat(np.arange(stop - start), np.diff(indptr[start : stop + 1]))
            scores[rows, indices[indptr[start] : indptr[stop]]] = -np.inf
            top = np.argpartition(scores, n_items - K, axis=1)[:, n_items - K :]
            top_scores = np.take_along_axis(scores, top, axis=1)
            order = np.argsort(-top_scores, axis=1, kind="stable")
            item_parts.append(np.take_along_axis(top, order, axis=1).ravel())
            score_parts.append(np.take_along_axis(top_scores, order, axis=1).ravel())
            user_parts.append(np.repeat(np.arange(start, stop, dtype=np.int64), K))
        return _table(
            np.concatenate(user_parts),
            np.concatenate(item_parts).astype(np.int64),
            np.concatenate(score_parts).astype(np.float64),
        )

    last: dict[str, Any] = {}

    def call() -> dict[str, float]:
        last["table"] = table()
        return _evaluate_table(data, last["table"])

    spec["extra"]["table"] = lambda: last["table"]
    return call


def _torch_loop(data: dict[str, Any], spec: dict[str, Any]) -> Callable[[], Any]:
    import numpy as np
    import torch

    n_users, n_items = data["U"].shape[0], data["I"].shape[0]
    users = torch.from_numpy(data["U"])
    items_t = torch.from_numpy(data["I"]).T
    train = _csr(data["train"], (n_users, n_items))
    indptr = torch.from_numpy(train.indptr.astype(np.int64))
    indices = torch.from_numpy(train.indices.astype(np.int64))
    block = _block_users(spec, n_items)

    def call() -> dict[str, float]:
        user_parts, item_parts, score_parts = [], [], []
        with torch.no_grad():
            for start in range(0, n_users, block):
                stop = min(start + block, n_users)
                scores = torch.matmul(users[start:stop], items_t)
                counts = indptr[start + 1 : stop + 1] - indptr[start:stop]
                rows = torch.repeat_interleave(torch.arange(stop - start), counts)
                scores[rows, indices[indptr[start] : indptr[stop]]] = -torch.inf
                top_scores, top = torch.topk(scores, K, dim=1)  # sorted, descending
                item_parts.append(top.reshape(-1).numpy())
                score_parts.append(top_scores.reshape(-1).numpy())
                user_parts.append(np.repeat(np.arange(start, stop, dtype=np.int64), K))
        table = _table(
            np.concatenate(user_parts),
            np.concatenate(item_parts),
            np.concatenate(score_parts).astype(np.float64),
        )
        return _evaluate_table(data, table)

    return call


def _receval_evaluate(data: dict[str, Any], spec: dict[str, Any]) -> Callable[[], Any]:
    import receval

    def call() -> dict[str, float]:
        model = receval.FactorModel(data["U"], data["I"])
        result = receval.evaluate(
            data["test"],
            model,
            list(METRICS),
            exclude=data["train"],
            block_memory=spec["block_memory_text"],
        )
        return dict(result.means)

    return call


def _receval_topk(data: dict[str, Any], spec: dict[str, Any]) -> Callable[[], Any]:
    import receval

    def call() -> dict[str, float]:
        model = receval.FactorModel(data["U"], data["I"])
        table = receval.topk(
            model, K, exclude=data["train"], block_memory=spec["block_memory_text"]
        )
        spec["extra"]["table_rows"] = table.height
        spec["extra"]["table"] = lambda: table.select("user", "item", "score")
        return {"rows": float(table.height)}

    return call


def _setup(method: str, data: dict[str, Any], spec: dict[str, Any]) -> Callable[[], Any]:
    if method == "matmul":
        return _matmul(data, spec)
    if method in ("implicit", "implicit_blas"):
        return _implicit(data, spec, limit_blas=method == "implicit")
    if method == "numpy":
        return _numpy_loop(data, spec)
    if method == "torch":
        return _torch_loop(data, spec)
    if method == "receval":
        return _receval_evaluate(data, spec)
    if method == "topk":
        return _receval_topk(data, spec)
    raise ValueError(method)


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time one method in this (fresh) process."""
    method = spec["method"]
    spec["extra"] = {}
    try:
        import numpy  # noqa: F401
        import polars  # noqa: F401

        if method in USES_RECEVAL:
            import receval
        if method.startswith("implicit"):
            import implicit  # noqa: F401
        if method == "torch":
            import torch  # noqa: F401
        data = _load(spec)
        call = _setup(method, data, spec)
    except Exception as exc:
        return {"status": "error", "message": f"{type(exc).__name__}: {exc}".splitlines()[0],
                "trace": traceback.format_exc()}  # fmt: skip
    loaded_rss = _peak_rss()
    times: list[float] = []
    means: dict[str, float] = {}
    try:
        for _ in range(spec["repeat"]):
            gc.collect()
            start = time.perf_counter()
            means = call()
            times.append(time.perf_counter() - start)
    except MemoryError:
        return {"status": "oom", "message": "MemoryError", "times": times}
    except Exception as exc:
        return {"status": "error", "message": f"{type(exc).__name__}: {exc}".splitlines()[0],
                "trace": traceback.format_exc(), "times": times}  # fmt: skip
    peak_rss = _peak_rss()
    extra = {k: v for k, v in spec["extra"].items() if not callable(v)}
    # untimed: what implicit reports, computed by receval from this method's top-K table
    make_table = spec["extra"].get("table")
    if make_table is not None and spec.get("implicit_view"):
        import receval

        table = make_table()
        res = receval.evaluate(
            data["test"], table, [f"ndcg@{K}", f"map(denominator=min)@{K}", *AT_K]
        )
        extra["implicit_view"] = {
            "ndcg": res[f"ndcg@{K}"],
            "map": res[f"map(denominator=min)@{K}"],
        }
        if method == "topk":
            means.update({m: res[m] for m in AT_K})
    return {
        "status": "ok",
        "times": times,
        "means": means,
        "loaded_rss": loaded_rss,
        "peak_rss": peak_rss,
        "extra": extra,
    }


# --------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------


def _spawn(mode: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as out_file:
        out_path = out_file.name
    command = [sys.executable, os.path.abspath(__file__), f"--{mode}", json.dumps(spec)]
    try:
        completed = subprocess.run(
            [*command, "--out", out_path],
            check=False,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "message": f"over {timeout:.0f} s"}
    finally:
        text = Path(out_path).read_text() if Path(out_path).exists() else ""
        Path(out_path).unlink(missing_ok=True)
    if completed.returncode != 0:
        killed = completed.returncode in (-9, 137)
        tail = completed.stderr.strip().splitlines()[-1:] or [""]
        reason = "killed, out of memory?" if killed else f"exit {completed.returncode}: {tail[0]}"
        return {"status": "oom" if killed else "error", "message": reason}
    return dict(json.loads(text))


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("receval", "numpy", "polars", "numba", "scipy", "implicit", "torch"):
        with contextlib.suppress(PackageNotFoundError):
            versions[package] = version(package)
    return versions


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    blas = ""
    with contextlib.suppress(ImportError):
        import numpy  # noqa: F401
        from threadpoolctl import threadpool_info

        for info in threadpool_info():
            if info.get("user_api") == "blas" and "numpy" in info.get("filepath", ""):
                blas = f"; NumPy BLAS: {info['internal_api']} {info['version']}, "
                blas += f"{info['num_threads']} threads"
    versions = ", ".join(f"{k} {v}" for k, v in _versions().items())
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {memory:.0f} GiB, {platform.system()} "
        f"{platform.machine()}, Python {platform.python_version()}; {versions}{blas}"
    )


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(
    args: argparse.Namespace, results: dict[str, dict[str, Any]], data_info: dict[str, Any]
) -> str:
    def best(method: str) -> float | None:
        r = results.get(method)
        return min(r["times"]) if r and r["status"] == "ok" and r["times"] else None

    base_a, base_b = best("matmul"), best("implicit")
    reference = results.get("receval", {})
    ref_means = reference.get("means") if reference.get("status") == "ok" else None
    header = ["method", "first s", f"best of {args.repeat} s", "/ (a)", "/ (b)",
              "peak RSS GiB", "over data GiB", "over data + code GiB",
              "max \\|Δ mean\\| vs (e)"]  # fmt: skip
    rows, notes = [], []
    for method in args.methods:
        r = results[method]
        label = LABELS[method]
        if r["status"] != "ok":
            rows.append([label, "skipped", *["-"] * (len(header) - 2)])
            notes.append(f"{label}: skipped, {r['message']}")
            continue
        t = min(r["times"])
        agree = ""
        if ref_means and method in ("numpy", "torch", "topk"):
            diffs = [abs(r["means"][m] - ref_means[m]) for m in AT_K if m in r["means"]]
            agree = f"{max(diffs):.1e} (@{K} metrics)" if diffs else ""
        if method.startswith("implicit"):
            view = None
            for other in ("numpy", "topk", "torch"):
                o = results.get(other, {})
                if o.get("status") == "ok" and "implicit_view" in o.get("extra", {}):
                    view = (other, o["extra"]["implicit_view"])
                    break
            if view:
                d_ndcg = abs(r["means"]["implicit ndcg"] - view[1]["ndcg"])
                d_map = abs(r["means"]["implicit map"] - view[1]["map"])
                agree = f"ndcg {d_ndcg:.1e}, map(min) {d_map:.1e} (vs {LABELS[view[0]][:3]})"
        rows.append([
            label,
            _fmt(r["times"][0], ".2f"),
            _fmt(t, ".2f"),
            _fmt(t / base_a if base_a else None, ".1f") + ("x" if base_a else ""),
            _fmt(t / base_b if base_b else None, ".2f") + ("x" if base_b else ""),
            _fmt(r["peak_rss"] / GIB, ".2f"),
            _fmt((r["peak_rss"] - r["loaded_rss"]) / GIB, ".2f"),
            _fmt(
                (r["peak_rss"] - r["loaded_rss"] - r["code_rss"]) / GIB
                if "code_rss" in r else None, ".2f",
            ),
            agree,
        ])  # fmt: skip
        if r.get("extra", {}).get("factors_check"):
            notes.append(f"{label}: {r['extra']['factors_check']}")
    lines = [
        f"{args.users:,} users x {args.items:,} items, d={args.dim} float32, "
        f"{args.train} train + {args.test} test items per user, K={K}, "
        f"block memory {args.block_memory}, seed {args.seed}; data made in "
        f"{data_info.get('seconds', 0):.1f} s",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
    lines += [f"- {note}" for note in notes]
    if ref_means:
        means = ", ".join(f"{m} {v:.4f}" for m, v in ref_means.items())
        lines.append(f"- receval (e) means: {means}")
    for method in ("implicit", "implicit_blas"):
        r = results.get(method, {})
        if r.get("status") == "ok":
            means = ", ".join(f"{m.split()[1]} {v:.4f}" for m, v in r["means"].items())
            lines.append(f"- {LABELS[method]}: {means}")
            break
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time evaluation from a factor model: receval, implicit, NumPy and torch "
        "loops, the matmul alone.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--large", action="store_true", help="10^5 users x 10^5 items")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--train", type=int, default=20, help="training items per user")
    parser.add_argument("--test", type=int, default=5, help="test items per user")
    parser.add_argument(
        "--methods",
        default="matmul,implicit,implicit_blas,numpy,torch,receval,topk",
        help=f"comma-separated among {', '.join(METHODS)}",
    )
    parser.add_argument("--repeat", type=int, default=2, help="calls per method (>= 1)")
    parser.add_argument("--block-memory", default="256MiB", help="score block size of loops")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    parser.add_argument("--no-warmup", action="store_true", help="skip the tiny warm-up runs")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--md", type=Path, help="append the Markdown results to this file")
    parser.add_argument("--workdir", type=Path, help="keep the generated data here")
    args = parser.parse_args(argv)
    if args.large:
        args.users, args.items = 100_000, 100_000
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown methods {unknown}; choose among {', '.join(METHODS)}")
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    args.block_bytes = _parse_size(args.block_memory)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_model_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        data_spec = {"users": args.users, "items": args.items, "dim": args.dim,
                     "train": args.train, "test": args.test, "seed": args.seed}  # fmt: skip
        print(f"generating {args.users:,} x {args.items:,} ...", flush=True)
        (workdir / "main").mkdir(exist_ok=True)
        data_info = _spawn("generate", {**data_spec, "dir": str(workdir / "main")}, args.timeout)
        if "seconds" not in data_info:
            raise SystemExit(f"data generation failed: {data_info}")

        def spec(method: str, data: str, repeat: int) -> dict[str, Any]:
            return {"method": method, "dir": str(workdir / data), "repeat": repeat,
                    "block_memory": args.block_bytes, "block_memory_text": args.block_memory,
                    "implicit_view": "implicit" in ",".join(args.methods)}  # fmt: skip

        warm: dict[str, dict[str, Any]] = {}
        if not args.no_warmup:
            (workdir / "tiny").mkdir(exist_ok=True)
            tiny = {**data_spec, "users": 300, "items": 2000, "dir": str(workdir / "tiny")}
            _spawn("generate", tiny, args.timeout)
            for method in args.methods:  # also: what loading each method's code costs
                warm[method] = _spawn("worker", spec(method, "tiny", 1), args.timeout)

        results: dict[str, dict[str, Any]] = {}
        for method in args.methods:
            print(f"running {LABELS[method]} ...", flush=True)
            outcome = _spawn("worker", spec(method, "main", args.repeat), args.timeout)
            if outcome["status"] != "ok":
                print(f"  skipped: {outcome['message']}", flush=True)
                if outcome.get("trace"):
                    print("  " + outcome["trace"].strip().replace("\n", "\n  "), flush=True)
            else:
                times = ", ".join(f"{t:.2f}" for t in outcome["times"])
                print(f"  {times} s", flush=True)
            if warm.get(method, {}).get("status") == "ok" and outcome["status"] == "ok":
                outcome["code_rss"] = warm[method]["peak_rss"] - warm[method]["loaded_rss"]
            results[method] = outcome

        text = report(args, results, data_info)
        machine = _machine()
        print()
        print(text)
        print(f"\nMachine: {machine}")
        if args.md:
            stamp = time.strftime("%Y-%m-%d")
            command = "python benchmarks/bench_model.py " + " ".join(
                sys.argv[1:] if argv is None else argv
            )
            with args.md.open("a", encoding="utf-8") as handle:
                handle.write(f"\n### {args.users:,} users x {args.items:,} items\n\n")
                handle.write(f"`{command}`, {stamp}. Machine: {machine}.\n\n{text}\n")
            print(f"appended to {args.md}")
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            payload = {
                "settings": {k: (str(v) if isinstance(v, Path) else v)
                             for k, v in vars(args).items()},
                "machine": machine,
                "data": data_info,
                "results": {m: {k: v for k, v in r.items() if k != "trace"}
                            for m, r in results.items()},
            }  # fmt: skip
            args.json.write_text(json.dumps(payload, indent=2))
            print(f"wrote {args.json}")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] in ("--worker", "--generate") and sys.argv[3] == "--out":
        task = worker if sys.argv[1] == "--worker" else make_data
        Path(sys.argv[4]).write_text(json.dumps(task(json.loads(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main())
