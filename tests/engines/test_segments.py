"""Results by segment (``evaluate(..., segments=...)``, ``compare(..., segments=...)``).

Every segment's numbers are checked against the evaluation of that segment's rows alone,
built here by hand (the users or items of each segment computed in plain Python from the
definitions in docs/segments.md), never against the segment code itself.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval.cli import app
from receval.comparison.stats import correct
from receval.data.segments import read_segment_file
from receval.datasets import make_interactions, make_train

METRICS = ["ndcg@10", "recall@5", "mrr", "auc", "coverage@10"]
runner = CliRunner()


@pytest.fixture(scope="module")
def data() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    d = make_interactions(240, n_recs=15, n_items=400, seed=3)
    other = make_interactions(240, n_recs=15, n_items=400, seed=4)
    train = make_train(200, n_items=400, mean_items=8, seed=3)
    return d.truth, d.recs, other.recs, train


def quiet_evaluate(*args: object, **kwargs: object) -> receval.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return receval.evaluate(*args, **kwargs)  # type: ignore[arg-type]


def activity_of(n: int) -> str:
    """The activity bins of docs/segments.md, written out."""
    if n == 0:
        return "0"
    if n < 5:
        return "1-4"
    if n < 20:
        return "5-19"
    if n < 100:
        return "20-99"
    return "100+"


def popularity_of(train: pl.DataFrame) -> dict[int, str]:
    """head / mid / tail from the definition: items from the most popular down, share
    before = share of train rows held by strictly more popular items."""
    counts = Counter(train["item"].to_list())
    total = sum(counts.values())
    out = {}
    for item, n in counts.items():
        before = sum(c for c in counts.values() if c > n) / total
        out[item] = "head" if before < 0.2 else ("tail" if before >= 0.8 else "mid")
    return out


def check_segment(res: receval.Result, name: str, label: str | None, alone: receval.Result,
                  metrics: list[str]) -> None:  # fmt: skip
    rows = res.by_segment.filter(
        (pl.col("segmentation") == name)
        & (pl.col("segment").is_null() if label is None else pl.col("segment") == label)
    )
    assert rows["metric"].to_list() == [receval.parse_metric(m).canonical for m in metrics]
    for row in rows.iter_rows(named=True):
        want = alone[row["metric"]]
        assert row["value"] == want or (row["value"] is None and math.isnan(want))
    seg = res.segments[name, label]
    assert seg.means == alone.means
    assert_frame_equal(seg.per_user, alone.per_user)
    assert seg.counts == alone.counts


def test_user_segments_equal_each_segment_alone(data) -> None:
    truth, recs, _, train = data
    res = quiet_evaluate(truth, recs, METRICS, train=train, segments=["activity", "cold_warm"])
    whole = quiet_evaluate(truth, recs, METRICS, train=train)
    assert res.means == whole.means  # the whole run is unchanged
    assert_frame_equal(res.per_user, whole.per_user)
    n_train = Counter(train["user"].to_list())
    users = truth["user"].unique().to_list()
    by_bin = {u: activity_of(n_train.get(u, 0)) for u in users}
    labels = res.by_segment.filter(pl.col("segmentation") == "activity")["segment"].unique(
        maintain_order=True
    )
    assert labels.to_list() == ["0", "1-4", "5-19", "20-99", "100+"]
    for label in labels:
        members = [u for u, b in by_bin.items() if b == label]
        if not members:
            rows = res.by_segment.filter(pl.col("segment") == label)
            assert rows["value"].null_count() == rows.height
            assert rows["users"].to_list() == [0] * rows.height
            assert set(rows["note"]) == {"no truth rows"}
            continue
        alone = quiet_evaluate(
            truth.filter(pl.col("user").is_in(list(members))),
            recs.filter(pl.col("user").is_in(list(members))),
            METRICS, train=train,
        )  # fmt: skip
        check_segment(res, "activity", label, alone, METRICS)
    for label, keep in (("cold", lambda u: u not in n_train), ("warm", lambda u: u in n_train)):
        members = [u for u in users if keep(u)]
        alone = quiet_evaluate(
            truth.filter(pl.col("user").is_in(list(members))),
            recs.filter(pl.col("user").is_in(list(members))),
            METRICS, train=train,
        )  # fmt: skip
        check_segment(res, "cold_warm", label, alone, METRICS)


def test_item_segments_count_only_the_segments_truth_items(data) -> None:
    truth, recs, _, train = data
    res = quiet_evaluate(truth, recs, METRICS, train=train, segments="popularity")
    pop = popularity_of(train)
    kept = [m for m in METRICS if not m.startswith("coverage")]  # beyond: not by item segment
    for label in ("head", "mid", "tail"):
        items = [i for i in truth["item"].unique() if pop.get(i, "tail") == label]
        part = truth.filter(pl.col("item").is_in(list(items)))
        alone = quiet_evaluate(
            part, recs.filter(pl.col("user").is_in(list(part["user"].unique()))), kept, train=train
        )
        check_segment(res, "popularity", label, alone, kept)


def test_table_dict_and_truth_column_segments(data) -> None:
    truth, recs, _, _ = data
    users = truth["user"].unique().sort()
    groups = pl.DataFrame({"user": users, "group": ["a" if u % 3 else "b" for u in users]})
    listed = groups.head(users.len() - 7)  # 7 users not listed: their own segment
    res = quiet_evaluate(truth, recs, METRICS[:3], segments=listed)
    for label in ("a", "b", None):
        members = (
            listed.filter(pl.col("group") == label)["user"]
            if label is not None
            else users.filter(~users.is_in(list(listed["user"])))
        )
        alone = quiet_evaluate(
            truth.filter(pl.col("user").is_in(list(members))),
            recs.filter(pl.col("user").is_in(list(members))), METRICS[:3],
        )  # fmt: skip
        check_segment(res, "group", label, alone, METRICS[:3])
    as_dict = quiet_evaluate(
        truth, recs, METRICS[:3], segments=dict(zip(listed["user"], listed["group"], strict=True))
    )
    assert_frame_equal(as_dict.by_segment.drop("segmentation"), res.by_segment.drop("segmentation"))
    with_column = truth.join(groups, on="user")
    by_column = quiet_evaluate(with_column, recs, METRICS[:3], segments="group")
    full = quiet_evaluate(truth, recs, METRICS[:3], segments=groups)
    assert_frame_equal(by_column.by_segment, full.by_segment)


def test_item_table_segments_and_unlisted_items(data) -> None:
    truth, recs, _, _ = data
    items = truth["item"].unique().sort()
    genre = pl.DataFrame(
        {"item": items[:100], "genre": ["x" if i % 2 else "y" for i in items[:100]]}
    )
    res = quiet_evaluate(truth, recs, ["ndcg@10", "coverage@10"], segments=genre)
    assert set(res.by_segment["metric"]) == {"ndcg@10"}  # beyond metrics: not by item
    unlisted = truth.filter(~pl.col("item").is_in(list(genre["item"])))
    alone = quiet_evaluate(
        unlisted, recs.filter(pl.col("user").is_in(list(unlisted["user"].unique()))), ["ndcg@10"]
    )
    check_segment(res, "genre", None, alone, ["ndcg@10"])


def test_metric_undefined_on_a_segment_is_a_counted_note() -> None:
    truth = pl.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 20, 21]})
    recs = pl.DataFrame(
        {"user": [1, 1, 2, 2], "item": [10, 12, 98, 99], "score": [0.9, 0.1, 0.5, 0.4]}
    )
    res = quiet_evaluate(truth, recs, ["mrr", "auc"], segments={1: "hit", 2: "miss"})
    miss = res.by_segment.filter(pl.col("segment") == "miss")
    auc = miss.filter(pl.col("metric") == "auc").row(0, named=True)
    assert auc["value"] is None and auc["users"] == 0
    assert "auc is undefined on these rows" in auc["note"]
    assert miss.filter(pl.col("metric") == "mrr")["value"].to_list() == [0.0]
    assert "auc" not in res.segments["segment", "miss"].means
    assert res.segments["segment", "hit"]["auc"] == 1.0


def test_model_source_user_segments(data) -> None:
    truth, _, _, train = data
    rng = np.random.default_rng(0)
    model = receval.FactorModel(
        rng.standard_normal((240, 8)), rng.standard_normal((400, 8)),
        user_ids=np.arange(240), item_ids=np.arange(400),
    )  # fmt: skip
    res = quiet_evaluate(
        truth, model, ["ndcg@10", "mrr"], exclude=train, train=train, segments="cold_warm"
    )
    seen = set(train["user"].to_list())
    for label in ("cold", "warm"):
        keep = truth.filter(pl.col("user").is_in(seen) == (label == "warm"))
        alone = quiet_evaluate(keep, model, ["ndcg@10", "mrr"], exclude=train, train=train)
        check_segment(res, "cold_warm", label, alone, ["ndcg@10", "mrr"])


def test_compare_by_segment_tests_each_segment_and_corrects_over_all(data) -> None:
    truth, a, b, train = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = receval.compare(
            truth, {"a": a, "b": b}, ["ndcg@10", "mrr", "auc"], train=train,
            segments=["cold_warm", "popularity"], n_resamples=200,
        )  # fmt: skip
        seen = set(train["user"].to_list())
        warm = truth.filter(pl.col("user").is_in(seen))
        alone = receval.compare(
            warm, {"a": a, "b": b}, ["ndcg@10", "mrr", "auc"], train=train, n_resamples=200
        )
    table = cmp.by_segment
    assert table is not None
    assert table.columns[:3] == ["segmentation", "kind", "segment"]
    rows = table.filter(pl.col("segment") == "warm").drop("segmentation", "kind", "segment")
    drop = ["p_adjusted", "significant"]  # corrected over a different set of tests
    assert_frame_equal(rows.drop(drop), alone.table.drop(drop))
    want = correct(table["p_value"].fill_null(math.nan).to_numpy(), "holm")
    got = table["p_adjusted"].fill_null(math.nan).to_numpy()
    np.testing.assert_array_equal(np.isnan(want), np.isnan(got))
    np.testing.assert_array_equal(want[~np.isnan(want)], got[~np.isnan(got)])
    assert cmp.to_dict()["by_segment"][0]["segmentation"] == "cold_warm"
    md = cmp.to_markdown()
    assert "By segment (each segment's runs tested against the baseline" in md
    assert "| popularity | tail | b | ndcg@10 |" in md


def test_report_has_segment_table_and_plot(data, tmp_path: Path) -> None:
    truth, a, b, train = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = receval.compare(
            truth, {"a": a, "b": b}, ["ndcg@10"], train=train, segments="activity",
            n_resamples=100,
        )  # fmt: skip
    path = cmp.to_html(tmp_path / "r.html", curves=False)
    text = path.read_text()
    assert 'id="segments"' in text
    assert 'alt="By segment: activity"' in text
    fig = receval.plot.segments(cmp, "activity")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [
        "0", "1-4", "5-19", "20-99", "100+",
    ]  # fmt: skip
    with pytest.raises(receval.InputError, match=r"segmentation must be one of \['activity'\]"):
        receval.plot.segments(cmp, "nope")


@pytest.mark.parametrize(
    ("segments", "kwargs", "message"),
    [
        (
            "activity",
            {},
            r"segments='activity' is computed from the training interactions: pass train=",
        ),
        (
            "nope",
            {},
            r"segments: 'nope' is neither a built-in segmentation "
            r"\(activity, cold_warm, popularity\) nor a column of truth",
        ),
        ([], {}, r"segments is an empty list"),
        (3, {}, r"segments must be a built-in name .* got int"),
        (
            pl.DataFrame({"user": [1], "item": [2], "g": ["x"]}),
            {},
            r"a segment table must have two columns",
        ),
        (
            pl.DataFrame({"user": [1, 1], "g": ["x", "y"]}),
            {},
            r"1 user\(s\) have more than one value of 'g'; expected one segment per user. "
            r"First \(user, segments\): \[\(1, \['x', 'y'\]\)\]",
        ),
        (
            pl.DataFrame({"user": [1, 2], "g": ["x", None]}),
            {},
            r"table column 'g' has 1 null segment\(s\)",
        ),
        (
            ["cold_warm", "cold_warm"],
            {"train": "T"},
            r"segmentation name\(s\) \['cold_warm'\] given more than once",
        ),
        (
            "cold_warm",
            {"engine": "stream", "train": "T"},
            r"segments= runs with the local engine .* got engine='stream'",
        ),
    ],
)
def test_bad_segments(data, segments, kwargs, message) -> None:
    truth, recs, _, train = data
    kwargs = {k: (train if v == "T" else v) for k, v in kwargs.items()}
    with pytest.raises(receval.InputError, match=message):
        quiet_evaluate(truth, recs, ["mrr"], segments=segments, **kwargs)


def test_result_to_dict_and_json_carry_segments(data) -> None:
    truth, recs, _, _ = data
    res = quiet_evaluate(truth, recs, ["mrr"], segments={u: "all" for u in range(240)})
    doc = json.loads(res.to_json())
    assert doc["by_segment"] == res.by_segment.to_dicts()
    assert doc["by_segment"][0]["value"] == res["mrr"]


def test_cli_evaluate_and_compare_segments(data, tmp_path: Path) -> None:
    truth, a, b, train = data
    paths = {}
    for name, frame in (("truth", truth), ("a", a), ("b", b), ("train", train)):
        paths[name] = tmp_path / f"{name}.parquet"
        frame.write_parquet(paths[name])
    groups = tmp_path / "groups.csv"
    pl.DataFrame(
        {"user": range(240), "tier": ["gold" if u < 60 else "std" for u in range(240)]}
    ).write_csv(groups)
    args = ["evaluate", "--truth", str(paths["truth"]), "--recs", str(paths["a"]), "-m", "ndcg@10",
            "-m", "mrr", "--train", str(paths["train"]), "--segments", "cold_warm",
            "--segments", str(groups)]  # fmt: skip
    out = runner.invoke(app, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    want = quiet_evaluate(truth, a, ["ndcg@10", "mrr"], train=train,
                          segments=["cold_warm", pl.read_csv(groups)])  # fmt: skip
    assert doc["by_segment"] == want.by_segment.to_dicts()
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "by user segment: cold_warm" in table.stdout
    assert "by user segment: tier" in table.stdout
    csv = runner.invoke(app, [*args, "--format", "csv"])
    lines = csv.stdout.splitlines()
    assert lines[0] == "segmentation,kind,segment,metric,value,users"
    assert lines[1].startswith(",,,ndcg@10,")
    assert any(line.startswith("tier,user,gold,mrr,") for line in lines)
    cmp_args = [
        "compare", "--truth", str(paths["truth"]), "--run", f"a={paths['a']}", "--run",
        f"b={paths['b']}", "-m", "mrr", "--train", str(paths["train"]), "--segments",
        "popularity", "--format", "markdown", "--resamples", "100",
    ]  # fmt: skip
    cmp = runner.invoke(app, cmp_args)
    assert cmp.exit_code == 0, cmp.output
    assert "| popularity | head | b | mrr |" in cmp.stdout


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("groups.parquet", b"not a parquet file", "could not be read as Parquet: "),
        ("groups.csv", b"user,tier\n1,\xff\xfe\n", "could not be read as CSV: "),
        ("groups.tsv", b"", "could not be read as TSV: "),
        ("groups.json", b'{"user": 1}', ": expected a .parquet, .csv or .tsv file."),
    ],
)
def test_an_unreadable_segments_file_is_an_input_error(
    data, tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    with pytest.raises(receval.InputError) as caught:
        read_segment_file(bad)
    assert str(caught.value).startswith(f"--segments file {str(bad)!r}")
    assert message in str(caught.value)
    truth, recs, _, _ = data
    truth.write_parquet(tmp_path / "truth.parquet")
    recs.write_parquet(tmp_path / "recs.parquet")
    args = ["evaluate", "--truth", str(tmp_path / "truth.parquet"), "--recs",
            str(tmp_path / "recs.parquet"), "-m", "mrr", "--segments", str(bad)]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 2, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert out.stderr.startswith(f"error: --segments file {str(bad)!r}")
    assert message in out.stderr
    assert "Traceback" not in out.output


def test_config_segments_read_files_relative_to_the_config(data, tmp_path: Path) -> None:
    truth, recs, _, train = data
    sub = tmp_path / "conf"
    sub.mkdir()
    for name, frame in (("truth", truth), ("recs", recs), ("train", train)):
        frame.write_parquet(sub / f"{name}.parquet")
    pl.DataFrame(
        {"user": range(240), "tier": ["g" if u < 99 else "s" for u in range(240)]}
    ).write_csv(sub / "tiers.csv")
    (sub / "eval.toml").write_text(
        'truth = "truth.parquet"\nrecs = "recs.parquet"\ntrain = "train.parquet"\n'
        'metrics = ["mrr"]\nsegments = ["cold_warm", "tiers.csv"]\nformat = "json"\n'
    )
    out = runner.invoke(app, ["evaluate", "--config", str(sub / "eval.toml")])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)["by_segment"]
    assert {r["segmentation"] for r in got} == {"cold_warm", "tier"}
    bad = sub / "bad.toml"
    bad.write_text(
        'truth = "truth.parquet"\nrecs = "recs.parquet"\nmetrics = ["mrr"]\nsegments = 3\n'
    )
    out = runner.invoke(app, ["evaluate", "--config", str(bad)])
    assert out.exit_code != 0
    assert "segments must be a segmentation or a list of them" in out.output


def test_activity_bins_at_every_bound_without_a_deprecation_warning() -> None:
    # the bins came from Polars' deprecated Expr.cut, whose DeprecationWarning reached callers
    from receval.data.segments import activity_segments

    counts = [0, 1, 2, 4, 5, 19, 20, 99, 100, 101, 5000]
    users = pl.Series("user", list(range(len(counts))))
    train = pl.DataFrame(
        {"user": [u for u, n in enumerate(counts) for _ in range(n)]}, schema={"user": pl.Int64}
    ).with_row_index("item")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = activity_segments(users, train).sort("user")
    assert got["segment"].dtype == pl.String
    assert got["segment"].to_list() == [activity_of(n) for n in counts]
    truth = pl.DataFrame({"user": users, "item": [0] * len(counts)})
    recs = truth.with_columns(pl.lit(1.0).alias("score"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = receval.evaluate(truth, recs, ["mrr"], train=train, segments="activity")
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)], caught
    users_by_bin = dict(res.by_segment.select("segment", "users").iter_rows())
    assert users_by_bin == {"0": 1, "1-4": 3, "5-19": 2, "20-99": 2, "100+": 3}
