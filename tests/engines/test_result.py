"""The Result API (docs/CONTRACT.md), on a hand-built case.

truth (user: item relevance):
    1: 10 (2), 11 (1), 12 (0)      recs: 11 (0.9), 13 (0.8), 10 (0.7)
    2: 20 (1)                      no recs
    3: 30 (0)                      no relevant item
    5: 50 (3), 51 (1)              recs: 52 (0.5), 50 (0.4)
    4: not in truth                recs: 40 (1.0)

With relevance_threshold 1: R_1 = {10, 11}, R_2 = {20}, R_5 = {50, 51}; user 3 has none.
With rel=2: R_1 = {10}, R_5 = {50}; users 2 and 3 have none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import polars as pl
import pytest

import receval
from receval import Counts, InputError

TRUTH = pl.DataFrame(
    {
        "user": [1, 1, 1, 2, 3, 5, 5],
        "item": [10, 11, 12, 20, 30, 50, 51],
        "relevance": [2.0, 1.0, 0.0, 1.0, 0.0, 3.0, 1.0],
    }
)
RECS = pl.DataFrame(
    {
        "user": [1, 1, 1, 4, 5, 5],
        "item": [11, 13, 10, 40, 52, 50],
        "score": [0.9, 0.8, 0.7, 1.0, 0.5, 0.4],
    }
)
METRICS = [
    "precision@2", "recall@2", "mrr", "hit_rate@1", "ndcg@3", "recall(rel=2)@3", "mrr(rel=2)",
]  # fmt: skip
L3 = math.log2(3)
# Per user (1, 2, 5); None: not evaluated. User 2 has no recs: 0 with no_recs="zero".
WANT = {
    "precision@2": [0.5, 0.0, 0.5],  # 1: 11 hit, 13 miss; 5: 52 miss, 50 hit
    "recall@2": [0.5, 0.0, 0.5],  # one of two relevant items each
    "mrr": [1.0, 0.0, 0.5],  # 1: 11 first; 5: 50 second
    "hit_rate@1": [1.0, 0.0, 0.0],
    # 1: dcg = 1/log2(2) + 0 + 2/log2(4) = 2, idcg = 2 + 1/log2(3)
    # 5: dcg = 0 + 3/log2(3), idcg = 3 + 1/log2(3)
    "ndcg@3": [2 / (2 + 1 / L3), 0.0, (3 / L3) / (3 + 1 / L3)],
    "recall(rel=2)@3": [1.0, None, 1.0],  # 10 and 50 are in the top 3
    "mrr(rel=2)": [1 / 3, None, 1 / 2],  # 10 third, 50 second
}


def mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept)


@pytest.fixture(scope="module")
def res() -> receval.Result:
    return receval.evaluate(TRUTH, RECS, METRICS)


def test_counts(res: receval.Result) -> None:
    assert res.counts == Counts(evaluated=3, no_recs=1, no_relevant=1, recs_not_in_truth=1)
    assert res.counts.to_dict() == {
        "evaluated": 3, "no_recs": 1, "no_relevant": 1, "recs_not_in_truth": 1,
        "recs_in_train": None,
    }  # fmt: skip


def test_counts_follow_relevance_threshold() -> None:
    res = receval.evaluate(TRUTH, RECS, ["mrr"], relevance_threshold=2)
    # relevant at >= 2: user 1 (item 10) and user 5 (item 50); users 2 and 3 have none
    assert res.counts == Counts(evaluated=2, no_recs=0, no_relevant=2, recs_not_in_truth=1)
    assert res["mrr"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert res.settings["relevance_threshold"] == 2


def test_per_user_values(res: receval.Result) -> None:
    pu = res.per_user
    assert pu.columns == ["user", *METRICS]
    assert pu["user"].to_list() == [1, 2, 5]  # sorted; user 3 evaluated by no metric
    for m, want in WANT.items():
        got = pu[m].to_list()
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if w is None:
                assert g is None, m
            else:
                assert g == pytest.approx(w, rel=1e-12, abs=1e-15), m


def test_means_zero_policy(res: receval.Result) -> None:
    for m, want in WANT.items():
        assert res[m] == pytest.approx(mean(want), rel=1e-12), m
    assert res["mrr"] == 0.5
    assert res["recall(rel=2)@3"] == 1.0
    assert res["mrr(rel=2)"] == pytest.approx(5 / 12)


def test_skip_policy() -> None:
    res = receval.evaluate(TRUTH, RECS, METRICS, no_recs="skip")
    # user 2 (no recs) is left out of every mean and of per_user; still counted
    assert res.counts.no_recs == 1
    assert res.per_user["user"].to_list() == [1, 5]
    assert res["precision@2"] == 0.5
    assert res["mrr"] == 0.75
    assert res["hit_rate@1"] == 0.5
    assert res["ndcg@3"] == pytest.approx((WANT["ndcg@3"][0] + WANT["ndcg@3"][2]) / 2)
    assert res["mrr(rel=2)"] == pytest.approx(5 / 12)  # user 2 was not evaluated anyway
    assert res.settings["no_recs"] == "skip"


def test_raise_policy() -> None:
    with pytest.raises(InputError, match=r"1 evaluated user\(s\) have no recommendations"):
        receval.evaluate(TRUTH, RECS, METRICS, no_recs="raise")
    # with only rel=2 metrics, user 2 is evaluated by none: nothing to raise about
    res = receval.evaluate(TRUTH, RECS, ["mrr(rel=2)"], no_recs="raise")
    assert res["mrr(rel=2)"] == pytest.approx(5 / 12)
    assert res.per_user["user"].to_list() == [1, 5]
    # every evaluated user has recs: the three policies agree
    full = RECS.vstack(pl.DataFrame({"user": [2], "item": [20], "score": [0.1]}))
    means = [receval.evaluate(TRUTH, full, METRICS, no_recs=p).means for p in ("zero", "skip")]
    assert means[0] == means[1] == receval.evaluate(TRUTH, full, METRICS, no_recs="raise").means


def test_zero_policy_differs_from_skip() -> None:
    zero = receval.evaluate(TRUTH, RECS, ["mrr"], no_recs="zero")
    skip = receval.evaluate(TRUTH, RECS, ["mrr"], no_recs="skip")
    assert (zero["mrr"], skip["mrr"]) == (0.5, 0.75)  # (1 + 0 + 0.5) / 3 vs (1 + 0.5) / 2


# ---------------------------------------------------------------------- types and shapes


def test_scalars_are_python_floats(res: receval.Result) -> None:
    for m in METRICS:
        assert type(res[m]) is float, m
        assert type(res.means[m]) is float, m
        assert type(res.to_dict()["metrics"][m]) is float, m


def test_micro_recall_is_a_python_float() -> None:
    res = receval.evaluate(TRUTH, RECS, ["recall(average=micro)@2"])
    # micro: hits 1 + 0 + 1 over |R| 2 + 1 + 2
    assert res["recall(average=micro)@2"] == pytest.approx(2 / 5)
    assert type(res["recall(average=micro)@2"]) is float


def test_return_type_does_not_depend_on_request_size() -> None:
    one = receval.evaluate(TRUTH, RECS, "mrr")
    many = receval.evaluate(TRUTH, RECS, ["mrr", "ndcg@3"])
    assert type(one) is type(many) is receval.Result
    assert one.per_user.columns == ["user", "mrr"]
    assert one["mrr"] == many["mrr"]


def test_per_user_dtypes(res: receval.Result) -> None:
    assert res.per_user.schema == pl.Schema(
        {"user": pl.Int64, **dict.fromkeys(METRICS, pl.Float64)}
    )


def test_per_user_string_ids_sorted() -> None:
    truth = {"b": {"x": 1}, "a": {"x": 1}, "c": {"y": 1}, "B": {"x": 1}}
    recs = {"c": {"y": 0.5}, "a": {"x": 0.5}}
    res = receval.evaluate(truth, recs, ["mrr"])
    assert res.per_user.schema["user"] == pl.String
    assert res.per_user["user"].to_list() == ["B", "a", "b", "c"]
    assert res.per_user["mrr"].to_list() == [0.0, 1.0, 0.0, 1.0]


def test_per_user_int_ids_sorted_numerically() -> None:
    truth = pl.DataFrame({"user": [10, 2, 1, 10], "item": [1, 1, 1, 2]})
    recs = pl.DataFrame({"user": [1, 10], "item": [1, 2], "score": [1.0, 1.0]})
    res = receval.evaluate(truth, recs, ["mrr"])
    assert res.per_user["user"].to_list() == [1, 2, 10]
    assert res.per_user["mrr"].to_list() == [1.0, 0.0, 1.0]


def test_per_user_keeps_narrow_int_dtype() -> None:
    truth = TRUTH.with_columns(pl.col("user").cast(pl.Int32))
    recs = RECS.with_columns(pl.col("user").cast(pl.Int32))
    res = receval.evaluate(truth, recs, ["mrr"])
    assert res.per_user.schema["user"] == pl.Int32


def test_per_user_custom_user_col() -> None:
    truth = TRUTH.rename({"user": "customer"})
    recs = RECS.rename({"user": "customer"})
    res = receval.evaluate(truth, recs, ["mrr"], user_col="customer")
    assert res.per_user.columns == ["customer", "mrr"]
    assert res.per_user["customer"].to_list() == [1, 2, 5]


def test_nan_mean_when_no_user_is_evaluated() -> None:
    # no truth item has relevance >= 5: mrr(rel=5) evaluates nobody
    with pytest.warns(UserWarning, match=r"no user is evaluated by mrr\(rel=5\)"):
        res = receval.evaluate(TRUTH, RECS, ["mrr", "mrr(rel=5)"])
    assert math.isnan(res["mrr(rel=5)"])
    assert type(res["mrr(rel=5)"]) is float
    assert res.per_user["mrr(rel=5)"].null_count() == res.per_user.height
    doc = json.loads(res.to_json())
    assert doc["metrics"]["mrr(rel=5)"] is None
    assert doc["metrics"]["mrr"] == 0.5


# --------------------------------------------------------------------------- serialising


def test_to_dict(res: receval.Result) -> None:
    doc = res.to_dict()
    assert set(doc) == {"metrics", "counts", "settings"}
    assert list(doc["metrics"]) == METRICS
    assert doc["metrics"] == res.means
    assert doc["counts"] == res.counts.to_dict()
    assert doc["settings"] == {
        "ties": "expected", "relevance_threshold": 1.0, "no_recs": "zero",
        "relevance_col": "relevance",
    }  # fmt: skip


def test_to_json_round_trip(res: receval.Result) -> None:
    text = res.to_json()
    assert json.loads(text) == res.to_dict()
    assert "\n" in text  # indented by default
    compact = res.to_json(indent=None)
    assert "\n" not in compact
    assert json.loads(compact) == res.to_dict()


def test_settings_reported() -> None:
    res = receval.evaluate(TRUTH, RECS, ["mrr"], ties="pessimistic", no_recs="skip")
    assert res.settings == {
        "ties": "pessimistic", "relevance_threshold": 1.0, "no_recs": "skip",
        "relevance_col": "relevance",
    }  # fmt: skip


# ------------------------------------------------------------------------------- mapping


def test_mapping_behaviour(res: receval.Result) -> None:
    assert isinstance(res, Mapping)
    assert len(res) == len(METRICS)
    assert list(res) == METRICS
    assert list(res.keys()) == METRICS
    assert res.metrics == tuple(METRICS)
    assert dict(res) == res.means
    assert list(res.values()) == [res[m] for m in METRICS]
    assert "mrr" in res
    assert "RECIP_RANK" in res  # any spelling
    assert "ndcg@10" not in res
    assert "not a metric" not in res
    assert res.get("ndcg@10") is None
    assert res.get("ndcg(gain=linear)@3") == res["ndcg@3"]


def test_mapping_is_read_only(res: receval.Result) -> None:
    means = res.means
    means["mrr"] = 99.0
    assert res["mrr"] == 0.5
    settings = res.settings
    settings["ties"] = "first"
    assert res.settings["ties"] == "expected"
    with pytest.raises(TypeError):
        res["mrr"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("key", ["ndcg@10", "mrr@3", "precision@3", "map", "nope", "ndcg@0"])
def test_key_error_for_metrics_not_evaluated(res: receval.Result, key: str) -> None:
    with pytest.raises(KeyError):
        res[key]


def test_key_error_names_the_evaluated_metrics(res: receval.Result) -> None:
    with pytest.raises(KeyError, match=r"ndcg@10.*not evaluated.*precision@2, recall@2"):
        res["NDCG@10"]


def test_repr(res: receval.Result) -> None:
    text = repr(res)
    for m in METRICS:
        assert m in text
    assert "3 evaluated" in text
    assert "1 recs users not in truth" in text


def test_html_repr_lists_every_metric_and_the_counts() -> None:
    truth = {"u": {"a": 1}, "v": {"b": 0}}
    recs = {"u": {"a": 0.5, "z": 0.4}, "w": {"a": 1.0}}
    res = receval.evaluate(truth, recs, ["ndcg@2", "precision@2"])
    page = res._repr_html_()
    assert "<td>ndcg@2</td><td>1.000000</td>" in page
    assert "<td>precision@2</td><td>0.500000</td>" in page
    assert (
        "1 evaluated, 0 without recs, 1 without relevant items, 1 recs users not in truth" in page
    )


def test_html_repr_shows_details_when_a_metric_has_any() -> None:
    truth = {"u": {"a": 1, "b": 0}, "v": {"c": 1, "d": 0}}
    recs = {"u": {"a": 0.9, "b": 0.1}, "v": {"c": 0.2, "d": 0.8}, "w": {"a": 0.5}}
    res = receval.evaluate(truth, recs, ["gauc", "mrr"])
    page = res._repr_html_()
    assert "<th>details</th>" in page
    assert "users_used=2" in page and "rows_of_users_not_in_truth=1" in page
    assert "<td>mrr</td><td>0.750000</td><td></td>" in page  # mrr has no details
