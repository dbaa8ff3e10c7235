"""Statistics for comparing models: paired tests, multiple-comparison corrections, effect size
and user-level bootstrap confidence intervals of a mean.

Every function takes NumPy arrays of per-user values (float64, no NaN) and returns Python
floats or NumPy arrays; none modifies its inputs. scipy supplies the distributions (imported
lazily, inside the functions).

Conventions (docs/compare.md):

* The paired difference is ``d = model - baseline`` over the users both sides evaluated.
* When every difference is 0 all three tests return ``p = 1`` (no evidence of a difference;
  scipy returns NaN there). With fewer than 2 pairs (t test) or no non-zero difference left
  (Wilcoxon) the p-value is NaN.
* Effect size: paired Cohen's d (``d_z``) = ``mean(d) / sd(d)`` with ``ddof=1``.
"""

from __future__ import annotations

import importlib
import math
import numbers
import warnings
from types import ModuleType
from typing import Literal, get_args

import numpy as np

from receval._errors import InputError, check_choice
from receval.kernels.stats import flipped_sums

__all__ = [
    "CiMethod",
    "Correction",
    "TestName",
    "bootstrap_ci",
    "bootstrap_means",
    "cohens_d",
    "correct",
    "paired_t",
    "paired_test",
    "randomization",
    "wilcoxon",
]

TestName = Literal["paired_t", "wilcoxon", "randomization"]
Correction = Literal["holm", "bonferroni", "bh"]
CiMethod = Literal["bca", "percentile"]

_CELLS_PER_CHUNK = 1 << 22  # resample-matrix cells per chunk (~32 MiB of float64)

MAX_RESAMPLES = 1_000_000
"""The most bootstrap resamples (``n_resamples``): the resample means of every model are held
at once (8 bytes per resample and model, 8 MB per model here), and past a few thousand an
interval's bounds move less than their own bootstrap error."""

MAX_PERMUTATIONS = 10_000_000
"""The most sign vectors of the randomization test (``n_permutations``): a p-value resolved to
1e-7, and already minutes of work on a large test set."""


def check_count(name: str, value: object, low: int, high: int) -> int:
    """``value`` as an int, or :class:`InputError` unless it is an integer (numpy's too, not a
    bool) from ``low`` to ``high``.

    >>> check_count("n_resamples", 10**12, 2, MAX_RESAMPLES)
    Traceback (most recent call last):
    ...
    receval._errors.InputError: n_resamples must be an integer from 2 to 1,000,000; got 10...0.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        n = int(value)
        if low <= n <= high:
            return n
    msg = f"{name} must be an integer from {low} to {high:,}; got {value!r}."
    raise InputError(msg)


def check_confidence(confidence: object) -> float:
    """``confidence`` as a float, or :class:`InputError` unless it is a number strictly
    between 0 and 1."""
    if isinstance(confidence, numbers.Real) and not isinstance(confidence, bool | np.bool_):
        level = float(confidence)
        if 0 < level < 1:
            return level
    msg = f"confidence must be a number strictly between 0 and 1; got {confidence!r}."
    raise InputError(msg)


def _scipy(name: str) -> ModuleType:
    """``scipy.<name>``, imported on first use (``import receval`` does not import scipy)."""
    return importlib.import_module(f"scipy.{name}")


def _diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        msg = f"paired values must be two 1-D arrays of one length; got {a.shape} and {b.shape}."
        raise InputError(msg)
    diff: np.ndarray = a - b
    return diff


def paired_t(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t test of ``mean(a - b) = 0`` (``scipy.stats.ttest_rel``).

    Examples
    --------
    >>> import numpy as np
    >>> round(paired_t(np.array([0.5, 0.7, 0.2, 0.9]), np.array([0.4, 0.5, 0.2, 0.6])), 4)
    0.1027
    >>> paired_t(np.array([1.0, 2.0]), np.array([1.0, 2.0]))  # every difference is 0
    1.0
    """
    stats = _scipy("stats")

    d = _diff(a, b)
    if d.size and not d.any():
        return 1.0
    if d.size < 2:
        return math.nan
    with warnings.catch_warnings():  # scipy warns on (nearly) constant differences
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.ttest_rel(a, b).pvalue)


