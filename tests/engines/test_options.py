"""receval.families.contract.Options: evaluate's shared options, checked once (Options.of) and
handed whole to every engine; ShardSpec keeps them without train and items."""

from __future__ import annotations

import dataclasses
import pickle
import re
from typing import Any, get_args

import polars as pl
import pytest

import receval
from receval._errors import InputError
from receval.engines.shard import ShardSpec
from receval.families.contract import Context, NoRecs, NoRecsPolicy, Options, Ties, TiesPolicy
from receval.kernels import ranking as K
from receval.metrics.registry import parse_metrics

TRUTH = pl.DataFrame({"user": [1, 1, 2], "item": [10, 11, 10], "relevance": [1.0, 2.0, 1.0]})
RECS = pl.DataFrame({"user": [1, 1, 2], "item": [11, 12, 10], "score": [0.9, 0.5, 0.4]})


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def test_defaults_are_evaluates() -> None:
    options = Options.of()
    assert options.user_col == "user" and options.item_col == "item"
    assert options.kinds == {"user": "auto", "item": "auto"}
    assert options.order_col == "score" and not options.by_rank
    assert options.relevance_col is None and options.relevance_name == "relevance"
    assert options.ties is Ties.EXPECTED and options.no_recs is NoRecs.ZERO
    assert options.threshold == 1.0 and isinstance(options.threshold, float)
    assert options.train is None and options.items is None


def test_accessors() -> None:
    options = Options.of(
        user_col="u", item_col="i", rank_col="pos", relevance_col="rating",
        relevance_threshold=2, id_type="item=int", columns={"truth": {"user": "uid"}},
    )  # fmt: skip
    assert options.order_col == "pos" and options.by_rank
    assert options.relevance_name == "rating"
    assert options.kinds == {"user": "auto", "item": "int"}
    assert options.threshold == 2.0 and isinstance(options.threshold, float)
    # every frame is read with truth's names
    assert (options.user_col, options.item_col) == ("uid", "i")
    assert options.inputs.columns["recs"] == ("u", "i")


def test_frozen() -> None:
    options = Options.of()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.ties = Ties.FIRST  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "member", "code"),
    [
        ("expected", Ties.EXPECTED, K.POLICY_EXPECTED),
        ("first", Ties.FIRST, K.POLICY_FIRST),
        ("trec", Ties.TREC, K.POLICY_TREC),
        ("optimistic", Ties.OPTIMISTIC, K.POLICY_OPTIMISTIC),
        ("pessimistic", Ties.PESSIMISTIC, K.POLICY_PESSIMISTIC),
    ],
)
def test_ties_parsed_once(value: str, member: Ties, code: int) -> None:
    parsed = Ties.parse(value, "ties")
    assert parsed is member and Options.of(ties=value).ties is member
    # the kernels' code as a plain int (Numba compiles for int64, not for the enum)
    assert parsed.code == code and type(parsed.code) is int
    assert str(parsed) == f"{parsed}" == value
    assert Options.of(ties=value).settings(True)["ties"] == value
    assert pickle.loads(pickle.dumps(parsed)) is parsed  # shipped to Spark executors
    assert parsed.fixed_order == (value in ("first", "trec"))


@pytest.mark.parametrize(
    ("value", "member"),
    [("zero", NoRecs.ZERO), ("skip", NoRecs.SKIP), ("raise", NoRecs.RAISE)],
)
def test_no_recs_parsed_once(value: str, member: NoRecs) -> None:
    assert NoRecs.parse(value, "no_recs") is member and Options.of(no_recs=value).no_recs is member
    assert str(member) == f"{member}" == value
    assert Options.of(no_recs=value).settings(True)["no_recs"] == value
    assert pickle.loads(pickle.dumps(member)) is member


def test_policies_follow_the_public_literals() -> None:
    assert Ties.options() == get_args(TiesPolicy)
    assert NoRecs.options() == get_args(NoRecsPolicy)


TIES_LISTED = "expected, first, trec, optimistic, pessimistic"


@pytest.mark.parametrize(
    ("cls", "name", "value", "message"),
    [
        (Ties, "ties", "random", f"ties must be one of {TIES_LISTED}; got 'random'."),
        (Ties, "ties", "First", f"ties must be one of {TIES_LISTED}; got 'First'."),
        (Ties, "ties", "EXPECTED", f"ties must be one of {TIES_LISTED}; got 'EXPECTED'."),
        (Ties, "ties", "", f"ties must be one of {TIES_LISTED}; got ''."),
        (Ties, "ties", None, f"ties must be one of {TIES_LISTED}; got None."),
        (Ties, "ties", 1, f"ties must be one of {TIES_LISTED}; got 1."),  # a code is no name
        (NoRecs, "no_recs", "drop", "no_recs must be one of zero, skip, raise; got 'drop'."),
        (NoRecs, "no_recs", "Zero", "no_recs must be one of zero, skip, raise; got 'Zero'."),
        (NoRecs, "no_recs", 0, "no_recs must be one of zero, skip, raise; got 0."),
    ],
)
def test_policies_refused(cls: type[Ties | NoRecs], name: str, value: Any, message: str) -> None:
    with pytest.raises(InputError, match=exactly(message)):
        cls.parse(value, name)
    with pytest.raises(InputError, match=exactly(message)):  # the public functions say so too
        receval.evaluate(TRUTH, RECS, "ndcg@2", **{name: value})


