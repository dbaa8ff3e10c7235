"""Exposure of item groups over every list (global metrics): exposure_share,
exposure_disparity, exposure_gap, exposure_gini, exposure_entropy and group_coverage
(docs/fairness.md, "Exposure of groups over every list").

Checked against a plain-Python version written from the definitions (tests/helpers/fairness.py
gives each list's attention; stochastic rankings enumerated order by order under
ties="expected"), with the Gini index from its mean-absolute-difference form and the entropy
from scipy; against a hand-worked example; for bounds with hypothesis; for bit-for-bit equal
values from the sharded and streaming engines; and for the errors and counted outcomes of
bad input.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Hashable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import entropy

import receval
from helpers import fairness as F
from helpers.beyond import brute_lists, frames, make_case
from helpers.examples import examples
from helpers.shard import assert_same
from receval.engines.shard import evaluate_sharded
from receval.kernels.exact import segment_parts, segment_totals

Groups = dict[Hashable, set[str]]

# --------------------------------------------------------------------- brute force


def list_attention(
    rows: list[tuple[Any, Any, float]], k: int | None, ties: str, kind: str, patience: float
) -> dict[Hashable, dict[Hashable, float]]:
    """Each user's attention per item: the expectation over every order of tied items
    (ties="expected"), else the position in the list the beyond metrics use."""
    if ties == "expected":
        return {u: F.expected_exposure(o, k, kind, patience) for u, o in F.orders(rows).items()}
    return {
        u: {item: F.attention(j, kind, patience) for j, item in enumerate(listed, start=1)}
        for u, listed in brute_lists(rows, k, ties).items()
    }


def brute(
    rows: list[tuple[Any, Any, float]],
    groups: Groups,
    k: int | None,
    ties: str = "expected",
    kind: str = "geometric",
    patience: float = 0.5,
) -> dict[str, Any]:
    """Every group's exposure E (attention split equally among an item's groups), size n,
    the attention to items without a group, the lists U and the groups shown in L@K."""
    names = sorted({g for gs in groups.values() for g in gs})
    exposure = dict.fromkeys(names, 0.0)
    none = 0.0
    lists = list_attention(rows, k, ties, kind, patience)
    for per_item in lists.values():
        for item, a in per_item.items():
            gs = groups.get(item, set())
            if not gs:
                none += a
            for g in gs:
                exposure[g] += a / len(gs)
    size = dict.fromkeys(names, 0.0)
    for gs in groups.values():
        for g in gs:
            size[g] += 1 / len(gs)
    shown = {
        g
        for listed in brute_lists(rows, k, ties).values()
        for i in listed
        for g in groups.get(i, ())
    }
    return {"E": exposure, "n": size, "none": none, "U": len(lists), "shown": shown}


def brute_value(name: str, b: dict[str, Any], group: str = "", reference: str = "") -> float:
    e, n = b["E"], b["n"]
    total = sum(e.values())
    if name == "exposure_share":
        return e[group] / total
    if name == "group_coverage":
        return len(b["shown"]) / len(e)
    if name == "exposure_gini":  # mean absolute difference over twice the mean
        x = list(e.values())
        return sum(abs(a - c) for a in x for c in x) / (2 * len(x) * total)
    if name == "exposure_entropy":
        return float(entropy(list(e.values()), base=2))
    others = [reference] if reference else [g for g in e if g != group]
    mine = e[group] / n[group]
    theirs = sum(e[g] for g in others) / sum(n[g] for g in others)
    if name == "exposure_gap":
        return (mine - theirs) / b["U"]
    assert name == "exposure_disparity"
    return mine / theirs


def close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)


def run(data: dict[str, Any], metrics: list[str], **options: Any) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(
            data["truth"], data["recs"], metrics, items=data["items"], **options
        )


# ------------------------------------------------------------------ hand-worked example

ITEMS = pl.DataFrame({"item": ["a", "b", "c", "d", "e"], "provider": ["p", "q", "q", "r", None]})
RECS = {"u": {"a": 0.9, "b": 0.5, "c": 0.5}, "v": {"d": 0.8, "a": 0.7, "e": 0.1}}


def test_worked_by_hand() -> None:
    """@2, attention 1, 0.5. u: a first (1); b and c tie for position 2 (and 3, past the
    cutoff): 0.25 each. v: d (1), a (0.5); e is past the cutoff. So E_p = 1.5 (a),
    E_q = 0.5 (b, c), E_r = 1 (d): 3 in all; n_p = 1, n_q = 2, n_r = 1; U = 2."""
    names = {
        "exposure_share(by=provider, group=q)@2": 0.5 / 3,
        "exposure_disparity(by=provider, group=q)@2": (0.5 / 2) / (2.5 / 2),  # 0.2
        "exposure_disparity(by=provider, group=q, reference=p)@2": (0.5 / 2) / 1.5,
        "exposure_gap(by=provider, group=q)@2": (0.25 - 1.25) / 2,  # -0.5
        # sorted 0.5, 1, 1.5: (-2 * 0.5 + 0 * 1 + 2 * 1.5) / (3 * 3)
        "exposure_gini(by=provider)@2": 2 / 9,
        "exposure_entropy(by=provider)@2": -sum(p * math.log2(p) for p in (1 / 6, 1 / 3, 1 / 2)),
        "group_coverage(by=provider)@2": 1.0,
    }
    res = receval.evaluate({"u": {"a": 1}}, RECS, list(names), items=ITEMS)
    for name, want in names.items():
        assert res[name] == pytest.approx(want, rel=1e-15), name
    assert res.per_user.columns == ["user"]  # global: no per-user column
    info = res.details["exposure_share(by=provider, group=q)@2"]
    assert info == {
        "users": 2,
        "groups": 3,
        "items_without_group": 1,
        "exposure_without_group": 0.0,
    }
    # @3: b and c share positions 2 and 3 (0.375 each); v's third item e has no group:
    # its 0.25 of the 3.5 units of attention is left out, E_p = 1.5 of the other 3.25
    names_3 = ["exposure_share(by=provider, group=p)@3", "group_coverage(by=provider)@1"]
    at3 = receval.evaluate({"u": {"a": 1}}, RECS, names_3, items=ITEMS)
    assert at3["exposure_share(by=provider, group=p)@3"] == pytest.approx(1.5 / 3.25, rel=1e-15)
    assert at3.details["exposure_share(by=provider, group=p)@3"][
        "exposure_without_group"
    ] == pytest.approx(0.25 / 3.5, rel=1e-15)
    # @1: u shows a (p), v shows d (r): q is never shown
    assert at3["group_coverage(by=provider)@1"] == pytest.approx(2 / 3, rel=1e-15)
    assert at3.details["group_coverage(by=provider)@1"]["items_without_group_shown"] == 0


def test_log_attention_and_patience_by_hand() -> None:
    recs = {"u": {"a": 3.0, "b": 2.0, "d": 1.0}}
    name = "exposure_share(by=provider, group=q, attention=log)"
    res = receval.evaluate(
        {"u": {"a": 1}},
        recs,
        [name, "exposure_share(by=provider, group=q, patience=0.8)"],
        items=ITEMS,
    )
    assert res[name] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3) + 0.5), rel=1e-15)
    assert res["exposure_share(by=provider, group=q, patience=0.8)"] == pytest.approx(
        0.8 / (1 + 0.8 + 0.64), rel=1e-15
    )


# ----------------------------------------------------------------- against brute force

METRICS = ("exposure_share", "exposure_disparity", "exposure_gap")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("ties", ["expected", "first", "optimistic"])
def test_against_brute_force(seed: int, k: int | None, ties: str) -> None:
    case = make_case(seed, str_ids=bool(seed % 2), n_items=8)
    data = frames(case)
    missing = case["ids"][seed % 8]  # an item without a year: no group of `year`
    data["items"] = data["items"].with_columns(
        pl.when(pl.col("item") == missing).then(None).otherwise(pl.col("year")).alias("year")
    )
    years: Groups = {i: {str(case["years"][i])} for i in case["ids"] if i != missing}
    genres: Groups = {i: set(case["genres"][i]) for i in case["ids"]}
    at = "" if k is None else f"@{k}"
    group = sorted({g for gs in years.values() for g in gs})[0]
    other = sorted({g for gs in years.values() for g in gs})[-1]
    kinds = [
        ("geometric", 0.5, ""),
        ("log", 0.5, ", attention=log"),
        ("geometric", 0.8, ", patience=0.8"),
    ]
    for kind, patience, extra in kinds:
        names = [f"{n}(by=year, group={group}{extra}){at}" for n in METRICS]
        names += [f"exposure_disparity(by=year, group={group}, reference={other}{extra}){at}"]
        names += [f"exposure_gap(by=year, group={group}, reference={other}{extra}){at}"]
        names += [
            f"{n}(by={c}{extra}){at}"
            for n in ("exposure_gini", "exposure_entropy")
            for c in ("year", "genres")
        ]
        names += (
            [f"exposure_share(by=genres, group=g1{extra}){at}"]
            if any("g1" in g for g in genres.values())
            else []
        )
        res = run(data, names, ties=ties)
        by_year = brute(case["rows"], years, k, ties, kind, patience)
        by_genre = brute(case["rows"], genres, k, ties, kind, patience)
        for name in names:
            m = receval.parse_metric(name)
            b = by_year if m.get("by") == "year" else by_genre
            ref = (
                m.get("reference")
                if m.spec.name in ("exposure_disparity", "exposure_gap")
                else None
            )
            want = brute_value(
                m.name,
                b,
                str(m.get("group")) if m.spec.name in METRICS else "",
                str(ref) if ref else "",
            )
            assert close(res[name], want), (name, res[name], want)
        share = receval.parse_metric(f"exposure_share(by=year, group={group}{extra}){at}").canonical
        none = by_year["none"] / (by_year["none"] + sum(by_year["E"].values()))
        assert close(res.details[share]["exposure_without_group"], none)
        assert res.details[share]["items_without_group"] == 1
    cover = [f"group_coverage(by={c}){at}" for c in ("year", "genres")]
    res = run(data, cover, ties=ties)
    assert res[cover[0]] == brute_value("group_coverage", brute(case["rows"], years, k, ties))
    assert res[cover[1]] == brute_value("group_coverage", brute(case["rows"], genres, k, ties))


# ------------------------------------------------------------------------- properties


@st.composite
def recs_frames(draw: st.DrawFn) -> pl.DataFrame:
    n_users = draw(st.integers(1, 6))
    rows = []
    for u in range(n_users):
        items = draw(st.lists(st.integers(0, 12), min_size=1, max_size=8, unique=True))
        rows += [(u, i, float(draw(st.integers(0, 2)))) for i in items]
    return pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")


TABLE = pl.DataFrame(
    {"item": list(range(13)), "genre": [f"g{i % 4}" if i != 12 else None for i in range(13)]}
)


@settings(max_examples=examples(40), deadline=None)
@given(
    recs=recs_frames(),
    k=st.sampled_from([None, 1, 2, 5]),
    ties=st.sampled_from(["expected", "first"]),
)
def test_bounds_and_shares_sum_to_one(recs: pl.DataFrame, k: int | None, ties: str) -> None:
    at = "" if k is None else f"@{k}"
    shares = [f"exposure_share(by=genre, group=g{g}){at}" for g in range(4)]
    others = [f"{n}(by=genre){at}" for n in ("exposure_gini", "exposure_entropy", "group_coverage")]
    pair = [f"exposure_disparity(by=genre, group=g0){at}", f"exposure_gap(by=genre, group=g0){at}"]
    res = receval.evaluate({0: {0: 1}}, recs, shares + others + pair, items=TABLE, ties=ties)
    values = [res[s] for s in shares]
    if all(math.isnan(v) for v in values):  # every shown item is item 12, without a genre
        assert res.details[shares[0]]["exposure_without_group"] == 1.0
        return
    assert all(0.0 <= v <= 1.0 for v in values)
    assert math.fsum(values) == pytest.approx(1.0, abs=1e-12)
    assert 0.0 <= res[others[0]] <= 1.0 - 1 / 4 + 1e-12
    assert 0.0 <= res[others[1]] <= 2.0 + 1e-12
    assert 0.0 < res[others[2]] <= 1.0
    assert res[pair[0]] >= 0.0
    assert -1.0 <= res[pair[1]] <= 1.0


def test_equal_exposure_gives_gini_zero_and_maximal_entropy() -> None:
    rows = [(u, i, 1.0) for u in range(4) for i in range(12)]  # every item, all tied
    recs = pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")
    names = [
        "exposure_gini(by=genre)@3",
        "exposure_entropy(by=genre)@3",
        "exposure_disparity(by=genre, group=g2)@3",
    ]
    res = receval.evaluate({0: {0: 1}}, recs, names, items=TABLE)
    assert res[names[0]] == pytest.approx(0.0, abs=1e-15)
    assert res[names[1]] == pytest.approx(2.0, rel=1e-15)
    assert res[names[2]] == pytest.approx(1.0, rel=1e-15)


# ------------------------------------------------------------------------- engines

ENGINE_METRICS = [
    "exposure_share(by=genres, group=g1)@3",
    "exposure_disparity(by=year, group=2000)@2",
    "exposure_gap(by=year, group=1990, reference=2010, attention=log)",
    "exposure_gini(by=genres)@3",
    "exposure_entropy(by=year, patience=0.8)@5",
    "group_coverage(by=genres)@1",
    "coverage@3",
]


def engine_data(seed: int) -> dict[str, Any]:
    case = make_case(seed, str_ids=bool(seed % 2), n_users=40)
    data = frames(case)
    data["items"] = data["items"].with_columns(
        pl.when(pl.col("item") == case["ids"][0]).then(None).otherwise(pl.col("year")).alias("year")
    )
    data["truth"] = pl.DataFrame(
        [(u, i, r) for u, d in case["truth"].items() for i, r in d.items()],
        schema=["user", "item", "relevance"], orient="row",
    )  # fmt: skip
    return data


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties", ["expected", "first"])
def test_sharded_and_streamed_equal_local_bit_for_bit(seed: int, ties: str) -> None:
    data = engine_data(seed)
    metrics = [
        m
        for m in ENGINE_METRICS
        if "2000" not in m or "2000" in data["items"]["year"].cast(pl.String).to_list()
    ]
    local = run(data, metrics, ties=ties)
    for n_shards in (1, 3, 7):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = evaluate_sharded(
                data["truth"], data["recs"], metrics, n_shards=n_shards, seed=seed + n_shards,
                ties=ties, items=data["items"],
            )  # fmt: skip
        assert_same(got, local)
    users = pl.concat([data["truth"]["user"], data["recs"]["user"]]).unique().sort().to_list()
    rng = random.Random(seed)
    rng.shuffle(users)
    for _ in range(3):  # random cuts of the users into blocks
        cuts = sorted(rng.sample(range(1, len(users)), rng.randint(1, 6)))
        ev = receval.Evaluator(metrics, ties=ties, items=data["items"])
        for lo, hi in zip([0, *cuts], [*cuts, len(users)], strict=True):
            block = set(users[lo:hi])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ev.update(
                    data["truth"].filter(pl.col("user").is_in(block)),
                    data["recs"].filter(pl.col("user").is_in(block)),
                )
        assert_same(ev.compute(), local)


def test_merged_sums_are_exact_whatever_the_cut() -> None:
    """The state's per-group sums: merging the expansions of any cut of the values gives the
    exactly rounded sum of each group (math.fsum), cancellation included."""
    rng = np.random.default_rng(0)
    values = rng.standard_normal(5000) * 10.0 ** rng.integers(-12, 12, 5000)
    seg = rng.integers(0, 9, 5000)
    want = [math.fsum(values[seg == s].tolist()) for s in range(10)]
    assert segment_totals(*segment_parts(values, seg, 10)).tolist() == want
    cut = 1234
    a, b = segment_parts(values[:cut], seg[:cut], 10), segment_parts(values[cut:], seg[cut:], 10)
    which = np.concatenate(
        [np.repeat(np.arange(10), np.diff(a[1])), np.repeat(np.arange(10), np.diff(b[1]))]
    )
    merged = segment_parts(np.concatenate([a[0], b[0]]), which, 10)
    assert segment_totals(*merged).tolist() == want


def test_compare_accepts_them() -> None:
    other = {"u": {"d": 0.9, "b": 0.5}, "v": {"c": 0.8, "a": 0.7}}
    names = [
        "exposure_share(by=provider, group=q)@2",
        "exposure_gini(by=provider)@2",
        "group_coverage(by=provider)@2",
    ]
    cmp = receval.compare(
        {"u": {"a": 1}, "v": {"d": 1}}, {"one": RECS, "two": other}, names, items=ITEMS
    )
    for run_name, recs in (("one", RECS), ("two", other)):
        want = receval.evaluate({"u": {"a": 1}, "v": {"d": 1}}, recs, names, items=ITEMS)
        for name in names:
            assert cmp.results[run_name][name] == want[name]


# -------------------------------------------------------------------- bad input

BAD = [
    ("exposure_share(by=provider, group=s)@2", receval.InputError,
     r"^exposure_share\(by=provider, group=s\)@2: no item of the item table is in group 's' of "
     r"column 'provider' \(group=\); expected one of its 3 groups, e\.g\. \['p', 'q', 'r'\]\.$"),
    ("exposure_disparity(by=provider, group=q, reference=s)@2", receval.InputError,
     r"in group 's' .*\(reference=\)"),
    ("exposure_gap(by=provider, group=q, reference=q)@2", receval.MetricError,
     "compares a group with itself"),
    ("exposure_share(by=provider)@2", receval.MetricError, r"pass both in the metric.*group: None"),
    ("exposure_gini(by=nope)@2", receval.InputError,
     r"reads categories from column 'nope', which items does not have \(columns found: "
     r"\['item', 'provider'\]\)"),
    ("exposure_gini@2", receval.InputError, "by=COLUMN"),
]  # fmt: skip


@pytest.mark.parametrize(("metric", "kind", "match"), BAD)
def test_bad_input(metric: str, kind: type[Exception], match: str) -> None:
    with pytest.raises(kind, match=match):
        receval.evaluate({"u": {"a": 1}}, RECS, metric, items=ITEMS)


def test_one_group_has_no_other_to_compare_with() -> None:
    items = pl.DataFrame({"item": ["a", "b"], "provider": ["p", "p"]})
    with pytest.raises(receval.MetricError, match="has no other; expected 2 groups or more"):
        receval.evaluate(
            {"u": {"a": 1}},
            {"u": {"a": 1.0}},
            "exposure_disparity(by=provider, group=p)",
            items=items,
        )


def test_items_required_and_groups_without_items() -> None:
    with pytest.raises(receval.InputError, match="pass items="):
        receval.evaluate({"u": {"a": 1}}, RECS, "exposure_gini(by=provider)@2")
    empty = pl.DataFrame(
        {"item": ["a", "b", "c", "d", "e"], "provider": [None] * 5},
        schema_overrides={"provider": pl.String},
    )
    with pytest.raises(receval.InputError, match="no item of the item table has a value"):
        receval.evaluate({"u": {"a": 1}}, RECS, "exposure_gini(by=provider)@2", items=empty)


UNDEFINED = [
    "exposure_disparity(by=provider, group=p)",
    "exposure_gap(by=provider, group=p)",
    "exposure_entropy(by=provider)",
]


def test_only_items_without_a_group_shown_is_nan_and_counted() -> None:
    res = receval.evaluate(
        {"u": {"a": 1}},
        {"u": {"e": 1.0}},
        [
            "exposure_share(by=provider, group=p)",
            "exposure_gini(by=provider)",
            "group_coverage(by=provider)",
            *UNDEFINED,
        ],
        items=ITEMS,
    )
    assert math.isnan(res["exposure_share(by=provider, group=p)"])
    assert math.isnan(res["exposure_gini(by=provider)"])
    for name in UNDEFINED:
        assert math.isnan(res[name]), name
    assert res["group_coverage(by=provider)"] == 0.0
    assert res.details["exposure_share(by=provider, group=p)"]["exposure_without_group"] == 1.0
    assert res.details["group_coverage(by=provider)"]["items_without_group_shown"] == 1


def test_reference_without_exposure_is_infinite() -> None:
    res = receval.evaluate(
        {"u": {"a": 1}},
        {"u": {"a": 1.0}},
        [
            "exposure_disparity(by=provider, group=p)",
            "exposure_disparity(by=provider, group=q, reference=r)",
        ],
        items=ITEMS,
    )
    assert res["exposure_disparity(by=provider, group=p)"] == math.inf
    assert math.isnan(res["exposure_disparity(by=provider, group=q, reference=r)"])


def test_model_source_refuses_expected_ties_and_equals_its_top_k_table() -> None:
    """From a model: ties="expected" is refused (the top-K lists lack the tied items past the
    cutoff); with ties="first" the value is that of the model's top-K table."""
    rng = np.random.default_rng(3)
    users, items = rng.standard_normal((30, 4)), rng.standard_normal((12, 4))
    table = pl.DataFrame({"item": list(range(12)), "provider": [f"p{i % 3}" for i in range(12)]})
    model = receval.FactorModel(users, items, user_ids=list(range(30)), item_ids=list(range(12)))
    truth = {u: {u % 12: 1} for u in range(30)}
    names = [
        "exposure_share(by=provider, group=p0)@3",
        "exposure_gini(by=provider)@3",
        "group_coverage(by=provider)@2",
    ]
    with pytest.raises(receval.MetricError, match="ties='expected'"):
        receval.evaluate(truth, model, names, items=table)
    got = receval.evaluate(truth, model, names, items=table, ties="first")
    top = receval.topk(model, 3)
    want = receval.evaluate(truth, top, names, items=table, ties="first", rank_col="rank")
    for name in names:
        assert got[name] == want[name], name
