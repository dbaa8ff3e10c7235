"""The shared checks of option values (receval._errors.check_choice and check_integer) and the
exact messages of the options that use them, for the options no other test pins to the letter.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval._errors import InputError, check_choice, check_integer
from receval.cli import app
from receval.comparison.stats import correct, paired_test
from receval.engines.spark import check_spark_options

U = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [1.0, 1.0, 1.0]])
V = np.array([[2.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 0.0]])
TRUTH = pl.DataFrame({"user": [0, 1, 2], "item": [1, 2, 3], "relevance": [1, 1, 2]})


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def test_check_choice() -> None:
    check_choice("ties", "first", ("first", "trec"))
    with pytest.raises(InputError, match=exactly("ties must be one of first, trec; got 'x'.")):
        check_choice("ties", "x", ("first", "trec"))
    with pytest.raises(InputError, match=exactly("c must be one of a or None; got 3.")):
        check_choice("c", 3, ("a",), more=" or None")
    with pytest.raises(InputError, match=exactly("ids must be one of 'a'; got 'b'.")):
        check_choice("ids", "b", ("a",), listed="'a'")


@pytest.mark.parametrize("value", [0, -1, 2.0, "3", True, None])
def test_check_integer_refuses(value: Any) -> None:
    with pytest.raises(InputError, match=exactly(f"k must be an integer >= 1; got {value!r}.")):
        check_integer("k", value, 1)


def test_check_integer_returns_an_int() -> None:
    assert check_integer("k", 3, 1) == 3
    assert check_integer("seed", 0, 0) == 0
    n = check_integer("k", np.int64(4), 1, kinds=(int, np.integer))
    assert n == 4 and type(n) is int
    with pytest.raises(InputError, match=r"^k must be an integer >= 1; got "):
        check_integer("k", np.int64(4), 1)  # numpy integers only where kinds says so
    with pytest.raises(InputError, match=exactly("n must be an integer >= 0 or None; got -1.")):
        check_integer("n", -1, 0, more=" or None")


def test_factor_model_similarity() -> None:
    msg = "similarity must be one of dot, cosine; got 'euclidean'."
    with pytest.raises(InputError, match=exactly(msg)):
        receval.FactorModel(U, V, similarity="euclidean")  # type: ignore[arg-type]


def test_excluded_truth() -> None:
    msg = "excluded_truth must be one of drop, raise; got 'keep'."
    with pytest.raises(InputError, match=exactly(msg)):
        receval.evaluate(TRUTH, receval.FactorModel(U, V), "ndcg@2", excluded_truth="keep")


@pytest.mark.parametrize("k", [0, 2.5, True])
def test_topk_k(k: Any) -> None:
    with pytest.raises(InputError, match=exactly(f"k must be an integer >= 1; got {k!r}.")):
        receval.topk(receval.FactorModel(U, V), k)


def test_spark_partitions() -> None:
    assert check_spark_options(None, np.int64(3)) == 3
    with pytest.raises(InputError, match=exactly("partitions must be an integer >= 1; got 0.")):
        check_spark_options(None, 0)


def test_stats_test_and_correction() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0])
    msg = "test must be one of paired_t, wilcoxon, randomization; got 'sign'."
    with pytest.raises(InputError, match=exactly(msg)):
        paired_test("sign", a, b)  # type: ignore[arg-type]
    msg = "correction must be one of holm, bonferroni, bh or None; got 'fdr'."
    with pytest.raises(InputError, match=exactly(msg)):
        correct(np.array([0.1, 0.2]), "fdr")  # type: ignore[arg-type]


def test_cli_evaluate_format(tmp_path: Path) -> None:
    config = 'truth = "t"\nrecs = "r"\nmetrics = ["mrr"]\nformat = "xml"\n'
    (tmp_path / "eval.toml").write_text(config)
    result = CliRunner().invoke(app, ["evaluate", "--config", str(tmp_path / "eval.toml")])
    assert result.exit_code == 2
    assert "format must be one of table, json, csv; got 'xml'." in " ".join(result.stderr.split())
