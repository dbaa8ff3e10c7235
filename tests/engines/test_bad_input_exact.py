"""Inputs that once gave a silent wrong number or another library's traceback (issue 11), and
the metric names of other tools (issue 18): each now gets an exact result or a receval error
with its message."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval.cli import app

BIG = 2**60  # float64 holds BIG and BIG + 256 exactly, not BIG + 1


# -- integer scores beyond 2^53 -----------------------------------------------------------------


def test_inexact_integer_scores_are_refused_in_evaluate() -> None:
    recs = pl.DataFrame({"user": ["u", "u"], "item": ["a", "b"], "score": [BIG, BIG + 1]})
    with pytest.raises(receval.InputError) as info:
        receval.evaluate({"u": {"a": 1}}, recs, "mrr", ties="optimistic")
    assert str(info.value) == (
        "recs column 'score' (score) has 1 integer value(s) beyond ±2^53 that float64 cannot "
        "hold exactly, so distinct values would compare equal and silently tie; rescale them "
        "(subtract the smallest score, or use ranks) first. First offending rows:\n"
        f"  row 1: user='u', item='b', score={BIG + 1}"
    )


def test_inexact_integer_scores_are_refused_from_dicts() -> None:
    recs = {"u": {"a": BIG, "b": BIG + 1, "c": BIG + 2}}
    with pytest.raises(receval.InputError) as info:
        receval.evaluate({"u": {"a": 1, "b": 1}}, recs, "mrr")
    assert str(info.value) == (
        "recs as a dict has 2 integer value(s) beyond ±2^53 that float64 cannot hold exactly, "
        "so distinct values would compare equal and silently tie; rescale them (subtract the "
        f"smallest value) first; e.g. {BIG + 1}, {BIG + 2}."
    )
    with pytest.raises(receval.InputError, match=r"e\.g\. 100000000000000000000\.\.\.\.$"):
        receval.evaluate({"u": {"a": 1}}, {"u": {"a": 10**400}}, "mrr")


def test_inexact_integer_ranks_are_refused() -> None:
    recs = pl.DataFrame({"user": ["u", "u"], "item": ["a", "b"], "rank": [BIG + 1, BIG]})
    with pytest.raises(receval.InputError, match=r"^recs column 'rank' \(rank\) has 1 integer"):
        receval.evaluate({"u": {"a": 1}}, recs, "mrr", rank_col="rank")


def test_exact_large_integer_scores_keep_their_order() -> None:
    """Integers that float64 holds exactly stay distinct: the answers of the issue."""
    recs = pl.DataFrame(
        {"user": ["u", "u"], "item": ["a", "b"], "score": [BIG, BIG + 256]}, strict=False
    )
    truth = {"u": {"a": 1}}
    for ties in ("optimistic", "expected", "pessimistic"):
        assert receval.evaluate(truth, recs, "mrr", ties=ties)["mrr"] == 0.5


@pytest.mark.parametrize(
    "scores",
    [
        np.array([BIG, BIG + 1, 1, 2], dtype=np.int64),
        [BIG, BIG + 1, 1, 2],
        pd.Series([BIG, BIG + 1, 1, 2]),
        pl.Series([BIG, BIG + 1, 1, 2]),
    ],
)
def test_inexact_integer_scores_are_refused_by_array_functions(scores: object) -> None:
    with pytest.raises(receval.InputError) as info:
        receval.auc([0, 1, 0, 1], scores)
    assert str(info.value) == (
        "`y_score` has 1 integer value(s) beyond ±2^53 that float64 cannot hold exactly, so "
        "distinct values would compare equal and silently tie; rescale them (subtract the "
        "smallest value) first. Positions: [1]."
    )


def test_exact_large_integers_in_array_functions_match_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    y = [0, 1, 0, 1]
    for scores in (
        np.array([BIG, BIG + 256, 1, 2], dtype=np.uint64),
        np.array([-BIG, BIG, 3, -5], dtype=np.int64),
    ):
        assert receval.auc(y, scores) == metrics.roc_auc_score(y, scores)


# -- errors from other libraries, now receval's -------------------------------------------------


def test_pandas_object_ids_of_mixed_types() -> None:
    truth = pd.DataFrame({"user": ["u", "u"], "item": [1, "b"], "relevance": [1, 1]})
    with pytest.raises(receval.InputError) as info:
        receval.evaluate(truth, {"u": {"b": 1.0}}, "mrr")
    assert str(info.value) == (
        "truth (a pandas DataFrame) has object column(s) that mix types: 'item' (int, str). Ids "
        "must be all integers or all strings: convert the column first, e.g. "
        "df[col] = df[col].astype(str)."
    )


def test_dict_ids_beyond_64_bits() -> None:
    with pytest.raises(receval.InputError) as info:
        receval.evaluate({2**64: {"a": 1}}, {2**64: {"a": 1.0}}, "mrr")
    assert str(info.value) == (
        "truth as a dict: integer user ids must fit in 64 bits (from -2^63 to 2^63-1); found 1 "
        "that do not, e.g. [18446744073709551616]. Use string ids."
    )
    # the edges of the range are fine
    res = receval.evaluate({-(2**63): {2**63 - 1: 1}}, {-(2**63): {2**63 - 1: 1.0}}, "mrr")
    assert res["mrr"] == 1.0


def test_misspelled_user_col_of_a_frame() -> None:
    truth = pl.DataFrame({"user": ["u"], "item": ["a"]})
    recs = pl.DataFrame({"user": ["u"], "item": ["a"], "score": [1.0]})
    with pytest.raises(receval.InputError) as info:
        receval.evaluate(truth, recs, "mrr", user_col="usr")
    assert str(info.value) == (
        "truth is missing column 'usr' (columns found: ['user', 'item', 'relevance']); pass "
        "user_col= / item_col= to name the id columns."
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"user_col": "item"},
            "user_col and item_col both name column 'item' of recs; each must name a different "
            "column.",
        ),
        (
            {"score_col": "item"},
            "item_col and score_col both name column 'item' of recs; each must name a different "
            "column.",
        ),
        (
            {"rank_col": "user"},
            "user_col and rank_col both name column 'user' of recs; each must name a different "
            "column.",
        ),
        (
            {"relevance_col": "item"},
            "item_col and relevance_col both name column 'item' of truth; each must name a "
            "different column.",
        ),
        ({"user_col": 3}, "user_col must be a column name (a non-empty string); got 3."),
    ],
)
def test_column_options_naming_one_column(options: dict[str, object], message: str) -> None:
    truth = pl.DataFrame({"user": ["u"], "item": ["a"]})
    recs = pl.DataFrame({"user": ["u"], "item": ["a"], "score": [1.0]})
    with pytest.raises(receval.InputError) as info:
        receval.evaluate(truth, recs, "mrr", **options)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_cutoff_beyond_64_bits() -> None:
    with pytest.raises(receval.MetricError) as info:
        receval.evaluate({"u": {"a": 1}}, {"u": {"a": 1.0}}, "ndcg@99999999999999999999999")
    assert str(info.value) == (
        "`k` of ndcg must be an integer from 1 to 2^63 - 1; got 99999999999999999999999."
    )
    res = receval.evaluate({"u": {"a": 1}}, {"u": {"a": 1.0}}, f"precision@{2**63 - 1}")
    assert res[f"precision@{2**63 - 1}"] == 1 / (2**63 - 1)


def test_repeated_parameter_is_refused() -> None:
    with pytest.raises(receval.MetricError) as info:
        receval.parse_metric("ndcg(rel=1,rel=2)@10")
    assert str(info.value) == (
        "ndcg is given parameter 'rel' twice in 'ndcg(rel=1,rel=2)@10'; give it once."
    )


def test_python_output_in_a_missing_folder_names_the_path(tmp_path: pytest.TempPathFactory) -> None:
    cmp = receval.compare({"u": {"a": 1}}, {"m": {"u": {"a": 1.0}}}, "mrr", progress=False)
    target = f"{tmp_path}/missing/report.html"
    with pytest.raises(receval.OutputError) as info:
        cmp.to_html(target)
    assert str(info.value) == (
        f"cannot write {target!r}: the folder {str(tmp_path) + '/missing'!r} does not exist."
    )


# -- other tools' names (issue 18) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("ndcg_cut_10", "ndcg@10"),
        ("P_10", "precision@10"),
        ("recall_20", "recall@20"),
        ("map_cut_100", "map@100"),
        ("success_1", "hit_rate@1"),
        ("recip_rank", "mrr"),
        ("Rprec", "r_precision"),
        ("hit@10", "hit_rate@10"),
        ("itemcoverage@10", "coverage@10"),
        ("averagepopularity@10", "arp@10"),
        ("giniindex@10", "gini@10"),
        ("shannonentropy@10", "entropy@10"),
    ],
)
def test_names_of_trec_eval_and_recbole(name: str, canonical: str) -> None:
    assert receval.parse_metric(name).canonical == canonical


def test_trec_names_give_trec_evals_numbers() -> None:
    truth = {"q": {"a": 1, "b": 1, "c": 0}}
    recs = {"q": {"a": 0.9, "x": 0.8, "b": 0.7, "c": 0.6}}
    res = receval.evaluate(truth, recs, ["ndcg_cut_3", "P_2", "map_cut_3"], ties="trec")
    plain = receval.evaluate(truth, recs, ["ndcg@3", "precision@2", "map@3"], ties="trec")
    assert res.means == plain.means
    assert res["P_2"] == 0.5


def test_several_cutoffs_in_one_string() -> None:
    truth, recs = {"u": {"a": 1}}, {"u": {"x": 0.9, "a": 0.5}}
    res = receval.evaluate(truth, recs, "ndcg@1,2,5")
    assert res.metrics == ("ndcg@1", "ndcg@2", "ndcg@5")
    assert res["ndcg@1"] == 0.0
    code = CliRunner().invoke(app, ["metrics", "--format", "json"]).exit_code
    assert code == 0


def test_several_cutoffs_on_the_command_line(tmp_path: pytest.TempPathFactory) -> None:
    truth = pl.DataFrame({"user": ["u"], "item": ["a"]})
    recs = pl.DataFrame({"user": ["u", "u"], "item": ["x", "a"], "score": [0.9, 0.5]})
    t, r = f"{tmp_path}/t.parquet", f"{tmp_path}/r.parquet"
    truth.write_parquet(t)
    recs.write_parquet(r)
    args = ["evaluate", "--truth", t, "--recs", r, "-m", "recall@1,2", "-m", "P_1"]
    result = CliRunner().invoke(app, [*args, "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "metric,value",
        '"recall@1",0.0',
        '"recall@2",1.0',
        '"precision@1",0.0',
    ]


def test_uint64_ids_past_int64_against_int64_ids() -> None:
    """Unsigned ids past 2^63 - 1 against signed ids: exact matching, no wrap-around (the
    signed id -1 is not the unsigned 2^64 - 1)."""
    truth = pl.DataFrame(
        {"user": [1, 1, 1], "item": [2**63 + 5, 7, 2**64 - 1]},
        schema={"user": pl.Int64, "item": pl.UInt64},
    )
    recs = pl.DataFrame({"user": [1, 1, 1], "item": [5, 7, -1], "score": [1.0, 0.5, 0.9]})
    res = receval.evaluate(truth, recs, ["mrr", "recall@3"])
    assert res.means == {"mrr": 1 / 3, "recall@3": 1 / 3}
    # both sides unsigned past 2^63: matched as they are
    recs_u = pl.DataFrame(
        {"user": [1, 1], "item": [2**64 - 1, 2**63 + 5], "score": [1.0, 0.5]},
        schema={"user": pl.Int64, "item": pl.UInt64, "score": pl.Float64},
    )
    assert receval.evaluate(truth, recs_u, "recall@2")["recall@2"] == 2 / 3
    assert receval.evaluate(truth, recs_u, "mrr", ties="trec")["mrr"] == 1.0
