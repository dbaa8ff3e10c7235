"""The data and the comparison of the sharded and Spark engine tests (tests/engines/test_shard.py,
tests/engines/test_spark.py; the rating robustness tests use ``assert_same`` too).

``make_data`` builds truth, recs, train and items with ties in scores (five distinct values),
short lists, users with no relevant item, truth users without recs, recs users not in truth,
graded relevance 0..3, repeated train rows, and ratings with predictions for the rating family;
``groups`` splits the whole registry into evaluate calls, one per family; ``assert_same``
compares two results to the last bit.
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Hashable
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import receval
from receval import MetricSpec

TIES = ("expected", "first", "trec", "optimistic", "pessimistic")
GAIN_MAP = "{0: 0, 1: 1, 2: 3, 3: 7}"  # covers every relevance of the data
KS: tuple[int | None, ...] = (None, 1, 5)

# ------------------------------------------------------------------------------ comparison


def same_float(got: object, want: object) -> bool:
    """Bit-equal floats (every NaN equals every NaN); other values by ==."""
    if isinstance(want, float):
        if not isinstance(got, float):
            return False
        if math.isnan(want):
            return math.isnan(got)
        return struct.pack("<d", got) == struct.pack("<d", want)
    return type(got) is type(want) and got == want


def same_value(got: Any, want: Any) -> bool:
    """Nested dicts (keys in the same order), lists and tuples, floats bit-equal."""
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and list(got) == list(want)
            and all(same_value(got[k], want[k]) for k in want)
        )
    if isinstance(want, list | tuple):
        return (
            type(got) is type(want)
            and len(got) == len(want)
            and all(same_value(g, w) for g, w in zip(got, want, strict=True))
        )
    return same_float(got, want)


def assert_same(got: receval.Result, want: receval.Result) -> None:
    """``got`` is ``want``: metrics and means in the same order with bit-equal values, the same
    per_user frame (exactly), counts, details and settings."""
    assert got.metrics == want.metrics
    assert list(got.means) == list(want.means)
    bad = {
        name: (got.means[name], value)
        for name, value in want.means.items()
        if not same_float(got.means[name], value)
    }
    assert not bad, f"means differ (got, want): {bad}"
    assert_frame_equal(got.per_user, want.per_user, check_exact=True)
    assert got.counts == want.counts
    assert same_value(got.details, want.details), (
        f"details differ:\n got  {got.details}\n want {want.details}"
    )
    assert got.settings == want.settings


# ------------------------------------------------------------------------------------ data

INT_ITEMS = [1, 2, 3, 5, 7, 9, 10, 11, 19, 20, 42, 99, 100, 101, 250, 1000, 1001, 77, 8, 13]
STR_ITEMS = [
    *("a", "b", "ab", "B", "b10", "b9", "Z", "zz", "a-1", "a_1"),
    *("x", "xy", "c", "C", "d", "q", "i100", "i99", "é", "0"),
]
# kinds of users: "both" (truth and recs), truth only, recs only, no relevant item, all relevant
KINDS = ("both", "both", "both", "both", "truth_only", "recs_only", "no_relevant", "all_relevant")


def _user(u: int, ids: str) -> Hashable:
    # string ids whose text order differs from the number order ("u10" < "u9")
    return f"u{u}" if ids == "str" else 3 * u + 1


def make_data(ids: str = "int", *, seed: int = 0, n_users: int = 40) -> dict[str, pl.DataFrame]:
    """Truth, recs, train and items for the ranking, classification and beyond families, and
    ``ratings`` / ``predictions`` for the rating family. Recs rows are shuffled; scores lie in
    [0, 1] (log loss) and take five values (ties)."""
    rng = random.Random(seed)
    pool: list[Any] = STR_ITEMS if ids == "str" else INT_ITEMS
    listed_pool = pool[:-3]  # the last three items are in the catalog only
    truth: list[tuple[Hashable, Hashable, float]] = []
    recs: list[tuple[Hashable, Hashable, float]] = []
    for u in range(n_users):
        uid = _user(u, ids)
        kind = "both" if u < 2 else rng.choice(KINDS)
        judged: dict[Any, float] = {}
        if kind != "recs_only":
            for item in rng.sample(listed_pool, rng.randint(1, 8)):
                if kind == "no_relevant":
                    rel = 0.0
                elif kind == "all_relevant":
                    rel = float(rng.randint(1, 3))
                else:
                    rel = float(rng.randint(0, 3))
                judged[item] = rel
            if u < 2:  # both classes and a relevant user for sure
                first = next(iter(judged))
                judged[first] = 3.0
            truth += [(uid, i, r) for i, r in judged.items()]
        if kind != "truth_only":
            if u < 2:  # the relevance-3 item and two items not in truth
                others = [i for i in listed_pool if i not in judged]
                items = [next(iter(judged)), *rng.sample(others, 2)]
            else:
                items = rng.sample(listed_pool, rng.choice([1, 2, 3, 5, 8, 12]))
            recs += [(uid, i, rng.randrange(5) / 4) for i in items]
    rng.shuffle(recs)

    train_users = [_user(u, ids) for u in range(0, n_users + 10, 2)]
    trained = listed_pool[:-2]  # two recommended items have no train interaction
    train = [(rng.choice(train_users), rng.choice(trained)) for _ in range(150)]
    train += train[:10]  # repeated rows count once

    # ratings 1..5; predictions near the rating for most truth rows, some rows without one
    ratings: list[tuple[Hashable, Hashable, float]] = []
    preds: list[tuple[Hashable, Hashable, float]] = []
    for u in range(n_users):
        uid = _user(u, ids)
        for item in rng.sample(listed_pool, rng.randint(1, 6)):
            rating = float(rng.randint(1, 5))
            ratings.append((uid, item, rating))
            if u == 0 or rng.random() < 0.85:
                preds.append((uid, item, rating + rng.choice([-1.5, -0.5, 0.0, 0.25, 1.0])))
    preds += [(_user(n_users + 1, ids), pool[0], 3.0), (_user(n_users + 2, ids), pool[1], 4.5)]
    rng.shuffle(preds)

    return {
        "truth": frame(truth, "relevance"),
        "recs": frame(recs, "score"),
        "train": pl.DataFrame({"user": [t[0] for t in train], "item": [t[1] for t in train]}),
        "items": pl.DataFrame(
            {
                "item": pool,
                "vec": [[rng.gauss(0, 1) for _ in range(8)] for _ in pool],
                "genre": [f"g{rng.randrange(4)}" for _ in pool],
            }
        ),
        "ratings": frame(ratings, "relevance"),
        "predictions": frame(preds, "score"),
    }


def frame(rows: list[tuple[Hashable, Hashable, float]], value: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "user": [r[0] for r in rows],
            "item": [r[1] for r in rows],
            value: [float(r[2]) for r in rows],
        }
    )


# -------------------------------------------------------------------------------- requests


def requests(spec: MetricSpec, ks: tuple[int | None, ...] = KS) -> list[str]:
    """The spec with its defaults and with each parameter varied alone, at each cutoff."""
    variants = [""]
    if spec.name in NAMED:  # metrics that name a column of the item table (and a group)
        variants = [f"({NAMED[spec.name]})"]
    for p in spec.params:
        if p.kind == "word":
            continue  # set by NAMED
        if p.kind == "threshold":
            values = ["2"]
        elif p.kind == "positive":
            values = ["2", "0.5"]
        elif p.kind == "grade":  # bounds the relevance (the data's is 0..3)
            values = ["3"]
        elif p.kind == "number":
            values = ["0.25", "1"]
        elif p.kind == "fraction":
            values = ["0.5"]
        elif p.kind == "choice":
            values = [c for c in p.choices if c != p.default]
        elif p.kind == "gain":
            values = [*(c for c in p.choices if c != p.default), GAIN_MAP]
        else:
            pytest.fail(f"no sample values for parameter kind {p.kind!r} of {spec.name}")
        base = NAMED.get(spec.name)
        variants += [f"({base + ', ' if base else ''}{p.name}={v})" for v in values]
    cuts = ks if spec.cutoff else (None,)
    return [spec.name + v + ("" if k is None else f"@{k}") for v in variants for k in cuts]


NAMED = {
    "miscalibration": "by=genre",
    "awrf": "by=genre",
    "group_share": "by=genre, group=g1",
    "exposure_share": "by=genre, group=g1",
    "exposure_disparity": "by=genre, group=g1",
    "exposure_gap": "by=genre, group=g1",
    "exposure_gini": "by=genre",
    "exposure_entropy": "by=genre",
    "group_coverage": "by=genre",
}
"""The item-table column (and group) of the metrics that read one: the items' genre."""


