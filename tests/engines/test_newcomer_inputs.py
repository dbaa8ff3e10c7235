"""A newcomer's friction with inputs (issue 18, points 5-7).

5. Recommendations of items the user already has in ``train``: counted
   (``counts.recs_in_train``, checked against a brute-force count) and named in a warning; train
   read once; the sharded engine reports the same.
6. A grade-like truth column (``rating``) left unused while every row gets relevance 1: a
   warning naming it and the fix; ``settings["relevance_col"]`` and the CLI summary say which
   relevance was used.
7. Inputs: ``input_format=`` / ``--input-format`` names a file's format; RecBole ``.inter``
   files are TSV with typed headers; ``columns=`` / ``--columns`` gives each input its own id
   column names, with the same result as renamed inputs.
"""

from __future__ import annotations

import json
import random
import re
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval import InputError
from receval.cli import app
from receval.engines.shard import evaluate_sharded

runner = CliRunner()

IN_TRAIN = (
    r"^{rows} recommendation rows \({users} users\) are items the user already has in train; "
    r"exclude them before evaluating, or keep them if recommending known items is intended "
    r"\(result\.counts\.recs_in_train counts them\)\.$"
)
UNUSED = (
    r"^truth column\(s\) {names} look like relevance grades but are not used: without "
    r"relevance_col and without a column 'relevance', every truth row has relevance 1\. "
    r"Pass relevance_col='{first}' \(CLI --relevance-col {first}\) to use it\.$"
)


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def no_warning() -> Any:
    """A context in which any warning is an error."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


def make_data(seed: int, ids: str = "str") -> dict[str, pl.DataFrame]:
    """Truth (graded), recs (ties, users outside truth), train (repeated pairs, users outside
    truth and recs) and items, with string or integer ids."""
    rng = random.Random(seed)

    def uid(u: int) -> Any:
        return f"u{u}" if ids == "str" else 10 * u + 3

    def iid(i: int) -> Any:
        return f"i{i}" if ids == "str" else 7 * i + 1

    truth, recs, train = [], [], []
    for u in range(30):
        if u < 24:
            for i in rng.sample(range(40), rng.randint(1, 6)):
                truth.append((uid(u), iid(i), float(rng.randint(0, 3))))
        if u >= 3:
            for i in rng.sample(range(40), rng.randint(1, 10)):
                recs.append((uid(u), iid(i), rng.randrange(5) / 4))
    for _ in range(250):
        train.append((uid(rng.randrange(34)), iid(rng.randrange(40))))
    train += train[:15]
    frame = {
        "truth": pl.DataFrame(truth, schema=["user", "item", "relevance"], orient="row"),
        "recs": pl.DataFrame(recs, schema=["user", "item", "score"], orient="row"),
        "train": pl.DataFrame(train, schema=["user", "item"], orient="row"),
        "items": pl.DataFrame(
            {
                "item": [iid(i) for i in range(40)],
                "genre": [f"g{rng.randrange(4)}" for _ in range(40)],
            }
        ),
    }
    return frame


def brute_in_train(data: dict[str, pl.DataFrame]) -> tuple[int, int]:
    """(rows, users) of recs rows of truth users whose (user, item) is in train, by sets."""
    truth_users = set(data["truth"]["user"].to_list())
    pairs = set(data["train"].iter_rows())
    rows = [(u, i) for u, i, _ in data["recs"].iter_rows() if u in truth_users and (u, i) in pairs]
    return len(rows), len({u for u, _ in rows})


def assert_same(got: receval.Result, want: receval.Result) -> None:
    assert got.means == want.means
    assert_frame_equal(got.per_user, want.per_user, check_exact=True)
    assert got.counts == want.counts
    assert got.settings == want.settings
    assert got.details == want.details


# ------------------------------------------------------------- 5. recs already in train


@pytest.mark.parametrize("ids", ["str", "int"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recs_in_train_counted_and_warned(seed: int, ids: str) -> None:
    data = make_data(seed, ids)
    rows, users = brute_in_train(data)
    assert rows > 0
    with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)) as caught:
        res = receval.evaluate(data["truth"], data["recs"], ["ndcg@5"], train=data["train"])
    assert res.counts.recs_in_train == rows
    assert res.to_dict()["counts"]["recs_in_train"] == rows
    assert sum("already has in train" in str(w.message) for w in caught) == 1  # once


def test_recs_in_train_none_without_train_and_zero_without_overlap() -> None:
    data = make_data(0)
    ctx = no_warning()
    try:
        res = receval.evaluate(data["truth"], data["recs"], "mrr")
        assert res.counts.recs_in_train is None
        assert res.to_dict()["counts"]["recs_in_train"] is None
        other = pl.DataFrame({"user": ["u1", "nobody"], "item": ["x", "i1"]})
        res = receval.evaluate(data["truth"], data["recs"], "mrr", train=other)
        assert res.counts.recs_in_train == 0
    finally:
        ctx.__exit__(None, None, None)
    assert "recs_in_train=0" in repr(res.counts)


def test_recs_in_train_only_for_truth_users() -> None:
    truth = {"ann": {"a": 1}}
    recs = {"ann": {"a": 0.9, "b": 0.5, "c": 0.1}, "dan": {"b": 1.0, "c": 0.5}}
    train = {"ann": {"b": 1, "c": 1}, "dan": {"b": 1, "c": 1}}
    with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=2, users=1)):
        res = receval.evaluate(truth, recs, "mrr", train=train)
    assert res.counts.recs_in_train == 2  # dan is not in truth: his rows do not count


def test_train_read_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from receval.data import tables

    data = make_data(0)
    path = tmp_path / "train.parquet"
    data["train"].write_parquet(path)
    calls: list[str] = []
    real = tables.read_table

    def counting(source: Any, role: str, **kwargs: Any) -> pl.DataFrame:
        calls.append(role)
        return real(source, role, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tables, "read_table", counting)
    with pytest.warns(UserWarning, match="already has in train"):
        res = receval.evaluate(
            data["truth"], data["recs"], ["novelty@5", "coverage@5", "ndcg@5"], train=path
        )
    assert calls.count("train") == 1
    assert res.details["coverage@5"]["catalog"] == "truth+recs+train"


def test_text_train_ids_compare_as_text_with_integer_ids() -> None:
    # train read from a CSV file (text ids) against integer ids in truth and recs: "13" is 13
    data = make_data(0, "int")
    rows, users = brute_in_train(data)
    text = data["train"].select(pl.col("user", "item").cast(pl.String))
    text = pl.concat([text, pl.DataFrame({"user": ["013"], "item": [text["item"][0]]})])
    for train in (text, text.with_columns(pl.col("item").cast(pl.Int64))):
        with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)):
            res = receval.evaluate(data["truth"], data["recs"], "mrr", train=train)
        assert res.counts.recs_in_train == rows
        with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)):
            got = evaluate_sharded(data["truth"], data["recs"], "mrr", train=train, n_shards=2)
        assert got.counts == res.counts
    # popularity needs item ids typed as recs': the beyond metrics still say so
    with (
        pytest.warns(UserWarning, match="already has in train"),
        pytest.raises(InputError, match=r"^item ids of train and recs have different types"),
    ):
        receval.evaluate(data["truth"], data["recs"], "novelty@3", train=text)


@pytest.mark.parametrize("ids", ["str", "int"])
def test_sharded_engine_reports_the_same_count(ids: str) -> None:
    data = make_data(3, ids)
    rows, users = brute_in_train(data)
    metrics = ["ndcg@5", "novelty@5", "coverage@5"]
    options = {"train": data["train"], "items": data["items"]}
    with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)):
        want = receval.evaluate(data["truth"], data["recs"], metrics, **options)
    with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)):
        got = evaluate_sharded(data["truth"], data["recs"], metrics, n_shards=3, **options)
    assert got.counts.recs_in_train == rows
    assert_same(got, want)


def test_cli_reports_recs_in_train(tmp_path: Path) -> None:
    data = make_data(1)
    rows, users = brute_in_train(data)
    paths = {}
    for name in ("truth", "recs", "train"):
        paths[name] = tmp_path / f"{name}.parquet"
        data[name].write_parquet(paths[name])
    base = ["evaluate", "--truth", paths["truth"], "--recs", paths["recs"], "-m", "mrr"]
    code, out, err = cli(*base, "--train", paths["train"], "--format", "json")
    assert code == 0, err
    assert json.loads(out)["counts"]["recs_in_train"] == rows
    message = IN_TRAIN.format(rows=rows, users=users).lstrip("^")
    assert re.search("warning: " + message, err.strip(), re.MULTILINE)
    code, out, err = cli(*base, "--train", paths["train"])
    assert code == 0, err
    assert f" recs users not in truth, {rows} recs rows in train; ties=expected; " in out


# ------------------------------------------------------------ 6. unused relevance column

RATED = pl.DataFrame(
    {
        "user": ["a", "a", "a", "b", "b"],
        "item": ["x", "y", "z", "x", "w"],
        "rating": [5.0, 1.0, 0.0, 4.0, 2.0],
        "timestamp": [1, 2, 3, 4, 5],
    }
)
RATED_RECS = pl.DataFrame(
    {"user": ["a", "a", "a", "b", "b"], "item": ["z", "y", "x", "w", "x"], "score": [5, 4, 3, 2, 1]}
)


def test_unused_rating_column_warns_and_is_reported() -> None:
    with pytest.warns(UserWarning, match=UNUSED.format(names="'rating'", first="rating")):
        res = receval.evaluate(RATED, RATED_RECS, "mrr")
    assert res.settings["relevance_col"] is None
    assert res["mrr"] == pytest.approx(1.0)  # every row relevance 1: z is a hit
    ctx = no_warning()
    try:
        res = receval.evaluate(RATED, RATED_RECS, "mrr", relevance_col="rating")
    finally:
        ctx.__exit__(None, None, None)
    assert res.settings["relevance_col"] == "rating"
    assert res["mrr"] == pytest.approx((1 / 2 + 1) / 2)  # z (0) is not relevant


@pytest.mark.parametrize(
    ("columns", "names", "first"),
    [
        (["Label"], "'Label'", "Label"),
        (["Relevance"], "'Relevance'", "Relevance"),
        (["click", "weight"], "'click', 'weight'", "click"),
        (["relevance_score"], "'relevance_score'", "relevance_score"),
        (["GRADE", "timestamp"], "'GRADE'", "GRADE"),
    ],
)
def test_grade_like_names(columns: list[str], names: str, first: str) -> None:
    truth = RATED.select("user", "item", *[pl.lit(1.0).alias(c) for c in columns])
    with pytest.warns(UserWarning, match=UNUSED.format(names=names, first=first)):
        receval.evaluate(truth, RATED_RECS, "mrr")


def test_no_warning_when_relevance_is_present_or_nothing_looks_like_it() -> None:
    ctx = no_warning()
    try:
        both = RATED.with_columns(pl.lit(1.0).alias("relevance"))
        res = receval.evaluate(both, RATED_RECS, "mrr")
        assert res.settings["relevance_col"] == "relevance"
        res = receval.evaluate(RATED.select("user", "item", "timestamp"), RATED_RECS, "mrr")
        assert res.settings["relevance_col"] is None
        # an id column named like a grade is not a grade
        res = receval.evaluate(
            RATED.rename({"item": "label"}).drop("rating"),
            RATED_RECS.rename({"item": "label"}),
            "mrr",
            item_col="label",
        )
    finally:
        ctx.__exit__(None, None, None)


def test_sharded_engine_settings_and_warning() -> None:
    with pytest.warns(UserWarning, match=UNUSED.format(names="'rating'", first="rating")):
        want = receval.evaluate(RATED, RATED_RECS, ["mrr", "ndcg@2"])
    with pytest.warns(UserWarning, match=UNUSED.format(names="'rating'", first="rating")):
        got = evaluate_sharded(RATED, RATED_RECS, ["mrr", "ndcg@2"], n_shards=2)
    assert got.settings == want.settings == {
        "ties": "expected", "relevance_threshold": 1.0, "no_recs": "zero", "relevance_col": None,
    }  # fmt: skip
    rated = evaluate_sharded(RATED, RATED_RECS, "mrr", relevance_col="rating", n_shards=2)
    assert rated.settings["relevance_col"] == "rating"
    assert_same(rated, receval.evaluate(RATED, RATED_RECS, "mrr", relevance_col="rating"))


def test_cli_prints_the_relevance_used(tmp_path: Path) -> None:
    truth, recs = tmp_path / "truth.csv", tmp_path / "recs.csv"
    RATED.write_csv(truth)
    RATED_RECS.write_csv(recs)
    base = ["evaluate", "--truth", truth, "--recs", recs, "-m", "mrr"]
    code, out, err = cli(*base)
    assert code == 0, err
    assert "; relevance: 1 for every truth row in " in out
    assert err.strip().startswith("warning: truth column(s) 'rating' look like relevance grades")
    assert "Pass relevance_col='rating' (CLI --relevance-col rating) to use it." in err
    code, out, err = cli(*base, "--relevance-col", "rating")
    assert code == 0, err
    assert "; relevance: column 'rating' in " in out
    assert err.strip() == ""
    code, out, err = cli(*base, "--relevance-col", "rating", "--format", "json")
    assert json.loads(out)["settings"]["relevance_col"] == "rating"


# --------------------------------------------------------------- 7a. formats and RecBole

INTER_HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"


def write_inter(path: Path, frame: pl.DataFrame) -> None:
    lines = [
        f"{u}\t{i}\t{r}\t{t}\n"
        for u, i, r, t in frame.select("user", "item", "rating", "timestamp").iter_rows()
    ]
    path.write_text(INTER_HEADER + "".join(lines), encoding="utf-8")


def test_recbole_inter_file_read_as_tsv(tmp_path: Path) -> None:
    path = tmp_path / "ml.test.inter"
    write_inter(path, RATED)
    recs = RATED_RECS.rename({"user": "user_id", "item": "item_id"})
    res = receval.evaluate(
        path, recs, ["mrr", "ndcg@3"], user_col="user_id", item_col="item_id",
        relevance_col="rating",
    )  # fmt: skip
    want = receval.evaluate(RATED, RATED_RECS, ["mrr", "ndcg@3"], relevance_col="rating")
    assert res.means == want.means
    assert res.per_user.columns == ["user_id", "mrr", "ndcg@3"]
    assert res.per_user["user_id"].to_list() == ["a", "b"]  # ids read as text


def test_recbole_inter_train_and_cli(tmp_path: Path) -> None:
    truth, train = tmp_path / "ml.test.inter", tmp_path / "ml.train.inter"
    write_inter(truth, RATED)
    write_inter(
        train, RATED.with_columns(pl.col("item").replace({"x": "w"})).unique(["user", "item"])
    )
    recs = tmp_path / "recs.csv"
    RATED_RECS.write_csv(recs)
    options: dict[str, Any] = {
        "user_col": "user_id", "item_col": "item_id", "relevance_col": "rating",
        "columns": {"recs": {"user": "user", "item": "item"}},
    }  # fmt: skip
    with pytest.warns(UserWarning, match="already has in train"):
        lib = receval.evaluate(truth, recs, ["mrr", "novelty@2"], train=train, **options)
    code, out, err = cli(
        "evaluate", "--truth", truth, "--recs", recs, "-m", "mrr", "-m", "novelty@2",
        "--train", train, "--user-col", "user_id", "--item-col", "item_id",
        "--relevance-col", "rating", "--columns", "recs.user=user", "--columns",
        "recs.item=item", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc == json.loads(lib.to_json())
    assert doc["counts"]["recs_in_train"] == lib.counts.recs_in_train


def test_unknown_suffix_needs_input_format(tmp_path: Path) -> None:
    truth, recs = tmp_path / "truth.dat", tmp_path / "recs.dat"
    RATED.write_csv(truth, separator="\t")
    RATED_RECS.write_csv(recs)
    with pytest.raises(
        InputError,
        match=r"^truth file '.*truth\.dat': cannot tell its format from the suffix '\.dat'; .*"
        r"or name the format: input_format='tsv' \(parquet, csv, tsv or trec; CLI "
        r"--input-format\)\.$",
    ):
        receval.evaluate(truth, recs, "mrr")
    want = receval.evaluate(RATED, RATED_RECS, "mrr", relevance_col="rating")
    for fmt in ({"truth": "tsv", "recs": "csv"}, "truth=tsv, recs=csv"):
        got = receval.evaluate(truth, recs, "mrr", relevance_col="rating", input_format=fmt)
        assert got.means == want.means
    code, out, err = cli(
        "evaluate", "--truth", truth, "--recs", recs, "-m", "mrr", "--relevance-col", "rating",
        "--input-format", "truth=tsv,recs=csv", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["metrics"] == want.means


def test_input_format_overrides_the_suffix(tmp_path: Path) -> None:
    truth, recs = tmp_path / "truth.bin", tmp_path / "recs.csv"  # a CSV-named TSV
    RATED.write_parquet(truth)
    RATED_RECS.write_csv(recs, separator="\t")
    got = receval.evaluate(
        truth, recs, "mrr", relevance_col="rating", input_format={"truth": "parquet", "recs": "tsv"}
    )
    assert got.means == receval.evaluate(RATED, RATED_RECS, "mrr", relevance_col="rating").means
    qrels, run = tmp_path / "qrels.dat", tmp_path / "run.dat"
    qrels.write_text("a 0 x 1\na 0 y 0\nb 0 w 1\n", encoding="utf-8")
    run.write_text("a Q0 y 1 0.9 t\na Q0 x 2 0.5 t\nb Q0 w 1 0.3 t\n", encoding="utf-8")
    assert receval.evaluate(qrels, run, "mrr", input_format="trec")["mrr"] == 0.75


def test_bad_input_format(tmp_path: Path) -> None:
    msg = r"^input_format must be one of parquet, csv, tsv, trec, or formats by input such as"
    for bad in ("xlsx", {"truth": "xlsx"}, {"test": "tsv"}, "truth:tsv", 3):
        with pytest.raises(InputError, match=msg):
            receval.evaluate(RATED, RATED_RECS, "mrr", input_format=bad)  # type: ignore[arg-type]
    items = tmp_path / "items.parquet"
    pl.DataFrame({"item": ["x", "y", "z", "w"]}).write_parquet(items)
    with pytest.raises(InputError, match=r"^input_format 'trec' cannot read items"):
        receval.evaluate(
            RATED, RATED_RECS, "coverage", relevance_col="rating", items=items,
            input_format="trec",
        )  # fmt: skip


# ------------------------------------------------------------ 7b. per-input column names


def renamed(data: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The inputs with their own id column names (what a newcomer has)."""
    return {
        "truth": data["truth"],
        "recs": data["recs"].rename({"user": "uid", "item": "iid"}),
        "train": data["train"].rename({"user": "u", "item": "i"}),
        "items": data["items"].rename({"item": "movie"}),
    }