def test_context_and_settings() -> None:
    def sim(a: Any, b: Any) -> float:
        return 1.0

    options = Options.of(train=TRUTH, items="items.parquet", item_features=sim,
                         rating_range=(1.0, 5.0), id_type="str")  # fmt: skip
    ctx = options.context(has_relevance=True)
    assert isinstance(ctx, Context)
    assert ctx.train is TRUTH and ctx.items == "items.parquet" and ctx.item_features is sim
    assert ctx.rating_range == (1.0, 5.0) and ctx.has_relevance is True
    assert ctx.id_type == {"user": "str", "item": "str"} and ctx.inputs is options.inputs
    assert options.context().has_relevance is None
    assert options.settings(True) == {
        "ties": "expected", "relevance_threshold": 1.0, "no_recs": "zero",
        "relevance_col": "relevance",
    }  # fmt: skip
    assert options.settings(False)["relevance_col"] is None


def test_settings_are_the_results() -> None:
    options = Options.of(ties="first", relevance_threshold=2, no_recs="skip")
    res = receval.evaluate(TRUTH, RECS, "ndcg@2", ties="first", relevance_threshold=2,
                           no_recs="skip")  # fmt: skip
    assert res.settings == options.settings(True)
    plain = receval.evaluate(TRUTH.drop("relevance"), RECS, "ndcg@2")
    assert plain.settings == Options.of().settings(False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ties": "random"}, "ties must be one of expected, first, trec, optimistic, "
         "pessimistic; got 'random'."),
        ({"no_recs": "drop"}, "no_recs must be one of zero, skip, raise; got 'drop'."),
        ({"relevance_threshold": 0}, "relevance_threshold must be a finite number > 0; got 0."),
        ({"relevance_threshold": True},
         "relevance_threshold must be a finite number > 0; got True."),
        # an int beyond a float's range raised OverflowError (math.isfinite)
        ({"relevance_threshold": 10**400},
         f"relevance_threshold must be a finite number > 0; got {10**400!r}."),
        ({"user_col": "x", "item_col": "x"},
         "user_col and item_col both name column 'x' of recs; each must name a different "
         "column."),
        ({"score_col": ""}, "score_col must be a column name (a non-empty string); got ''."),
        ({"columns": {"recs": {"user": "score"}}},
         "columns['recs']['user'] and score_col both name column 'score' of recs; each must "
         "name a different column."),
    ],
)  # fmt: skip
def test_errors_are_evaluates(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=exactly(message)):
        Options.of(**kwargs)
    with pytest.raises(InputError, match=exactly(message)):
        receval.evaluate(TRUTH, RECS, "ndcg@2", **kwargs)


@pytest.mark.parametrize(
    ("first", "second", "start"),
    [
        ({"id_type": "long"}, {"user_col": ""}, "id_type must be one of"),
        ({"user_col": ""}, {"ties": "x"}, "user_col must be a column name"),
        ({"columns": {"truth": {"user": 3}}}, {"ties": "x"}, "columns"),
        ({"ties": "x"}, {"no_recs": "x"}, "ties must be one of"),
        ({"no_recs": "x"}, {"relevance_threshold": -1}, "no_recs must be one of"),
    ],
)
def test_first_error_wins(first: dict[str, Any], second: dict[str, Any], start: str) -> None:
    with pytest.raises(InputError, match="^" + re.escape(start)):
        Options.of(**first, **second)
    with pytest.raises(InputError, match="^" + re.escape(start)):
        receval.evaluate(TRUTH, RECS, "ndcg@2", **first, **second)


def test_shard_spec_leaves_train_and_items_out() -> None:
    def sim(a: Any, b: Any) -> float:
        return 1.0

    options = Options.of(train=TRUTH, items=RECS, item_features=sim, rank_col="rank",
                         relevance_col="grade")  # fmt: skip
    plan = parse_metrics(["ndcg@2", "coverage@2"])
    spec = ShardSpec.of(plan, options, has_relevance=True)
    assert spec.options.train is None and spec.options.items is None
    assert spec.options.item_features is sim
    assert spec.metrics == ("ndcg@2", "coverage@2") and spec.plan == plan
    assert (spec.order_col, spec.by_rank, spec.relevance_col) == ("rank", True, "grade")
    assert spec.settings == options.settings(True)
    no_grade = ShardSpec.of(plan, Options.of(), has_relevance=False)
    assert no_grade.relevance_col == "relevance" and no_grade.settings["relevance_col"] is None
