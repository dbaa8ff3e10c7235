"""Statistics of model comparison (receval.comparison.stats) against scipy and cases with a known
answer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from helpers.examples import examples
from receval import InputError
from receval.comparison.stats import (
    bootstrap_ci,
    bootstrap_means,
    cohens_d,
    correct,
    paired_t,
    randomization,
    wilcoxon,
)


def _tied_pairs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-user values on a coarse grid: ties among |differences| and zero differences."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, size=n) / 4.0
    b = np.where(rng.random(n) < 0.3, a, rng.integers(0, 5, size=n) / 4.0)
    return a, b


@pytest.mark.parametrize(("seed", "n"), [(0, 8), (1, 25), (2, 60), (3, 400), (4, 3)])
def test_paired_t_matches_scipy(seed: int, n: int) -> None:
    a, b = _tied_pairs(seed, n)
    assert (a == b).any()
    want = stats.ttest_rel(a, b).pvalue
    assert paired_t(a, b) == pytest.approx(want, rel=1e-12, abs=0)


@pytest.mark.parametrize(("seed", "n"), [(0, 8), (1, 25), (2, 60), (3, 400), (5, 12)])
def test_wilcoxon_matches_scipy_with_ties_and_zeros(seed: int, n: int) -> None:
    a, b = _tied_pairs(seed, n)
    d = a - b
    assert (d == 0).any()
    assert len(np.unique(np.abs(d[d != 0]))) < np.count_nonzero(d)  # tied |d|
    want = stats.wilcoxon(d).pvalue
    assert wilcoxon(a, b) == pytest.approx(want, rel=1e-12, abs=0)


def test_wilcoxon_exact_small_sample_matches_scipy() -> None:
    a = np.array([0.9, 0.7, 0.4, 0.66, 0.81, 0.2])
    b = np.array([0.1, 0.3, 0.35, 0.5, 0.2, 0.25])
    assert wilcoxon(a, b) == stats.wilcoxon(a - b).pvalue
    # every difference positive (n = 6, exact): p = 2 / 2^6
    assert wilcoxon(a + 1, b) == pytest.approx(2 / 64)


def test_all_differences_zero_give_p_one() -> None:
    x = np.array([0.1, 0.5, 0.5, 1.0])
    assert paired_t(x, x.copy()) == 1.0
    assert wilcoxon(x, x.copy()) == 1.0
    assert randomization(x, x.copy()) == 1.0
    assert randomization(x, x.copy(), n_permutations=3) == 1.0
    assert cohens_d(x, x.copy()) == 0.0


def test_degenerate_sizes() -> None:
    one = np.array([0.5])
    assert math.isnan(paired_t(one, np.array([0.1])))
    assert math.isnan(paired_t(np.zeros(0), np.zeros(0)))
    assert math.isnan(wilcoxon(np.zeros(0), np.zeros(0)))
    assert math.isnan(randomization(np.zeros(0), np.zeros(0)))
    assert math.isnan(cohens_d(one, one))
    assert math.isnan(cohens_d(np.array([1.0, 2.0]), np.array([0.0, 1.0])))  # constant diff
    with pytest.raises(InputError, match=r"paired values must be two 1-D arrays of one length"):
        paired_t(np.zeros(3), np.zeros(4))


def _exact_sign_flip_p(d: np.ndarray) -> float:
    """Every one of the 2^n sign vectors, one at a time."""
    observed = abs(sum(d))
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        if abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed - 1e-12:
            hits += 1
    return hits / 2 ** len(d)


@pytest.mark.parametrize("seed", range(6))
def test_randomization_exact_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 11))
    a = rng.integers(0, 4, size=n) / 3.0
    b = rng.integers(0, 4, size=n) / 3.0
    want = _exact_sign_flip_p(a - b) if (a != b).any() else 1.0
    assert randomization(a, b, n_permutations=2**n) == pytest.approx(want, abs=1e-15)


def test_randomization_known_answers() -> None:
    # all n differences of one sign and equal size: 2 of 2^n sign vectors are as extreme
    for n in (1, 3, 5, 10):
        assert randomization(np.ones(n), np.zeros(n)) == 2 / 2**n
    # d = (1, -1): every sign vector gives |sum| >= 0 -> p = 1
    assert randomization(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 1.0
    # d = (3, 1, 1): sums 5, 3, 3, 1, -1, -3, -3, -5 -> |sum| >= 5 twice
    assert randomization(np.array([3.0, 1.0, 1.0]), np.zeros(3)) == 2 / 8


def test_randomization_monte_carlo_is_seeded_and_close_to_exact() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(0.2, 1.0, size=16)
    b = rng.normal(0.0, 1.0, size=16)
    exact = randomization(a, b, n_permutations=2**16)
    p1 = randomization(a, b, n_permutations=20_000, seed=3)
    assert p1 == randomization(a, b, n_permutations=20_000, seed=3)
    assert p1 != randomization(a, b, n_permutations=20_000, seed=4)
    # Monte Carlo error of a proportion over 20000 draws: sd <= 0.0036
    assert abs(p1 - exact) < 0.015
    # many users: close to the paired t test (the normal limit), never 0
    big_a = rng.normal(0.0, 1.0, size=3000)
    big_b = big_a + rng.normal(0.03, 1.0, size=3000)
    p = randomization(big_a, big_b, n_permutations=4000, seed=1)
    assert p > 0
    assert abs(p - paired_t(big_a, big_b)) < 0.03
    with pytest.raises(InputError, match=r"n_permutations must be an integer from 1 to .*; got 0"):
        randomization(a, b, n_permutations=0)


def test_cohens_d_by_hand() -> None:
    a = np.array([0.5, 0.9, 0.3, 0.8])
    b = np.array([0.4, 0.4, 0.3, 0.2])
    d = a - b
    want = d.mean() / math.sqrt(((d - d.mean()) ** 2).sum() / 3)
    assert cohens_d(a, b) == pytest.approx(want, rel=1e-12)
    assert cohens_d(b, a) == pytest.approx(-want, rel=1e-12)


# Hand-worked textbook example: p = 0.01, 0.04, 0.03, 0.005 (m = 4).
# Sorted: 0.005, 0.01, 0.03, 0.04.
# Bonferroni: 4p = 0.04, 0.16, 0.12, 0.02.
# Holm: 4*0.005 = 0.02; 3*0.01 = 0.03; 2*0.03 = 0.06; 1*0.04 = 0.04 -> max so far 0.06.
# BH: 0.04*4/4 = 0.04; 0.03*4/3 = 0.04; 0.01*4/2 = 0.02; 0.005*4/1 = 0.02 (running min).
P = np.array([0.01, 0.04, 0.03, 0.005])


@pytest.mark.parametrize(
    ("method", "want"),
    [
        ("bonferroni", [0.04, 0.16, 0.12, 0.02]),
        ("holm", [0.03, 0.06, 0.06, 0.02]),
        ("bh", [0.02, 0.04, 0.04, 0.02]),
        (None, [0.01, 0.04, 0.03, 0.005]),
    ],
)
def test_corrections_hand_worked(method: str | None, want: list[float]) -> None:
    got = correct(P, method)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_array_equal(P, [0.01, 0.04, 0.03, 0.005])  # input unchanged


def test_corrections_second_example_with_nan_and_caps() -> None:
    # Benjamini & Hochberg style list of 6 with a NaN left out (m = 5)
    p = np.array([0.20, math.nan, 0.001, 0.008, 0.039, 0.041])
    # sorted 0.001, 0.008, 0.039, 0.041, 0.20
    # holm: 0.005, 0.032, 0.117, 0.117 (max with 0.082), 0.2
    # bh: 0.005, 0.02, 0.05125, 0.05125, 0.2
    holm = correct(p, "holm")
    bh = correct(p, "bh")
    assert math.isnan(holm[1]) and math.isnan(bh[1])
    np.testing.assert_allclose(holm[[2, 3, 4, 5, 0]], [0.005, 0.032, 0.117, 0.117, 0.2])
    np.testing.assert_allclose(bh[[2, 3, 4, 5, 0]], [0.005, 0.02, 0.05125, 0.05125, 0.2])
    np.testing.assert_allclose(correct(np.array([0.3, 0.6]), "bonferroni"), [0.6, 1.0])
    with pytest.raises(InputError, match=r"correction must be one of holm, bonferroni, bh or None"):
        correct(p, "sidak")  # type: ignore[arg-type]


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
@settings(max_examples=examples(100), deadline=None)
def test_correction_invariants(ps: list[float]) -> None:
    p = np.array(ps)
    bonf, holm, bh = correct(p, "bonferroni"), correct(p, "holm"), correct(p, "bh")
    for adj in (bonf, holm, bh):
        assert (adj >= p - 1e-15).all()
        assert (adj <= 1.0).all()
        # order preserved: a smaller p never gets a larger adjusted p
        order = np.argsort(p, kind="stable")
        assert (np.diff(adj[order]) >= -1e-15).all()
    assert (holm <= bonf + 1e-15).all()
    assert (bh <= holm + 1e-15).all()


def test_bootstrap_means_reproducible_and_vectorised_equals_naive() -> None:
    x = np.random.default_rng(0).normal(size=(97, 3))
    m1 = bootstrap_means(x, n_resamples=50, seed=5)
    assert np.array_equal(m1, bootstrap_means(x, n_resamples=50, seed=5))
    assert not np.array_equal(m1, bootstrap_means(x, n_resamples=50, seed=6))
    # same draws as a naive loop over resamples of the same generator
    rng = np.random.default_rng(5)
    draws = [rng.integers(0, 97, size=97, dtype=np.int32) for _ in range(50)]
    naive = np.array([x[idx].mean(axis=0) for idx in draws])
    np.testing.assert_allclose(m1, naive, rtol=1e-12)
    # a column's resamples do not depend on the other columns (equal up to BLAS rounding)
    alone = bootstrap_means(x[:, 1], n_resamples=50, seed=5)[:, 0]
    np.testing.assert_allclose(alone, m1[:, 1], rtol=1e-12)


def test_bootstrap_chunking_does_not_change_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    import receval.comparison.stats as S

    x = np.random.default_rng(2).random(50)
    whole = bootstrap_ci(x, n_resamples=300, seed=1)
    monkeypatch.setattr(S, "_CELLS_PER_CHUNK", 120)  # 2 resamples per chunk
    assert np.array_equal(whole, bootstrap_ci(x, n_resamples=300, seed=1))


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_matches_scipy_within_monte_carlo_error(method: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.exponential(1.0, size=200)  # skewed: BCa and percentile differ
    ours = bootstrap_ci(x, method=method, n_resamples=20_000, seed=0)[0]  # type: ignore[arg-type]
    ref = stats.bootstrap(
        (x,), np.mean, method="BCa" if method == "bca" else "percentile",
        n_resamples=20_000, rng=np.random.default_rng(1),
    ).confidence_interval  # fmt: skip
    sd = x.std() / math.sqrt(x.size)
    # across seeds the bounds of either method move by about 0.1 sd of the mean
    assert ours[0] == pytest.approx(ref.low, abs=0.25 * sd)
    assert ours[1] == pytest.approx(ref.high, abs=0.25 * sd)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_bootstrap_equals_scipy_on_the_same_draws(method: str) -> None:
    # scipy draws its resample indices as rng.integers(0, n, (B, n)) from the same generator:
    # with the same seed both see the same resamples, so the intervals agree to rounding
    x = np.random.default_rng(12).lognormal(size=150)
    ours = bootstrap_ci(x, method=method, n_resamples=3000, seed=4)[0]  # type: ignore[arg-type]
    ref = stats.bootstrap(
        (x,), np.mean, method="BCa" if method == "bca" else "percentile",
        n_resamples=3000, rng=np.random.default_rng(4),
    ).confidence_interval  # fmt: skip
    np.testing.assert_allclose(ours, [ref.low, ref.high], rtol=1e-10)


def test_bca_moves_interval_right_on_right_skew() -> None:
    x = np.random.default_rng(3).exponential(1.0, size=100)
    bca = bootstrap_ci(x, method="bca", n_resamples=5000)[0]
    pct = bootstrap_ci(x, method="percentile", n_resamples=5000)[0]
    assert bca[0] > pct[0] and bca[1] > pct[1]


def test_bootstrap_coverage_on_normal_samples() -> None:
    rng = np.random.default_rng(42)
    reps, n = 300, 40
    samples = rng.normal(1.0, 2.0, size=(reps, n)).T  # one column per replicate
    for method in ("bca", "percentile"):
        bounds = bootstrap_ci(samples, method=method, n_resamples=1000, seed=9)  # type: ignore[arg-type]
        covered = ((bounds[:, 0] <= 1.0) & (bounds[:, 1] >= 1.0)).mean()
        # nominal 0.95; the bootstrap runs a little narrow at n = 40; binomial sd ~0.013
        assert 0.89 <= covered <= 0.99, (method, covered)


def test_bootstrap_edge_cases_and_errors() -> None:
    assert bootstrap_ci(np.full(5, 0.25)).tolist() == [[0.25, 0.25]]
    assert np.isnan(bootstrap_ci(np.zeros(0))).all()
    assert bootstrap_ci(np.array([0.7])).tolist() == [[0.7, 0.7]]
    with pytest.raises(InputError, match=r"confidence must be a number strictly between 0 and 1"):
        bootstrap_ci(np.ones(3), confidence=1.0)
    with pytest.raises(InputError, match=r"ci must be one of bca, percentile; got 'normal'"):
        bootstrap_ci(np.ones(3), method="normal")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"n_resamples must be an integer from 2 to .*; got 1"):
        bootstrap_ci(np.ones(3), n_resamples=1)


@given(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=40),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=examples(40), deadline=None)
def test_bootstrap_interval_inside_data_range(values: list[float], seed: int) -> None:
    x = np.array(values)
    for method in ("bca", "percentile"):
        low, high = bootstrap_ci(x, method=method, n_resamples=200, seed=seed)[0]  # type: ignore[arg-type]
        assert x.min() - 1e-12 <= low <= high <= x.max() + 1e-12
