"""Bad options of compare and of the report writers (issue 29, item 8): an InputError naming the
argument, never a ValueError from a format string, a MemoryError or a numpy error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import receval
from receval.comparison.stats import MAX_PERMUTATIONS, MAX_RESAMPLES, bootstrap_ci

TRUTH = {u: {"a": 1, "b": 1} for u in range(6)}
RUNS = {
    "x": {u: {"a": 0.9, "x": 0.5} for u in range(6)},
    "y": {u: {"x": 0.9, "b": 0.5} for u in range(6)},
}


@pytest.fixture(scope="module")
def cmp() -> receval.Comparison:
    return receval.compare(TRUTH, RUNS, ["ndcg@2", "mrr"], n_resamples=50)


@pytest.mark.parametrize("digits", [-1, 1.5, True, "4", None, 10**6, 18])
def test_report_digits(cmp: receval.Comparison, digits: object, tmp_path: Path) -> None:
    match = rf"^digits must be an integer from 0 to 17 \(decimals\); got {digits!r}\.$"
    for write in (
        lambda: cmp.to_markdown(digits=digits),  # type: ignore[arg-type]
        lambda: cmp.to_latex(digits=digits),  # type: ignore[arg-type]
        lambda: receval.comparison.report.text_table(cmp, digits=digits),  # type: ignore[arg-type]
        lambda: receval.comparison.report.html_tables(cmp, digits=digits),  # type: ignore[arg-type]
        lambda: cmp.to_html(tmp_path / "r.html", digits=digits),  # type: ignore[arg-type]
    ):
        with pytest.raises(receval.InputError, match=match):
            write()
    assert not (tmp_path / "r.html").exists()  # refused before anything is drawn or written


@pytest.mark.parametrize("digits", [0, 17, np.int64(3)])
def test_report_digits_in_range(cmp: receval.Comparison, digits: int) -> None:
    md = cmp.to_markdown(digits=digits)
    mean = cmp.cell("y", "mrr")["mean"]
    assert f"{mean:.{int(digits)}f}" in md
    assert cmp.to_latex(digits=digits).count("\\\\") > 2


@pytest.mark.parametrize("n", [10**12, MAX_RESAMPLES + 1, 1, 2.5, "100", True])
def test_n_resamples(n: object) -> None:
    with pytest.raises(receval.InputError, match=r"^n_resamples must be an integer from 2 to "):
        receval.compare(TRUTH, RUNS, "mrr", n_resamples=n)  # type: ignore[arg-type]
    with pytest.raises(receval.InputError, match=r"^n_resamples must be an integer from 2 to "):
        bootstrap_ci(np.ones(3), n_resamples=n)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [10**12, MAX_PERMUTATIONS + 1, 0, "10"])
def test_n_permutations(n: object) -> None:
    match = r"^n_permutations must be an integer from 1 to "
    with pytest.raises(receval.InputError, match=match):
        receval.compare(TRUTH, RUNS, "mrr", test="randomization", n_permutations=n)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", ["0.9", None, 1.0, 0, float("nan"), True])
def test_confidence(confidence: object) -> None:
    with pytest.raises(receval.InputError, match=r"^confidence must be a number strictly between"):
        receval.compare(TRUTH, RUNS, "mrr", confidence=confidence)  # type: ignore[arg-type]


def test_limits_are_accepted() -> None:
    """The bounds themselves are allowed (here on 6 users, quickly)."""
    low, high = bootstrap_ci(np.arange(6.0), n_resamples=MAX_RESAMPLES, method="percentile")[0]
    assert 0.0 <= low < 2.5 < high <= 5.0
