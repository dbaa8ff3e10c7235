"""Registry-driven common suite of the ``beyond`` family.

Every registered ``beyond`` metric declares property sets in ``spec.properties``; each property
known here has a check, and a metric with no property or with one this suite does not know
fails. Checks run every metric with sampled parameters and cutoffs on random data with ties
(small integer scores), short lists, cutoffs longer than the lists, recs users not in truth
and truth users without recs; similarity metrics run with vector (cosine) and categorical
(Jaccard) features. Hypothesis properties follow: bounds, diversity = 1 - ils, Gini 0 for
uniform exposure, coverage monotone in K.
"""

from __future__ import annotations

import math
import random
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import receval
from helpers.beyond import frames, make_case
from receval import MetricSpec

SPECS = tuple(s for s in receval.list_metrics() if s.family == "beyond")
IDS = [s.name for s in SPECS]

KNOWN_PROPERTIES = {
    "bounded01": "values in [0, 1]",
    "nonnegative": "values in [0, inf)",
    "similarity_bounded": "ils in [-1, 1] from cosine, [0, 1] from Jaccard (diversity: 1 - ils)",
    "order_invariant": "with ties='expected', the order of input rows never changes a value",
}
FEATURES: dict[str, Any] = {"cosine": "vec", "jaccard": ["genres", "year"]}


def requests(spec: MetricSpec, ks: tuple[int | None, ...] = (None, 1, 3, 20)) -> list[str]:
    """Canonical strings: the defaults and each parameter varied alone, at each cutoff."""
    variants = [""]
    for p in spec.params:
        if p.kind == "fraction":
            values = ["0.5", "0.9"]
        else:
            pytest.fail(f"no sample values for parameter kind {p.kind!r} of {spec.name}")
        variants += [f"({p.name}={v})" for v in values]
    return [spec.name + v + ("" if k is None else f"@{k}") for v in variants for k in ks]


def run(
    data: dict[str, Any], metrics: list[str], kind: str = "cosine", **extra: Any
) -> receval.Result:
    return receval.evaluate(
        data["truth"], data["recs"], metrics, train=data["train"], items=data["items"],
        item_features=FEATURES[kind], **extra,
    )  # fmt: skip


def values_of(res: receval.Result, name: str) -> list[float]:
    """The mean and, for per-user metrics, every per-user value."""
    out = [res[name]]
    if name in res.per_user.columns:
        out += [v for v in res.per_user[name].to_list() if v is not None]
    return [v for v in out if not math.isnan(v)]


def test_every_beyond_metric_is_classified() -> None:
    assert SPECS, "no beyond metric registered"
    for spec in SPECS:
        assert spec.properties, f"{spec.name} declares no property"
        unknown = spec.properties - set(KNOWN_PROPERTIES)
        assert not unknown, f"{spec.name}: no check for properties {sorted(unknown)}"


NO_PAIRS = "ignore:no recs user has 2 or more items"  # ils@1: NaN with a warning (tested)


@pytest.mark.filterwarnings(NO_PAIRS)
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_bounds(spec: MetricSpec, seed: int) -> None:
    data = frames(make_case(seed, str_ids=bool(seed)))
    names = requests(spec)
    for kind in FEATURES:
        res = run(data, names, kind)
        for name in names:
            values = values_of(res, name)
            if "bounded01" in spec.properties:
                assert all(0.0 <= v <= 1.0 for v in values), name
            if "nonnegative" in spec.properties:
                assert all(v >= 0.0 for v in values), name
            if "similarity_bounded" in spec.properties:
                low, high = (-1.0, 1.0) if kind == "cosine" else (0.0, 1.0)
                if spec.name == "diversity":
                    low, high = 1.0 - high, 1.0 - low
                eps = 1e-12
                assert all(low - eps <= v <= high + eps for v in values), (name, kind)
            lo, hi = spec.bounds
            assert all(lo <= v <= hi for v in values), name


@pytest.mark.filterwarnings(NO_PAIRS)
@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("seed", [2, 3])
def test_order_invariant(spec: MetricSpec, seed: int) -> None:
    assert "order_invariant" in spec.properties
    data = frames(make_case(seed))
    names = requests(spec)
    shuffled = dict(data)
    order = list(range(data["recs"].height))
    random.Random(seed).shuffle(order)
    shuffled["recs"] = data["recs"][order]
    shuffled["train"] = data["train"].reverse()
    shuffled["items"] = data["items"].reverse()
    for kind in FEATURES:
        a = run(data, names, kind)
        b = run(shuffled, names, kind)
        assert a.means == pytest.approx(b.means, nan_ok=True, rel=1e-12)
        assert_frame_equal(a.per_user, b.per_user, check_exact=False, rel_tol=1e-12)


