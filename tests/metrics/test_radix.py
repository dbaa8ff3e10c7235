"""The radix sort of score keys (receval.kernels.sort) and the metrics built on it.

The kernels against NumPy's sorts (``np.sort``, ``np.argsort(kind="stable")``,
``np.lexsort``) on every kind of float64 (both signs, -0.0 and 0.0, subnormals, infinities,
integers near ±2^63), with several chunks and digit widths; and AUC, average precision, GAUC,
the ROC / PR curves and the streaming score histogram through the radix path equal, bit for
bit, to the code they replaced (NumPy's sorts and ``np.unique``, kept here or still in
receval.arrays.classification for small inputs), on random data with heavy ties.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import receval
from helpers.examples import examples
from receval.arrays import classification as C
from receval.engines.shard import evaluate_sharded
from receval.families.pointwise import ScoreHistogram
from receval.kernels import classification as KC
from receval.kernels import sort as S
from receval.kernels.exact import total
from receval.kernels.grouping import counting_sort

FAST = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -np.inf, np.inf, 1.0, -1.0]
BIG_INTS = [2**63 - 1024, -(2**63), 2**62 + 2**10, -(2**62) - 2**10, 2**53 + 2, -(2**53) - 2]

floats = st.floats(allow_nan=False, allow_infinity=True)
score = st.one_of(floats, st.sampled_from(SPECIAL), st.sampled_from([float(v) for v in BIG_INTS]))
scores = st.lists(score, min_size=0, max_size=300).map(lambda v: np.array(v, dtype=np.float64))
tied = st.lists(st.sampled_from([*SPECIAL[:5], 0.5, -0.5]), min_size=1, max_size=300).map(
    lambda v: np.array(v, dtype=np.float64)
)


@contextmanager
def radix_from(rows: int) -> Iterator[None]:
    """Sort by radix from ``rows`` rows on (0: always; a huge number: never)."""
    old = KC._RADIX_MIN
    KC._RADIX_MIN = rows
    try:
        yield
    finally:
        KC._RADIX_MIN = old


@contextmanager
def setting(name: str, value: object) -> Iterator[None]:
    """``receval.kernels.classification``'s ``name`` set to ``value`` for a while."""
    old = getattr(KC, name)
    setattr(KC, name, value)
    try:
        yield
    finally:
        setattr(KC, name, old)


def split_below(rows: int) -> contextlib.AbstractContextManager[None]:
    """GAUC splits rows by group and label while groups average at most ``rows`` rows."""
    return setting("_SPLIT_MAX_ROWS", rows)


def groups_apart_from(per_thread: int) -> contextlib.AbstractContextManager[None]:
    """Rows grouped already are counted group by group from ``per_thread`` groups a thread."""
    return setting("_GROUPS_PER_THREAD", per_thread)


@contextmanager
def layout(chunks: int, bits: int) -> Iterator[None]:
    """Force the radix sort's chunk count and widest digit."""
    old = S.n_chunks_for, S._max_bits
    S.n_chunks_for = lambda n: max(1, min(chunks, n))  # type: ignore[assignment]
    S._max_bits = lambda n: bits  # type: ignore[assignment]
    try:
        yield
    finally:
        S.n_chunks_for, S._max_bits = old


LAYOUTS = [(1, 16), (2, 8), (3, 11), (5, 3), (7, 1)]


# ------------------------------------------------------------------------------ the keys


@FAST
@given(scores)
def test_keys_order_as_the_scores(s: np.ndarray) -> None:
    keys, varying = S.float_keys(s)
    a, b = np.meshgrid(s, s) if s.size <= 60 else (s[:-1], s[1:])
    ka, kb = np.meshgrid(keys, keys) if s.size <= 60 else (keys[:-1], keys[1:])
    assert np.array_equal(a < b, ka < kb)
    assert np.array_equal(a == b, ka == kb)  # -0.0 and 0.0: one key
    if s.size:
        assert varying == int(np.bitwise_or.reduce(keys ^ keys[0]))
    back = S.float_of_keys(keys)
    assert np.array_equal(back, s)
    assert not np.signbit(back[s == 0]).any()  # zero comes back as 0.0


