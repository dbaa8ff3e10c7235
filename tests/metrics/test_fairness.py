"""Calibration (miscalibration), serendipity and unexpectedness, and per-list exposure
fairness (awrf, ee_loss / ee_disparity / ee_relevance, group_share) against brute-force
versions written from the papers' definitions (tests/helpers/fairness.py) and against
hand-worked examples from the papers and from RecTools' own documentation.

The random cases (tests/helpers/beyond.py) have ties (integer scores), short lists, recs
users without train history, truth users without recs, items absent from train, lists
longer than K and an item table with vectors, list-valued genres and a year.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from typing import Any

import polars as pl
import pytest

import receval
from helpers import fairness as F
from helpers.beyond import brute_lists, cosine_sim, frames, jaccard_sim, make_case

ALPHA = 0.01


def per_user(res: receval.Result, name: str) -> dict[Any, float | None]:
    col = receval.parse_metric(name).canonical
    return dict(zip(res.per_user["user"].to_list(), res.per_user[col].to_list(), strict=True))


def close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def run(case: dict[str, Any], metrics: list[str], **options: Any) -> receval.Result:
    data = frames(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(
            data["truth"],
            data["recs"],
            metrics,
            train=data["train"],
            items=data["items"],
            **options,
        )


def history_of(case: dict[str, Any]) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for user, item in sorted(set(case["train"]), key=str):
        out.setdefault(user, []).append(item)
    return out


def genres(case: dict[str, Any]) -> dict[Any, set[Any]]:
    return {i: set(case["genres"][i]) for i in case["ids"]}


# ------------------------------------------------------------------- hand-worked examples


def test_steck_example_seventy_thirty() -> None:
    """Steck (RecSys 2018), section 1: a user who watched 70% romance and 30% action gets a
    list of romance only; p = (0.7, 0.3), q = (1, 0), q~ = 0.99 q + 0.01 p."""
    history = [(0, f"r{j}") for j in range(7)] + [(0, f"a{j}") for j in range(3)]
    listed = {0: {f"r{j}": 10.0 - j for j in range(10)}}
    ids = [f"r{j}" for j in range(10)] + [f"a{j}" for j in range(3)]
    items = pl.DataFrame({"item": ids, "genre": [i[0] for i in ids]})
    train = pl.DataFrame(history, schema=["user", "item"], orient="row")
    with pytest.warns(UserWarning, match="already has in train"):
        res = receval.evaluate(
            {0: {"r0": 1}}, listed, "miscalibration(by=genre)@10", train=train, items=items
        )
    want = 0.7 * math.log(0.7 / 0.997) + 0.3 * math.log(0.3 / 0.003)
    assert res["miscalibration(by=genre)@10"] == pytest.approx(want, rel=1e-14)
    # a list with the history's 70/30 mix is calibrated: 0
    mixed = {0: {**{f"r{j}": 10.0 - j for j in range(7)}, "a0": 1.0, "a1": 0.5, "a2": 0.2}}
    with pytest.warns(UserWarning, match="already has in train"):
        res = receval.evaluate(
            {0: {"r0": 1}}, mixed, "miscalibration(by=genre)@10", train=train, items=items
        )
    assert res["miscalibration(by=genre)@10"] == 0.0


def test_rectools_documented_example() -> None:
    """RecTools' Serendipity docstring: per user [0, 0.25, 0, 0.25] at k=1 and
    [0, 0.5, 0, 0.125] at k=2 (catalog i1..i4)."""
    recs = pl.DataFrame(
        {
            "user": ["u1", "u1", "u2", "u2", "u3", "u4", "u4"],
            "item": ["i1", "i2", "i2", "i3", "i3", "i2", "i3"],
            "rank": [1, 2, 1, 2, 1, 1, 2],
        }
    )
    truth = pl.DataFrame(
        {
            "user": ["u1", "u1", "u2", "u2", "u3", "u4"],
            "item": ["i1", "i2", "i2", "i3", "i2", "i2"],
        }
    )
    train = pl.DataFrame(
        {"user": ["u1", "u1", "u2", "u2", "u3"], "item": ["i1", "i2", "i1", "i2", "i1"]}
    )
    items = pl.DataFrame({"item": ["i1", "i2", "i3", "i4"]})
    with pytest.warns(UserWarning, match="already has in train"):
        res = receval.evaluate(
            truth,
            recs,
            ["rectools_serendipity@1", "pop_serendipity@2"],
            rank_col="rank",
            train=train,
            items=items,
        )
    assert res.per_user["pop_serendipity@1"].to_list() == [0.0, 0.25, 0.0, 0.25]
    assert res.per_user["pop_serendipity@2"].to_list() == [0.0, 0.5, 0.0, 0.125]


def test_expected_exposure_worked_by_hand() -> None:
    """Catalog a, b, c, d; a relevant; list a, b (K = 2), patience 1/2: exposure a 1, b 1/2;
    ideal: a 1, each other item (1/2) / 3 (position 2 shared by the 3 non-relevant items)."""
    items = pl.DataFrame({"item": ["a", "b", "c", "d"]})
    res = receval.evaluate(
        {"u": {"a": 1}},
        {"u": {"a": 0.9, "b": 0.5}},
        ["ee_loss@2", "ee_disparity@2", "ee_relevance@2"],
        items=items,
    )
    assert res["ee_disparity@2"] == 1.25
    assert res["ee_relevance@2"] == pytest.approx(1 + 0.5 / 6, rel=1e-15)
    assert res["ee_loss@2"] == pytest.approx((0.5 - 1 / 6) ** 2 + 2 * (1 / 6) ** 2, rel=1e-14)


def test_ties_share_their_positions_attention() -> None:
    """b and c tie for position 2 of 2: under ties="expected" each has half of its attention
    (c past the cutoff included); under ties="first" b has it all."""
    items = pl.DataFrame({"item": ["a", "b", "c"]})
    recs = {"u": {"a": 0.9, "b": 0.5, "c": 0.5}}
    res = receval.evaluate({"u": {"a": 1}}, recs, "ee_disparity@2", items=items)
    assert res["ee_disparity@2"] == 1 + 2 * 0.25**2
    first = receval.evaluate({"u": {"a": 1}}, recs, "ee_disparity@2", items=items, ties="first")
    assert first["ee_disparity@2"] == 1 + 0.5**2


def test_awrf_worked_by_hand() -> None:
    """List a (group x), b (group y); geometric attention: e = (2/3, 1/3); uniform target
    (1/2, 1/2), mixture M = (7/12, 5/12)."""
    items = pl.DataFrame({"item": ["a", "b", "c"], "g": ["x", "y", "y"]})
    res = receval.evaluate(
        {"u": {"a": 1}},
        {"u": {"a": 2.0, "b": 1.0}},
        ["awrf(by=g, target=uniform)@2", "awrf(by=g)@2"],
        items=items,
    )
    m = (7 / 12, 5 / 12)
    left = 2 / 3 * math.log2((2 / 3) / m[0]) + 1 / 3 * math.log2((1 / 3) / m[1])
    right = 0.5 * math.log2(0.5 / m[0]) + 0.5 * math.log2(0.5 / m[1])
    assert res["awrf(by=g, target=uniform)@2"] == pytest.approx((left + right) / 2, rel=1e-14)
    # catalog target (1/3, 2/3): the list over-exposes x
    assert res["awrf(by=g)@2"] == pytest.approx(
        F.awrf({"a": 1.0, "b": 0.5}, {"a": {"x"}, "b": {"y"}}, {"x": 1 / 3, "y": 2 / 3}),
        rel=1e-12,
    )


def test_unexpectedness_and_serendipity_by_hand() -> None:
    """History a = (1, 0); list a, b = (0, 1): unexpectedness (0 + 1) / 2; serendipity with b
    relevant: (0 + 1) / 2, with a relevant: 0."""
    items = pl.DataFrame({"item": ["a", "b"], "v": [[1.0, 0.0], [0.0, 1.0]]})
    train = pl.DataFrame({"user": ["u"], "item": ["a"]})
    recs = {"u": {"a": 2.0, "b": 1.0}}
    with pytest.warns(UserWarning, match="already has in train"):
        res = receval.evaluate(
            {"u": {"b": 1}},
            recs,
            ["unexpectedness", "serendipity"],
            train=train,
            items=items,
            item_features="v",
        )
        other = receval.evaluate(
            {"u": {"a": 1}}, recs, "serendipity", train=train, items=items, item_features="v"
        )
    assert res["unexpectedness"] == 0.5
    assert res["serendipity"] == 0.5
    assert other["serendipity"] == 0.0


# ------------------------------------------------------------ random cases, brute force


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [None, 1, 3])
def test_miscalibration_and_group_share(seed: int, k: int | None) -> None:
    case = make_case(seed, str_ids=bool(seed % 2))
    at = "" if k is None else f"@{k}"
    names = [
        f"miscalibration(by=genres){at}",
        f"miscalibration(alpha=0.5, by=year){at}",
        f"group_share(by=year, group=2000){at}",
    ]
    res = run(case, names)
    lists = brute_lists(case["rows"], k, "expected")
    history = history_of(case)
    years = {i: {case["years"][i]} for i in case["ids"]}
    got = [per_user(res, n) for n in names]
    for user, listed in lists.items():
        hist = history.get(user, [])
        assert close(got[0][user], F.miscalibration(hist, listed, genres(case), ALPHA))
        assert close(got[1][user], F.miscalibration(hist, listed, years, 0.5))
        assert close(got[2][user], sum(case["years"][i] == 2000 for i in listed) / len(listed))
    no_history = sum(1 for u in lists if not history.get(u))
    assert res.details[names[0]]["no_history"] == no_history


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", ["cosine", "jaccard"])
def test_unexpectedness_and_serendipity(seed: int, kind: str) -> None:
    case = make_case(seed, str_ids=bool(seed % 2))
    features: Any = "vec" if kind == "cosine" else ["genres"]
    sim = (
        cosine_sim(case["vectors"])
        if kind == "cosine"
        else jaccard_sim({i: {f"g={g}" for g in case["genres"][i]} for i in case["ids"]})
    )
    names = ["unexpectedness@3", "serendipity@3", "unexpectedness"]
    res = run(case, names, item_features=features)
    history = history_of(case)
    for k, name in ((3, names[0]), (None, names[2])):
        got = per_user(res, name)
        for user, listed in brute_lists(case["rows"], k, "expected").items():
            assert close(got[user], F.unexpectedness(history.get(user, []), listed, sim)), user
    got = per_user(res, names[1])
    for user, listed in brute_lists(case["rows"], 3, "expected").items():
        relevant = set(case["truth"].get(user, {}))
        want = F.unexpectedness(history.get(user, []), listed, sim, relevant)
        assert close(got[user], want), user


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ties", ["expected", "first"])
def test_pop_serendipity(seed: int, ties: str) -> None:
    case = make_case(seed, str_ids=bool(seed % 2))
    res = run(case, ["pop_serendipity@3", "pop_serendipity"], ties=ties)
    counts = Counter(i for _, i in set(case["train"]))
    n = len(case["ids"])
    for k in (3, None):
        got = per_user(res, "pop_serendipity" + ("" if k is None else f"@{k}"))
        for user, listed in brute_lists(case["rows"], k, ties).items():
            relevant = set(case["truth"].get(user, {}))
            assert close(got[user], F.pop_serendipity(listed, relevant, counts, n)), user


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [None, 1, 2, 4])
def test_expected_exposure_and_awrf_over_every_order_of_ties(seed: int, k: int | None) -> None:
    case = make_case(seed, str_ids=bool(seed % 2), n_items=8)
    at = "" if k is None else f"@{k}"
    names = [
        f"ee_loss{at}",
        f"ee_disparity{at}",
        f"ee_relevance(patience=0.8){at}",
        f"awrf(by=genres){at}",
        f"awrf(by=year, attention=log, target=uniform){at}",
    ]
    res = run(case, names)
    got = [per_user(res, n) for n in names]
    catalog = set(case["ids"])
    groups = genres(case)
    years = {i: {case["years"][i]} for i in case["ids"]}
    target = Counter[Any]()
    for i in case["ids"]:
        for g, w in F.share(groups[i]).items():
            target[g] += w / len(case["ids"])
    uniform = {y: 1 / len(set(case["years"].values())) for y in set(case["years"].values())}
    for user, options in F.orders(case["rows"]).items():
        relevant = set(case["truth"].get(user, {}))
        exposure = F.expected_exposure(options, k)
        loss, disparity, _ = F.ee(exposure, relevant, catalog, k, 0.5)
        _, _, relevance = F.ee(
            F.expected_exposure(options, k, patience=0.8), relevant, catalog, k, 0.8
        )
        assert close(got[0][user], loss) or math.isclose(got[0][user], loss, abs_tol=1e-12)
        assert close(got[1][user], disparity)
        assert close(got[2][user], relevance)
        assert close(got[3][user], F.awrf(exposure, groups, dict(target)))
        logs = F.expected_exposure(options, k, "log")
        assert close(got[4][user], F.awrf(logs, years, uniform))


# ----------------------------------------------------------- bad input, counted outcomes


def test_missing_inputs_name_the_argument() -> None:
    recs = {"u": {"a": 1.0}}
    with pytest.raises(receval.InputError, match="pass items="):
        receval.evaluate({"u": {"a": 1}}, recs, "awrf(by=g)@1")
    items = pl.DataFrame({"item": ["a"], "v": [[1.0]], "g": ["x"]})
    with pytest.raises(receval.InputError, match="pass train="):
        receval.evaluate({"u": {"a": 1}}, recs, "miscalibration(by=g)@1", items=items)
    with pytest.raises(receval.InputError, match="by=COLUMN"):
        receval.evaluate({"u": {"a": 1}}, recs, "awrf@1", items=items)
    with pytest.raises(receval.InputError, match="a vector column"):
        receval.evaluate({"u": {"a": 1}}, recs, "awrf@1", items=items, item_features="v")
    with pytest.raises(receval.InputError, match="a vector column"):
        receval.evaluate({"u": {"a": 1}}, recs, "awrf(by=v)@1", items=items)
    with pytest.raises(receval.InputError, match="does not have"):
        receval.evaluate({"u": {"a": 1}}, recs, "awrf(by=nope)@1", items=items)
    with pytest.raises(receval.InputError, match="not a function"):
        receval.evaluate(
            {"u": {"a": 1}},
            recs,
            "unexpectedness@1",
            train={"u": {"a": 1}},
            items=items,
            item_features=lambda a, b: 1.0,
        )
    with pytest.raises(receval.InputError, match=r"no item .* in group 'y'.*\['x'\]"):
        receval.evaluate({"u": {"a": 1}}, recs, "group_share(by=g, group=y)@1", items=items)


def test_recommended_item_without_category_is_an_error() -> None:
    items = pl.DataFrame({"item": ["a", "b"], "g": ["x", None]})
    recs = {"u": {"a": 1.0, "b": 0.5}}
    with pytest.raises(receval.InputError, match=r"1 recommended item\(s\).*\['b'\]"):
        receval.evaluate({"u": {"a": 1}}, recs, "awrf(by=g)@2", items=items)


def test_history_items_without_category_are_left_out_and_counted() -> None:
    """Train items absent from the item table or with a null category are left out of the
    history (counted); a user left with no history has no value (counted, null)."""
    items = pl.DataFrame({"item": ["a", "b", "c"], "g": [["x"], ["y"], []]})
    train = pl.DataFrame({"user": ["u", "u", "u", "v"], "item": ["b", "c", "zz", "c"]})
    recs = {"u": {"a": 1.0}, "v": {"a": 1.0}, "w": {"b": 1.0}}
    res = receval.evaluate(
        {"u": {"a": 1}}, recs, "miscalibration(by=g)@1", train=train, items=items
    )
    name = "miscalibration(by=g)@1"
    assert res.details[name] == {
        "users": 1,
        "categories": 2,
        "history_rows_left_out": 3,
        "no_history": 2,
    }
    # u: history b (y) only; list a (x): q~ = 0.01 p
    assert per_user(res, name) == {"u": pytest.approx(math.log(1 / 0.01)), "v": None, "w": None}


def test_no_user_with_history_warns() -> None:
    items = pl.DataFrame({"item": ["a"], "g": ["x"]})
    with pytest.warns(UserWarning, match="no recs user has a value"):
        res = receval.evaluate(
            {"u": {"a": 1}},
            {"u": {"a": 1.0}},
            "miscalibration(by=g)@1",
            train={"v": {"a": 1}},
            items=items,
        )
    assert math.isnan(res["miscalibration(by=g)@1"])


def test_grammar_of_word_parameters() -> None:
    m = receval.parse_metric("group_share(by=provider, group='a b')@5")
    assert m.canonical == "group_share(by=provider, group='a b')@5"
    assert receval.parse_metric("group_share(by=year, group=2000)@5").get("group") == "2000"
    with pytest.raises(receval.MetricError, match="parameter `by` of awrf must be a word"):
        receval.parse_metric("awrf(by=1.5)@5")
    assert receval.parse_metric("expected_exposure@10").canonical == "ee_loss@10"
