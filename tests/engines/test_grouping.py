"""Grouping rows by user in linear time: the counting sort kernel, the user codes, and the
layout built from them against a stable sort (the way the layout was built before)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import receval
from receval.data import layout as _layout
from receval.datasets import make_interactions
from receval.kernels import grouping as G

_METRICS = ["ndcg@10", "map@20", "mrr", "recall@5", "precision@3", "hit_rate@2", "r_precision"]


# ------------------------------------------------------------------------- the kernels


@pytest.mark.parametrize(
    ("n", "n_groups", "n_chunks"),
    [
        (0, 0, None),  # empty
        (0, 3, 4),  # no rows, some groups
        (1, 1, None),
        (50, 1, 3),  # one user
        (200, 200, None),  # (about) every row its own user
        (1000, 7, 13),  # many chunks, few groups
        (37, 5, 64),  # more chunks than rows
        (300_000, 1000, None),  # the default chunking (one chunk per thread)
    ],
)
def test_counting_sort_equals_stable_argsort(n: int, n_groups: int, n_chunks: int | None) -> None:
    rng = np.random.default_rng(n + n_groups)
    codes = rng.integers(0, max(n_groups, 1), n).astype(np.int64)
    offsets, order = G.counting_sort(codes, n_groups, n_chunks=n_chunks)
    np.testing.assert_array_equal(order, np.argsort(codes, kind="stable"))
    counts = np.bincount(codes, minlength=n_groups)
    np.testing.assert_array_equal(offsets, np.concatenate([[0], np.cumsum(counts)]))
    assert order.dtype == np.int64 and offsets.dtype == np.int64


def test_counting_sort_all_distinct_and_sorted_codes() -> None:
    codes = np.random.default_rng(0).permutation(5000).astype(np.int64)
    offsets, order = G.counting_sort(codes, 5000, n_chunks=6)
    np.testing.assert_array_equal(order, np.argsort(codes))
    np.testing.assert_array_equal(offsets, np.arange(5001))
    ascending = np.sort(codes)
    _, identity = G.counting_sort(ascending, 5000, n_chunks=6)
    np.testing.assert_array_equal(identity, np.arange(5000))


@pytest.mark.parametrize(
    ("n", "size", "low"),
    [
        (0, 1, 0),  # empty
        (1, 1, 5),
        (1000, 3000, -7),  # fewer rows than keys, negative ids
        (70_000, 2049, 0),  # one key past the first bucket
        (200_000, 5000, 10**12),
        (300_000, 1 << 20, 0),
        (100_000, 1 << 24, -(2**40)),  # the widest range it takes
    ],
)
def test_radix_group_equals_stable_argsort(n: int, size: int, low: int) -> None:
    rng = np.random.default_rng(n + size)
    keys = rng.integers(0, size, n)
    scores, items = rng.random(n), rng.integers(-(2**62), 2**62, n)
    carry = (lambda: scores, lambda: items)
    offsets, order, carried = G.radix_group(keys + low, low, size, carry)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    assert [a.dtype for a in carried] == [np.float64, np.int64]
    np.testing.assert_array_equal(carried[0], scores[order])
    np.testing.assert_array_equal(carried[1], items[order])
    _, alone, (one,) = G.radix_group(keys + low, low, size, [lambda: items])
    np.testing.assert_array_equal(alone, order)
    np.testing.assert_array_equal(one, items[order])
    counts = np.bincount(keys, minlength=size)
    np.testing.assert_array_equal(offsets, np.concatenate([[0], np.cumsum(counts)]))
    assert order.dtype == np.int64 and offsets.dtype == np.int64


def test_radix_group_of_uint64_ids_past_int64() -> None:
    ids = np.random.default_rng(4).integers(0, 3000, 50_000).astype(np.uint64) + np.uint64(2**63)
    low = np.array([2**63], dtype=np.uint64).view(np.int64)[0]
    offsets, order, _ = G.radix_group(ids.view(np.int64), int(low), 3000)
    np.testing.assert_array_equal(order, np.argsort(ids, kind="stable"))
    assert offsets[-1] == 50_000


def _count_joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of pieces of each column that :func:`G.joined` joins from now on."""
    joins: list[int] = []
    joined = G.joined

    def counted(pieces: list[np.ndarray]) -> np.ndarray:
        if len(pieces) > 1:
            joins.append(len(pieces))
        return joined(pieces)

    monkeypatch.setattr(G, "joined", counted)
    return joins


