"""Benchmark the calibration, serendipity and exposure-fairness metrics of receval beside
their peers (RecTools, Microsoft Recommenders) and a plain NumPy version of each formula.

Usage::

    python benchmarks/bench_families.py --rows 10000000 [--small-rows 100000] [--repeat 2]
        [--rectools-python PATH] [--recommenders-python PATH] [--json out.json]

Metrics (each timed alone, end to end, ``@10`` on lists of 100 scored items per user):
``miscalibration(by=genre)``, ``unexpectedness``, ``serendipity``, ``pop_serendipity``,
``awrf(by=provider)``, ``ee_loss``, ``group_share(by=provider, group=p0)``, and ``ee_loss``
from 4 sampled rankings per user (``sample_col``; 25 items per sample, the same number of
rows).

Tools, each in a fresh process (``subprocess``) on the same data (written once as ``.npz``,
read before the clock starts):

* ``receval``: ``receval.evaluate`` on Polars frames (recs with scores, train, truth, the
  item table with a 16-dimensional vector column ``v``, ``genre`` and ``provider``).
* ``numpy``: the same formula written by hand with integer ids ``0 .. n - 1``: the top 10 by
  ``np.lexsort``, ``np.bincount`` per user and group, the history's summed unit vectors for
  the mean cosine. No peer library has these metrics at this scale, so this is the baseline.
* ``rectools`` (``pop_serendipity_ranked``): RecTools' ``Serendipity(k=10).calc_per_user``
  on the same rows with their rank (computed before the clock: RecTools takes ranks), train as
  its previous interactions, the item table as its catalog; receval's ``pop_serendipity_ranked``
  reads the same ranks (``rank_col="rank"``). RecTools 0.19.0 pins numpy < 2: pass
  ``--rectools-python`` a virtual environment's Python with ``pip install rectools==0.19.0``.
* ``recommenders`` (``unexpectedness``, ``serendipity``): Microsoft Recommenders'
  ``user_serendipity`` with ``item_sim_measure="item_feature_vector"`` on each user's top 10
  (it scores every row it gets). Its item similarity is a pandas ``apply`` over every pair of
  items of its feature table (quadratic in the catalog), so it runs on the small case only
  (``--small-rows`` rows, a 1,000-item catalog); its 10^7-row time is an extrapolation, labelled
  so. ``--recommenders-python``: a Python with ``pip install --no-deps recommenders==1.2.1
  numpy==2.4.6 pandas==2.3.3 scikit-learn==1.9.1`` (as tests/reference/
  test_reference_recommenders.py builds it).

Both cases (``--rows`` and ``--small-rows``) run every tool that fits; the script checks that
every tool's values agree with receval's (relative 1e-9) and reports the warm ratios
tool / receval (> 1: receval faster). Scores are continuous (no ties), so every tie policy
gives the same lists.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

K = 10
PER_USER = 100  # scored items per user
SAMPLES = 4  # sampled rankings per user in the ee_loss_sampled case
HISTORY = 10  # train items per user
TRUTH = 5  # truth items per user (from the recs)
GENRES = 20
PROVIDERS = 50
DIM = 16
METRICS = {
    "miscalibration": "miscalibration(by=genre)@10",
    "unexpectedness": "unexpectedness@10",
    "serendipity": "serendipity@10",
    "pop_serendipity": "pop_serendipity@10",
    "pop_serendipity_ranked": "pop_serendipity@10",
    "awrf": "awrf(by=provider)@10",
    "ee_loss": "ee_loss@10",
    "group_share": "group_share(by=provider, group=p0)@10",
    "ee_loss_sampled": "ee_loss@10",
}
PEERS = {"rectools": ("pop_serendipity_ranked",),
         "recommenders": ("unexpectedness", "serendipity")}  # fmt: skip


def _peak_rss() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


# ------------------------------------------------------------------------------------ data


def make_data(path: str, rows: int, n_items: int, seed: int) -> None:
    """Every array of one case, in an ``.npz`` file (numpy only: the peers' venvs read it)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_users = max(1, rows // PER_USER)
    step = 7919 if math.gcd(7919, n_items) == 1 else 1
    base = rng.integers(0, n_items, n_users)
    perm = rng.permutation(n_items)

    def pick(first: int, count: int) -> Any:  # distinct items per user, j = first .. first+count
        j = np.tile(np.arange(first, first + count, dtype=np.int64), n_users)
        return perm[(np.repeat(base, count) + j * step) % n_items]

    users = np.repeat(np.arange(n_users, dtype=np.int64), PER_USER)
    items = pick(0, PER_USER)
    score = rng.random(users.size)
    order = np.lexsort((-score, users))
    rank = np.empty(users.size, dtype=np.int64)
    rank[order] = np.tile(np.arange(1, PER_USER + 1), n_users)
    # truth: TRUTH of the user's recs (a few in the top 10); train: items after the recs
    t_pos = np.sort(rng.random((n_users, PER_USER)).argsort(axis=1)[:, :TRUTH], axis=1)
    t_users = np.repeat(np.arange(n_users, dtype=np.int64), TRUTH)
    t_items = items.reshape(n_users, PER_USER)[np.arange(n_users)[:, None], t_pos].ravel()
    h_users = np.repeat(np.arange(n_users, dtype=np.int64), HISTORY)
    h_items = pick(PER_USER, HISTORY)
    # sampled rankings: SAMPLES orders of 25 of the user's items, same number of rows
    s_len = PER_USER // SAMPLES
    s_users = np.repeat(np.arange(n_users, dtype=np.int64), PER_USER)
    s_items = items.reshape(n_users, SAMPLES, s_len)
    s_items = np.take_along_axis(s_items, rng.random(s_items.shape).argsort(axis=2), axis=2)
    s_sample = np.tile(np.repeat(np.arange(SAMPLES, dtype=np.int64), s_len), n_users)
    s_rank = np.tile(np.arange(1, s_len + 1, dtype=np.int64), n_users * SAMPLES)
    np.savez(
        path, users=users, items=items, score=score, rank=rank, t_users=t_users,
        t_items=t_items, h_users=h_users, h_items=h_items, s_users=s_users,
        s_items=s_items.ravel(), s_sample=s_sample, s_rank=s_rank,
        genre=rng.integers(0, GENRES, n_items), provider=rng.integers(0, PROVIDERS, n_items),
        vectors=rng.standard_normal((n_items, DIM)), n_users=n_users, n_items=n_items,
    )  # fmt: skip


# ----------------------------------------------------------------------------- receval


def receval_calls(d: Any) -> dict[str, Any]:
    import polars as pl

    import receval

    recs = pl.DataFrame({"user": d["users"], "item": d["items"], "score": d["score"]})
    ranked = pl.DataFrame({"user": d["users"], "item": d["items"], "rank": d["rank"]})
    truth = pl.DataFrame({"user": d["t_users"], "item": d["t_items"]})
    train = pl.DataFrame({"user": d["h_users"], "item": d["h_items"]})
    sampled = pl.DataFrame(
        {"user": d["s_users"], "item": d["s_items"], "sample": d["s_sample"],
         "rank": d["s_rank"]}
    )  # fmt: skip
    n_items = int(d["n_items"])
    items = pl.DataFrame(
        {
            "item": range(n_items),
            "genre": d["genre"],
            "provider": [f"p{p}" for p in d["provider"]],
            "v": pl.Series(d["vectors"], dtype=pl.Array(pl.Float64, DIM)),
        }
    )
    opts = {"train": train, "items": items, "item_features": "v"}

    def one(key: str) -> Any:
        if key == "ee_loss_sampled":
            return lambda: receval.evaluate(
                truth, sampled, METRICS[key], rank_col="rank", sample_col="sample", items=items
            ).means[METRICS[key]]
        if key == "pop_serendipity_ranked":  # RecTools' input: the same rows with their rank
            return lambda: receval.evaluate(
                truth, ranked, METRICS[key], rank_col="rank", **opts
            ).means[METRICS[key]]
        return lambda: receval.evaluate(truth, recs, METRICS[key], **opts).means[METRICS[key]]

    return {key: one(key) for key in METRICS}


# ------------------------------------------------------------------------------- numpy


def numpy_calls(d: Any) -> dict[str, Any]:
    import numpy as np

    n_users, n_items = int(d["n_users"]), int(d["n_items"])
    users, items, score = d["users"], d["items"], d["score"]
    t_keys = np.sort(d["t_users"] * n_items + d["t_items"])
    h_users, h_items = d["h_users"], d["h_items"]
    unit = d["vectors"] / np.linalg.norm(d["vectors"], axis=1, keepdims=True)
    genre, provider = d["genre"], d["provider"]
    att_pos = 0.5 ** np.arange(K)

    def top() -> tuple[Any, Any, Any]:
        """Top-10 items, their owner and position (0-based), user by user."""
        order = np.lexsort((-score, users))
        offsets = np.searchsorted(users[order], np.arange(n_users + 1))
        pos = np.arange(order.size) - np.repeat(offsets[:-1], np.diff(offsets))
        keep = order[pos < K]
        return items[keep], users[keep], pos[pos < K]

    def relevant(owner: Any, listed: Any) -> Any:
        keys = owner * n_items + listed
        at = np.minimum(np.searchsorted(t_keys, keys), t_keys.size - 1)
        return (t_keys[at] == keys).astype(np.float64)

    def per_user_mean(owner: Any, values: Any) -> Any:
        return np.bincount(owner, weights=values, minlength=n_users) / np.bincount(
            owner, minlength=n_users
        )

    def miscalibration() -> float:
        listed, owner, _ = top()
        p = np.bincount(h_users * GENRES + genre[h_items], minlength=n_users * GENRES)
        p = p.reshape(n_users, GENRES) / HISTORY
        q = np.bincount(owner * GENRES + genre[listed], minlength=n_users * GENRES)
        q = q.reshape(n_users, GENRES) / K
        mix = 0.99 * q + 0.01 * p
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * np.log(p / mix), 0.0)
        return float(terms.sum(axis=1).mean())

    def unexpected(with_rel: bool) -> float:
        listed, owner, _ = top()
        hist = np.zeros((n_users, DIM))
        for c in range(DIM):
            hist[:, c] = np.bincount(h_users, weights=unit[h_items, c], minlength=n_users)
        sims = np.einsum("rd,rd->r", unit[listed], hist[owner]) / HISTORY
        values = 1.0 - sims
        if with_rel:
            values = values * relevant(owner, listed)
        return float(per_user_mean(owner, values).mean())

    def pop_serendipity(ranked: bool = False) -> float:
        if ranked:  # the rows ranked 1 .. K
            keep = d["rank"] <= K
            listed, owner, pos = items[keep], users[keep], d["rank"][keep] - 1
        else:
            listed, owner, pos = top()
        pop = np.bincount(h_items, minlength=n_items)  # distinct (user, item) rows
        present = np.unique(pop[pop > 0])[::-1]  # distinct counts, most popular first
        dense = np.zeros(pop.max() + 1, dtype=np.int64)
        dense[present] = np.arange(1, present.size + 1)
        pu = np.where(pop > 0, (n_items + 1 - dense[pop]) / n_items, 0.0)
        p_user = (n_items - pos) / n_items  # (n + 1 - j) / n, j = pos + 1
        values = np.maximum(p_user - pu[listed], 0.0) * relevant(owner, listed)
        return float(per_user_mean(owner, values).mean())

    def awrf() -> float:
        listed, owner, pos = top()
        att = att_pos[pos]
        e = np.bincount(owner * PROVIDERS + provider[listed], weights=att,
                        minlength=n_users * PROVIDERS).reshape(n_users, PROVIDERS)  # fmt: skip
        e /= e.sum(axis=1, keepdims=True)
        target = np.bincount(provider, minlength=PROVIDERS) / n_items
        mix = (e + target) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            kl_e = np.where(e > 0, e * np.log2(e / mix), 0.0).sum(axis=1)
            kl_t = np.where(target > 0, target * np.log2(target / mix), 0.0).sum(axis=1)
        return float(((kl_e + kl_t) / 2).mean())

    def ee_from(owner: Any, listed: Any, eps: Any) -> float:
        m = np.bincount(d["t_users"], minlength=n_users).astype(np.float64)
        depth = float(min(K, n_items))
        top_att = (1 - 0.5 ** np.minimum(m, depth)) / 0.5
        ideal_rel = np.where(m > 0, top_att / np.maximum(m, 1), 0.0)
        ideal_other = ((1 - 0.5**depth) / 0.5 - top_att) / (n_items - m)
        target = np.where(relevant(owner, listed) > 0, ideal_rel[owner], ideal_other[owner])
        disparity = np.bincount(owner, weights=eps * eps, minlength=n_users)
        rel = np.bincount(owner, weights=eps * target, minlength=n_users)
        ideal = m * ideal_rel**2 + (n_items - m) * ideal_other**2
        return float(np.maximum(disparity - 2 * rel + ideal, 0.0).mean())

    def ee_loss() -> float:
        listed, owner, pos = top()
        return ee_from(owner, listed, att_pos[pos])

    def ee_loss_sampled() -> float:
        s_users, s_items, s_rank = d["s_users"], d["s_items"], d["s_rank"]
        keep = s_rank <= K
        keys = s_users[keep] * n_items + s_items[keep]
        distinct, inverse = np.unique(keys, return_inverse=True)
        eps = np.bincount(inverse, weights=0.5 ** (s_rank[keep] - 1)) / SAMPLES
        return ee_from(distinct // n_items, distinct % n_items, eps)

    def group_share() -> float:
        listed, owner, _ = top()
        return float(per_user_mean(owner, (provider[listed] == 0).astype(np.float64)).mean())

    return {
        "miscalibration": miscalibration, "unexpectedness": lambda: unexpected(False),
        "serendipity": lambda: unexpected(True), "pop_serendipity": pop_serendipity,
        "pop_serendipity_ranked": lambda: pop_serendipity(ranked=True),
        "awrf": awrf, "ee_loss": ee_loss, "group_share": group_share,
        "ee_loss_sampled": ee_loss_sampled,
    }  # fmt: skip


# ------------------------------------------------------------------------------- peers


def rectools_calls(d: Any) -> dict[str, Any]:
    import pandas as pd
    from rectools.metrics import Serendipity

    reco = pd.DataFrame({"user_id": d["users"], "item_id": d["items"], "rank": d["rank"]})
    inter = pd.DataFrame({"user_id": d["t_users"], "item_id": d["t_items"], "weight": 1.0,
                          "datetime": pd.Timestamp("2026-01-01")})  # fmt: skip
    prev = pd.DataFrame({"user_id": d["h_users"], "item_id": d["h_items"], "weight": 1.0,
                         "datetime": pd.Timestamp("2025-01-01")})  # fmt: skip
    catalog = list(range(int(d["n_items"])))

    def call() -> float:
        per_user = Serendipity(k=K).calc_per_user(reco, inter, prev, catalog)
        return float(per_user.mean())

    return {"pop_serendipity_ranked": call}


def recommenders_calls(d: Any) -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    from recommenders.evaluation import python_evaluation as pe

    top = d["rank"] <= K
    reco = pd.DataFrame({"userID": d["users"][top], "itemID": d["items"][top]})
    n_items = int(d["n_items"])
    keys = np.sort(d["t_users"] * n_items + d["t_items"])
    mine = reco["userID"].to_numpy() * n_items + reco["itemID"].to_numpy()
    reco["rel"] = np.isin(mine, keys).astype(np.float64)
    train = pd.DataFrame({"userID": d["h_users"], "itemID": d["h_items"]})
    feats = pd.DataFrame({"itemID": np.arange(int(d["n_items"])), "features": list(d["vectors"])})

    def call(relevance: bool) -> float:
        for name in dir(pe):  # its lru_cache_df caches: nothing kept between calls
            cached = getattr(pe, name)
            if hasattr(cached, "cache_clear"):
                cached.cache_clear()
        return float(
            pe.serendipity(
                train, reco if relevance else reco[["userID", "itemID"]],
                item_feature_df=feats, item_sim_measure="item_feature_vector",
                col_relevance="rel" if relevance else None,
            )
        )  # fmt: skip

    return {"unexpectedness": lambda: call(False), "serendipity": lambda: call(True)}


# ---------------------------------------------------------------------------------- main


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    d = dict(np.load(args.data))
    loaded = _peak_rss()
    builders = {"receval": receval_calls, "numpy": numpy_calls, "rectools": rectools_calls,
                "recommenders": recommenders_calls}  # fmt: skip
    calls = builders[args.tool](d)
    out: dict[str, Any] = {"tool": args.tool, "metrics": {}}
    for key, call in calls.items():
        times = []
        value = math.nan
        for _ in range(args.repeat):
            start = time.perf_counter()
            value = call()
            times.append(time.perf_counter() - start)
        out["metrics"][key] = {"cold_s": times[0], "warm_s": min(times), "value": value}
    out["peak_rss"] = _peak_rss()
    out["over_data"] = out["peak_rss"] - loaded
    return out


def _run(python: str, tool: str, data: str, repeat: int) -> dict[str, Any] | None:
    env = {**os.environ}
    if tool != "receval" and python != sys.executable:
        env.pop("PYTHONPATH", None)  # the side venv has no receval
    done = subprocess.run(
        [python, __file__, "--child", f"--tool={tool}", f"--data={data}", f"--repeat={repeat}"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        print(f"  {tool}: failed ({done.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="recs rows, large case")
    parser.add_argument("--small-rows", type=int, default=100_000, help="recs rows, small case")
    parser.add_argument("--items", type=int, default=100_000, help="catalog, large case")
    parser.add_argument("--small-items", type=int, default=1_000, help="catalog, small case")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rectools-python", help="a Python with rectools==0.19.0")
    parser.add_argument("--recommenders-python", help="a Python with recommenders==1.2.1")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tool", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.stdout.write(json.dumps(run_child(args)) + "\n")
        return

    print(f"load average before: {os.getloadavg()}")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as work:
        cases = (("small", args.small_rows, args.small_items), ("large", args.rows, args.items))
        for case, rows, n_items in cases:
            data = os.path.join(work, f"{case}.npz")
            make_data(data, rows, n_items, args.seed)
            tools = [("receval", sys.executable), ("numpy", sys.executable)]
            if args.rectools_python:
                tools.append(("rectools", args.rectools_python))
            if args.recommenders_python and case == "small":
                tools.append(("recommenders", args.recommenders_python))
            got = {}
            for tool, python in tools:
                found = _run(python, tool, data, args.repeat)
                if found is not None:
                    got[tool] = found
            results[case] = {"rows": rows, "items": n_items, "tools": got,
                             "load": os.getloadavg()}  # fmt: skip
            _report(case, rows, n_items, got)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)


def _report(case: str, rows: int, n_items: int, got: dict[str, Any]) -> None:
    print(f"\ncase {case}: {rows:,} recs rows, {n_items:,} items, load {os.getloadavg()}")
    ours = got["receval"]["metrics"]
    print(f"  {'metric':<22} {'receval s':>10} " + " ".join(f"{t + ' s':>15} {'ratio':>6}"
          for t in got if t != "receval"))  # fmt: skip
    for key in METRICS:
        line = f"  {key:<22} {ours[key]['warm_s']:10.3f} "
        for tool, res in got.items():
            if tool == "receval":
                continue
            theirs = res["metrics"].get(key)
            if theirs is None:
                line += f"{'-':>15} {'':>6} "
                continue
            a, b = ours[key]["value"], theirs["value"]
            if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
                msg = f"{case} {key}: receval {a!r} != {tool} {b!r}"
                raise SystemExit(msg)
            ratio = theirs["warm_s"] / ours[key]["warm_s"]
            line += f"{theirs['warm_s']:15.3f} {ratio:5.1f}x "
        print(line)
    for tool, res in got.items():
        print(f"  {tool}: peak RSS {res['peak_rss'] / 2**20:.0f} MB, "
              f"{res['over_data'] / 2**20:.0f} MB over data")  # fmt: skip
    print("  values agree (relative 1e-9)")


if __name__ == "__main__":
    main()
