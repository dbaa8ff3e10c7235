"""receval.compare: alignment of users, tests, corrections, intervals, global metrics, errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

import receval
import receval.comparison.data
from receval import InputError
from receval.comparison.stats import bootstrap_ci, correct

# 12 users; u12 has no relevant item (left out), u11 has no recs in model "b" (scored 0),
# "c" never recommends for u10 and u11, and evaluate(no_recs="skip") then leaves them out.
USERS = [f"u{i:02d}" for i in range(1, 13)]
TRUTH = pl.DataFrame(
    {
        "user": [u for u in USERS for _ in range(2)],
        "item": [f"i{j}" for _ in USERS for j in (1, 2)],
        "relevance": [0.0 if u == "u12" else r for u in USERS for r in (1.0, 2.0)],
    }
)


def _recs(seed: int, skip: tuple[str, ...] = ()) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for u in USERS:
        if u in skip:
            continue
        items = ["i1", "i2", "x1", "x2", "x3"]
        scores = rng.integers(0, 4, size=len(items)).astype(float)  # ties
        rows += [(u, i, s) for i, s in zip(items, scores, strict=True)]
    users, items, scores = zip(*rows, strict=True)
    return pl.DataFrame({"user": users, "item": items, "score": scores})


RUNS = {"a": _recs(0), "b": _recs(1, skip=("u11",)), "c": _recs(2, skip=("u10", "u11"))}
METRICS = ["ndcg@3", "mrr", "recall@2"]


def test_table_shape_columns_and_means() -> None:
    cmp = receval.compare(TRUTH, RUNS, METRICS)
    t = cmp.table
    assert t.columns == [
        "model", "metric", "mean", "ci_low", "ci_high", "p_value", "p_adjusted",
        "significant", "effect_size", "n_users", "n_paired", "note",
    ]  # fmt: skip
    assert t.height == 9
    assert t["model"].to_list() == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    assert t["metric"].to_list() == ["ndcg@3", "mrr", "recall@2"] * 3
    assert cmp.baseline == "a" and cmp.models == ("a", "b", "c")
    for name, recs in RUNS.items():
        res = receval.evaluate(TRUTH, recs, METRICS)
        assert cmp.results[name].means == res.means
        for m in METRICS:
            assert cmp.cell(name, m)["mean"] == res[m]
    base = t.filter(pl.col("model") == "a")
    assert base["p_value"].null_count() == 3 and base["note"].to_list() == ["baseline"] * 3


@pytest.mark.parametrize("test", ["paired_t", "wilcoxon"])
def test_p_values_match_scipy_on_aligned_users(test: str) -> None:
    cmp = receval.compare(TRUTH, RUNS, METRICS, test=test, correction=None)  # type: ignore[arg-type]
    for name in ("b", "c"):
        for m in METRICS:
            base = cmp.results["a"].per_user.select("user", pl.col(m).alias("x"))
            other = cmp.results[name].per_user.select("user", pl.col(m).alias("y"))
            both = base.join(other, on="user").drop_nulls().sort("user")
            x, y = both["y"].to_numpy(), both["x"].to_numpy()
            d = x - y
            if not d.any():
                want = 1.0
            elif test == "paired_t":
                want = stats.ttest_rel(x, y).pvalue
            else:
                want = stats.wilcoxon(d).pvalue
            row = cmp.cell(name, m)
            assert row["p_value"] == pytest.approx(want, rel=1e-12)
            assert row["p_adjusted"] == row["p_value"]
            assert row["n_paired"] == both.height == 11
            sd = d.std(ddof=1)
            assert row["effect_size"] == pytest.approx(d.mean() / sd if sd else 0.0, rel=1e-12)


def test_skipped_users_are_unpaired_and_reported() -> None:
    cmp = receval.compare(TRUTH, RUNS, ["mrr"], no_recs="skip", baseline="b")
    a, b, c = (cmp.cell(x, "mrr") for x in "abc")
    assert (a["n_users"], b["n_users"], c["n_users"]) == (11, 10, 9)
    assert a["n_paired"] == 10 and c["n_paired"] == 9
    assert a["note"] == "1 user(s) only in a, 0 only in b: left out of the test"
    assert c["note"] == "0 user(s) only in c, 1 only in b: left out of the test"
    assert b["note"] == "baseline"


def test_correction_across_models_and_metrics() -> None:
    raw = receval.compare(TRUTH, RUNS, METRICS, correction=None).table
    for method in ("holm", "bonferroni", "bh"):
        t = receval.compare(TRUTH, RUNS, METRICS, correction=method).table  # type: ignore[arg-type]
        p = raw["p_value"].fill_null(math.nan).to_numpy()
        want = correct(p, method)  # type: ignore[arg-type]
        got = t["p_adjusted"].fill_null(math.nan).to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert np.isnan(got[:3]).all()  # baseline rows
        sig = t["significant"].to_list()
        assert sig[3:] == [bool(x <= 0.05) for x in want[3:]]


def test_bootstrap_intervals_are_the_per_user_bootstrap() -> None:
    cmp = receval.compare(TRUTH, RUNS, METRICS, ci="percentile", n_resamples=500, seed=3)
    for name in RUNS:
        for m in METRICS:
            values = cmp.results[name].per_user[m].drop_nulls().to_numpy()
            low, high = bootstrap_ci(values, method="percentile", n_resamples=500, seed=3)[0]
            row = cmp.cell(name, m)
            assert row["ci_low"] == pytest.approx(low, rel=1e-12)
            assert row["ci_high"] == pytest.approx(high, rel=1e-12)
            assert row["ci_low"] <= row["mean"] <= row["ci_high"]


def test_seeded_reproducible() -> None:
    kw = {"test": "randomization", "n_permutations": 500, "seed": 7}
    t1 = receval.compare(TRUTH, RUNS, METRICS, **kw).table  # type: ignore[arg-type]
    t2 = receval.compare(TRUTH, RUNS, METRICS, **kw).table  # type: ignore[arg-type]
    assert t1.equals(t2)
    t3 = receval.compare(TRUTH, RUNS, METRICS, **{**kw, "seed": 8}).table  # type: ignore[arg-type]
    assert not t1.equals(t3)


def test_identical_models_give_p_one_and_zero_effect() -> None:
    runs = {"a": RUNS["a"], "same": RUNS["a"].sample(fraction=1.0, shuffle=True, seed=1)}
    for test in ("paired_t", "wilcoxon", "randomization"):
        cmp = receval.compare(TRUTH, runs, METRICS, test=test)  # type: ignore[arg-type]
        row = cmp.cell("same", "ndcg@3")
        assert row["p_value"] == 1.0 and row["effect_size"] == 0.0
        assert row["significant"] is False


def test_randomization_exact_on_small_user_set() -> None:
    truth = {u: {"a": 1} for u in range(1, 7)}
    good = {u: {"a": 1.0, "x": 0.5} for u in range(1, 7)}
    bad = {u: {"x": 1.0, "a": 0.5} for u in range(1, 7)}
    cmp = receval.compare(truth, {"bad": bad, "good": good}, "mrr", test="randomization")
    assert cmp.cell("good", "mrr")["p_value"] == 2 / 64


def test_micro_average_is_mean_only() -> None:
    cmp = receval.compare(TRUTH, RUNS, ["recall(average=micro)@2", "recall@2"])
    row = cmp.cell("b", "recall(average=micro)@2")
    assert row["ci_low"] is None and row["p_value"] is None
    assert row["note"] == receval.comparison.data.NOTE_WEIGHTED
    assert row["mean"] == cmp.results["b"]["recall(average=micro)@2"]
    assert cmp.cell("b", "recall@2")["p_value"] is not None
    # the correction counts only the real tests (2 of them)
    t = cmp.table.filter(pl.col("p_value").is_not_null())
    assert t.height == 2


def test_global_metric_kind_without_per_user_column() -> None:
    from receval.comparison.compare import _kind

    res = receval.evaluate(TRUTH, RUNS["a"], ["mrr"])
    metric = receval.parse_metric("mrr")
    no_col = receval.Result(
        res._metrics, res.means, res.per_user.select("user"), res.counts, res.settings
    )
    assert _kind({"a": no_col}, metric, "user") == "global"
    assert _kind({"a": res}, metric, "user") == "per_user"
    wrong_mean = receval.Result(
        res._metrics, {"mrr": 0.123}, res.per_user, res.counts, res.settings
    )
    assert _kind({"a": wrong_mean}, metric, "user") == "weighted"


def test_single_run_gives_intervals_only() -> None:
    cmp = receval.compare(TRUTH, {"only": RUNS["a"]}, METRICS)
    assert cmp.table["p_value"].null_count() == 3
    assert cmp.table["ci_low"].null_count() == 0


def test_truth_file_read_once_and_options_passed(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    TRUTH.rename({"user": "uid"}).write_parquet(path)
    runs = {k: v.rename({"user": "uid"}) for k, v in RUNS.items()}
    cmp = receval.compare(path, runs, ["mrr"], user_col="uid", ties="first")
    assert cmp.settings["evaluate"]["ties"] == "first"
    assert (
        cmp.cell("a", "mrr")["mean"]
        == receval.evaluate(path, runs["a"], "mrr", user_col="uid", ties="first")["mrr"]
    )


def test_inputs_not_modified() -> None:
    runs = {k: v.clone() for k, v in RUNS.items()}
    truth = TRUTH.clone()
    receval.compare(truth, runs, METRICS)
    assert truth.equals(TRUTH)
    assert all(runs[k].equals(RUNS[k]) for k in RUNS)


def test_progress_is_quiet_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    receval.compare(TRUTH, RUNS, ["mrr"])
    out, err = capsys.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"runs": {}},
            r"runs must be a non-empty mapping \{model name: recommendations\}; got "
            r"dict \(empty\)",
        ),
        ({"runs": [1]}, r"runs must be a non-empty mapping .*; got list\."),
        ({"runs": {"": RUNS["a"]}}, r"run names must be non-empty strings; got \[''\]"),
        ({"baseline": "zzz"}, r"baseline must be one of the runs \('a', 'b', 'c'\); got 'zzz'"),
        ({"test": "ttest"}, r"test must be one of paired_t, wilcoxon, randomization; got 'ttest'"),
        (
            {"correction": "fdr"},
            r"correction must be one of holm, bonferroni, bh or None; got "
            r"'fdr'",
        ),
        ({"alpha": 1.5}, r"alpha must be a number strictly between 0 and 1; got 1.5"),
        ({"confidence": 0}, r"confidence must be a number strictly between 0 and 1; got 0"),
        ({"ci": "normal"}, r"ci must be one of bca, percentile; got 'normal'"),
        ({"n_resamples": 1}, r"n_resamples must be an integer from 2 to 1,000,000; got 1"),
        ({"n_permutations": 0}, r"n_permutations must be an integer from 1 to 10,000,000; got 0"),
        ({"seed": -1}, r"seed must be an integer from 0 to 2\^64 - 1 .*; got -1 \(int\)"),
        ({"ties": "random"}, r"ties must be one of"),
    ],
)
def test_errors(kwargs: dict[str, object], match: str) -> None:
    runs = kwargs.pop("runs", RUNS)
    with pytest.raises(InputError, match=match):
        receval.compare(TRUTH, runs, ["mrr"], **kwargs)  # type: ignore[arg-type]


def test_unknown_metric_error() -> None:
    with pytest.raises(receval.MetricError, match=r"unknown metric 'ndgc'"):
        receval.compare(TRUTH, RUNS, ["ndgc@10"])
