"""Sampled metrics and their corrections: from each query's sampled rank to per-user values and
means (docs/sampled.md; definitions in docs/metrics.md, "Sampled metrics").

A query is one test (user, item) with one relevant item, ranked among m sampled negatives: its
*sampled position* is ``j`` in ``0 .. m`` (sampled rank ``j + 1``), or, under ``ties=
"expected"``, uniform over a range ``lo .. hi`` of positions. Its *full rank* ``r`` in
``1 .. n`` would be its rank among all of the user's ``n - 1`` negatives. Every estimator here
is a table ``T[j]``, the value that a query at sampled position ``j`` contributes (averaged
over ``lo .. hi``); a user's value is the mean over their queries, the metric the mean over
users:

* ``sampled``: the metric on the sampled list, ``T[j] = M(j + 1; m + 1)`` (uncorrected).
* ``rescale``: the metric at the rescaled rank, ``T[j] = M(1 + (n - 1) j / m; n)``.
* ``minimal_bias``: Krichene & Rendle's least-squares table, the ``x`` minimising
  ``sum_r (sum_j A[r, j] x_j - M(r))^2`` over the full ranks ``r = 1 .. n`` (uniform weights),
  ``A[r, j] = P(sampled position j | full rank r)``: the minimum-norm solution on the
  directions of ``A^T A`` whose eigenvalue is at least ``1e-4`` of the largest (singular
  values of ``A`` at least 1 % of the largest). The problem is ill-posed: without the cut the
  exact least-squares table has entries in the thousands and the estimate a variance that
  makes it useless (docs/sampled.md shows the effect of the cut).
* ``bias_variance``: ``x = ((1 - gamma) A^T A + gamma diag(A^T 1))^-1 A^T M``, which adds
  ``gamma`` times the variance of the estimate to the squared bias.
* ``mle``: Jin et al.'s maximum-likelihood distribution ``P(r)`` of the full ranks, fitted by EM
  on the observed sampled positions (queries weighted so that each user counts once); ``T[j]
  = E[M(R) | position j]`` under ``P``, so that the mean is ``sum_r P(r) M(r)``. Ranks up to
  1,000 are each their own value of ``R``; beyond, ``R`` takes 2,000 buckets of geometrically
  growing width, uniform inside (m sampled negatives cannot tell apart ranks closer than
  about n / m). EM starts from the uniform distribution and stops when the log-likelihood
  gains less than 1e-10 (relative) or after 1,000 iterations (``details[...]["strata"]``).

``A`` is the law of the sampled position given the full rank: Binomial(m, (r - 1) / (n - 1))
with replacement, Hypergeometric(n - 1 negatives, r - 1 of them above, m drawn) without.
Queries whose users have different ``n`` are grouped into at most :data:`MAX_STRATA` strata of
``n`` (each distinct ``n`` when there are that few, else groups of equal numbers of queries,
each at its median ``n``); ``rescale`` uses each query's own ``n``.
"""

from __future__ import annotations

import functools
import importlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from receval._errors import MetricError
from receval.families.contract import per_user_frame
from receval.metrics.registry import Metric, SampleTag, list_metrics

__all__ = ["MAX_STRATA", "Queries", "check_sampled_metrics", "one_item_value", "sampled_means"]

MAX_STRATA = 8
_BLOCK = 1 << 21  # entries of A computed at once
_MLE_ALONE = 1000  # the EM's full ranks each alone; beyond, _MLE_WIDE geometric buckets
_MLE_WIDE = 2000
_MLE_MAX_ITER = 1000
_MLE_TOL = 1e-10
_EIG_CUT = 1e-4


@dataclass(frozen=True)
class Queries:
    """The sampled ranks of the queries: each query's user (a row of ``keys``), the range
    ``lo .. hi`` of its sampled position, and ``n`` (its full candidates, itself included;
    0 when unknown)."""

    user: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n: np.ndarray
    negatives: int
    replace: bool


def supported() -> list[str]:
    """The metric names a sampled protocol can estimate (from the registry's facts)."""
    return [s.name for s in list_metrics() if s.one_item is not None]