# ---------------------------------------------------------------- hypothesis properties


@st.composite
def recs_frames(draw: st.DrawFn) -> pl.DataFrame:
    n_users = draw(st.integers(1, 6))
    rows = []
    for u in range(n_users):
        items = draw(st.lists(st.integers(0, 12), min_size=1, max_size=8, unique=True))
        rows += [(u, i, float(draw(st.integers(0, 2)))) for i in items]
    return pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")


ITEM_TABLE = pl.DataFrame(
    {
        "item": list(range(13)),
        "vec": [[math.cos(i), math.sin(i), (i % 3) - 1.0] for i in range(13)],
        "genre": [f"g{i % 4}" for i in range(13)],
    }
)
TRAIN = pl.DataFrame({"user": [i % 5 for i in range(30)], "item": [i % 9 for i in range(30)]})


@settings(max_examples=40, deadline=None)
@given(recs=recs_frames(), k=st.sampled_from([None, 1, 2, 3, 5]))
def test_properties(recs: pl.DataFrame, k: int | None) -> None:
    at = "" if k is None else f"@{k}"
    metrics = [n + at for n in ("coverage", "gini", "entropy", "novelty", "arp", "long_tail")]
    res = receval.evaluate({0: {0: 1}}, recs, metrics, train=TRAIN, items=ITEM_TABLE)
    assert 0 <= res["coverage" + at] <= 1
    assert 0 <= res["gini" + at] <= 1 - 1 / 13 + 1e-12
    assert 0 <= res["entropy" + at] <= math.log2(13) + 1e-12
    assert 0 <= res["long_tail" + at] <= 1
    assert res["novelty" + at] >= 0
    for feature in ("vec", ["genre"]):
        with pytest.warns(UserWarning) if _no_pairs(recs, k) else _nothing():
            sim = receval.evaluate(
                {0: {0: 1}}, recs, ["ils" + at, "diversity" + at], items=ITEM_TABLE,
                item_features=feature,
            )  # fmt: skip
        ils, div = sim.per_user["ils" + at], sim.per_user["diversity" + at]
        assert ((1.0 - ils) - div).abs().fill_null(0).max() <= 1e-12  # type: ignore[operator]
        if not math.isnan(sim["ils" + at]):
            assert sim["diversity" + at] == pytest.approx(1 - sim["ils" + at], abs=1e-12)


def _no_pairs(recs: pl.DataFrame, k: int | None) -> bool:
    longest = int(recs.group_by("user").len()["len"].max())  # type: ignore[arg-type]
    return min(longest, k if k is not None else longest) < 2


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


@settings(max_examples=30, deadline=None)
@given(recs=recs_frames())
def test_coverage_is_monotone_in_k(recs: pl.DataFrame) -> None:
    ks = [1, 2, 3, 5, 8]
    res = receval.evaluate({0: {0: 1}}, recs, [f"coverage@{k}" for k in ks], items=ITEM_TABLE)
    values = [res[f"coverage@{k}"] for k in ks]
    assert values == sorted(values)
    assert (
        values[-1] == receval.evaluate({0: {0: 1}}, recs, "coverage", items=ITEM_TABLE)["coverage"]
    )


@settings(max_examples=30, deadline=None)
@given(n_items=st.integers(1, 12), n_users=st.integers(1, 5), k=st.integers(1, 4))
def test_gini_zero_and_entropy_maximal_for_uniform_exposure(
    n_items: int, n_users: int, k: int
) -> None:
    # every user gets the whole catalog: each item appears n_users times
    rows = [(u, i, float(i % 2)) for u in range(n_users) for i in range(n_items)]
    recs = pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")
    items = pl.DataFrame({"item": list(range(n_items))})
    res = receval.evaluate({0: {0: 1}}, recs, ["gini", "entropy", "coverage"], items=items)
    assert res["gini"] == 0.0
    assert res["entropy"] == pytest.approx(math.log2(n_items), abs=1e-12)
    assert res["coverage"] == 1.0
