"""Slow, obviously correct reference for receval's top-K ranking metrics.

Every definition follows docs/metrics.md literally, with no closed forms and no
vectorisation: each user's ranked list is built by sorting, each metric is a loop over
that list, and ``ties="expected"`` averages the metric over *every* order of every tie
group (``itertools.product`` of permutations). Keep tie groups small when using it.

Data model:

- ``truth``: ``{user: {item: relevance}}``
- ``recs``: list of ``(user, item, score)`` rows in input order (higher score is better)
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Truth = Mapping[Hashable, Mapping[Hashable, float]]
Rec = tuple[Hashable, Hashable, float]

METRICS = (
    "precision",
    "recall",
    "f1",
    "fbeta",
    "hit_rate",
    "mrr",
    "arhr",
    "map",
    "cg",
    "dcg",
    "ndcg",
    "ndcg_k",
    "r_precision",
    # cascade metrics and incomplete judgments (docs/ir_metrics.md)
    "err",
    "rbp",
    "rbp_residual",
    "bpref",
    "judged",
)
TIES = ("expected", "first", "trec", "optimistic", "pessimistic")
# Metrics whose value is a ratio in [0, 1].
NORMALISED = (
    "precision",
    "recall",
    "f1",
    "fbeta",
    "hit_rate",
    "mrr",
    "map",
    "ndcg",
    "ndcg_k",
    "r_precision",
    "err",
    "rbp",  # with its default binary gain (a graded rbp is only >= 0)
    "rbp_residual",
    "bpref",
    "judged",
)


@dataclass(frozen=True)
class Metric:
    """A parsed metric string such as ``ndcg(gain=exp)@10``."""

    name: str
    k: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def threshold(self, default: float) -> float:
        return self.params.get("rel", default)


_METRIC_RE = re.compile(r"\s*([a-z_][a-z_0-9]*)\s*(?:\((.*)\))?\s*(?:@\s*(\d+))?\s*")


def parse(metric: str) -> Metric:
    """Parse ``name``, ``name@K`` or ``name(p=v, ...)@K`` (bare words become strings)."""
    match = _METRIC_RE.fullmatch(metric)
    if match is None:
        raise ValueError(f"cannot parse metric {metric!r}")
    name, body, k = match.groups()
    if name not in METRICS:
        raise ValueError(f"brute does not know metric {name!r}")
    params: dict[str, Any] = {}
    if body:
        call = ast.parse(f"f({body})", mode="eval").body
        assert isinstance(call, ast.Call)
        for kw in call.keywords:
            value = kw.value
            params[str(kw.arg)] = (
                value.id if isinstance(value, ast.Name) else ast.literal_eval(value)
            )
    return Metric(name, int(k) if k is not None else None, params)


# --------------------------------------------------------------------------- gains


def gain(rel: float, spec: Any = "linear") -> float:
    """Gain of one item: linear ``max(rel, 0)``, exp ``2^rel - 1`` (rel > 0) or a dict map."""
    if spec == "linear":
        return max(float(rel), 0.0)
    if spec == "exp":
        return 2.0**rel - 1.0 if rel > 0 else 0.0
    if isinstance(spec, Mapping):
        return float(spec.get(rel, 0.0))
    raise ValueError(f"unknown gain {spec!r}")


# ------------------------------------------------------------------ one ranked list


def value_of_list(
    metric: Metric,
    ranked_rels: Sequence[float],
    truth_rels: Sequence[float],
    threshold: float,
    ranked_judged: Sequence[bool] | None = None,
) -> float:
    """Value of ``metric`` for one user whose ranked list has relevances ``ranked_rels``.

    ``truth_rels`` are the relevances of all the user's truth rows (for |R| and the ideal
    list). Items absent from truth have relevance 0; ``ranked_judged`` says which items of the
    list have a truth row (by default: those of relevance != 0).
    """
    thr = metric.threshold(threshold)
    k = metric.k
    if metric.name in CASCADE:
        judged = [r != 0 for r in ranked_rels] if ranked_judged is None else list(ranked_judged)
        return cascade_value(metric, list(ranked_rels), judged, truth_rels, thr)
    n_relevant = sum(1 for r in truth_rels if r >= thr)
    is_rel = [r >= thr for r in ranked_rels]
    cut = is_rel if k is None else is_rel[:k]
    hits = sum(cut)
    name = metric.name

    if name == "precision":
        denominator = k if k is not None else len(ranked_rels)
        return hits / denominator if denominator else 0.0
    if name == "recall":
        return hits / n_relevant
    if name in ("f1", "fbeta"):
        beta = float(metric.params.get("beta", 1.0)) if name == "fbeta" else 1.0
        denominator = k if k is not None else len(ranked_rels)
        p = hits / denominator if denominator else 0.0
        r = hits / n_relevant
        if p == 0 and r == 0:
            return 0.0
        return (1 + beta**2) * p * r / (beta**2 * p + r)
    if name == "hit_rate":
        return 1.0 if hits >= 1 else 0.0
    if name == "mrr":
        for pos, rel in enumerate(cut, start=1):
            if rel:
                return 1.0 / pos
        return 0.0
    if name == "arhr":
        return sum(1.0 / pos for pos, rel in enumerate(cut, start=1) if rel)
    if name == "map":
        total = 0.0
        seen = 0
        for pos, rel in enumerate(cut, start=1):
            if rel:
                seen += 1
                total += seen / pos
        if metric.params.get("denominator", "relevant") == "min" and k is not None:
            return total / min(k, n_relevant)
        return total / n_relevant
    if name == "r_precision":
        return sum(is_rel[:n_relevant]) / n_relevant
    if name in ("cg", "dcg", "ndcg", "ndcg_k"):
        spec = metric.params.get("gain", "linear")
        top = list(ranked_rels) if k is None else list(ranked_rels)[:k]
        if name == "cg":
            return sum(gain(r, spec) for r in top)
        dcg = sum(gain(r, spec) / math.log2(pos + 1) for pos, r in enumerate(top, start=1))
        if name == "dcg":
            return dcg
        if name == "ndcg_k":  # RecTools: the ideal list is K items of the largest gain
            size = k if k is not None else len(ranked_rels)
            best = max(gain(r, spec) for r in truth_rels)
            ideal_k = sum(best / math.log2(pos + 1) for pos in range(1, size + 1))
            return dcg / ideal_k if dcg > 0 else 0.0
        ideal = sorted(truth_rels, reverse=True)
        ideal = ideal if k is None else ideal[:k]
        idcg = sum(gain(r, spec) / math.log2(pos + 1) for pos, r in enumerate(ideal, start=1))
        return dcg / idcg if idcg > 0 else 0.0
    if name == "hits":  # internal: numerator of micro recall
        return float(hits)
    raise ValueError(f"unknown metric {name!r}")


# ------------------------------------------- cascade metrics and incomplete judgments

CASCADE = ("err", "rbp", "rbp_residual", "bpref", "judged")
# metrics that read whether an item is judged, not its relevance: ordering a tie by relevance
# (ties="optimistic" / "pessimistic") does not bound them
JUDGMENT_ONLY = ("rbp_residual", "judged")


def cascade_value(
    metric: Metric,
    ranked_rels: list[float],
    ranked_judged: list[bool],
    truth_rels: Sequence[float],
    thr: float,
) -> float:
    """ERR, RBP, its residual, bpref and judged@K of one ranked list, from the papers.

    - ERR (Chapelle et al. 2009): ``sum_r R_r / r * prod_{i<r} (1 - R_i)``,
      ``R = (2^max(g, 0) - 1) / 2^max_grade``, a cascade user who stops at r with probability R_r;
    - RBP (Moffat & Zobel 2008): ``(1 - p) sum_i g_i p^(i-1)`` over the first K items, g = 1
      for a relevant item (binary) or its gain; the residual adds ``(1 - p) p^(i-1)`` for each
      unjudged item of the top K and ``p^d`` for the ranking past depth d (K, or the list's
      length without @K);
    - bpref (Buckley & Voorhees 2004, trec_eval's loop): for each relevant retrieved item,
      ``1 - min(n_above, R) / min(R, N)``, n_above = judged non-relevant items (truth rows with
      0 <= relevance < t) above it, N = all of the user's; summed and divided by R;
    - judged@K: the items of the top K that have a truth row, over min(K, |L|).
    """
    k = metric.k
    n = len(ranked_rels)
    top = ranked_rels if k is None else ranked_rels[:k]
    top_judged = ranked_judged if k is None else ranked_judged[:k]
    name = metric.name
    if name == "err":
        grade = float(metric.params.get("max_grade", 4))
        value = 0.0
        reach = 1.0  # the probability that the user reads position r
        for r, rel in enumerate(top, start=1):
            stop = (2.0 ** max(rel, 0.0) - 1.0) / 2.0**grade
            value += reach * stop / r
            reach *= 1.0 - stop
        return value
    p = float(metric.params.get("p", 0.8))
    if name == "rbp":
        spec = metric.params.get("gain", "binary")
        total = 0.0
        for i, rel in enumerate(top, start=1):
            if rel >= thr:
                total += (1.0 if spec == "binary" else gain(rel, spec)) * p ** (i - 1)
        return (1.0 - p) * total
    if name == "rbp_residual":
        depth = k if k is not None else n
        unjudged = sum(p ** (i - 1) for i, j in enumerate(top_judged, start=1) if not j)
        return (1.0 - p) * unjudged + p**depth
    if name == "judged":
        return sum(top_judged) / len(top) if top else 0.0
    assert name == "bpref"
    n_rel = sum(1 for r in truth_rels if r >= thr)
    n_non = sum(1 for r in truth_rels if 0 <= r < thr)
    total = 0.0
    above = 0
    for rel, judged in zip(top, top_judged, strict=True):
        if not judged:
            continue
        if rel >= thr:
            total += 1.0 - min(above, n_rel) / min(n_rel, n_non) if above else 1.0
        elif rel >= 0:
            above += 1
    return total / n_rel


def empty_list_value(metric: Metric) -> float:
    """A metric's value for a user without recommendations (``no_recs="zero"``): 0, except the
    RBP residual, which is p^K (1 without @K: nothing of the ranking is known)."""
    if metric.name != "rbp_residual":
        return 0.0
    return float(metric.params.get("p", 0.8)) ** (metric.k or 0)


# ------------------------------------------------------------------------- orders


def orders(
    rows: Sequence[tuple[Hashable, float]], rels: Mapping[Hashable, float], ties: str
) -> list[list[Hashable]]:
    """All orders of one user's items that ``ties`` averages over (one order unless expected)."""
    if ties == "first":  # sorted() is stable: input order inside a tie
        return [[item for item, _ in sorted(rows, key=lambda row: -row[1])]]
    if ties == "trec":  # score descending, then item id descending as strings
        return [[item for item, _ in sorted(rows, key=lambda r: (r[1], str(r[0])), reverse=True)]]
    if ties in ("optimistic", "pessimistic"):
        # relevance descending / ascending; equal relevance: judged items (in truth) first /
        # last; then input order
        sign = -1.0 if ties == "optimistic" else 1.0

        def key(row: tuple[Hashable, float]) -> tuple[float, float, float]:
            return (-row[1], sign * rels.get(row[0], 0), sign * (row[0] in rels))

        return [[item for item, _ in sorted(rows, key=key)]]
    if ties == "expected":
        groups: dict[float, list[Hashable]] = defaultdict(list)
        for item, score in rows:
            groups[score].append(item)
        ordered = [groups[s] for s in sorted(groups, reverse=True)]
        return [
            [item for group in combo for item in group]
            for combo in itertools.product(*(itertools.permutations(g) for g in ordered))
        ]
    raise ValueError(f"unknown ties policy {ties!r}")


# ------------------------------------------------------------------------ evaluate


@dataclass
class BruteResult:
    per_user: dict[str, dict[Hashable, float]]
    means: dict[str, float]


def evaluate(
    truth: Truth,
    recs: Iterable[Rec],
    metrics: Sequence[str],
    *,
    ties: str = "expected",
    threshold: float = 1,
    no_recs: str = "zero",
) -> BruteResult:
    """Per-user values and means of every metric string in ``metrics``.

    Evaluated users of a metric: truth users with at least one item of relevance >= the
    metric's threshold. Users without recs score 0 (``no_recs="zero"``) or are dropped
    (``"skip"``). Means are macro, except ``recall(average=micro)``: sum of hits over sum
    of |R| (per-user values of that metric are the user's own hits / |R|).
    """
    lists: dict[Hashable, list[tuple[Hashable, float]]] = defaultdict(list)
    for user, item, score in recs:
        lists[user].append((item, float(score)))

    # Relevances of each user's list (and whether each item is judged: has a truth row), in
    # every order the policy averages over.
    ranked_lists: dict[Hashable, list[list[float]]] = {}
    judged_lists: dict[Hashable, list[list[bool]]] = {}
    for user, rows in lists.items():
        judged = truth.get(user, {})
        every = orders(rows, judged, ties)
        ranked_lists[user] = [[judged.get(item, 0) for item in order] for order in every]
        judged_lists[user] = [[item in judged for item in order] for order in every]

    result = BruteResult({}, {})
    for metric_string in metrics:
        metric = parse(metric_string)
        thr = metric.threshold(threshold)
        micro = metric.name == "recall" and metric.params.get("average") == "micro"
        hits_metric = Metric("hits", metric.k, metric.params)
        per_user: dict[Hashable, float] = {}
        hits_sum = 0.0
        relevant_sum = 0
        for user, judged in truth.items():
            truth_rels = list(judged.values())
            n_relevant = sum(1 for r in truth_rels if r >= thr)
            if n_relevant == 0:
                continue
            if user not in lists:
                if no_recs == "skip":
                    continue
                per_user[user] = empty_list_value(metric)
                relevant_sum += n_relevant
                continue
            values = []
            hits = []
            for ranked, flags in zip(ranked_lists[user], judged_lists[user], strict=True):
                values.append(value_of_list(metric, ranked, truth_rels, threshold, flags))
                if micro:
                    hits.append(value_of_list(hits_metric, ranked, truth_rels, threshold))
            per_user[user] = math.fsum(values) / len(values)
            if micro:
                hits_sum += math.fsum(hits) / len(hits)
            relevant_sum += n_relevant
        result.per_user[metric_string] = per_user
        if micro:
            mean = hits_sum / relevant_sum if relevant_sum else math.nan
        else:
            mean = math.fsum(per_user.values()) / len(per_user) if per_user else math.nan
        result.means[metric_string] = mean
    return result


def evaluated_users(truth: Truth, threshold: float = 1) -> set[Hashable]:
    """Truth users with at least one item of relevance >= threshold."""
    return {u for u, judged in truth.items() if any(r >= threshold for r in judged.values())}