def family_metrics(family: str, ks: tuple[int | None, ...] = KS) -> list[str]:
    return [m for s in receval.list_metrics() if s.family == family for m in requests(s, ks)]


SIMILARITY = ("ils", "diversity", "unexpectedness", "serendipity")


def groups(
    data: dict[str, pl.DataFrame],
) -> dict[str, tuple[pl.DataFrame, pl.DataFrame, list[str], dict[str, Any]]]:
    """Evaluate calls that cover the whole registry: (truth, recs, metrics, options) by name.
    One call per family, so that no call fails for a reason specific to another family."""
    beyond = family_metrics("beyond")
    extra = {"train": data["train"], "items": data["items"]}
    return {
        "ranking": (data["truth"], data["recs"], family_metrics("ranking"), {}),
        "classification": (data["truth"], data["recs"], family_metrics("classification"), {}),
        "rating": (data["ratings"], data["predictions"], family_metrics("rating"), {}),
        "beyond_cosine": (data["truth"], data["recs"], beyond, {**extra, "item_features": "vec"}),
        "beyond_jaccard": (
            data["truth"],
            data["recs"],
            [m for m in beyond if m.startswith(SIMILARITY)],
            {**extra, "item_features": ["genre"]},
        ),
    }


DATA = {ids: make_data(ids) for ids in ("int", "str")}