def test_keys_of_integers_near_2_63_are_exact() -> None:
    ints = np.array([*BIG_INTS, 0, 1, -1], dtype=np.int64)
    s = ints.astype(np.float64)
    assert np.array_equal(s.astype(object), ints.astype(object))  # exact as float64
    keys, _ = S.float_keys(s)
    assert np.array_equal(np.argsort(keys, kind="stable"), np.argsort(ints, kind="stable"))


# ------------------------------------------------------------------------------ the sorts


@FAST
@given(scores, st.sampled_from(LAYOUTS))
def test_sort_keys_as_np_sort(s: np.ndarray, lay: tuple[int, int]) -> None:
    keys, varying = S.float_keys(s)
    expected = np.sort(keys)
    with layout(*lay):
        got = S.sort_keys(keys.copy(), varying)
    assert np.array_equal(got, expected)
    assert np.array_equal(S.float_of_keys(got), np.sort(s))


@FAST
@given(st.one_of(scores, tied), st.sampled_from(LAYOUTS), st.sampled_from([np.uint32, np.uint64]))
def test_sort_pairs_is_stable(s: np.ndarray, lay: tuple[int, int], dtype: type) -> None:
    keys, varying = S.float_keys(s)
    order = np.argsort(keys, kind="stable")
    with layout(*lay):
        got, rows = S.sort_pairs(keys.copy(), np.arange(s.size, dtype=dtype), varying)
    assert np.array_equal(got, keys[order])
    assert np.array_equal(rows, order)


@FAST
@given(
    st.one_of(scores, tied),
    st.sampled_from(LAYOUTS),
    st.integers(1, 40),
    st.integers(0, 2**32 - 1),
)
def test_group_then_key_order_as_lexsort(
    s: np.ndarray, lay: tuple[int, int], n_groups: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_groups, s.size)
    labels = (rng.random(s.size) < 0.4).astype(np.int8)
    keys0, _ = S.float_keys(s)
    keys, payload, varying, pay_varying = S.group_keys(labels, s, codes, n_groups)
    assert np.array_equal(keys, keys0)
    assert np.array_equal(payload, codes * 2 + labels)
    order = np.lexsort((np.arange(s.size), keys0, codes))  # group, key, then input order
    with layout(*lay):
        got, pay = S.sort_pairs(keys, payload, varying, pay_varying & ~1)
    assert np.array_equal(got, keys0[order])
    assert np.array_equal(pay, (codes * 2 + labels)[order])


@FAST
@given(st.one_of(scores, tied), st.sampled_from(LAYOUTS))
def test_class_keys_split_in_row_order(s: np.ndarray, lay: tuple[int, int]) -> None:
    labels = (np.arange(s.size) % 3 == 0).astype(np.int8)
    keys, _ = S.float_keys(s)
    with layout(*lay):
        pos, neg, pv, nv = S.class_keys(labels, s)
        assert np.array_equal(pos, keys[labels == 1])
        assert np.array_equal(neg, keys[labels == 0])
        assert np.array_equal(S.sort_keys(pos, pv), np.sort(keys[labels == 1]))
        assert np.array_equal(S.sort_keys(neg, nv), np.sort(keys[labels == 0]))


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_and_empty(n: int) -> None:
    s = np.array([3.0, -0.0][:n])
    keys, varying = S.float_keys(s)
    assert np.array_equal(S.sort_keys(keys.copy(), varying), np.sort(keys))
    _, pay = S.sort_pairs(keys.copy(), np.arange(n, dtype=np.uint32), varying)
    assert np.array_equal(pay, np.argsort(keys, kind="stable"))


def test_all_equal_keys_need_no_pass() -> None:
    s = np.full(100_000, -0.0)
    s[::2] = 0.0
    keys, varying = S.float_keys(s)
    assert varying == 0
    payload = np.arange(s.size, dtype=np.uint32)
    got, pay = S.sort_pairs(keys, payload, varying)
    assert got is keys and pay is payload  # nothing moved: input order kept


def test_plan_skips_digits_where_no_bit_varies() -> None:
    varying = 0xF | (0xF << 60)  # bits 0-3 and 60-63
    plan = S._plan(varying, 0, 16)
    assert [(s, w) for s, w, _ in plan] == [(0, 16), (48, 16)]
    assert S._plan(0, 0b110, 16) == [(1, 2, True)]