def check_sampled_metrics(plan: tuple[Metric, ...], tag: SampleTag) -> tuple[Metric, ...]:
    """The plan with every metric named by its estimate (``~tag``); refuses the metrics that
    the protocol cannot estimate, naming the supported ones."""
    out = []
    for m in plan:
        spec = m.spec
        why = ""
        if spec.one_item is None:
            why = "it has no value for a query with one relevant item"
        elif m.sampling is not None and m.sampling != tag:
            why = f"it names another protocol than sampling= gives ({tag.text})"
        elif dict(m.values).get("rel") is not None:
            why = "rel= is not supported (queries are the truth rows at relevance_threshold)"
        elif Metric(spec, m.values, m.k).is_weighted():
            why = "it weighs users (not a mean over users)"
        elif spec.one_item in ("hit", "precision") and m.k is None:
            why = f"it needs a cutoff, e.g. {spec.name}@10"
        if why:
            msg = (
                f"{m.canonical} cannot be estimated from sampled negatives: {why}. The sampled "
                f"metrics are {', '.join(supported())} (one relevant item per query; "
                "docs/sampled.md)."
            )
            raise MetricError(msg)
        tagged = Metric(spec, m.values, m.k, tag)
        out.append(tagged)
    return tuple(dict.fromkeys(out))


def one_item_value(kind: str, r: np.ndarray, n: np.ndarray | float, k: int | None) -> np.ndarray:
    """The value of a metric of kind ``kind`` (:data:`receval.metrics.specs.OneItem`) for a
    query whose one relevant item is at (possibly fractional) rank ``r`` among ``n``
    candidates, cut at ``k`` (None: no cutoff)."""
    r = np.asarray(r, dtype=np.float64)
    inside = np.ones(r.shape, dtype=np.bool_) if k is None else r <= k
    if kind == "dcg":
        out = np.where(inside, 1.0 / np.log2(r + 1.0), 0.0)
    elif kind == "hit":
        out = inside.astype(np.float64)
    elif kind == "precision":
        out = inside / float(k or 1)
    elif kind == "reciprocal":
        out = np.where(inside, 1.0 / r, 0.0)
    elif kind == "auc":
        n_arr = np.asarray(n, dtype=np.float64)
        out = (n_arr - r) / (n_arr - 1.0)
    else:
        msg = f"unknown one-item metric kind {kind!r}"
        raise ValueError(msg)
    return np.asarray(out, dtype=np.float64)


def _law(r: np.ndarray, n: int, m: int, replace: bool) -> np.ndarray:
    """``A[i, j] = P(sampled position j | full rank r[i])`` for ``j = 0 .. m``."""
    j = np.arange(m + 1)[None, :]
    above = (r - 1)[:, None]
    if replace:
        stats = importlib.import_module("scipy.stats")  # on use: import receval loads no scipy
        out: np.ndarray = np.asarray(stats.binom.pmf(j, m, above / (n - 1)), dtype=np.float64)
        return out
    # C(K, j) C(N - K, m - j) / C(N, m), N = n - 1 negatives, K = r - 1 of them above, in
    # log space (scipy's hypergeom.pmf is ~1000x slower on these arrays)
    gammaln = importlib.import_module("scipy.special").gammaln
    big_n = n - 1
    below = big_n - above
    ok = (j <= above) & (m - j <= below)
    jj = np.where(ok, j, 0)
    ka, kb = np.where(ok, above, 0), np.where(ok, below, 0)
    log_pmf = (
        gammaln(ka + 1.0) - gammaln(jj + 1.0) - gammaln(ka - jj + 1.0)
        + gammaln(kb + 1.0) - gammaln(m - jj + 1.0) - gammaln(kb - (m - jj) + 1.0)
        - (gammaln(big_n + 1.0) - gammaln(m + 1.0) - gammaln(big_n - m + 1.0))
    )  # fmt: skip
    out = np.where(ok, np.exp(np.where(ok, log_pmf, 0.0)), 0.0)
    return out


