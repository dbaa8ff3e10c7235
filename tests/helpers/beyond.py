"""Beyond-accuracy helpers: plain brute-force versions of the beyond metrics (top-k lists,
popularity, the long-tail head, the global and per-user metrics, cosine and Jaccard
similarity) and random cases with the frames ``receval.evaluate`` takes.

Used by tests/metrics/test_beyond.py (against these references) and by the common suite,
tests/metrics/test_common.py (its beyond data).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import polars as pl
from scipy.spatial.distance import jaccard as scipy_jaccard_distance
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics.pairwise import cosine_similarity

Row = tuple[Hashable, Hashable, float]

# ------------------------------------------------------------------ brute-force references


def brute_lists(rows: Sequence[Row], k: int | None, ties: str) -> dict[Hashable, list[Hashable]]:
    """Each user's top-k items (score descending; ties as documented), plainly."""
    by_user: dict[Hashable, list[tuple[int, Hashable, float]]] = defaultdict(list)
    for pos, (user, item, score) in enumerate(rows):
        by_user[user].append((pos, item, score))
    out = {}
    for user, entries in by_user.items():
        if ties == "first":
            ordered = sorted(entries, key=lambda e: (-e[2], e[0]))
        elif ties == "trec":
            ordered = sorted(entries, key=lambda e: str(e[1]), reverse=True)
            ordered = sorted(ordered, key=lambda e: -e[2])
        else:
            ordered = sorted(entries, key=lambda e: (-e[2], e[1]))
        out[user] = [e[1] for e in ordered[: len(ordered) if k is None else k]]
    return out


def brute_popularity(train: Sequence[tuple[Hashable, Hashable]]) -> tuple[Counter[Any], int]:
    pairs = set(train)
    return Counter(item for _, item in pairs), len({u for u, _ in pairs})


def brute_head(pop: Counter[Any], share: float) -> set[Hashable]:
    """Items whose strictly more popular items make up less than ``share`` of interactions."""
    total = sum(pop.values())
    return {i for i, p in pop.items() if sum(q for q in pop.values() if q > p) < share * total}


def brute_global(name: str, lists: dict[Hashable, list[Hashable]], catalog: set[Any]) -> float:
    exposure = Counter(i for items in lists.values() for i in items)
    counts = sorted(exposure.get(i, 0) for i in catalog)
    n, total = len(counts), sum(counts)
    if name == "coverage":
        return sum(1 for c in counts if c) / n
    if name == "gini":
        return sum((2 * (j + 1) - n - 1) * x for j, x in enumerate(counts)) / (n * total)
    return float(scipy_entropy([c for c in counts if c], base=2))


def brute_per_user(
    name: str,
    lists: dict[Hashable, list[Hashable]],
    *,
    train: Sequence[tuple[Hashable, Hashable]] = (),
    head: float = 0.2,
    sim: Callable[[Hashable, Hashable], float] | None = None,
) -> dict[Hashable, float | None]:
    """Per-user values of novelty, arp, long_tail, ils and diversity."""
    pop, n_users = brute_popularity(train)
    in_head = brute_head(pop, head) if train else set()
    out: dict[Hashable, float | None] = {}
    for user, items in lists.items():
        if name == "novelty":
            out[user] = sum(-math.log2(max(pop[i], 1) / n_users) for i in items) / len(items)
        elif name == "arp":
            out[user] = sum(pop[i] for i in items) / len(items)
        elif name == "long_tail":
            out[user] = sum(i not in in_head for i in items) / len(items)
        else:
            assert sim is not None
            if len(items) < 2:
                out[user] = None
                continue
            pairs = [(a, b) for x, a in enumerate(items) for b in items[x + 1 :]]
            ils = sum(sim(a, b) for a, b in pairs) / len(pairs)
            out[user] = ils if name == "ils" else 1.0 - ils
    return out


def cosine_sim(vectors: dict[Hashable, Sequence[float]]) -> Callable[[Hashable, Hashable], float]:
    def sim(a: Hashable, b: Hashable) -> float:
        return float(cosine_similarity([vectors[a]], [vectors[b]])[0, 0])

    return sim


def jaccard_sim(features: dict[Hashable, set[str]]) -> Callable[[Hashable, Hashable], float]:
    vocabulary = sorted(set().union(*features.values()))

    def sim(a: Hashable, b: Hashable) -> float:
        x = [f in features[a] for f in vocabulary]
        y = [f in features[b] for f in vocabulary]
        return 1.0 - float(scipy_jaccard_distance(x, y))

    return sim


# ------------------------------------------------------------------------- random cases


def make_case(
    seed: int, *, str_ids: bool = False, n_users: int = 12, n_items: int = 15
) -> dict[str, Any]:
    """Recs with ties (integer scores), short lists, recs users not in truth, truth users
    without recs; train with items absent from it; an item table with vectors and genres."""
    rnd = random.Random(seed)
    ids: list[Any] = [3, 9, 10, 11, 20, 42, 99, 100, 101, 7, 1, 2, 250, 19, 5][:n_items]
    if str_ids:
        ids = ["b", "a", "B", "b10", "b9", "zz", "x", "a-1", "c", "C", "d", "q", "Z", "ab", "xy"]
        ids = ids[:n_items]
    rows: list[Row] = []
    for u in range(n_users):
        size = rnd.choice([1, 2, 3, 5, 8, n_items])
        for item in rnd.sample(ids, size):
            rows.append((f"u{u}", item, float(rnd.randint(0, 3))))
    rnd.shuffle(rows)
    # train users: t0..t9 (outside recs) and the first recs users (a history to compare with)
    train = [(f"t{rnd.randint(0, 9)}", rnd.choice(ids[:-3])) for _ in range(60)]
    train += [(f"u{rnd.randint(0, n_users // 2)}", rnd.choice(ids[:-3])) for _ in range(20)]
    truth = {f"u{u}": {rnd.choice(ids): 1.0} for u in range(2, n_users + 3)}
    vectors = {i: [rnd.gauss(0, 1) for _ in range(4)] for i in ids}
    genres = {i: {f"g{rnd.randint(0, 3)}"} | {f"g{rnd.randint(0, 5)}"} for i in ids}
    years = {i: rnd.choice([1990, 2000, 2010]) for i in ids}
    return {"rows": rows, "train": train, "truth": truth, "ids": ids, "vectors": vectors,
            "genres": genres, "years": years}  # fmt: skip


def frames(case: dict[str, Any]) -> dict[str, Any]:
    rows, ids = case["rows"], case["ids"]
    recs = pl.DataFrame(
        {"user": [r[0] for r in rows], "item": [r[1] for r in rows],
         "score": [r[2] for r in rows]}
    )  # fmt: skip
    train = pl.DataFrame(
        {"user": [t[0] for t in case["train"]], "item": [t[1] for t in case["train"]]}
    )
    items = pl.DataFrame(
        {
            "item": ids,
            "vec": [case["vectors"][i] for i in ids],
            "genres": [sorted(case["genres"][i]) for i in ids],
            "year": [case["years"][i] for i in ids],
        }
    )
    return {"truth": case["truth"], "recs": recs, "train": train, "items": items}


def feature_sets(case: dict[str, Any]) -> dict[Hashable, set[str]]:
    return {
        i: {f"genres={g}" for g in case["genres"][i]} | {f"year={case['years'][i]}"}
        for i in case["ids"]
    }