def test_large_sort_several_threads() -> None:
    rng = np.random.default_rng(7)
    s = rng.standard_normal(600_000) * 10.0 ** rng.integers(-300, 300, 600_000)
    s[::11] = np.round(s[::11], 1)
    keys, varying = S.float_keys(s)
    assert np.array_equal(S.sort_keys(keys.copy(), varying), np.sort(keys))
    _, rows = S.sort_pairs(keys.copy(), np.arange(s.size, dtype=np.uint32), varying)
    assert np.array_equal(rows, np.argsort(keys, kind="stable"))


# ---------------------------------------------------- the metrics, bit for bit as before


def old_threshold_counts(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
    """The code the radix path replaced: np.unique and searchsorted on sorted floats."""
    pos, neg = KC.sorted_classes(y, s)
    thresholds = np.unique(s)[::-1]
    tps = pos.shape[0] - np.searchsorted(pos, thresholds, side="left")
    fps = neg.shape[0] - np.searchsorted(neg, thresholds, side="left")
    return thresholds, tps, fps


def old_auc(y: np.ndarray, s: np.ndarray) -> float:
    return C.auc_from_sorted(*KC.sorted_classes(y, s))


def old_ap(y: np.ndarray, s: np.ndarray) -> float:
    _, tps, fps = old_threshold_counts(y, s)
    return total(C.ap_terms(tps, fps, 0, 0)) / int(y.sum())


def old_group_counts(codes: np.ndarray, n_groups: int, y: np.ndarray, s: np.ndarray) -> tuple:
    offsets, order = counting_sort(codes, n_groups)
    return KC._group_pair_counts(offsets, y[order], s[order])


def old_of_rows(s: np.ndarray, bits: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    distinct, inverse = np.unique(s + 0.0, return_inverse=True)
    pos = np.zeros((n, distinct.size), dtype=np.int64)
    neg = np.zeros((n, distinct.size), dtype=np.int64)
    for j in range(n):
        label = ((bits >> j) & 1).astype(np.bool_)
        pos[j] = np.bincount(inverse[label], minlength=distinct.size)
        neg[j] = np.bincount(inverse[~label], minlength=distinct.size)
    return distinct, pos, neg


def same(a: float, b: float) -> bool:
    return np.float64(a).tobytes() == np.float64(b).tobytes()


def tied_data(n: int, distinct: int, seed: int, zeros: bool = False) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, distinct, n)
    s = (v / distinct) * 4.0 - 1.5
    if zeros:
        s[v % 3 == 0] = rng.choice([0.0, -0.0], int((v % 3 == 0).sum()))
    y = (rng.random(n) < 0.15 + 0.5 * v / distinct).astype(np.int8)
    y[:2] = [0, 1]
    return y, s


@pytest.mark.parametrize(
    ("n", "distinct", "zeros"),
    [(50, 3, True), (2_000, 7, False), (40_000, 1_000, True), (200_000, 1 << 40, False),
     (200_000, 20, True)],
)  # fmt: skip
def test_auc_ap_curves_as_before(n: int, distinct: int, zeros: bool) -> None:
    y, s = tied_data(n, distinct, n + distinct, zeros)
    with radix_from(0):
        assert same(receval.auc(y, s), old_auc(y, s))
        assert same(receval.average_precision(y, s), old_ap(y, s))
        for got, old in zip(C._threshold_counts(y, s), old_threshold_counts(y, s), strict=False):
            assert np.array_equal(got, old)
            assert np.array_equal(np.signbit(got), np.signbit(old))  # zero's sign as before
    with radix_from(1 << 62):  # the NumPy path that small inputs keep
        assert same(receval.auc(y, s), old_auc(y, s))
        assert same(receval.average_precision(y, s), old_ap(y, s))


@FAST
@given(st.one_of(scores, tied), st.integers(0, 2**32 - 1))
def test_auc_ap_any_floats_as_before(s: np.ndarray, seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = (rng.random(s.size) < 0.5).astype(np.int8)
    if s.size < 2:
        return
    y[:2] = [0, 1]
    with radix_from(0), layout(3, 5):
        assert same(receval.auc(y, s), old_auc(y, s))
        assert same(receval.average_precision(y, s), old_ap(y, s))


@pytest.mark.parametrize(
    ("n", "groups", "distinct"),
    [(300, 7, 4), (60_000, 1_000, 10), (200_000, 50, 1 << 40), (200_000, 150_000, 3)],
)
def test_gauc_as_before(n: int, groups: int, distinct: int) -> None:
    y, s = tied_data(n, distinct, n + groups, zeros=True)
    rng = np.random.default_rng(groups)
    g = rng.integers(0, groups, n) * 3 - 7  # ids, not codes
    codes, keys = C.group_codes(g, n)
    old = old_group_counts(codes, keys.len(), y, s)
    with radix_from(0):
        for split in (0, 1 << 62):  # the radix sort by (group, key); the split by group
            with split_below(split):
                new = KC.group_pair_counts(codes, keys.len(), y, s)
            for a, b in zip(new, old, strict=True):
                assert a.tobytes() == b.tobytes()
        for weight in ("impressions", "clicks", "uniform"):
            w = C.gauc_from_groups(old[2], old[0], old[1], weight)[0]
            assert same(receval.gauc(y, s, g, weight=weight), w)
        offsets = np.zeros(keys.len() + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=keys.len()), out=offsets[1:])
        order = np.argsort(codes, kind="stable")
        for apart in (0, 1 << 40):  # group by group; or radix-sorted as ungrouped rows
            with groups_apart_from(apart):
                grouped = KC.grouped_pair_counts(offsets, y[order], s[order])
            for a, b in zip(grouped, old, strict=True):
                assert a.tobytes() == b.tobytes()


def brute_group_counts(codes: np.ndarray, n_groups: int, y: np.ndarray, s: np.ndarray) -> tuple:
    """Per group: rows, positives and the AUC by comparing every (positive, negative) pair."""
    rows = np.bincount(codes, minlength=n_groups).astype(np.int64)
    positives = np.bincount(codes, weights=y, minlength=n_groups).astype(np.int64)
    auc = np.full(n_groups, np.nan)
    for g in range(n_groups):
        pos = s[(codes == g) & (y == 1)]
        neg = s[(codes == g) & (y == 0)]
        if pos.size and neg.size:
            twice = 2 * int((neg[None, :] < pos[:, None]).sum())
            twice += int((neg[None, :] == pos[:, None]).sum())
            auc[g] = twice / (2.0 * pos.size * neg.size)
    return rows, positives, auc


@FAST
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=12),
    st.integers(0, 600),
    st.sampled_from(["any", "tied"]),
    st.integers(1, 4),
    st.sampled_from([0, 4, 1 << 30]),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
)
def test_gauc_split_against_every_pair(
    sizes: list[int], big: int, kind: str, shift: int, per_row_bit: int, chunks: int, seed: int
) -> None:
    """The split by (group, label): groups of any size (one large, some empty), heavy ties,
    -0.0 / 0.0, subnormals and infinities; every bucket width, pairs compared one by one or
    both classes sorted, any number of chunks: the same counts, bit for bit, as comparing
    every pair."""
    rng = np.random.default_rng(seed)
    sizes = [*sizes, big]
    rng.shuffle(sizes)
    codes = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    rng.shuffle(codes)
    n = codes.size
    pool = np.array([*SPECIAL, *[float(v) for v in BIG_INTS], 0.5, -0.5, 1e300, -1e-300])
    s = rng.choice(pool[:7] if kind == "tied" else pool, n) if n else np.zeros(0)
    if kind == "any":
        s = np.where(rng.random(n) < 0.5, s, rng.normal(0, 1e3, n))
    y = (rng.random(n) < 0.4).astype(np.int8)
    want = brute_group_counts(codes, len(sizes), y, s)
    order = np.argsort(codes, kind="stable")
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    with (
        setting("radix_low_bits", lambda n, size: shift),
        setting("_PAIRS_PER_ROW_BIT", per_row_bit),
        setting("n_chunks_for", lambda n: max(1, min(chunks, n))),
    ):
        got = KC._split_pair_counts(codes, len(sizes), y, s)
        with radix_from(0), groups_apart_from(0):  # rows grouped already: group by group
            grouped = KC.grouped_pair_counts(offsets, y[order], s[order])
    for a, b, c in zip(got, grouped, want, strict=True):
        assert a.tobytes() == c.tobytes()
        assert b.tobytes() == c.tobytes()


