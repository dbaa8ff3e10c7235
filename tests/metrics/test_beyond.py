"""Beyond-accuracy metrics (receval.families.beyond) against plain brute-force versions
(tests/helpers/beyond.py, shared with the common suite), external oracles (scikit-learn cosine
similarity, SciPy Jaccard distance and entropy) and the worked cases of RecBole's metric tests
(tests/metrics/test_topk_metrics.py there), plus edge cases and bad input with the exact
messages.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np
import polars as pl
import pytest

import receval
from helpers.beyond import (
    brute_global,
    brute_lists,
    brute_per_user,
    cosine_sim,
    feature_sets,
    frames,
    jaccard_sim,
    make_case,
)
from receval import InputError


def per_user_dict(res: receval.Result, name: str) -> dict[Hashable, float | None]:
    frame = res.per_user
    return dict(zip(frame["user"].to_list(), frame[name].to_list(), strict=True))


def assert_close(got: dict[Hashable, float | None], want: dict[Hashable, float | None]) -> None:
    assert set(got) == set(want)
    for user, value in want.items():
        if value is None:
            assert got[user] is None, user
        else:
            assert got[user] == pytest.approx(value, rel=1e-12, abs=1e-12), user


def mean_of(values: dict[Hashable, float | None]) -> float:
    kept = [v for v in values.values() if v is not None]
    return math.fsum(kept) / len(kept) if kept else math.nan


# -------------------------------------------------------------------- against brute force

TIES = ["expected", "first", "trec", "optimistic", "pessimistic"]


@pytest.mark.parametrize("str_ids", [False, True])
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_brute_force(seed: int, ties: str, str_ids: bool) -> None:
    case = make_case(seed, str_ids=str_ids)
    data = frames(case)
    catalog = set(case["ids"]) | {i for inner in case["truth"].values() for i in inner}
    sims = {
        "vec": cosine_sim(case["vectors"]),
        "cat": jaccard_sim(feature_sets(case)),
    }
    for k in (None, 1, 3, 5):
        lists = brute_lists(case["rows"], k, ties)
        at = "" if k is None else f"@{k}"
        names = ["coverage", "gini", "entropy", "novelty", "arp", "long_tail",
                 "long_tail(head=0.6)"]  # fmt: skip
        res = receval.evaluate(
            data["truth"], data["recs"], [n + at for n in names], ties=ties, train=data["train"]
        )
        for name in ("coverage", "gini", "entropy"):
            assert res[name + at] == pytest.approx(brute_global(name, lists, catalog), abs=1e-12)
            assert res.details[name + at]["catalog"] == "truth+recs+train"
            assert res.details[name + at]["catalog_size"] == len(catalog)
        for name, head in (("novelty", 0.2), ("arp", 0.2), ("long_tail", 0.2),
                           ("long_tail(head=0.6)", 0.6)):  # fmt: skip
            base = name.split("(")[0]
            want = brute_per_user(base, lists, train=case["train"], head=head)
            assert_close(per_user_dict(res, name + at), want)
            assert res[name + at] == pytest.approx(mean_of(want), rel=1e-12)
        for features, kind in (("vec", "cosine"), (["genres", "year"], "jaccard")):
            if k == 1:
                continue  # no pairs: test_ils_without_pairs
            key = "vec" if kind == "cosine" else "cat"
            res = receval.evaluate(
                data["truth"], data["recs"], ["ils" + at, "diversity" + at], ties=ties,
                items=data["items"], item_features=features,
            )  # fmt: skip
            for name in ("ils", "diversity"):
                want = brute_per_user(name, lists, sim=sims[key])
                assert_close(per_user_dict(res, name + at), want)
                assert res[name + at] == pytest.approx(mean_of(want), rel=1e-12)
                detail = res.details[name + at]
                assert detail["similarity"] == kind
                assert detail["short_lists"] == sum(v is None for v in want.values())


def test_callable_similarity_matches_brute_force_and_calls_each_pair_once() -> None:
    case = make_case(5)
    data = frames(case)
    calls: list[tuple[Any, Any]] = []

    def sim(a: Any, b: Any) -> float:
        calls.append((a, b))
        return abs(a - b) / (a + b)

    res = receval.evaluate(data["truth"], data["recs"], ["ils@4"], item_features=sim)
    made = list(calls)
    want = brute_per_user("ils", brute_lists(case["rows"], 4, "expected"), sim=sim)
    assert_close(per_user_dict(res, "ils@4"), want)
    unordered = [frozenset(p) for p in made]
    assert len(unordered) == len(set(unordered))  # each distinct pair once
    assert res.details["ils@4"]["similarity"] == "callable"


# ------------------------------------------------------------ RecBole's worked cases
# RecBole's example: five top-3 lists over items 1..7 and a catalog of 8 items (its item 0 is
# the padding item), item popularity {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5} (7: none).
RECBOLE_LISTS = [[5, 7, 3], [4, 5, 2], [2, 3, 5], [1, 4, 6], [5, 3, 7]]
RECBOLE_POP = {1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5}


def recbole_inputs() -> dict[str, Any]:
    rows = [
        (f"u{u}", item, float(3 - pos))
        for u, items in enumerate(RECBOLE_LISTS)
        for pos, item in enumerate(items)
    ]
    recs = pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")
    train = pl.DataFrame(
        [(f"t{j}", item) for item, n in RECBOLE_POP.items() for j in range(n)],
        schema=["user", "item"],
        orient="row",
    )
    items = pl.DataFrame({"item": list(range(8))})
    return {"truth": {"u0": {5: 1.0}}, "recs": recs, "train": train, "items": items}


def test_recbole_item_coverage_and_gini() -> None:
    data = recbole_inputs()
    res = receval.evaluate(
        data["truth"], data["recs"], ["coverage@3", "gini@3", "entropy@3"], items=data["items"]
    )
    assert res["coverage@3"] == 7 / 8
    # exposure counts sorted: 0, 1, 1, 2, 2, 2, 3, 4 (n = 8, 15 appearances)
    want_gini = ((-7) * 0 + (-5) * 1 + (-3) * 1 + (-1) * 2 + 1 * 2 + 3 * 2 + 5 * 3 + 7 * 4) / (
        8 * 15
    )
    assert res["gini@3"] == pytest.approx(want_gini, rel=1e-15)
    assert res.details["gini@3"] == {"users": 5, "catalog": "items", "catalog_size": 8}
    # RecBole's shannonentropy is the mean over the 7 recommended items of -p ln p; ours is
    # the sum in bits: ours = RecBole's * 7 / ln 2.
    p = np.array([1, 2, 3, 2, 4, 1, 2]) / 15
    recbole_value = -np.mean(p * np.log(p))
    assert res["entropy@3"] == pytest.approx(recbole_value * 7 / math.log(2), rel=1e-12)


def test_recbole_average_popularity() -> None:
    data = recbole_inputs()
    res = receval.evaluate(data["truth"], data["recs"], ["arp@3"], train=data["train"])
    # RecBole's per-user running means at 3: 6/3, 8/3, 7/3, 8/3, 6/3 (item 7 has popularity 0)
    assert per_user_dict(res, "arp@3") == pytest.approx(
        {"u0": 6 / 3, "u1": 8 / 3, "u2": 7 / 3, "u3": 8 / 3, "u4": 6 / 3}
    )
    assert res["arp@3"] == pytest.approx(35 / 15)
    assert res.details["arp@3"]["not_in_train"] == 2  # items 1 (popularity 0) and 7


# ------------------------------------------------------------------ semantics and edges


def test_users_are_the_recs_users() -> None:
    truth = {"a": {1: 1.0}, "b": {2: 1.0}, "only_truth": {3: 1.0}}
    recs = {"a": {1: 0.5, 2: 0.4}, "b": {3: 0.9}, "only_recs": {1: 0.1, 4: 0.2}}
    train = {"x": {1: 1, 2: 1}, "y": {1: 1}}
    res = receval.evaluate(truth, recs, ["recall@2", "arp@2", "coverage@2"], train=train)
    frame = res.per_user
    assert frame["user"].to_list() == ["a", "b", "only_recs", "only_truth"]
    assert frame["arp@2"].to_list() == [1.5, 0.0, 1.0, None]  # truth-only user: no list
    assert res["arp@2"] == pytest.approx((1.5 + 0.0 + 1.0) / 3)
    assert res.details["arp@2"]["users"] == 3


def test_ties_policies_at_the_cutoff() -> None:
    # all four items tie; the cutoff keeps 2 of them
    rows = [("u", 100, 1.0), ("u", 20, 1.0), ("u", 10, 1.0), ("u", 9, 1.0)]
    recs = pl.DataFrame(rows, schema=["user", "item", "score"], orient="row")
    train = {"a": {9: 1, 10: 1, 20: 1}, "b": {10: 1, 20: 1}, "c": {20: 1}, "d": {20: 1}}
    kept = {}
    for ties in TIES:
        res = receval.evaluate({"u": {9: 1}}, recs, "arp@2", train=train, ties=ties)
        kept[ties] = res["arp@2"]
    # first: rows 100, 20 -> (0 + 4) / 2; trec: text descending "9", "20" -> (1 + 4) / 2;
    # the relevance policies: ids ascending 9, 10 -> (1 + 2) / 2
    assert kept == {"first": 2.0, "trec": 2.5, "expected": 1.5, "optimistic": 1.5,
                    "pessimistic": 1.5}  # fmt: skip


def test_ils_without_pairs_is_nan_with_a_warning() -> None:
    data = frames(make_case(0))
    with pytest.warns(UserWarning, match=r"no recs user has 2 or more items in ils@1"):
        res = receval.evaluate(
            data["truth"], data["recs"], "ils@1", items=data["items"], item_features="vec"
        )
    assert math.isnan(res["ils@1"])
    assert res.per_user["ils@1"].null_count() == res.per_user.height
    assert res.details["ils@1"]["users"] == 0


def test_catalog_sources_and_items_outside_train() -> None:
    recs = {"u": {1: 0.9, 2: 0.8, 5: 0.1}}
    train = {"t1": {1: 1, 3: 1}, "t2": {1: 1}, "t3": {4: 1}}
    res = receval.evaluate({"u": {9: 1}}, recs, ["coverage", "novelty"], train=train)
    # catalog 1, 2, 3, 4, 5, 9; items 2 and 5 are not in train: popularity 1 in novelty
    assert res["coverage"] == 3 / 6
    assert res.details["coverage"] == {"users": 1, "catalog": "truth+recs+train",
                                       "catalog_size": 6}  # fmt: skip
    want = (-math.log2(2 / 3) + 2 * math.log2(3)) / 3
    assert res["novelty"] == pytest.approx(want)
    assert res.details["novelty"] == {"users": 1, "train_users": 3, "not_in_train": 2}
    res = receval.evaluate({"u": {9: 1}}, recs, "coverage")
    assert res.details["coverage"]["catalog"] == "truth+recs"
    assert res["coverage"] == 3 / 4
    items = pl.DataFrame({"item": [5, 2, 1, 7, 8, 6, 0, 3]})
    res = receval.evaluate({"u": {9: 1}}, recs, "coverage", items=items)
    assert res["coverage"] == 3 / 8
    assert res.details["coverage"]["catalog"] == "items"


def test_long_tail_head_includes_boundary_ties() -> None:
    # popularity: a 4, b 2, c 2, d 1, e 1 (total 10); head=0.5: a alone makes 40% < 50%, so b
    # and c (tied, 4 more popular interactions < 5) join: head = a, b, c (80%)
    train = pl.DataFrame(
        [(f"t{j}", "a") for j in range(4)] + [("t0", "b"), ("t1", "b"), ("t0", "c"),
         ("t1", "c"), ("t2", "d"), ("t3", "e")], schema=["user", "item"], orient="row",
    )  # fmt: skip
    recs = {"u": {"a": 5, "b": 4, "d": 3, "z": 2}}
    res = receval.evaluate({"u": {"a": 1}}, recs, "long_tail(head=0.5)", train=train)
    assert res["long_tail(head=0.5)"] == 0.5  # d and z (not in train) are in the tail
    assert res.details["long_tail(head=0.5)"]["head_items"] == 3
    assert res.details["long_tail(head=0.5)"]["head_share"] == 0.8
    res = receval.evaluate({"u": {"a": 1}}, recs, "long_tail(head=0.4)", train=train)
    assert res["long_tail(head=0.4)"] == 0.75  # head = a only: 4 <= ... a's own share is 40%
    assert res.details["long_tail(head=0.4)"]["head_items"] == 1


def test_rank_column_and_k_beyond_the_list() -> None:
    recs = pl.DataFrame({"user": ["u"] * 3, "item": [1, 2, 3], "rank": [3, 1, 2]})
    train = {"t": {1: 1}, "s": {1: 1, 2: 1}}
    res = receval.evaluate({"u": {1: 1}}, recs, ["arp@1", "arp@2", "arp@50"], rank_col="rank",
                           train=train)  # fmt: skip
    assert (res["arp@1"], res["arp@2"], res["arp@50"]) == (1.0, 0.5, 1.0)


def test_vector_columns_list_array_and_float32_agree() -> None:
    data = frames(make_case(3))
    dim = 4
    variants = [
        data["items"],
        data["items"].with_columns(pl.col("vec").cast(pl.Array(pl.Float64, dim))),
        data["items"].with_columns(pl.col("vec").cast(pl.Array(pl.Float32, dim))),
    ]
    got = [
        receval.evaluate(data["truth"], data["recs"], "ils@5", items=it, item_features="vec")
        for it in variants
    ]
    assert got[1]["ils@5"] == got[0]["ils@5"]
    assert got[2]["ils@5"] == pytest.approx(got[0]["ils@5"], rel=1e-6)


def test_single_categorical_column_and_set_valued_column() -> None:
    items = pl.DataFrame({"item": ["a", "b", "c"], "genre": ["x", "x", "y"],
                          "tags": [["p", "q"], ["q"], ["q", "r", "s"]]})  # fmt: skip
    recs = {"u": {"a": 3, "b": 2, "c": 1}}
    res = receval.evaluate({"u": {"a": 1}}, recs, "ils", items=items, item_features="genre")
    assert res["ils"] == pytest.approx(1 / 3)  # only a-b share the genre
    res = receval.evaluate({"u": {"a": 1}}, recs, "ils", items=items, item_features="tags")
    assert res["ils"] == pytest.approx((1 / 2 + 1 / 4 + 1 / 3) / 3)
    res = receval.evaluate(
        {"u": {"a": 1}}, recs, "ils", items=items, item_features=["genre", "tags"]
    )
    # a {x, p, q}, b {x, q}, c {y, q, r, s}
    assert res["ils"] == pytest.approx((2 / 3 + 1 / 6 + 1 / 5) / 3)


def test_inputs_are_not_modified() -> None:
    data = frames(make_case(4))
    before = {k: v.clone() for k, v in data.items() if isinstance(v, pl.DataFrame)}
    receval.evaluate(data["truth"], data["recs"], ["ils@3", "novelty@3", "gini@3"],
                     train=data["train"], items=data["items"], item_features="vec")  # fmt: skip
    for key, frame in before.items():
        assert data[key].equals(frame)


def test_pandas_and_file_inputs(tmp_path: Any) -> None:
    data = frames(make_case(6))
    want = receval.evaluate(
        data["truth"], data["recs"], ["novelty@3", "ils@3"], train=data["train"],
        items=data["items"], item_features="vec",
    )  # fmt: skip
    data["train"].write_csv(tmp_path / "train.csv")
    data["items"].write_parquet(tmp_path / "items.parquet")
    got = receval.evaluate(data["truth"], data["recs"], ["novelty@3", "ils@3"],
                           train=tmp_path / "train.csv", items=tmp_path / "items.parquet",
                           item_features="vec", id_type="item=int")  # fmt: skip  # CSV ids: text
    assert got.means == want.means
    got = receval.evaluate(data["truth"], data["recs"], ["novelty@3"],
                           train=data["train"].to_pandas())  # fmt: skip
    assert got["novelty@3"] == want["novelty@3"]


# --------------------------------------------------------------------------- bad input

RECS = {"u": {1: 0.9, 2: 0.5, 3: 0.1}}
TRUTH = {"u": {1: 1}}
ITEMS = pl.DataFrame({"item": [1, 2, 3], "vec": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                      "genre": ["a", "b", "a"]})  # fmt: skip

ERRORS = [
    ("novelty@10", {}, r"^novelty@10 needs item popularity from training interactions; pass "
     r"train= \(rows \(user, item\), same sources as truth; --train on the command line\)\.$"),
    ("long_tail", {}, r"^long_tail needs item popularity .* pass train="),
    ("ils@5", {}, r"^ils@5 needs item similarity; pass item_features= \(a vector column of "
     r"items, a list of categorical columns, or a function sim\(item_a, item_b\) -> float; "
     r"--item-features on the command line\)\.$"),
    ("diversity", {"item_features": "vec"}, r"^diversity reads item_features='vec' from the "
     r"item table; pass items= \(a frame or file with the item column and those feature "
     r"columns; --items on the command line\)\.$"),
    ("coverage", {"items": pl.DataFrame({"item": [1, 2]})}, r"^items lacks 1 item\(s\) that "
     r"recs recommends, e.g. \[3\]; expected every recommended item in the item table "
     r"\(column 'item'\)\.$"),
    ("coverage", {"items": pl.DataFrame({"item": [1, 2, 3, 2]})}, r"^items has 2 rows with a "
     r"repeated item id; expected each item once. First offending rows:\n  row 1: item=2\n"
     r"  row 3: item=2$"),
    ("coverage", {"items": pl.DataFrame({"id": [1, 2, 3]})}, r"^items is missing column "
     r"'item' \(columns found: \['id'\]\); pass item_col= to name the item id column\.$"),
    ("novelty", {"train": pl.DataFrame({"user": ["a"], "item": ["1"]})}, r"^item ids of train "
     r"and recs have different types: train column 'item' is String, recs column 'item' holds "
     r"integers; expected both integers or both strings\. CSV, TSV and TREC files give text "
     r"ids: pass id_type='int' \(CLI --id-type int\) or id_type=\{'item': 'int'\} "
     r"\(--id-type item=int\) to read ids as integers, or id_type='str' \(--id-type str\) to "
     r"read every id as text, or convert one side, e\.g\. "
     r"pl\.col\('item'\)\.cast\(pl\.String\)\.$"),
    ("novelty", {"train": pl.DataFrame({"user": ["a"], "thing": [1]})}, r"^train is missing "
     r"column 'item' \(columns found: \['user', 'thing'\]\); pass user_col= / item_col= to "
     r"name the id columns\.$"),
    ("novelty", {"train": pl.DataFrame({"user": ["a", None], "item": [1, 2]})}, r"^train has "
     r"1 null value\(s\) in column 'user'; expected none\."),
    ("ils", {"items": ITEMS, "item_features": "colour"}, r"^item_features names column "
     r"'colour', which items does not have as a feature \(columns found: \['item', 'vec', "
     r"'genre'\]\)\.$"),
    ("ils", {"items": ITEMS, "item_features": 3}, r"^item_features must be a column name of "
     r"items, a list of column names, or a function sim\(item_a, item_b\) -> float; got 3\.$"),
    ("ils", {"items": ITEMS.with_columns(pl.Series("vec", [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])),
             "item_features": "vec"}, r"^item_features column 'vec' has zero vectors for "
     r"item\(s\) \[2\]; cosine similarity is undefined for them\.$"),
    ("ils", {"items": ITEMS.with_columns(pl.Series("vec", [[1.0, 0.0], None, [1.0, 1.0]])),
             "item_features": "vec"}, r"^item_features column 'vec' is null for 1 recommended "
     r"item\(s\), e\.g\. \[2\]; expected a vector for every item\.$"),
    ("ils", {"items": ITEMS.with_columns(pl.Series("vec", [[1.0, 0.0], [1.0], [1.0, 1.0]])),
             "item_features": "vec"}, r"^item_features column 'vec' holds vectors of unequal "
     r"length: most have 2 values, 1 recommended item\(s\) differ, e\.g\. \[2\] with lengths "
     r"\[1\]\.$"),
    ("ils", {"items": ITEMS.with_columns(pl.Series("vec", [[1.0, 0.0], [1.0, math.nan],
             [1.0, 1.0]])), "item_features": "vec"}, r"^item_features column 'vec' has empty "
     r"vectors or null/NaN/infinite values for item\(s\) \[2\]; expected finite numbers\.$"),
    ("ils", {"items": ITEMS.with_columns(pl.Series("genre", ["a", None, "b"])),
             "item_features": ["genre"]}, r"^item_features column 'genre' is null for 1 "
     r"recommended item\(s\), e\.g\. \[2\]; expected a value \(or a list of values\) for every "
     r"item\.$"),
    ("ils", {"items": ITEMS.with_columns(pl.Series("tags", [["x"], [], ["y"]])),
             "item_features": ["tags"]}, r"^item_features \['tags'\] give no feature to "
     r"recommended item\(s\) \[2\] \(empty lists\); Jaccard similarity is undefined for them\.$"),
    ("ils", {"item_features": lambda a, b: "near"}, r"^item_features: sim\(1, 2\) returned "
     r"'near'; expected a number\.$"),
    ("ils", {"item_features": lambda a, b: math.inf}, r"^item_features: sim\(1, 2\) returned "
     r"inf; expected a finite number\.$"),
]  # fmt: skip


@pytest.mark.parametrize(("metric", "options", "match"), ERRORS)
def test_bad_input(metric: str, options: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        receval.evaluate(TRUTH, RECS, metric, **options)


def test_zero_vectors_of_items_not_recommended_are_fine() -> None:
    items = ITEMS.vstack(pl.DataFrame({"item": [4], "vec": [[0.0, 0.0]], "genre": [None]}))
    res = receval.evaluate(TRUTH, RECS, "ils", items=items, item_features="vec")
    assert res["ils"] == pytest.approx((0 + 2**-0.5 + 2**-0.5) / 3)


def test_items_as_a_dict_is_rejected() -> None:
    with pytest.raises(InputError, match=r"^items must be a Polars/pandas DataFrame, a PyArrow "):
        receval.evaluate(TRUTH, RECS, "coverage", items={1: {"genre": "a"}})


def test_registry_declarations_of_the_family() -> None:
    specs = {s.name: s for s in receval.list_metrics() if s.family == "beyond"}
    assert set(specs) == {"coverage", "ils", "diversity", "novelty", "arp", "gini", "entropy",
                          "long_tail", "miscalibration", "unexpectedness", "serendipity",
                          "pop_serendipity", "awrf", "ee_loss", "ee_disparity", "ee_relevance",
                          "group_share", "exposure_share", "exposure_disparity",
                          "exposure_gap", "exposure_gini", "exposure_entropy",
                          "group_coverage"}  # fmt: skip
    assert receval.parse_metric("long_tail_share(head=0.2)@10").canonical == "long_tail@10"
    assert receval.parse_metric("item_coverage@5").canonical == "coverage@5"
    assert not specs["ils"].higher_is_better
    assert specs["diversity"].higher_is_better
