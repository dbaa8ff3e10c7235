"""Brute-force references of the per-list calibration, serendipity and exposure-fairness
metrics, written from the papers' definitions (docs/calibration.md, docs/serendipity.md,
docs/fairness.md): plain loops, stochastic rankings enumerated order by order.

Used by tests/metrics/test_fairness.py.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence

from scipy.stats import entropy

Row = tuple[Hashable, Hashable, float]


def orders(rows: Sequence[Row]) -> dict[Hashable, list[list[Hashable]]]:
    """Every order of each user's items that sorts scores descending (tied items in every
    permutation): the stochastic ranking that ties="expected" stands for."""
    by_user: dict[Hashable, list[tuple[float, Hashable]]] = defaultdict(list)
    for user, item, score in rows:
        by_user[user].append((score, item))
    out = {}
    for user, entries in by_user.items():
        scores = sorted({s for s, _ in entries}, reverse=True)
        blocks = [[i for s, i in entries if s == v] for v in scores]
        out[user] = [
            [i for block in combo for i in block]
            for combo in itertools.product(*(itertools.permutations(b) for b in blocks))
        ]
    return out


def attention(j: int, kind: str = "geometric", patience: float = 0.5) -> float:
    return patience ** (j - 1) if kind == "geometric" else 1.0 / math.log2(j + 1)


def expected_exposure(
    ranking_orders: list[list[Hashable]],
    k: int | None,
    kind: str = "geometric",
    patience: float = 0.5,
) -> dict[Hashable, float]:
    """Each item's attention averaged over the orders (positions past k: none)."""
    total: Counter[Hashable] = Counter()
    for order in ranking_orders:
        for j, item in enumerate(order[: len(order) if k is None else k], start=1):
            total[item] += attention(j, kind, patience)
    return {i: v / len(ranking_orders) for i, v in total.items()}


def ideal_exposure(
    relevant: set[Hashable], catalog: set[Hashable], k: int | None, patience: float
) -> dict[Hashable, float]:
    """Diaz et al.: relevant items tied first, the others tied after, over the catalog."""
    n = len(catalog | relevant)
    depth = n if k is None else min(k, n)
    att = [patience ** (j - 1) if j <= depth else 0.0 for j in range(1, n + 1)]
    m = len(relevant)
    rel = sum(att[:m]) / m if m else 0.0
    other = sum(att[m:]) / (n - m) if n > m else 0.0
    return {i: (rel if i in relevant else other) for i in catalog | relevant}


def ee(
    exposure: dict[Hashable, float],
    relevant: set[Hashable],
    catalog: set[Hashable],
    k: int | None,
    patience: float,
) -> tuple[float, float, float]:
    """(EE-L, EE-D, EE-R) over every item of the catalog."""
    target = ideal_exposure(relevant, catalog, k, patience)
    every = set(target) | set(exposure)
    e = {i: exposure.get(i, 0.0) for i in every}
    t = {i: target.get(i, 0.0) for i in every}
    loss = sum((e[i] - t[i]) ** 2 for i in every)
    return loss, sum(v * v for v in e.values()), sum(e[i] * t[i] for i in every)


def share(categories: set[Hashable]) -> dict[Hashable, float]:
    return {c: 1.0 / len(categories) for c in categories}


def awrf(
    exposure: dict[Hashable, float],
    groups: dict[Hashable, set[Hashable]],
    target: dict[Hashable, float],
) -> float:
    """Jensen-Shannon divergence (bits) of the list's attention over groups and ``target``:
    the mean of the two Kullback-Leibler divergences to the mixture (scipy's entropy)."""
    names = sorted(target, key=str)
    e = dict.fromkeys(names, 0.0)
    for item, a in exposure.items():
        for g, w in share(groups[item]).items():
            e[g] += a * w
    total = sum(e.values())
    p = [e[g] / total for g in names]
    q = [target[g] for g in names]
    mix = [(a + b) / 2 for a, b in zip(p, q, strict=True)]
    return float(entropy(p, mix, base=2) + entropy(q, mix, base=2)) / 2


def miscalibration(
    history: Sequence[Hashable],
    listed: Sequence[Hashable],
    categories: dict[Hashable, set[Hashable]],
    alpha: float,
) -> float | None:
    """Steck (RecSys 2018), uniform weights: KL(p || (1 - alpha) q + alpha p), natural log."""
    known = [i for i in history if categories.get(i)]
    if not known:
        return None
    p: Counter[Hashable] = Counter()
    for i in known:
        for g, w in share(categories[i]).items():
            p[g] += w / len(known)
    q: Counter[Hashable] = Counter()
    for i in listed:
        for g, w in share(categories[i]).items():
            q[g] += w / len(listed)
    return sum(p[g] * math.log(p[g] / ((1 - alpha) * q[g] + alpha * p[g])) for g in p if p[g] > 0)


def unexpectedness(
    history: Sequence[Hashable],
    listed: Sequence[Hashable],
    sim: Callable[[Hashable, Hashable], float],
    relevant: set[Hashable] | None = None,
) -> float | None:
    """Microsoft Recommenders' user_serendipity: mean over the list of
    relevance * (1 - mean similarity to the history); relevant None: every item relevant."""
    if not history:
        return None
    values = []
    for i in listed:
        unexpected = 1.0 - sum(sim(i, j) for j in history) / len(history)
        values.append(unexpected * (1.0 if relevant is None or i in relevant else 0.0))
    return sum(values) / len(values)


def pop_serendipity(
    listed: Sequence[Hashable],
    relevant: set[Hashable],
    train_counts: Counter[Hashable],
    n_catalog: int,
) -> float:
    """RecTools' Serendipity: rank j in the list, dense popularity rank of the item."""
    distinct = sorted(set(train_counts.values()), reverse=True)
    values = []
    for j, item in enumerate(listed, start=1):
        p_user = (n_catalog + 1 - j) / n_catalog
        if item in train_counts:
            p_any = (n_catalog + 1 - (distinct.index(train_counts[item]) + 1)) / n_catalog
        else:
            p_any = 0.0
        values.append(max(p_user - p_any, 0.0) * (1.0 if item in relevant else 0.0))
    return sum(values) / len(values)