COLUMNS = {
    "recs": {"user": "uid", "item": "iid"},
    "train": {"user": "u", "item": "i"},
    "items": {"item": "movie"},
}
METRICS = ["ndcg@5", "mrr", "auc", "novelty@5", "coverage@5", "ils@5"]


@pytest.mark.parametrize("ids", ["str", "int"])
def test_per_input_columns_equal_renamed_inputs(ids: str) -> None:
    data = make_data(4, ids)
    own = renamed(data)
    options = {"item_features": ["genre"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = receval.evaluate(
            data["truth"], data["recs"], METRICS, train=data["train"], items=data["items"],
            **options,
        )  # fmt: skip
        got = receval.evaluate(
            own["truth"], own["recs"], METRICS, train=own["train"], items=own["items"],
            columns=COLUMNS, **options,
        )  # fmt: skip
        texts = [f"{role}.{what}={name}" for role, d in COLUMNS.items() for what, name in d.items()]
        as_text = receval.evaluate(
            own["truth"], own["recs"], METRICS, train=own["train"], items=own["items"],
            columns=texts, **options,
        )  # fmt: skip
        sharded = evaluate_sharded(
            own["truth"], own["recs"], METRICS, train=own["train"], items=own["items"],
            columns=COLUMNS, n_shards=3, **options,
        )  # fmt: skip
    assert_same(got, want)
    assert_same(as_text, want)
    assert_same(sharded, want)


def test_output_user_column_is_truths(tmp_path: Path) -> None:
    data = make_data(5)
    truth = data["truth"].rename({"user": "visitor", "item": "product"})
    ctx = no_warning()
    try:
        got = receval.evaluate(
            truth, data["recs"], ["mrr", "recall@3"],
            columns={"truth": {"user": "visitor", "item": "product"}},
        )  # fmt: skip
    finally:
        ctx.__exit__(None, None, None)
    want = receval.evaluate(data["truth"], data["recs"], ["mrr", "recall@3"])
    assert got.per_user.columns == ["visitor", "mrr", "recall@3"]
    assert_frame_equal(got.per_user, want.per_user.rename({"user": "visitor"}))
    assert got.counts == want.counts


def test_a_column_already_named_like_truths_is_dropped() -> None:
    data = make_data(6)
    recs = data["recs"].rename({"user": "uid"}).with_columns(pl.lit("noise").alias("user"))
    got = receval.evaluate(data["truth"], recs, "mrr", columns={"recs": {"user": "uid"}})
    assert got.means == receval.evaluate(data["truth"], data["recs"], "mrr").means


def test_per_input_columns_errors() -> None:
    data = make_data(0)
    with pytest.raises(
        InputError,
        match=r"^recs is missing column 'uid' \(columns found: \['user', 'item', 'score'\]\); "
        r"expected the user ids of recs there\. user_col= names the user column of every input "
        r"and columns= that of one input: columns=\{'recs': \{'user': NAME\}\} \(CLI --columns "
        r"recs\.user=NAME\)\.$",
    ):
        receval.evaluate(data["truth"], data["recs"], "mrr", columns={"recs": {"user": "uid"}})
    bad_specs: list[Any] = [
        {"items": {"user": "x"}}, {"test": {"user": "x"}}, {"recs": {"id": "x"}},
        {"recs": {"user": ""}}, {"recs": "uid"}, {}, ["recs.user"], ["recs=uid"], 42,
    ]  # fmt: skip
    for bad in bad_specs:
        with pytest.raises(InputError, match=r"^columns must name id columns by input"):
            receval.evaluate(data["truth"], data["recs"], "mrr", columns=bad)
    with pytest.raises(InputError, match=r"both name column 'score' of recs"):
        receval.evaluate(data["truth"], data["recs"], "mrr", columns=["recs.item=score"])


def test_cli_columns_and_config(tmp_path: Path) -> None:
    data = make_data(7)
    own = renamed(data)
    truth, recs, train = tmp_path / "truth.csv", tmp_path / "recs.tsv", tmp_path / "train.dat"
    own["truth"].write_csv(truth)
    own["recs"].write_csv(recs, separator="\t")
    own["train"].write_csv(train, separator="\t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = receval.evaluate(
            data["truth"].with_columns(pl.col("relevance")), data["recs"],
            ["mrr", "novelty@3"], train=data["train"],
        )  # fmt: skip
    code, out, err = cli(
        "evaluate", "--truth", truth, "--recs", recs, "--train", train, "-m", "mrr",
        "-m", "novelty@3", "--columns", "recs.user=uid", "--columns", "recs.item=iid",
        "--columns", "train.user=u", "--columns", "train.item=i", "--input-format", "train=tsv",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["metrics"] == want.means
    assert doc["counts"] == want.counts.to_dict()
    config = tmp_path / "eval.toml"
    config.write_text(
        'truth = "truth.csv"\nrecs = "recs.tsv"\ntrain = "train.dat"\n'
        'metrics = ["mrr", "novelty@3"]\ninput_format = {train = "tsv"}\nformat = "json"\n'
        '[columns.recs]\nuser = "uid"\nitem = "iid"\n[columns.train]\nuser = "u"\nitem = "i"\n',
        encoding="utf-8",
    )
    code, out, err = cli("evaluate", "--config", config)
    assert code == 0, err
    assert json.loads(out)["metrics"] == want.means
    config.write_text('columns = {recs = {userid = "uid"}}\n', encoding="utf-8")
    code, _, err = cli("evaluate", "--config", config)
    assert code == 2
    assert "columns: columns must name id columns by input" in err


# ------------------------------------------------------------------------- Spark engine


def test_spark_engine_gives_the_local_result(spark: Any, tmp_path: Path) -> None:
    data = make_data(8)
    own = renamed(data)
    rows, users = brute_in_train(data)
    metrics = ["ndcg@5", "novelty@5", "coverage@5", "ils@5"]
    options: dict[str, Any] = {
        "items": own["items"], "item_features": "genre", "columns": COLUMNS,
    }  # fmt: skip
    spark_train = spark.createDataFrame(own["train"].to_arrow())
    for train in (own["train"], spark_train):
        with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)):
            want = receval.evaluate(
                own["truth"], own["recs"], metrics, train=own["train"], **options
            )
        with pytest.warns(UserWarning, match=IN_TRAIN.format(rows=rows, users=users)):
            got = receval.evaluate(
                own["truth"], own["recs"], metrics, train=train, engine="spark", spark=spark,
                partitions=3, **options,
            )  # fmt: skip
        assert got.counts.recs_in_train == rows
        assert_same(got, want)
    # an unused rating column, and a RecBole file read on the driver
    path = tmp_path / "ml.test.inter"
    write_inter(path, RATED)
    recs = RATED_RECS.rename({"user": "uid", "item": "iid"})
    cols = {"recs": {"user": "uid", "item": "iid"}}
    keys: dict[str, Any] = {"user_col": "user_id", "item_col": "item_id", "columns": cols}
    message = UNUSED.format(names="'rating'", first="rating")
    with pytest.warns(UserWarning, match=message):
        want = receval.evaluate(path, recs, ["mrr", "ndcg@2"], **keys)
    with pytest.warns(UserWarning, match=message):
        got = receval.evaluate(path, recs, ["mrr", "ndcg@2"], engine="spark", spark=spark, **keys)
    assert got.settings["relevance_col"] is None
    assert_same(got, want)
    tsv = tmp_path / "recs.dat"
    recs.write_csv(tsv, separator="\t")
    got = receval.evaluate(
        path, tsv, "mrr", relevance_col="rating", input_format={"recs": "tsv"}, engine="spark",
        spark=spark, **keys,
    )  # fmt: skip
    want = receval.evaluate(
        path, tsv, "mrr", relevance_col="rating", input_format="recs=tsv", **keys
    )
    assert_same(got, want)
