"""Bad input (docs/metrics.md "Bad input").

Every case is a row ``(truth, recs, kwargs, exception, pattern)``; the pattern asserts the
content of the message, not only its class: which argument, what was expected, what was
found and, where the library prints them, the offending rows (row numbers are 0-based
positions in the caller's row order). Input errors are run for every registered metric, as
they must not depend on which metric was asked for. The last part checks that inputs are
never modified, on success and on error.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import receval
from receval import InputError, MetricError, RecevalError

# truth: user 1 has two relevant items, user 2 one, user 3 only a non-relevant one.
TRUTH = {"user": [1, 1, 2, 3], "item": [10, 11, 10, 12], "relevance": [1.0, 2.0, 1.0, 0.0]}
# recs: user 4 is not in truth.
RECS = {"user": [1, 1, 2, 4], "item": [10, 12, 11, 10], "score": [0.9, 0.8, 0.7, 0.6]}

# the ranking family; the other families' error tables live in their own test modules
METRIC_NAMES = [
    s.name + ("@3" if s.cutoff else "") for s in receval.list_metrics() if s.family == "ranking"
]


def t(**changes: Any) -> pl.DataFrame:
    """The base truth with some columns replaced (None drops a column)."""
    data = {**TRUTH, **changes}
    return pl.DataFrame({k: v for k, v in data.items() if v is not None}, strict=False)


def r(**changes: Any) -> pl.DataFrame:
    """The base recs with some columns replaced (None drops a column)."""
    data = {**RECS, **changes}
    return pl.DataFrame({k: v for k, v in data.items() if v is not None}, strict=False)


def lit(*parts: str) -> str:
    """A regex matching ``parts`` in order, anything (newlines included) in between."""
    return "(?s)" + ".*".join(re.escape(p) for p in parts)


def nan() -> float:
    return float("nan")


INF = float("inf")
ROWS = "First offending rows:\n"

# ------------------------------------------------------------- input errors, every metric

# fmt: off
INPUT_CASES = [
    # missing columns: argument, missing column, columns found, how to fix
    pytest.param(
        t(), r(score=None), {}, InputError,
        lit("recs is missing column 'score'", "columns found: ['user', 'item']",
            "score_col=", "rank_col="),
        id="recs-missing-score",
    ),
    pytest.param(
        t(), r(user=None), {}, InputError,
        lit("recs is missing column 'user'", "['item', 'score']", "user_col="),
        id="recs-missing-user",
    ),
    pytest.param(
        t(item=None), r(), {}, InputError,
        lit("truth is missing column 'item'", "['user', 'relevance']", "item_col="),
        id="truth-missing-item",
    ),
    pytest.param(
        t(), r(), {"rank_col": "rank"}, InputError,
        lit("recs is missing column 'rank'", "['user', 'item', 'score']", "rank_col="),
        id="rank-col-absent",
    ),
    pytest.param(
        t(), r(), {"score_col": "pred"}, InputError,
        lit("recs is missing column 'pred'", "['user', 'item', 'score']"),
        id="score-col-absent",
    ),
    pytest.param(
        t(), r(), {"user_col": "uid"}, InputError,
        lit("truth is missing column 'uid'"),
        id="user-col-absent",
    ),
    # nulls: count, column, offending row with its 0-based index
    pytest.param(
        t(), r(user=[1, 1, None, 4]), {}, InputError,
        lit("recs has 1 null value(s) in column 'user'", "expected none", ROWS,
            "row 2: user=None, item=11, score=0.7"),
        id="null-recs-user",
    ),
    pytest.param(
        t(item=[10, None, 10, None]), r(), {}, InputError,
        lit("truth has 2 null value(s) in column 'item'", ROWS,
            "row 1: user=1, item=None, relevance=2.0", "row 3: user=3, item=None"),
        id="null-truth-item",
    ),
    pytest.param(
        t(), r(score=[0.9, 0.8, 0.7, None]), {}, InputError,
        lit("recs has 1 null value(s) in column 'score'", "row 3: user=4, item=10, score=None"),
        id="null-score",
    ),
    pytest.param(
        t(relevance=[1.0, None, 1.0, 0.0]), r(), {}, InputError,
        lit("truth has 1 null value(s) in column 'relevance'", "row 1: user=1, item=11"),
        id="null-relevance",
    ),
    pytest.param(
        t(), pl.DataFrame({"user": [1], "item": [10], "rank": [None]}, schema_overrides={
            "rank": pl.Int64}), {"rank_col": "rank"}, InputError,
        lit("recs has 1 null value(s) in column 'rank'", "row 0"),
        id="null-rank",
    ),
    # NaN / inf
    pytest.param(
        t(), r(score=[0.9, nan(), 0.7, 0.6]), {}, InputError,
        lit("recs has 1 NaN value(s) in column 'score' (score)", "expected numbers",
            "row 1: user=1, item=12, score=nan"),
        id="nan-score",
    ),
    pytest.param(
        t(relevance=[nan(), 2.0, 1.0, nan()]), r(), {}, InputError,
        lit("truth has 2 NaN value(s) in column 'relevance' (relevance)", "row 0: user=1",
            "row 3: user=3"),
        id="nan-relevance",
    ),
    pytest.param(
        t(relevance=[1.0, INF, 1.0, 0.0]), r(), {}, InputError,
        lit("truth has 1 infinite value(s) in column 'relevance'", "finite",
            "row 1: user=1, item=11, relevance=inf"),
        id="inf-relevance",
    ),
    pytest.param(
        t(relevance=[1.0, 2.0, -INF, 0.0]), r(), {}, InputError,
        lit("truth has 1 infinite value(s)", "row 2: user=2, item=10, relevance=-inf"),
        id="neg-inf-relevance",
    ),
    # duplicates (user, item): counted, rows shown in the caller's order
    pytest.param(
        t(), r(item=[10, 12, 11, 10], user=[1, 2, 2, 1]), {}, InputError,
        lit("recs has 2 duplicate (user, item) row(s)", "at most once per user", ROWS,
            "row 0: user=1, item=10, score=0.9", "row 3: user=1, item=10, score=0.6"),
        id="dup-recs-unsorted",
    ),
    pytest.param(
        t(), r(user=[1, 4, 2, 4], item=[10, 13, 11, 13]), {}, InputError,
        lit("recs has 2 duplicate (user, item) row(s)", "row 1: user=4, item=13",
            "row 3: user=4, item=13"),
        id="dup-recs-user-not-in-truth",
    ),
    pytest.param(
        t(user=[1, 2, 1, 3], item=[10, 10, 10, 12]), r(), {}, InputError,
        lit("truth has 2 duplicate (user, item) row(s)", "row 0: user=1, item=10, relevance=1.0",
            "row 2: user=1, item=10, relevance=1.0"),
        id="dup-truth",
    ),
    # empty inputs
    pytest.param(
        t().clear(), r(), {}, InputError, lit("truth is empty (0 rows)", "at least one row"),
        id="empty-truth",
    ),
    pytest.param(
        t(), r().clear(), {}, InputError, lit("recs is empty (0 rows)"), id="empty-recs",
    ),
    pytest.param({}, r(), {}, InputError, lit("truth is empty"), id="empty-truth-dict"),
    pytest.param(t(), {}, {}, InputError, lit("recs is empty"), id="empty-recs-dict"),
    # id types
    pytest.param(
        t(), r(user=["1", "1", "2", "4"]), {}, InputError,
        lit("user ids of truth and recs have different types", "truth column 'user' is Int64",
            "recs column 'user' is String", "expected both integers or both strings"),
        id="user-id-type-mismatch",
    ),
    pytest.param(
        t(item=["10", "11", "10", "12"]), r(), {}, InputError,
        lit("item ids of truth and recs have different types", "truth column 'item' is String",
            "recs column 'item' is Int64"),
        id="item-id-type-mismatch",
    ),
    pytest.param(
        t(user=[1.0, 1.0, 2.0, 3.0]), r(user=[1.0, 1.0, 2.0, 4.0]), {}, InputError,
        lit("truth column 'user' holds ids and must be integers or strings", "got Float64"),
        id="float-user-ids",
    ),
    pytest.param(
        t(), r(item=[10.0, 12.0, 11.0, 10.0]), {}, InputError,
        lit("recs column 'item' holds ids and must be integers or strings", "got Float64"),
        id="float-item-ids",
    ),
    pytest.param(
        {1.5: {10: 1}}, {1.5: {10: 0.5}}, {}, InputError,
        lit("truth as a dict: user ids must be all integers or all strings", "found float"),
        id="float-ids-nested-dict",
    ),
    # value types
    pytest.param(
        t(), r(score=["a", "b", "c", "d"]), {}, InputError,
        lit("recs column 'score' (score) must be numeric", "got String"),
        id="string-score",
    ),
    pytest.param(
        t(), r(score=[True, False, True, True]), {}, InputError,
        lit("recs column 'score' (score) must be numeric", "got Boolean"),
        id="bool-score",
    ),
    pytest.param(
        t(relevance=["1", "2", "1", "0"]), r(), {}, InputError,
        lit("truth column 'relevance' (relevance) must be numeric", "got String"),
        id="string-relevance",
    ),
    pytest.param(
        [(1, 10, 1.0)], r(), {}, InputError,
        lit("truth must be a Polars/pandas DataFrame", "got list"),
        id="unsupported-truth-type",
    ),
    pytest.param(
        t(), {1: [10, 11]}, {}, InputError,
        lit("recs as a dict must map each user to a dict", "user 1 maps to list"),
        id="nested-dict-not-a-dict",
    ),
    # options
    pytest.param(
        t(), r(), {"ties": "random"}, InputError,
        lit("ties must be one of expected, first, trec, optimistic, pessimistic", "'random'"),
        id="bad-ties",
    ),
    pytest.param(
        t(), r(), {"no_recs": "ignore"}, InputError,
        lit("no_recs must be one of zero, skip, raise", "got 'ignore'"),
        id="bad-no-recs",
    ),
    *[
        pytest.param(
            t(), r(), {"relevance_threshold": value}, InputError,
            lit("relevance_threshold must be a finite number > 0", f"got {value!r}"),
            id=f"bad-threshold-{value!r}",
        )
        for value in (0, -1, 0.0, nan(), INF, True, "1", None)
    ],
    # degenerate data
    pytest.param(
        t(), r(user=[1, 1, 4, 4], item=[10, 12, 11, 10]), {"no_recs": "raise"}, InputError,
        lit("1 evaluated user(s) have no recommendations (no_recs='raise')", "e.g. [2]",
            "no_recs='zero'"),
        id="no-recs-raise",
    ),
    pytest.param(
        t(relevance=[0.0, 0.0, -1.0, 0.0]), r(), {}, InputError,
        lit("truth has no user with a relevant item (relevance >= 1.0)", "relevance_threshold"),
        id="no-relevant-user",
    ),
    pytest.param(
        t(), r(), {"relevance_threshold": 3}, InputError,
        lit("truth has no user with a relevant item (relevance >= 3.0)"),
        id="no-relevant-user-at-threshold",
    ),
]
# fmt: on


# Cases run once (not per metric).
# fmt: off
INPUT_ONCE_CASES = [
    pytest.param(
        t(), r(), {"relevance_col": "grade"}, InputError,
        lit("truth is missing column 'grade'", "relevance_col="),
        id="relevance-col-named-but-absent",
    ),
    pytest.param(
        {1: {10: 1}, "u": {11: 1}}, {"1": {10: 0.5}, "u": {11: 0.5}}, {}, InputError,
        lit("truth as a dict: user ids must be all integers or all strings", "found int, str"),
        id="mixed-int-str-ids-nested-dict",
    ),
]
# fmt: on


@pytest.mark.parametrize("metric", METRIC_NAMES)
@pytest.mark.parametrize(("truth", "recs", "kwargs", "exc", "pattern"), INPUT_CASES)
def test_input_errors(
    truth: Any, recs: Any, kwargs: dict[str, Any], exc: type[Exception], pattern: str,
    metric: str,
) -> None:  # fmt: skip
    with pytest.raises(exc, match=pattern) as info:
        receval.evaluate(truth, recs, metric, **kwargs)
    assert isinstance(info.value, RecevalError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("truth", "recs", "kwargs", "exc", "pattern"), INPUT_ONCE_CASES)
def test_input_errors_once(
    truth: Any, recs: Any, kwargs: dict[str, Any], exc: type[Exception], pattern: str
) -> None:
    with pytest.raises(exc, match=pattern):
        receval.evaluate(truth, recs, "ndcg@3", **kwargs)


def test_base_inputs_are_valid() -> None:
    """The error cases above differ from a valid evaluation only by what they break."""
    res = receval.evaluate(t(), r(), METRIC_NAMES)
    # users 1 and 2 are evaluated; 3 has no relevant item; 4 is not in truth
    assert res.counts == receval.Counts(evaluated=2, no_recs=0, no_relevant=1, recs_not_in_truth=1)


# ------------------------------------------------------------------ metric-string errors

METRIC_CASES = [
    ("ndcg@0", MetricError, lit("`k` of ndcg must be an integer >= 1; got 0.")),
    ("recall@-1", MetricError, lit("`k` of recall must be an integer >= 1; got -1")),
    ("precision@1.5", MetricError, lit("`k` of precision must be an integer >= 1", "'1.5'")),
    ("mrr@x", MetricError, lit("`k` of mrr must be an integer >= 1", "'x'")),
    ("map@", MetricError, lit("`k` of map must be an integer >= 1", "''")),
    ("ndgc@10", MetricError, lit("unknown metric 'ndgc'", "did you mean 'ndcg'")),
    ("precison@5", MetricError, lit("unknown metric 'precison'", "did you mean 'precision'")),
    ("hitrate@5", MetricError, lit("did you mean 'hit_rate'")),
    (
        "zzzzzz",
        MetricError,
        lit("unknown metric 'zzzzzz'", "known metrics: precision, recall", "r_precision"),
    ),
    (
        "ndcg(foo=1)@3",
        MetricError,
        lit("ndcg has no parameter 'foo'", "its parameters: rel, gain"),
    ),
    (
        "ndcg(gain=foo)@3",
        MetricError,
        lit("parameter `gain` of ndcg must be one of linear, exp or a map", "got 'foo'"),
    ),
    (
        "map(denominator=x)@3",
        MetricError,
        lit("parameter `denominator` of map must be one of relevant, min; got 'x'"),
    ),
    (
        "recall(average=weird)@3",
        MetricError,
        lit("parameter `average` of recall must be one of macro, micro; got 'weird'"),
    ),
    ("precision(rel=0)@3", MetricError, lit("parameter `rel` of precision", "> 0; got 0")),
    ("hit_rate(rel=-2)@3", MetricError, lit("parameter `rel` of hit_rate", "> 0; got -2")),
    ("precision(rel=True)", MetricError, lit("parameter `rel` of precision", "got True")),
    ("fbeta(beta=-1)@3", MetricError, lit("parameter `beta` of fbeta", "> 0; got -1")),
    ("fbeta(beta=0)", MetricError, lit("parameter `beta` of fbeta", "got 0")),
    (
        "ndcg(gain={1: -1})@3",
        MetricError,
        lit("parameter `gain` of ndcg maps relevance to gain", "gains >= 0", "got 1: -1"),
    ),
    ("r_precision@5", MetricError, lit("r_precision takes no cutoff @K", "'r_precision@5'")),
    ("rprec@5", MetricError, lit("r_precision takes no cutoff @K")),
    ("ndcg(1)@2", MetricError, lit("cannot parse metric 'ndcg(1)@2'", "by keyword")),
    ("ndcg(gain=x+1)", MetricError, lit("must be constants")),
    ("ndcg((@", MetricError, lit("cannot parse metric")),
    ([], MetricError, lit("metrics must name at least one metric")),
    ([3], MetricError, lit("a metric must be given as a string", "got 3")),
    pytest.param(
        5,
        MetricError,
        lit("metric", "got 5"),
        id="metrics-not-iterable",
    ),
    # a gain map must give a gain to every positive relevance in truth (truth has 1 and 2)
    (
        "ndcg(gain={0: 0, 1: 1})@2",
        InputError,
        lit(
            "the gain map {0: 0, 1: 1} has no gain for relevance value(s) [2.0]",
            "truth column 'relevance'",
        ),
    ),
    ("cg(gain={2: 5})", InputError, lit("has no gain for relevance value(s) [1.0]")),
]


@pytest.mark.parametrize(("metrics", "exc", "pattern"), METRIC_CASES)
def test_metric_errors(metrics: Any, exc: type[Exception], pattern: str) -> None:
    with pytest.raises(exc, match=pattern) as info:
        receval.evaluate(t(), r(), metrics)
    assert isinstance(info.value, RecevalError)


def test_metric_error_before_reading_inputs(tmp_path: Path) -> None:
    """A bad metric string is reported even when the inputs are bad too (it is checked first)."""
    with pytest.raises(MetricError, match="unknown metric 'nope'"):
        receval.evaluate(tmp_path / "missing.parquet", tmp_path / "missing.parquet", "nope")


def test_gain_map_covers_every_relevance_is_accepted() -> None:
    # truth relevances are 0, 1, 2: a map of 1 and 2 is enough (0 gains 0 when unmapped)
    res = receval.evaluate(t(), r(), "ndcg(gain={1: 1, 2: 3})@2")
    assert 0.0 <= res["ndcg(gain={1: 1, 2: 3})@2"] <= 1.0


# ------------------------------------------------------------------------------ files

FileMaker = Callable[[Path], Path]


def _write(name: str, data: bytes) -> FileMaker:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return make


def _missing(name: str) -> FileMaker:
    return lambda folder: folder / name


GOOD_QRELS = _write("good.qrels", b"1 0 a 1\n2 0 b 1\n")
GOOD_RUN = _write("good.run", b"1 Q0 a 1 0.5 t\n2 Q0 b 1 0.5 t\n")

# fmt: off
FILE_CASES = [
    pytest.param(
        _missing("nope.parquet"), GOOD_RUN, InputError,
        lit("truth file '", "nope.parquet' does not exist"), id="missing-truth-file",
    ),
    pytest.param(
        GOOD_QRELS, _missing("nope.csv"), InputError,
        lit("recs file '", "nope.csv' does not exist"), id="missing-recs-file",
    ),
    pytest.param(
        _write("x.xlsx", b"PK\x03\x04binary\n"), GOOD_RUN, InputError,
        lit("truth file '", "x.xlsx': cannot tell its format from the suffix '.xlsx'",
            ".parquet, .csv, .tsv"),
        id="unknown-suffix",
    ),
    pytest.param(
        _write("bad.qrels", b"1 0 a 1\n1 0 b\n2 0 c 1\n2 0 d 1 extra\n"), GOOD_RUN, InputError,
        lit("truth file '", "bad.qrels' is not a TREC qrels (user iteration item relevance)",
            "expected 4 whitespace-separated fields", "2 line(s) differ (lines 2, 4)"),
        id="qrels-wrong-field-count",
    ),
    pytest.param(
        _write("bad2.qrels", b"1 0 a 1\n1 0 b high\n"), GOOD_RUN, InputError,
        lit("bad2.qrels': the relevance field must be a number", "1 line(s)", "['high']"),
        id="qrels-non-numeric-relevance",
    ),
    pytest.param(
        GOOD_QRELS, _write("bad.run", b"1 Q0 a 1 0.5 t\n1 Q0 b 2\n"), InputError,
        lit("recs file '", "bad.run' is not a TREC run (user Q0 item rank score tag)",
            "expected 6", "(lines 2)"),
        id="run-wrong-field-count",
    ),
    pytest.param(
        GOOD_QRELS, _write("bad2.run", b"1 Q0 a 1 0.5 t\n1 Q0 b 2 zz t\n"), InputError,
        lit("bad2.run': the score field must be a number", "['zz']"),
        id="run-non-numeric-score",
    ),
    pytest.param(
        _write("bad.parquet", b"garbage, not parquet"), GOOD_RUN, InputError,
        lit("truth", "bad.parquet"),
        id="corrupt-parquet",
    ),
    pytest.param(
        _write("bin.csv", b"\x00\x01\x02garbage\n\xff\xfe\n"), GOOD_RUN, InputError,
        lit("truth", "bin.csv"),
        id="binary-csv",
    ),
    pytest.param(
        _write("empty.qrels", b""), GOOD_RUN, InputError,
        lit("truth is empty"),
        id="empty-qrels-file",
    ),
    pytest.param(
        _write("header.csv", b"user,item,relevance\n"), GOOD_RUN, InputError,
        lit("truth is empty (0 rows)"), id="header-only-csv",
    ),
]
# fmt: on


@pytest.mark.parametrize(("make_truth", "make_recs", "exc", "pattern"), FILE_CASES)
def test_file_errors(
    tmp_path: Path, make_truth: FileMaker, make_recs: FileMaker, exc: type[Exception],
    pattern: str,
) -> None:  # fmt: skip
    truth, recs = make_truth(tmp_path), make_recs(tmp_path)
    with pytest.raises(exc, match=pattern):
        receval.evaluate(truth, recs, "ndcg@3")


def test_file_case_inputs_are_valid(tmp_path: Path) -> None:
    res = receval.evaluate(GOOD_QRELS(tmp_path), GOOD_RUN(tmp_path), "ndcg@3")
    assert res["ndcg@3"] == 1.0


# --------------------------------------------------------------- inputs are never modified

# Unsorted and ungrouped on purpose, so the library has to re-group a copy.
U_TRUTH = {"user": [2, 1, 3, 1, 2], "item": [5, 7, 1, 5, 9], "relevance": [1, 2, 0, 1, 3]}
U_RECS = {
    "user": [1, 2, 1, 4, 2, 1],
    "item": [7, 9, 2, 5, 5, 5],
    "score": [0.1, 0.5, 0.3, 0.2, 0.5, 0.9],
}
ALL_METRICS = [*METRIC_NAMES, "ndcg(gain={0: 0, 1: 1, 2: 3, 3: 7})@2", "recall(rel=2)"]


def test_pandas_inputs_not_modified() -> None:
    truth = pd.DataFrame(U_TRUTH, index=[40, 10, 30, 20, 0])
    recs = pd.DataFrame(U_RECS, index=pd.Index(list("fedcba"), name="key"))
    recs["item"] = recs["item"].astype("int32")
    before = truth.copy(deep=True), recs.copy(deep=True)
    metrics = list(ALL_METRICS)
    receval.evaluate(truth, recs, metrics, ties="first")
    pd.testing.assert_frame_equal(truth, before[0], check_exact=True)
    pd.testing.assert_frame_equal(recs, before[1], check_exact=True)
    assert list(recs.index) == list("fedcba")
    assert metrics == ALL_METRICS


def test_pandas_categorical_and_string_ids_not_modified() -> None:
    truth = pd.DataFrame(
        {"u": pd.Categorical(["b", "a", "b"]), "i": ["x", "y", "z"], "relevance": [1, 1, 2]}
    )
    recs = pd.DataFrame({"u": ["b", "a", "a", "b"], "i": ["z", "y", "x", "x"], "score": 1.0})
    before = truth.copy(deep=True), recs.copy(deep=True)
    res = receval.evaluate(truth, recs, ["mrr", "ndcg"], user_col="u", item_col="i")
    pd.testing.assert_frame_equal(truth, before[0], check_exact=True)
    pd.testing.assert_frame_equal(recs, before[1], check_exact=True)
    assert res.per_user["u"].to_list() == ["a", "b"]


def test_polars_inputs_not_modified() -> None:
    truth = pl.DataFrame(U_TRUTH)
    recs = pl.DataFrame(U_RECS)
    lazy = recs.lazy()
    before = truth.clone(), recs.clone()
    receval.evaluate(truth, recs, ALL_METRICS, ties="trec")
    receval.evaluate(truth, lazy, ALL_METRICS)
    assert_frame_equal(truth, before[0], check_exact=True)
    assert_frame_equal(recs, before[1], check_exact=True)
    assert truth.columns == ["user", "item", "relevance"]
    assert truth.schema["relevance"] == pl.Int64  # not cast to Float64 in place


def test_polars_input_without_relevance_not_modified() -> None:
    truth = pl.DataFrame({"user": U_TRUTH["user"], "item": U_TRUTH["item"]})
    before = truth.clone()
    receval.evaluate(truth, pl.DataFrame(U_RECS), "ndcg")
    assert_frame_equal(truth, before, check_exact=True)
    assert "relevance" not in truth.columns


def test_arrow_inputs_not_modified() -> None:
    truth = pa.table(U_TRUTH)
    recs = pa.table(U_RECS)
    before = copy.deepcopy(truth.to_pydict()), copy.deepcopy(recs.to_pydict())
    receval.evaluate(truth, recs, ALL_METRICS)
    assert truth.to_pydict() == before[0]
    assert recs.to_pydict() == before[1]
    assert truth.schema.names == ["user", "item", "relevance"]


def test_dict_inputs_not_modified() -> None:
    truth = {2: {5: 1, 9: 3}, 1: {7: 2, 5: 1}, 3: {1: 0}}
    recs = {1: {7: 0.1, 2: 0.3, 5: 0.9}, 4: {5: 0.2}, 2: {9: 0.5, 5: 0.5}}
    before = copy.deepcopy(truth), copy.deepcopy(recs)
    receval.evaluate(truth, recs, ALL_METRICS)
    assert truth == before[0]
    assert recs == before[1]
    # key order too, not only equality
    assert [(u, list(v.items())) for u, v in truth.items()] == [
        (u, list(v.items())) for u, v in before[0].items()
    ]
    assert list(recs) == [1, 4, 2]


def test_inputs_not_modified_on_error() -> None:
    truth = pd.DataFrame(U_TRUTH)
    recs = pd.DataFrame({**U_RECS, "item": [7, 9, 2, 5, 9, 7]})  # (1, 7) and (2, 9) twice
    before = truth.copy(deep=True), recs.copy(deep=True)
    with pytest.raises(InputError, match=lit("recs has 4 duplicate", "row 0", "row 1")):
        receval.evaluate(truth, recs, "ndcg")
    pd.testing.assert_frame_equal(truth, before[0], check_exact=True)
    pd.testing.assert_frame_equal(recs, before[1], check_exact=True)


def test_unsorted_input_results_equal_sorted() -> None:
    """Re-grouping works on a copy and gives the same result as pre-sorted input."""
    truth, recs = pl.DataFrame(U_TRUTH), pl.DataFrame(U_RECS)
    res_u = receval.evaluate(truth, recs, ALL_METRICS)
    res_s = receval.evaluate(truth.sort("user"), recs.sort("user", "score"), ALL_METRICS)
    assert_frame_equal(res_u.per_user, res_s.per_user, rel_tol=1e-12, abs_tol=1e-12)