def _cut(values: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    return [values[a:b] for a, b in zip([0, *cuts], [*cuts, values.shape[0]], strict=True)]


@pytest.mark.parametrize(
    ("cuts", "item_cuts"),
    [
        ([], []),  # one piece
        ([70_000, 70_000, 150_001], [70_000, 70_000, 150_001]),  # an empty piece among them
        ([1, 2, 65_536, 200_000], [1, 2, 65_536, 200_000]),
        ([100_000], [100_001]),  # the items cut elsewhere: joined first
        ([1, 2, 65_536, 200_000], []),  # the items in one piece: read as views
        (list(range(1000, 300_000, 1000)), list(range(1000, 300_000, 1000))),  # many pieces
    ],
)
@pytest.mark.parametrize("low_bits", [None, 6, 9, 15])
def test_radix_group_of_pieces_equals_stable_argsort(
    cuts: list[int], item_cuts: list[int], low_bits: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys and carried values in pieces (a Parquet column's chunks) give what the joined
    arrays give, whatever the cuts and the bits of the second pass."""
    joins = _count_joins(monkeypatch)
    rng = np.random.default_rng(len(cuts))
    n, size, low = 300_000, 20_000, -123
    keys = rng.integers(0, size, n)
    scores, items = rng.random(n), rng.integers(-(2**62), 2**62, n)
    carry = (lambda: _cut(scores, cuts), lambda: _cut(items, item_cuts))
    offsets, order, carried = G.radix_group(_cut(keys + low, cuts), low, size, carry, low_bits)
    assert joins == ([] if cuts == item_cuts or not item_cuts else [len(item_cuts) + 1])
    want = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(order, want)
    assert [a.dtype for a in carried] == [np.float64, np.int64]
    np.testing.assert_array_equal(carried[0], scores[want])
    np.testing.assert_array_equal(carried[1], items[want])
    counts = np.bincount(keys, minlength=size)
    np.testing.assert_array_equal(offsets, np.concatenate([[0], np.cumsum(counts)]))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64, np.int32])
def test_joined_pieces_equal_concatenate(dtype: type) -> None:
    rng = np.random.default_rng(5)
    values = rng.integers(0, 2**31 - 1, 200_000).astype(dtype)
    for cuts in ([], [0, 0], [1, 70_000, 70_001], list(range(100, 200_000, 997))):
        pieces = _cut(values, cuts)
        got = G.joined(pieces)
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, values)
    assert G.joined([]).shape == (0,)


def test_column_array_of_a_long_chunked_column_is_joined_on_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_layout, "_PARALLEL_JOIN_ROWS", 1000)
    joins: list[int] = []
    join = G.join_pieces
    monkeypatch.setattr(G, "join_pieces", lambda p: joins.append(len(p)) or join(p))
    values = np.arange(5000, dtype=np.uint64) * np.uint64(2**52)
    chunked = pl.concat(
        [pl.Series("x", values[:1200]), pl.Series("x", values[1200:])], rechunk=False
    )
    got = _layout.column_array(chunked)
    assert joins == [2]
    np.testing.assert_array_equal(got, values.view(np.int64))  # uint64 ids by their bits
    floats = pl.concat([pl.Series([0.5, -0.0]), pl.Series([np.inf] * 999)], rechunk=False)
    assert _layout.column_array(floats).tolist() == [0.5, -0.0, *[np.inf] * 999]
    assert joins == [2, 2]
    assert _layout.column_array(chunked.head(900)).tolist() == values[:900].view(np.int64).tolist()
    assert joins == [2, 2]  # short: Polars' copy


@pytest.mark.parametrize(
    "lengths", [[], [0], [10], [5, 0, 7], [1] * 1000, [200_000, 3, 0, 150_000], [65_536] * 40]
)
def test_work_units_cover_every_row_once_in_order(lengths: list[int]) -> None:
    n = sum(lengths)
    units = G._work_units(lengths, n)
    rows = [(k, r) for unit in units for k, lo, hi in unit for r in range(lo, hi)]
    assert rows == [(k, r) for k, length in enumerate(lengths) for r in range(length)]
    assert all(lo < hi for unit in units for _, lo, hi in unit)
    assert len(units) <= max(1, 4 * G.numba.get_num_threads())  # not one unit per piece


@pytest.mark.parametrize(
    ("n", "size"), [(10**7, 10**5), (10**8, 10**6), (10**6, 10**5), (10**7, 1 << 24), (100, 10)]
)
def test_radix_low_bits_bound_the_buckets(n: int, size: int) -> None:
    bits = G.radix_low_bits(n, size)
    assert 6 <= bits <= 15
    assert -(-size // (1 << bits)) <= 512  # at most 512 buckets
    if size >= 1 << 13:  # keys spread evenly: buckets of at most about 2^16 rows
        capped = -(-size // (1 << (bits - 1))) > 512  # one bit fewer: too many buckets
        assert n * (1 << bits) / size <= 1 << 16 or bits == 6 or capped


@pytest.mark.parametrize("longest", [1, 5, 31, 33, 200, 3000])
def test_sort_within_groups_equals_lexsort(longest: int) -> None:
    rng = np.random.default_rng(longest)
    codes = rng.integers(0, 40, 40 * longest // 2 + 1).astype(np.int64)
    key = rng.integers(0, 10, codes.size).astype(np.int64)  # many equal keys: stability shows
    offsets, order = G.counting_sort(codes, 40)
    G.sort_within(offsets, order, key)
    np.testing.assert_array_equal(order, np.lexsort((key, codes)))
    descending = np.arange(codes.size, dtype=np.int64)[::-1].copy()
    offsets, order = G.counting_sort(codes, 40)
    G.sort_within(offsets, order, descending)  # each group reversed
    np.testing.assert_array_equal(order, np.lexsort((descending, codes)))


def test_gather_and_runs() -> None:
    rng = np.random.default_rng(1)
    order = rng.permutation(100_000).astype(np.int64)
    for values in (rng.random(100_000), rng.integers(-(2**62), 2**62, 100_000)):
        np.testing.assert_array_equal(G.gather(values, order), values[order])
    small = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(G.gather(small, order[:5] % 10), small[order[:5] % 10])
    values = np.array([3, 3, 1, 1, 1, 3, 2], dtype=np.int64)
    assert G.count_runs(values) == 4
    np.testing.assert_array_equal(G.run_offsets(values, 4), [0, 2, 5, 6, 7])
    assert G.count_runs(values[:0]) == 0
    np.testing.assert_array_equal(G.run_offsets(values[:0], 0), [0])


@pytest.mark.parametrize(
    "cuts", [[], [1], [2], [3, 3], [0, 4, 4, 5], [1, 2, 3, 4, 5, 6], [6, 7], [0], [7]]
)
def test_runs_over_pieces_equal_runs_of_the_joined_array(cuts: list[int]) -> None:
    """Runs that go on from one piece to the next (empty pieces among them) count once."""
    values = np.array([3, 3, 1, 1, 1, 3, 2], dtype=np.int64)
    pieces = _cut(values, cuts)
    assert G.count_runs(pieces) == 4
    np.testing.assert_array_equal(G.run_offsets(pieces, 4), [0, 2, 5, 6, 7])
    assert G.count_runs([values[:0], values[:0]]) == 0
    np.testing.assert_array_equal(G.run_offsets([values[:0]], 0), [0])
    rng = np.random.default_rng(len(cuts))
    long = np.repeat(rng.integers(0, 5, 400), rng.integers(1, 4, 400))
    pieces = _cut(long, sorted(rng.integers(0, long.shape[0], 30).tolist()))
    runs = G.count_runs(long)
    assert G.count_runs(pieces) == runs
    np.testing.assert_array_equal(G.run_offsets(pieces, runs), G.run_offsets(long, runs))


def test_range_and_table_codes_equal_unique_inverse() -> None:
    rng = np.random.default_rng(2)
    values = rng.integers(-50, 950, 20_000).astype(np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    codes, present = G.range_codes(values, -50, 1000)
    np.testing.assert_array_equal(codes, inverse)
    np.testing.assert_array_equal(np.flatnonzero(present) - 50, uniq)
    sparse = values * (2**40) + 7
    np.testing.assert_array_equal(G.table_codes(sparse, uniq * (2**40) + 7), inverse)
    assert G.table_codes(np.array([10**6], dtype=np.int64), uniq)[0] == -1  # absent


# -------------------------------------------------------------------------- user codes


def _reference_codes(ids: pl.Series) -> tuple[np.ndarray, pl.Series]:
    keys = ids.unique().sort()
    codes = keys.search_sorted(ids).to_numpy().astype(np.int64)
    return codes, keys


_U64 = pl.UInt64
_IDS = {
    "dense ints": pl.Series("u", [5, 3, 5, 9, 3, 3, 12, 5]),
    "negative ints": pl.Series("u", [-4, 7, -4, 0, 7]),
    "sparse ints": pl.Series("u", [2**62, -(2**62), 17, 2**62, 17, -5]),
    "int32": pl.Series("u", [9, 1, 9, 4], dtype=pl.Int32),
    "uint64 past 2^63 (range)": pl.Series("u", [2**64 - 1, 2**64 - 3, 2**63, 2**64 - 1], _U64),
    "uint64 past 2^63 (sparse)": pl.Series("u", [2**64 - 1, 5, 2**63 + 1, 5, 2**64 - 1], _U64),
    "strings": pl.Series("u", ["b", "a", "b", "10", "9", "", "é", "a"]),
    "one id": pl.Series("u", ["x"] * 4),
    "empty ints": pl.Series("u", [], dtype=pl.Int64),
    "empty strings": pl.Series("u", [], dtype=pl.String),
}  # fmt: skip


@pytest.mark.parametrize("name", list(_IDS))
def test_user_codes_equal_sorted_distinct_ids(name: str) -> None:
    ids = _IDS[name]
    codes, keys = _layout.user_codes(ids)
    want_codes, want_keys = _reference_codes(ids)
    assert keys.dtype == ids.dtype
    assert keys.to_list() == want_keys.to_list()
    np.testing.assert_array_equal(codes, want_codes)


def test_user_codes_survive_string_hash_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = pl.Series("u", [f"user{i % 37}" for i in range(500)])
    collide = lambda s: np.ascontiguousarray(s.str.len_bytes().to_numpy(), dtype=np.int64)  # noqa: E731
    monkeypatch.setattr(_layout, "_string_bits", collide)  # many distinct ids share a "hash"
    codes, keys = _layout.user_codes(ids)
    want_codes, want_keys = _reference_codes(ids)
    assert keys.to_list() == want_keys.to_list()
    np.testing.assert_array_equal(codes, want_codes)


# ------------------------------------------------------------------------------ layout


def _grouped_by_sort(frame: pl.DataFrame, user_col: str) -> tuple[list, list, pl.DataFrame]:
    """The layout as it was built before: runs, and a stable sort when a user repeats."""
    runs = frame.select(pl.col(user_col).rle()).unnest(user_col)
    if not runs["value"].is_unique().all():
        frame = frame.sort(user_col, maintain_order=True)
        runs = frame.select(pl.col(user_col).rle()).unnest(user_col)
    offsets = np.concatenate([[0], np.cumsum(runs["len"].to_numpy())]).tolist()
    return runs["value"].to_list(), offsets, frame


def _frames() -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(3)
    n = 3000
    users = rng.integers(0, 400, n)
    frame = pl.DataFrame(
        {"user": users, "item": np.arange(n), "score": rng.integers(0, 4, n) * 1.0}
    )
    partly = pl.concat([frame.sort("user", maintain_order=True)] * 2)  # grouped twice over
    return {
        "shuffled ints": frame,
        "shuffled strings": frame.with_columns(pl.format("u{}", "user").alias("user")),
        "shuffled uint64": frame.with_columns(pl.col("user").cast(pl.UInt64) + 2**63),
        "sparse ints": frame.with_columns(pl.col("user") * 2**50),
        "negative int32": frame.with_columns((pl.col("user") - 200).cast(pl.Int32)),
        "ints over two radix buckets": frame.with_columns(pl.col("user") * 7 - 5),
        "string items": frame.with_columns(pl.col("item").cast(pl.String)),
        "long runs, users repeated": partly,
        "grouped, descending": frame.sort("user", descending=True, maintain_order=True),
        "grouped strings": frame.with_columns(pl.format("u{}", "user").alias("user")).sort(
            "user", descending=True
        ),
        "each user once, shuffled": frame.unique("user", keep="first", maintain_order=True),
        "one row": frame.head(1),
        "empty": frame.head(0),
    }


@pytest.mark.parametrize(
    "layout",
    [
        "shuffled", "grouped", "long runs, users repeated", "uint64", "int32 users",
        "sparse ints", "strings", "string items",
    ],
)  # fmt: skip
@pytest.mark.parametrize("cut", ["aligned", "items cut elsewhere", "one chunk"])
def test_group_by_user_of_chunked_columns_carries_them(
    layout: str, cut: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Columns in chunks (as read from Parquet row groups) are read where they lie; the
    carried arrays equal the stable sort's columns whatever the chunks."""
    joins = _count_joins(monkeypatch)
    frame = _frames()["shuffled ints"].head(2400)
    if layout == "grouped":
        frame = frame.sort("user", maintain_order=True)
    elif layout == "long runs, users repeated":
        frame = _frames()["long runs, users repeated"]
    elif layout == "uint64":
        frame = _frames()["shuffled uint64"]
    elif layout == "int32 users":
        frame = _frames()["negative int32"]
    elif layout == "sparse ints":  # coded through a table: the codes grouped
        frame = _frames()["sparse ints"]
    elif layout == "strings":  # coded through hashes
        frame = _frames()["shuffled strings"]
    elif layout == "string items":  # their hashes carried chunk by chunk
        frame = _frames()["string items"]
    sizes = [500, 0, 700, frame.height - 1200]
    starts = np.cumsum([0, *sizes[:-1]]).tolist()
    chunked = pl.concat(
        [frame.slice(a, k) for a, k in zip(starts, sizes, strict=True)], rechunk=False
    )
    if cut == "items cut elsewhere":
        items = pl.concat(
            [frame["item"].head(3), frame["item"].tail(frame.height - 3)], rechunk=False
        )
        chunked = chunked.with_columns(items)
    elif cut == "one chunk":
        chunked = chunked.rechunk()
    assert chunked.equals(frame)
    if cut != "one chunk":
        assert chunked["user"].n_chunks() > 1
    keys, offsets, want = _grouped_by_sort(frame, "user")
    carry = {
        "item": lambda: _layout.item_key_column(chunked["item"]),
        "value": lambda: _layout.float_column(chunked["score"]),
    }
    grouped = _layout.group_by_user(chunked, "user", carry)
    radix = layout != "grouped"  # users or their codes grouped by radix_group
    n_chunks = [chunked[c].n_chunks() for c in ("user", "item", "score")]
    if radix and cut == "items cut elsewhere":
        lengths = [[c.len() for c in chunked[col].get_chunks()] for col in ("user", "item")]
        assert lengths[0] != lengths[1] and n_chunks[0] > 1
        keyed = _layout.item_key_column(chunked["item"]).n_chunks()  # string ids: one chunk
        # the items only, unless in one chunk (then read as views): the others read in place
        assert joins == ([keyed] if keyed > 1 else [])
    elif radix and cut == "aligned":
        assert joins == []  # the carried columns read where they lie
    assert grouped.keys.to_list() == keys
    assert grouped.offsets.tolist() == offsets
    assert grouped.frame.equals(want)
    want_items = _layout.item_keys(want["item"]).tolist()  # string ids: their hashes
    assert grouped.taken("item", lambda: np.zeros(0)).tolist() == want_items
    assert grouped.taken("value", lambda: np.zeros(0)).tolist() == want["score"].to_list()
    assert grouped.carried["item"].dtype == np.int64
    assert grouped.carried["value"].dtype == np.float64


@pytest.mark.parametrize("name", list(_frames()))
def test_group_by_user_equals_stable_sort(name: str) -> None:
    frame = _frames()[name]
    keys, offsets, want = _grouped_by_sort(frame, "user")
    grouped = _layout.group_by_user(frame, "user")
    assert grouped.keys.to_list() == keys
    assert grouped.keys.dtype == frame["user"].dtype and grouped.keys.name == "user"
    assert grouped.offsets.tolist() == offsets
    assert grouped.frame.equals(want)
    assert grouped.source is frame
    for col in frame.columns:
        assert grouped.column(col).equals(want[col])
    rows = np.arange(frame.height, dtype=np.int64)
    assert frame[grouped.rows(rows)].equals(want)
    assert grouped.take(frame["item"].to_numpy()).tolist() == want["item"].to_list()


def _string_frames() -> dict[str, pl.DataFrame]:
    """String user ids laid out for each way of :func:`_layout._group_strings`."""
    rng = np.random.default_rng(11)
    n = 2000
    users = pl.Series("user", [f"u{u}" for u in rng.integers(0, 150, n)])
    frame = pl.DataFrame({"user": users, "item": np.arange(n), "score": rng.random(n)})
    grouped = frame.sort("user", descending=True, maintain_order=True)
    pairs = pl.DataFrame({"user": [f"p{i // 2}" for i in range(n)], "item": np.arange(n)})
    return {
        "long runs, each user once": grouped,
        "long runs, users repeated": pl.concat([grouped.head(900), grouped.tail(1100), grouped]),
        "in many chunks": pl.concat([grouped.slice(i, 97) for i in range(0, n, 97)], rechunk=False),
        "runs of two rows, each user once": pairs,  # 2 * runs == rows: the run path
        "runs of one or two rows": pairs.filter(pl.col("item") % 4 != 0),  # the hash path
        "grouped head, shuffled rest": pl.concat([grouped.head(1000), frame.tail(1000)]),
        "shuffled head, grouped rest": pl.concat([frame.head(300), grouped]),
        "shuffled": frame,
        "one user": frame.with_columns(pl.lit("x").alias("user")),
        "empty strings among ids": frame.with_columns(
            pl.when(pl.col("item") % 7 == 0).then(pl.lit("")).otherwise("user").alias("user")
        ),
        "empty": frame.head(0),
    }


@pytest.mark.parametrize("sample", [1 << 16, 64])
@pytest.mark.parametrize("collide", [False, True])
@pytest.mark.parametrize("name", list(_string_frames()))
def test_group_by_user_of_string_ids_equals_stable_sort(
    name: str, collide: bool, sample: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every way of grouping string ids (runs counted or hashed, the head's sample telling
    right or wrong, hashes that collide) gives the stable sort's layout, carried arrays
    included."""
    frame = _string_frames()[name]
    monkeypatch.setattr(_layout, "_RUNS_SAMPLE", sample)
    if collide:  # many distinct ids share a "hash" (their length)
        collide_bits = lambda s: np.ascontiguousarray(s.str.len_bytes().to_numpy(), dtype=np.int64)  # noqa: E731
        monkeypatch.setattr(_layout, "_string_bits", collide_bits)
    keys, offsets, want = _grouped_by_sort(frame, "user")
    items = frame["item"].to_numpy().astype(np.int64)
    grouped = _layout.group_by_user(frame, "user", {"item": lambda: pl.Series(items * 3)})
    assert grouped.keys.to_list() == keys
    assert grouped.keys.dtype == pl.String and grouped.keys.name == "user"
    assert grouped.offsets.tolist() == offsets
    assert grouped.frame.equals(want)
    assert (grouped.order is None) == frame.equals(want)
    assert grouped.taken("item", lambda: items).tolist() == (want["item"] * 3).to_list()


def test_group_by_user_moves_no_row_of_grouped_input() -> None:
    frame = pl.DataFrame({"user": [7, 7, 2, 9, 9, 9], "item": [1, 2, 3, 4, 5, 6]})
    grouped = _layout.group_by_user(frame, "user")
    assert grouped.order is None and grouped.frame is frame
    assert grouped.keys.to_list() == [7, 2, 9]  # the input's order of users


def test_sort_by_user_equals_polars_sort() -> None:
    rng = np.random.default_rng(5)
    n = 5000
    frame = pl.DataFrame(
        {
            "__u": rng.integers(0, 300, n),
            "__row": rng.permutation(n) * 3 + 2**40,
            "__side": rng.integers(0, 2, n).astype(np.int8),
            "__i": rng.integers(0, 50, n).astype(str),
        }
    )
    want = frame.sort("__u", "__row")
    assert _layout.sort_by_user(frame, "__u", "__row").equals(want)
    strings = frame.with_columns(pl.col("__u").cast(pl.String))
    assert _layout.sort_by_user(strings, "__u", "__row").equals(strings.sort("__u", "__row"))


# ------------------------------------------------------------------------------ results


def _shuffle_keeping_user_order(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The rows interleaved across users at random, each user's rows in their own order."""
    users = frame["user"].to_numpy()
    shuffled = users[np.random.default_rng(seed).permutation(frame.height)]
    slots = np.argsort(shuffled, kind="stable")  # each user's positions there, in order
    rows = np.argsort(users, kind="stable")  # each user's rows, in order
    out = np.empty(frame.height, dtype=np.int64)
    out[slots] = rows
    return frame[out]


@pytest.mark.filterwarnings("ignore:.*no predicted rating", "ignore:.*already has in train")
@pytest.mark.parametrize("ids", ["int", "str"])
@pytest.mark.parametrize("ties", ["first", "expected", "trec"])
def test_shuffled_input_gives_identical_result(ids: str, ties: str) -> None:
    data = make_interactions(600, n_recs=30, ids=ids, score_decimals=1, seed=7)  # type: ignore[arg-type]
    truth = _shuffle_keeping_user_order(data.truth, 1)
    recs = _shuffle_keeping_user_order(data.recs, 2)
    assert not recs["user"].equals(data.recs["user"])
    for frame, source in ((truth, data.truth), (recs, data.recs)):  # each user's rows in order
        by_user = frame.sort("user", maintain_order=True)
        assert by_user.equals(source.sort("user", maintain_order=True))
    metrics = [*_METRICS, "auc", "gauc", "coverage@10", "novelty@10", "rmse"]
    train = data.truth.select("user", "item").reverse()  # popularity for novelty
    want = receval.evaluate(data.truth, data.recs, metrics, ties=ties, train=train)  # type: ignore[arg-type]
    got = receval.evaluate(truth, recs, metrics, ties=ties, train=train)  # type: ignore[arg-type]
    assert got.means == want.means  # bit for bit
    assert got.per_user.equals(want.per_user)
    assert got.counts == want.counts


def test_gauc_groups_of_any_id_kind_equal_dense_codes() -> None:
    rng = np.random.default_rng(8)
    n = 4000
    codes = rng.integers(0, 150, n)
    y = rng.integers(0, 2, n)
    s = rng.integers(0, 6, n) / 5.0  # ties
    want = receval.gauc(y, s, codes)
    kinds = [
        codes * 2**50 - 7,  # sparse ints: hashed, not a table
        np.array([f"g{c:03d}" for c in codes], dtype=object),  # strings, same order
        codes.astype(np.uint64) + np.uint64(2**63),  # past 2^63
    ]
    for groups in kinds:
        assert receval.gauc(y, s, groups) == want