def wilcoxon(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank test of ``a - b`` (``scipy.stats.wilcoxon`` with its
    defaults: zero differences dropped (``zero_method="wilcox"``), exact distribution for small
    samples without ties, else the normal approximation).

    Examples
    --------
    >>> import numpy as np
    >>> wilcoxon(np.array([0.5, 0.7, 0.3, 0.9, 0.8]), np.array([0.4, 0.5, 0.2, 0.6, 0.1]))
    0.0625
    """
    stats = _scipy("stats")

    d = _diff(a, b)
    if d.size and not d.any():
        return 1.0
    if not d.any():
        return math.nan
    with warnings.catch_warnings():  # scipy warns when it switches to the normal approximation
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.wilcoxon(d).pvalue)


def randomization(
    a: np.ndarray, b: np.ndarray, *, n_permutations: int = 10_000, seed: int = 0
) -> float:
    """Two-sided Fisher randomization (sign-flip) test of the mean paired difference.

    Under the null hypothesis each user's difference ``d_u = a_u - b_u`` is as likely to have
    either sign. The statistic is ``|sum(s * d)|`` over sign vectors ``s``. When
    ``2**n <= n_permutations`` every sign vector is enumerated and the p-value is exact (the
    share of sign vectors at least as extreme as the observed one); otherwise
    ``n_permutations`` random sign vectors (seeded) give ``p = (1 + hits) / (1 + n_permutations)``
    (never 0). With ``F`` the 0/1 indicator of the flipped users, ``sum(s * d) = sum(d) -
    2 F @ d``: the enumeration uses a matrix product per chunk; random sign vectors are random
    bytes (8 signs each) reduced by a parallel Numba kernel.

    Examples
    --------
    Three users, every difference positive: 2 of the 8 sign vectors (all +, all -) are as
    extreme, p = 1/4.

    >>> import numpy as np
    >>> randomization(np.array([1.0, 2.0, 3.0]), np.zeros(3))
    0.25
    >>> randomization(np.ones(4), np.ones(4))
    1.0
    """
    n_permutations = check_count("n_permutations", n_permutations, 1, MAX_PERMUTATIONS)
    d = _diff(a, b)
    n = d.size
    if n == 0:
        return math.nan
    if not d.any():
        return 1.0
    total = math.fsum(d)
    observed = abs(total)
    # a flip that only reorders a float sum must not count as less extreme
    tol = 1e-9 * max(float(np.abs(d).sum()), 1e-300)
    rows = max(1, _CELLS_PER_CHUNK // n)
    if n < 63 and (1 << n) <= n_permutations:
        n_all = 1 << n
        hits = 0
        bit = np.arange(n, dtype=np.int64)
        for start in range(0, n_all, rows):
            codes = np.arange(start, min(start + rows, n_all), dtype=np.int64)
            flips = ((codes[:, None] >> bit) & 1).astype(np.float64)
            stats_ = np.abs(total - 2.0 * (flips @ d))
            hits += int(np.count_nonzero(stats_ >= observed - tol))
        return hits / n_all
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    rows = max(1, 8 * _CELLS_PER_CHUNK // n)
    d = np.ascontiguousarray(d)
    while done < n_permutations:  # random sign vectors, 8 per random byte
        m = min(rows, n_permutations - done)
        bits = rng.integers(0, 256, size=(m, (n + 7) // 8), dtype=np.uint8)
        stats_ = np.abs(total - 2.0 * flipped_sums(bits, d))
        hits += int(np.count_nonzero(stats_ >= observed - tol))
        done += m
    return (1 + hits) / (1 + n_permutations)


def paired_test(
    test: TestName,
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_permutations: int = 10_000,
    seed: int = 0,
) -> float:
    """The two-sided p-value of ``test`` on paired values ``a`` and ``b``."""
    check_choice("test", test, get_args(TestName))
    if test == "paired_t":
        return paired_t(a, b)
    if test == "wilcoxon":
        return wilcoxon(a, b)
    return randomization(a, b, n_permutations=n_permutations, seed=seed)


def cohens_d(a: np.ndarray, b: np.ndarray) -> float:
    """Paired Cohen's d (``d_z``): ``mean(a - b) / sd(a - b)`` (``ddof=1``).

    NaN with fewer than 2 pairs, or when the differences are a non-zero constant; 0 when every
    difference is 0.

    >>> import numpy as np
    >>> cohens_d(np.array([2.0, 3.0, 5.0]), np.array([1.0, 1.0, 1.0]))
    1.527525231651947
    """
    d = _diff(a, b)
    if d.size < 2:
        return math.nan
    mean = math.fsum(d) / d.size
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return 0.0 if mean == 0.0 else math.nan
    return mean / sd


def correct(p_values: np.ndarray, method: Correction | None) -> np.ndarray:
    """Adjusted p-values for multiple comparisons (NaN entries are left out and stay NaN).

    ``"bonferroni"``: ``min(1, m p)``. ``"holm"`` (step-down): the i-th smallest gets
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``. ``"bh"`` (Benjamini-Hochberg, false discovery
    rate): ``min_{j >= i} min(1, m p_(j) / j)``. ``None``: unchanged. ``m`` counts the non-NaN
    p-values.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.01, 0.04, 0.03, 0.005])
    >>> correct(p, "bonferroni").tolist()
    [0.04, 0.16, 0.12, 0.02]
    >>> correct(p, "holm").round(6).tolist()
    [0.03, 0.06, 0.06, 0.02]
    >>> correct(p, "bh").round(6).tolist()
    [0.02, 0.04, 0.04, 0.02]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    if method is None:
        return out
    check_choice("correction", method, get_args(Correction), more=" or None")
    keep = np.flatnonzero(~np.isnan(p))
    m = keep.size
    if m == 0:
        return out
    vals = p[keep]
    if method == "bonferroni":
        out[keep] = np.minimum(1.0, vals * m)
        return out
    order = np.argsort(vals, kind="stable")
    ranked = vals[order]
    j = np.arange(1, m + 1, dtype=np.float64)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - j + 1) * ranked))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, ranked * m / j)[::-1])[::-1]
    res = np.empty(m, dtype=np.float64)
    res[order] = adj
    out[keep] = res
    return out