@FAST
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=400),
    st.integers(0, 7),
    st.integers(0, 2**32 - 1),
)
def test_small_key_sort_is_numpys(values: list[int], spread: int, seed: int) -> None:
    """The in-cache sort of a group's keys: any uint64 keys (few varying bytes or all), any
    range of the array, the rest of the array untouched."""
    rng = np.random.default_rng(seed)
    keys = np.array(values, dtype=np.uint64) >> np.uint64(8 * spread)  # spread: fewer bytes
    lo = int(rng.integers(0, keys.size + 1))
    hi = int(rng.integers(lo, keys.size + 1))
    want = keys.copy()
    want[lo:hi].sort()
    tmp = rng.integers(0, 2**63, keys.size).astype(np.uint64)
    KC._sort_small_keys(keys, tmp, np.empty(256, dtype=np.int64), lo, hi)
    assert keys.tobytes() == want.tobytes()


def test_gauc_with_a_group_that_has_no_row() -> None:
    y, s = tied_data(1_000, 5, 3)
    codes = np.repeat(np.array([0, 2, 3], dtype=np.int64), [300, 500, 200])
    old = old_group_counts(codes, 5, y, s)
    for split in (0, 1 << 62):
        with radix_from(0), split_below(split):
            new = KC.group_pair_counts(codes, 5, y, s)
        for a, b in zip(new, old, strict=True):
            assert a.tobytes() == b.tobytes()
        assert new[0].tolist() == [300, 0, 500, 200, 0]