def _strata(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each query's stratum and each stratum's ``n`` (see the module docstring)."""
    values, inverse = np.unique(n, return_inverse=True)
    if values.size <= MAX_STRATA:
        return inverse.astype(np.int64), values.astype(np.int64)
    order = np.argsort(n, kind="stable")
    group = np.empty(n.size, dtype=np.int64)
    group[order] = np.arange(n.size) * MAX_STRATA // n.size
    # queries of equal n stay together: a value's group is that of its first query
    first = np.zeros(values.size, dtype=np.int64)
    first[inverse[order][::-1]] = group[order][::-1]
    group = first[inverse]
    used, group = np.unique(group, return_inverse=True)
    medians = np.array(
        [round(float(np.median(n[group == g]))) for g in range(used.size)], dtype=np.int64
    )
    return group.astype(np.int64), medians


def _kinds(plan: tuple[Metric, ...]) -> list[tuple[str, int | None]]:
    return [(str(m.spec.one_item), m.k) for m in plan]


def _rank_buckets(n: int) -> np.ndarray:
    """Bucket edges over the full ranks ``1 .. n`` for the EM: ranks up to
    :data:`_MLE_ALONE` each alone, then :data:`_MLE_WIDE` buckets of geometrically growing
    width (a rank's resolution relative to itself, as the sampled ranks see it)."""
    if n <= _MLE_ALONE + _MLE_WIDE:
        return np.arange(1, n + 2, dtype=np.int64)
    alone = np.arange(1, _MLE_ALONE + 1, dtype=np.int64)
    wide = np.geomspace(_MLE_ALONE + 1, n + 1, _MLE_WIDE + 1).round().astype(np.int64)
    return np.unique(np.concatenate([alone, wide]))


@functools.lru_cache(maxsize=16)  # depends on (n, m, law, metrics) only: reused across seeds
def _mle_likelihood(
    n: int, m: int, replace: bool, kinds: tuple[tuple[str, int | None], ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rank bucket: its size, the mean law of the sampled position over its ranks
    (buckets x (m + 1)) and, per metric, the mean of law times metric value."""
    edges = _rank_buckets(n)
    n_b = edges.size - 1
    like = np.zeros((n_b, m + 1))
    like_m = np.zeros((len(kinds), n_b, m + 1))
    size = np.diff(edges).astype(np.float64)
    rows = max(1, _BLOCK // (m + 1))
    for start in range(1, n + 1, rows):
        r = np.arange(start, min(start + rows, n + 1), dtype=np.int64)
        a = _law(r, n, m, replace)
        b = np.searchsorted(edges, r, side="right") - 1
        cut = np.flatnonzero(np.diff(b, prepend=-1))
        like[b[cut]] += np.add.reduceat(a, cut, axis=0)
        for i, (kind, k) in enumerate(kinds):
            val = one_item_value(kind, r.astype(np.float64), n, k)
            like_m[i, b[cut]] += np.add.reduceat(a * val[:, None], cut, axis=0)
    like /= size[:, None]
    like_m /= size[None, :, None]
    for array in (size, like, like_m):
        array.setflags(write=False)
    return size, like, like_m


def _stratum_tables(
    n: int,
    m: int,
    replace: bool,
    kinds: list[tuple[str, int | None]],
    tag: SampleTag,
    counts: np.ndarray | None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """One stratum's tables (metrics x (m + 1)) for ``minimal_bias``, ``bias_variance`` or
    ``mle`` (``counts``: the weighted sampled positions, for the EM)."""
    info: dict[str, Any] = {"n": n}
    if tag.estimator == "mle":
        size, like, like_m = _mle_likelihood(n, m, replace, tuple(kinds))
        n_b = size.size
        assert counts is not None
        weights = counts / counts.sum()
        p = size / n
        ll_prev = -math.inf
        iterations = 0
        converged = False
        for iterations in range(1, _MLE_MAX_ITER + 1):  # noqa: B007
            pred = p @ like
            ok = weights > 0
            ll = float(np.sum(weights[ok] * np.log(np.maximum(pred[ok], 1e-300))))
            ratio = np.where(ok, weights / np.maximum(pred, 1e-300), 0.0)
            p = p * (like @ ratio)
            p /= p.sum()
            if ll - ll_prev <= _MLE_TOL * max(1.0, abs(ll)):
                converged = True
                break
            ll_prev = ll
        pred = p @ like
        safe = np.maximum(pred, 1e-300)
        tables = np.einsum("b,ibj->ij", p, like_m) / safe[None, :]
        info.update(iterations=iterations, converged=converged, rank_buckets=int(n_b))
        return tables, info
    tables, rank = _least_squares(n, m, replace, tuple(kinds), tag.estimator, tag.gamma)
    if rank is not None:
        info["rank"] = rank
    return tables, info


@functools.lru_cache(maxsize=64)  # a table depends on (n, m, law, metrics) only: reused
def _least_squares(
    n: int,
    m: int,
    replace: bool,
    kinds: tuple[tuple[str, int | None], ...],
    estimator: str,
    gamma: float,
) -> tuple[np.ndarray, int | None]:
    """The ``minimal_bias`` or ``bias_variance`` tables (metrics x (m + 1)) for ``n``, and
    the number of directions kept by ``minimal_bias`` (None for ``bias_variance``)."""
    rows = max(1, _BLOCK // (m + 1))
    gram = np.zeros((m + 1, m + 1))
    col = np.zeros(m + 1)
    rhs = np.zeros((len(kinds), m + 1))
    for start in range(1, n + 1, rows):
        r = np.arange(start, min(start + rows, n + 1), dtype=np.int64)
        a = _law(r, n, m, replace)
        gram += a.T @ a
        col += a.sum(axis=0)
        for i, (kind, k) in enumerate(kinds):
            rhs[i] += one_item_value(kind, r.astype(np.float64), n, k) @ a
    rank: int | None = None
    if estimator == "minimal_bias":
        w, v = np.linalg.eigh(gram)
        keep = w > w.max() * _EIG_CUT
        inv = (v[:, keep] / w[keep]) @ v[:, keep].T
        tables = rhs @ inv.T
        rank = int(keep.sum())
    else:
        g = gamma
        system = (1.0 - g) * gram + g * np.diag(col)
        tables = np.linalg.solve(system, rhs.T).T
    tables.setflags(write=False)
    return tables, rank


def _counts(q: Queries, rows: np.ndarray, weight: np.ndarray, m: int) -> np.ndarray:
    """The weighted count of each sampled position, a range spread evenly over its positions."""
    span = (q.hi[rows] - q.lo[rows] + 1).astype(np.float64)
    diff = np.zeros(m + 2)
    np.add.at(diff, q.lo[rows], weight[rows] / span)
    np.add.at(diff, q.hi[rows] + 1, -weight[rows] / span)
    return np.cumsum(diff)[: m + 1]


def _apply(tables: np.ndarray, which: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each query's value: the mean of its table's entries over ``lo .. hi``."""
    cum = np.zeros((tables.shape[0], tables.shape[1] + 1))
    np.cumsum(tables, axis=1, out=cum[:, 1:])
    out: np.ndarray = (cum[which, hi + 1] - cum[which, lo]) / (hi - lo + 1)
    return out


def sampled_means(
    plan: tuple[Metric, ...],
    q: Queries,
    keys: pl.Series,
    user_col: str,
    zero_users: np.ndarray,
) -> tuple[dict[str, float], pl.DataFrame, dict[str, dict[str, Any]]]:
    """Means, the per-user frame and the details of the sampled metrics of ``plan`` (all of
    one protocol) from the queries ``q``. ``zero_users``: users (rows of ``keys``) scored 0
    on every metric (no recommendations, ``no_recs="zero"``)."""
    tag = plan[0].sampling
    assert tag is not None
    m = q.negatives
    n_users = keys.len()
    per_query = np.bincount(q.user, minlength=n_users).astype(np.float64)
    has = per_query > 0
    users = np.flatnonzero(has | zero_users)
    weight = 1.0 / per_query[q.user]  # each user counts once
    kinds = _kinds(plan)
    values = np.zeros((len(plan), q.user.size))
    info: dict[str, Any] = {}
    if q.user.size:
        if tag.estimator == "sampled":
            j = np.arange(m + 1, dtype=np.float64)
            tables = np.stack([one_item_value(kd, j + 1, m + 1, k) for kd, k in kinds])
            values = np.stack([_apply(t[None], np.zeros(q.user.size, np.int64), q.lo, q.hi)
                               for t in tables])  # fmt: skip
        elif tag.estimator == "rescale":
            ns, which = np.unique(q.n, return_inverse=True)
            j = np.arange(m + 1, dtype=np.float64)
            for i, (kd, k) in enumerate(kinds):
                r = 1.0 + (ns[:, None] - 1.0) * j[None, :] / m
                t = one_item_value(kd, r, ns[:, None].astype(np.float64), k)
                values[i] = _apply(t, which, q.lo, q.hi)
        else:
            stratum, n_of = _strata(q.n)
            strata_info = []
            for s, n_s in enumerate(n_of.tolist()):
                rows = np.flatnonzero(stratum == s)
                counts = _counts(q, rows, weight, m) if tag.estimator == "mle" else None
                tables, one = _stratum_tables(int(n_s), m, q.replace, kinds, tag, counts)
                one["queries"] = int(rows.size)
                strata_info.append(one)
                for i in range(len(plan)):
                    values[i, rows] = _apply(tables[i][None], np.zeros(rows.size, np.int64),
                                             q.lo[rows], q.hi[rows])  # fmt: skip
            info["strata"] = strata_info
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    columns: dict[str, np.ndarray] = {}
    for i, metric in enumerate(plan):
        sums = np.bincount(q.user, weights=values[i], minlength=n_users)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_user = np.where(has, sums / per_query, np.where(zero_users, 0.0, np.nan))
        used = per_user[users]
        mean = float(math.fsum(used) / used.size) if used.size else math.nan
        stderr = None
        if tag.estimator != "mle" and used.size > 1:
            stderr = float(np.std(used, ddof=1) / math.sqrt(used.size))
        means[metric.canonical] = mean
        columns[metric.canonical] = per_user
        details[metric.canonical] = {
            "estimator": tag.estimator, "corrected": tag.corrected, "negatives": m,
            "queries": int(q.user.size), "users": int(used.size), "stderr": stderr, **info,
        }  # fmt: skip
    frame = per_user_frame(keys, users, columns, user_col)
    return means, frame, details