def bootstrap_means(values: np.ndarray, *, n_resamples: int, seed: int) -> np.ndarray:
    """Means of ``n_resamples`` user-level bootstrap resamples of each column of ``values``.

    ``values`` is ``(n_users, n_columns)``; every column is resampled with the same users
    (a resample draws ``n_users`` row indices with replacement). The draws come from
    ``numpy.random.default_rng(seed)`` and depend only on ``seed``, ``n_users`` and
    ``n_resamples``: the same users get the same resamples in any call, whatever the other
    columns. Vectorised: a chunk of resamples becomes a count matrix ``C`` (how often each
    user is drawn, via one ``bincount``) and the chunk's means are ``C @ values / n_users``.

    Returns
    -------
    numpy.ndarray
        ``(n_resamples, n_columns)`` float64.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n, n_cols = values.shape
    out = np.empty((n_resamples, n_cols), dtype=np.float64)
    if n == 0:
        out.fill(math.nan)
        return out
    rng = np.random.default_rng(seed)
    dtype = np.int32 if n < 2**31 else np.int64
    rows = max(1, _CELLS_PER_CHUNK // n)  # the draws do not depend on the chunking
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        idx = rng.integers(0, n, size=(m, n), dtype=dtype)
        flat = (idx + (np.arange(m, dtype=np.int64) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=m * n).reshape(m, n).astype(np.float64)
        out[start : start + m] = (counts @ values) / n
    return out


def bootstrap_ci(
    values: np.ndarray,
    *,
    confidence: float = 0.95,
    method: CiMethod = "bca",
    n_resamples: int = 2_000,
    seed: int = 0,
) -> np.ndarray:
    """Two-sided bootstrap confidence intervals of the mean of each column of ``values``.

    ``"percentile"``: the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
    the resample means (linear interpolation). ``"bca"`` (bias-corrected and accelerated,
    Efron & Tibshirani 1993, 14.3): the quantiles are moved to
    ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` with ``z0 = Phi^-1(share of resample means below
    the mean, ties counting one half)`` and the jackknife acceleration, in closed form for the
    mean: ``a = sum((x - mean)^3) / (6 (sum((x - mean)^2))^1.5)`` (as
    ``scipy.stats.bootstrap(method="BCa")``). A column whose values are all equal gets the
    interval ``(mean, mean)``; an empty one NaN.

    Returns
    -------
    numpy.ndarray
        ``(n_columns, 2)``: low and high bound of each column.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(1).normal(10.0, 2.0, size=400)
    >>> low, high = bootstrap_ci(x, seed=3)[0]
    >>> bool(low < x.mean() < high), round(float(high - low), 1)
    (True, 0.4)
    """
    special = _scipy("special")
    ndtr, ndtri = special.ndtr, special.ndtri

    check_confidence(confidence)
    check_choice("ci", method, get_args(CiMethod))
    n_resamples = check_count("n_resamples", n_resamples, 2, MAX_RESAMPLES)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n, n_cols = values.shape
    out = np.full((n_cols, 2), math.nan)
    if n == 0:
        return out
    means = values.mean(axis=0)
    constant = (values == values[0]).all(axis=0)
    theta = bootstrap_means(values, n_resamples=n_resamples, seed=seed)
    alpha = (1.0 - confidence) / 2.0
    for j in range(n_cols):  # a loop over columns (models x metrics), not over users
        if constant[j]:
            out[j] = means[j]
            continue
        if method == "percentile":
            levels = np.array([alpha, 1.0 - alpha])
        else:
            below = np.count_nonzero(theta[:, j] < means[j])
            at_most = np.count_nonzero(theta[:, j] <= means[j])
            dev = values[:, j] - means[j]
            with np.errstate(all="ignore"):  # degenerate cases fall back below
                z0 = float(ndtri((below + at_most) / (2.0 * n_resamples)))
                a = float(np.sum(dev**3) / (6.0 * np.sum(dev**2) ** 1.5))
                z = np.array([ndtri(alpha), -ndtri(alpha)])
                levels = ndtr(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
            if not np.isfinite(levels).all():
                levels = np.array([alpha, 1.0 - alpha])
        out[j] = np.quantile(theta[:, j], levels)
    return out