@pytest.mark.parametrize("n", [40, 100_000])
def test_score_histogram_as_before(n: int) -> None:
    _, s = tied_data(n, 50, n, zeros=True)
    rng = np.random.default_rng(n)
    bits = rng.integers(0, 8, n).astype(np.int64)
    old = old_of_rows(s, bits, 3)
    for rows in (0, 1 << 62):
        with radix_from(rows):
            state = ScoreHistogram.of_rows(s, bits, 3)
        assert state.scores.tobytes() == old[0].tobytes()
        assert np.array_equal(state.pos, old[1]) and np.array_equal(state.neg, old[2])


def test_evaluate_as_before() -> None:
    rng = np.random.default_rng(5)
    n = 80_000
    users = rng.integers(0, 2_000, n)
    items = rng.integers(0, 400, n)
    recs = pl.DataFrame({"user": users, "item": items, "score": rng.integers(0, 30, n) / 7.0})
    recs = recs.unique(["user", "item"], keep="first", maintain_order=True)
    truth = recs.sample(fraction=0.3, seed=1).select("user", "item").with_columns(
        relevance=pl.lit(1)
    )  # fmt: skip
    metrics = ["auc", "gauc", "average_precision", "gauc(weight=clicks)"]
    with radix_from(1 << 62):
        old = receval.evaluate(truth, recs, metrics, relevance_col="relevance")
    with radix_from(0):
        new = receval.evaluate(truth, recs, metrics, relevance_col="relevance")
    for m in metrics:
        assert same(new[m], old[m]), m
    assert new.per_user.equals(old.per_user)


def test_sharded_and_streamed_as_before() -> None:
    """The shard code (score ranges: pair counts and AP terms) and the streaming state
    through the radix path give the local engine's old values."""
    rng = np.random.default_rng(9)
    n = 60_000
    recs = pl.DataFrame(
        {"user": rng.integers(0, 500, n), "item": rng.integers(0, 1_000, n),
         "score": rng.integers(-20, 20, n) / 3.0}
    ).unique(["user", "item"], keep="first", maintain_order=True)  # fmt: skip
    truth = recs.sample(fraction=0.2, seed=2).select("user", "item")
    metrics = ["auc", "average_precision", "gauc"]
    with radix_from(1 << 62):
        old = receval.evaluate(truth, recs, metrics)
    with radix_from(0):
        sharded = evaluate_sharded(truth, recs, metrics, n_shards=3, seed=1)
        ev = receval.Evaluator(metrics)
        for lo in range(0, 500, 200):
            part = pl.col("user").is_between(lo, lo + 199)
            ev.update(truth.filter(part), recs.filter(part))
        streamed = ev.compute()
    for m in metrics:
        assert same(sharded[m], old[m]) and same(streamed[m], old[m]), m
