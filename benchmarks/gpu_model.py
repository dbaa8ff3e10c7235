"""Evaluation from a factor model on a GPU: receval with CUDA tensors beside a torch loop.

Usage (a machine with a CUDA GPU, torch built with CUDA, and receval's dependencies)::

    python benchmarks/gpu_model.py [--sizes 100000x100000,1000000x100000] [--dim 64]
        [--subset 20000] [--budget 90] [--block-memory 4GiB] [--json out.json]
    python benchmarks/gpu_model.py --quick      # tiny sizes, runs on CPU torch too

For each size (users x items, float32 factors of dimension ``--dim``, 20 train and 5 test items
per user, the data of ``bench_model.py``), one process, in this order:

1. **torch loop** (RecBole's full sort) on the device: ``torch.matmul`` per block of users,
   the training items set to -inf by index, ``torch.topk``, the top-K ids and scores copied to
   the host; then ``receval.evaluate`` on that (user, item, score) table. Both parts are timed.
2. **receval, CUDA factors**: ``receval.evaluate(test, receval.FactorModel(U_cuda, I_cuda),
   METRICS, exclude=train)``: exact full-catalog ranks. It is timed on a first slice of the
   users (``--subset``); if the whole set is estimated to take under ``--budget`` seconds it
   runs on all users, otherwise on the largest slice that fits (the table says which) and the
   time for all users is extrapolated (marked ``~``).
3. **receval, CPU factors** (NumPy arrays) on the ``--subset`` slice.
4. **Checks** on the subset: the means of (2) and (3) agree within 1e-6 (float32 scores, cuBLAS
   and OpenBLAS may round the last bit differently, which can swap two near-equal scores), and
   the torch loop's @K metrics against (2) on the same users (a top-K table gives mrr@K, so
   mrr is left out there). TF32 is switched off (``torch.backends.cuda.matmul.allow_tf32 =
   False``), so the GPU computes true float32 products.

The script prints one table per size and, with ``--json`` (default ``$OUT/gpu_model.json`` when
``$OUT`` is set), writes every figure. It exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_model import generate

K = 10
METRICS = (f"ndcg@{K}", f"map@{K}", f"recall@{K}", f"precision@{K}", "mrr", f"hit_rate@{K}")
AT_K = tuple(m for m in METRICS if m != "mrr")
TOL = 1e-6


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _parse_size(text: str) -> int:
    units = {"": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30}
    text = text.strip().lower()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(float(number) * units[text[len(number) :]])


def torch_loop(
    users: Any, items: Any, train: Any, device: Any, block_bytes: int
) -> tuple[Any, float]:
    """RecBole's full sort on ``device``: the (user, item, score) top-K table and the seconds."""
    import numpy as np
    import polars as pl
    import torch

    n_users, n_items = users.shape[0], items.shape[0]
    counts = np.bincount(train["user"].to_numpy(), minlength=n_users)
    indptr = torch.as_tensor(np.concatenate([[0], np.cumsum(counts)]), device=device)
    order = np.argsort(train["user"].to_numpy(), kind="stable")
    indices = torch.as_tensor(train["item"].to_numpy()[order], device=device)
    block = max(1, block_bytes // (4 * n_items))
    _sync(device)
    start = time.perf_counter()
    top_items, top_scores = [], []
    with torch.no_grad():
        items_t = items.T
        for lo in range(0, n_users, block):
            hi = min(lo + block, n_users)
            scores = torch.matmul(users[lo:hi], items_t)
            rows = torch.repeat_interleave(
                torch.arange(hi - lo, device=device), indptr[lo + 1 : hi + 1] - indptr[lo:hi]
            )
            scores[rows, indices[indptr[lo] : indptr[hi]]] = -torch.inf
            values, ids = torch.topk(scores, K, dim=1)
            top_items.append(ids)
            top_scores.append(values)
        item_col = torch.cat(top_items).reshape(-1).cpu().numpy()
        score_col = torch.cat(top_scores).reshape(-1).cpu().numpy().astype(np.float64)
    _sync(device)
    seconds = time.perf_counter() - start
    table = pl.DataFrame(
        {
            "user": np.repeat(np.arange(n_users, dtype=np.int64), K),
            "item": item_col.astype(np.int64),
            "score": score_col,
        }
    )
    return table, seconds


def _evaluate(truth: Any, source: Any, train: Any | None, block_memory: str | None) -> Any:
    import receval

    options: dict[str, Any] = {}
    if train is not None:
        options["exclude"] = train
        if block_memory:
            options["block_memory"] = block_memory
    return receval.evaluate(truth, source, list(METRICS), **options)


def _timed(fn: Any, device: Any) -> tuple[Any, float]:
    gc.collect()
    _sync(device)
    start = time.perf_counter()
    value = fn()
    _sync(device)
    return value, time.perf_counter() - start


def run_size(n_users: int, n_items: int, args: argparse.Namespace, device: Any) -> dict[str, Any]:
    import polars as pl
    import torch

    import receval

    row: dict[str, Any] = {"users": n_users, "items": n_items, "dim": args.dim}
    start = time.perf_counter()
    users_np, items_np, train, test = generate(n_users, n_items, args.dim, 20, 5, args.seed)
    row["generate_s"] = time.perf_counter() - start
    users_dev = torch.from_numpy(users_np).to(device)
    items_dev = torch.from_numpy(items_np).to(device)
    block_bytes = _parse_size(args.block_memory)
    subset = min(args.subset, n_users)
    sub_test = test.filter(pl.col("user") < subset)
    sub_train = train.filter(pl.col("user") < subset)

    # 1. torch loop, then receval on its table
    warm_train = train.filter(pl.col("user") < 16)
    warm_table, _ = torch_loop(users_dev[:16], items_dev, warm_train, device, block_bytes)
    _evaluate(test.filter(pl.col("user") < 16), warm_table, None, None)
    table, row["torch_topk_s"] = torch_loop(users_dev, items_dev, train, device, block_bytes)
    loop_result, row["torch_evaluate_s"] = _timed(
        lambda: _evaluate(test, table, None, None), device
    )
    row["torch_total_s"] = row["torch_topk_s"] + row["torch_evaluate_s"]
    row["torch_means"] = dict(loop_result.means)
    sub_loop = _evaluate(sub_test, table.filter(pl.col("user") < subset), None, None)
    table = loop_result = None

    # 2. receval with factors on the device: the subset first, then as many users as fit
    model_dev = receval.FactorModel(users_dev, items_dev, device=str(device))
    warm = test.filter(pl.col("user") < min(64, n_users))
    _evaluate(warm, model_dev, train.filter(pl.col("user") < 64), args.block_memory)
    sub_dev, sub_s = _timed(
        lambda: _evaluate(sub_test, model_dev, sub_train, args.block_memory), device
    )
    row["receval_device_subset_s"] = sub_s
    estimate = sub_s * n_users / subset
    fit = n_users if estimate <= args.budget else int(subset * args.budget / sub_s)
    if fit <= subset:
        fit, part, part_s = subset, sub_dev, sub_s
    else:
        fit = min(n_users, fit)
        part_test = test.filter(pl.col("user") < fit)
        part_train = train.filter(pl.col("user") < fit)
        part, part_s = _timed(
            lambda: _evaluate(part_test, model_dev, part_train, args.block_memory), device
        )
    row["receval_device_users"] = fit
    row["receval_device_measured_s"] = part_s
    row["receval_device_s"] = part_s * n_users / fit
    row["receval_device_means"] = dict(part.means)
    if fit == n_users:
        row["torch_vs_receval_full_at_k"] = max(
            abs(row["torch_means"][m] - part.means[m]) for m in AT_K
        )
    part = None

    # 3. receval with NumPy factors on the subset (the CPU path)
    model_cpu = receval.FactorModel(users_np, items_np)
    _evaluate(warm, model_cpu, train.filter(pl.col("user") < 64), args.cpu_block_memory)
    sub_cpu, cpu_s = _timed(
        lambda: _evaluate(sub_test, model_cpu, sub_train, args.cpu_block_memory), device
    )
    row["subset"] = subset
    row["receval_cpu_subset_s"] = cpu_s
    row["receval_cpu_s"] = cpu_s * n_users / subset

    # 4. checks on the subset
    diffs = {m: abs(sub_dev.means[m] - sub_cpu.means[m]) for m in METRICS}
    joined = sub_dev.per_user.join(sub_cpu.per_user, on="user", suffix="_cpu")
    users_differ = int(
        joined.select(
            pl.any_horizontal([(pl.col(m) - pl.col(f"{m}_cpu")).abs() > 0 for m in METRICS])
        )
        .to_series()
        .sum()
    )
    row["device_vs_cpu_max_mean_diff"] = max(diffs.values())
    row["device_vs_cpu_users_differ"] = users_differ
    row["device_vs_cpu_ok"] = max(diffs.values()) <= TOL
    row["torch_vs_receval_at_k"] = max(abs(sub_loop.means[m] - sub_dev.means[m]) for m in AT_K)
    row["subset_means"] = dict(sub_dev.means)
    model_dev = users_dev = items_dev = None
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return row


def _fmt_row(row: dict[str, Any]) -> list[str]:
    approx = "" if row["receval_device_users"] == row["users"] else "~"
    cpu_approx = "" if row["subset"] == row["users"] else "~"
    return [
        f"{row['users']:,} x {row['items']:,}",
        f"{row['torch_topk_s']:.2f} + {row['torch_evaluate_s']:.2f}",
        f"{approx}{row['receval_device_s']:.1f} ({row['receval_device_users']:,} users run)",
        f"{cpu_approx}{row['receval_cpu_s']:.1f} ({row['subset']:,} users run)",
        f"{row['receval_device_s'] / row['torch_total_s']:.1f}x",
        f"{row['device_vs_cpu_max_mean_diff']:.1e} ({row['device_vs_cpu_users_differ']} users)",
        f"{row['torch_vs_receval_at_k']:.1e}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000x100000,1000000x100000")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--subset", type=int, default=20_000, help="users of the CPU path")
    parser.add_argument("--budget", type=float, default=90, help="seconds for receval on device")
    parser.add_argument(
        "--block-memory", default="4GiB", help="score block on the device (loop and receval)"
    )
    parser.add_argument("--cpu-block-memory", default="256MiB", help="score block on the CPU")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the script")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.subset, args.budget = "2000x3000,6000x3000", 1000, 2.0
        args.block_memory = args.cpu_block_memory = "8MiB"
    if args.json is None and os.environ.get("OUT"):
        args.json = Path(os.environ["OUT"]) / "gpu_model.json"

    import numba
    import numpy as np
    import polars as pl
    import torch

    import receval

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.backends.cuda.matmul.allow_tf32 = False
    with contextlib.suppress(AttributeError):
        torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    machine = (
        f"device {device} ({name}); {os.cpu_count()} CPUs, numba threads "
        f"{numba.get_num_threads()}; torch {torch.__version__}, numpy {np.__version__}, "
        f"polars {pl.__version__}, receval {getattr(receval, '__version__', '?')}"
    )
    print(machine, flush=True)
    rows = []
    for size in args.sizes.split(","):
        n_users, n_items = (int(float(x)) for x in size.lower().split("x"))
        print(f"{n_users:,} x {n_items:,} ...", flush=True)
        row = run_size(n_users, n_items, args, device)
        rows.append(row)
        print(json.dumps(row, indent=1, default=str), flush=True)
    header = [
        "users x items",
        "torch loop s (top-K + evaluate)",
        "receval device s",
        "receval CPU s",
        "device / loop",
        f"device vs CPU max \\|Δ mean\\| (tol {TOL:g})",
        "loop vs device @K \\|Δ mean\\|",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_fmt_row(row)) + " |" for row in rows]
    print()
    print("\n".join(lines))
    print("~: extrapolated from the users run (time per user x all users)")
    ok = all(row["device_vs_cpu_ok"] for row in rows)
    print("check: device equals CPU within", TOL, "on every mean:", "yes" if ok else "NO")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"machine": machine, "settings": {k: str(v) for k, v in vars(args).items()},
                   "rows": rows, "ok": ok}  # fmt: skip
        args.json.write_text(json.dumps(payload, indent=2, default=str))
        print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
