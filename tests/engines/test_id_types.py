"""Id types (issue 19, point 3): ids from text files are text unless ``id_type`` says otherwise.

CSV, TSV and TREC files give text ids ("007" and "7" are two items); ``id_type="str"`` and
``"int"`` (or a kind by id, ``"item=int"``) type the ids of truth, recs, train and items the
same way on every container, on the command line (``--id-type``), in a config file and on the
Spark engine. No column type is guessed from a sample of rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import receval
from receval import InputError
from receval.cli import app

runner = CliRunner()
METRICS = ["recall@2", "ndcg@3", "mrr"]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# ------------------------------------------------------------------- the reported cases


def test_leading_zeros_are_text_by_default(tmp_path: Path) -> None:
    truth = write(tmp_path / "t.csv", "user,item\nu1,007\n")
    recs = write(tmp_path / "r.csv", "user,item,score\nu1,7,1.0\n")
    assert receval.evaluate(truth, recs, "recall@2")["recall@2"] == 0.0
    assert receval.evaluate(truth, recs, "recall@2", id_type="item=int")["recall@2"] == 1.0
    assert receval.evaluate(truth, recs, "recall@2", id_type={"item": "int"})["recall@2"] == 1.0
    assert receval.evaluate(truth, recs, "recall@2", id_type="str")["recall@2"] == 0.0
    numeric_users = write(tmp_path / "t1.csv", "user,item\n1,007\n")
    recs_1 = write(tmp_path / "r1.csv", "user,item,score\n1,7,1.0\n")
    res = receval.evaluate(numeric_users, recs_1, "recall@2", id_type="int")
    assert res["recall@2"] == 1.0
    assert res.per_user["user"].dtype == pl.Int64
    assert receval.evaluate(numeric_users, recs_1, "recall@2")["recall@2"] == 0.0


def test_007_and_7_in_one_file_are_not_duplicates(tmp_path: Path) -> None:
    truth = write(tmp_path / "t.csv", "user,item\nu1,007\nu1,7\n")
    recs = write(tmp_path / "r.csv", "user,item,score\nu1,7,0.5\nu1,007,0.9\n")
    res = receval.evaluate(truth, recs, ["recall@1", "precision@2"])
    assert (res["recall@1"], res["precision@2"]) == (0.5, 1.0)
    with pytest.raises(InputError, match=r"^truth has 2 duplicate \(user, item\) row\(s\)"):
        receval.evaluate(truth, recs, "recall@1", id_type="item=int")


def test_numeric_ids_then_text_ids_read_fine(tmp_path: Path) -> None:
    lines = [f"{u},{u % 7}" for u in range(300)] + ["A1,B2"]
    truth = write(tmp_path / "t.csv", "user,item\n" + "\n".join(lines) + "\n")
    # scores: integers on the first rows, then a fraction (no type guessed from a sample)
    rows = [f"{u},{u % 7},{u % 3}" for u in range(300)] + ["A1,B2,0.5", "A1,x,1.5"]
    recs = write(tmp_path / "r.csv", "user,item,score\n" + "\n".join(rows) + "\n")
    res = receval.evaluate(truth, recs, ["recall@1", "mrr"])
    assert res.counts.evaluated == 301
    assert res.per_user.filter(pl.col("user") == "A1")["mrr"].item() == 0.5
    assert res.per_user["user"].dtype == pl.String


def test_text_score_column_names_the_rows(tmp_path: Path) -> None:
    truth = write(tmp_path / "t.csv", "user,item\nu1,a\n")
    recs = write(tmp_path / "r.csv", "user,item,score\nu1,a,0.5\nu1,b,high\n")
    with pytest.raises(InputError) as info:
        receval.evaluate(truth, recs, "mrr")
    assert str(info.value) == (
        "recs column 'score' (score) must be numeric; got String. First values that are not "
        "numbers:\n  row 1: user='u1', item='b', score='high'"
    )


# --------------------------------------------------------------- every container


TRUTH_INT = pl.DataFrame({"user": [1, 1, 2, 10], "item": [5, 70, 5, 9], "relevance": [1.0] * 4})
RECS_INT = pl.DataFrame(
    {"user": [1, 1, 2, 2, 10], "item": [70, 5, 9, 5, 9], "score": [0.9, 0.5, 0.8, 0.1, 0.3]}
)
TRUTH_STR = TRUTH_INT.with_columns(pl.col("user", "item").cast(pl.String))
RECS_STR = RECS_INT.with_columns(pl.col("user", "item").cast(pl.String))


def _nested(frame: pl.DataFrame, value: str) -> dict[Any, dict[Any, float]]:
    out: dict[Any, dict[Any, float]] = {}
    for user, item, v in frame.select("user", "item", value).iter_rows():
        out.setdefault(user, {})[item] = v
    return out


def _trec(frame: pl.DataFrame, value: str, folder: Path) -> Path:
    if value == "relevance":
        path = folder / "t.qrels"
        path.write_text("".join(f"{u} 0 {i} {int(r)}\n" for u, i, r in frame.iter_rows()))
    else:
        path = folder / "r.run"
        path.write_text(
            "".join(f"{u} Q0 {i} {n} {s!r} x\n" for n, (u, i, s) in enumerate(frame.iter_rows()))
        )
    return path


def _file(suffix: str) -> Callable[[pl.DataFrame, str, Path], Any]:
    def make(frame: pl.DataFrame, value: str, folder: Path) -> Path:
        path = folder / f"{value}{suffix}"
        if suffix == ".parquet":
            frame.write_parquet(path)
        else:
            frame.write_csv(path, separator="\t" if suffix == ".tsv" else ",")
        return path

    return make


CONTAINERS: dict[str, Callable[[pl.DataFrame, str, Path], Any]] = {
    "polars": lambda f, v, _: f,
    "pandas": lambda f, v, _: f.to_pandas(),
    "arrow": lambda f, v, _: f.to_arrow(),
    "dict": lambda f, v, _: _nested(f, v),
    "parquet": _file(".parquet"),
    "csv": _file(".csv"),
    "tsv": _file(".tsv"),
}


@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("given", ["int", "str"])
@pytest.mark.parametrize("id_type", ["int", "str"])
def test_id_type_on_every_container(
    container: str, given: str, id_type: str, tmp_path: Path
) -> None:
    truth, recs = (TRUTH_INT, RECS_INT) if given == "int" else (TRUTH_STR, RECS_STR)
    want_t, want_r = (TRUTH_INT, RECS_INT) if id_type == "int" else (TRUTH_STR, RECS_STR)
    want = receval.evaluate(want_t, want_r, METRICS)
    make = CONTAINERS[container]
    got = receval.evaluate(
        make(truth, "relevance", tmp_path), make(recs, "score", tmp_path), METRICS,
        id_type=id_type,
    )  # fmt: skip
    assert got.per_user.equals(want.per_user)
    assert got.means == want.means
    assert got.per_user["user"].dtype == (pl.Int64 if id_type == "int" else pl.String)


@pytest.mark.parametrize("id_type", ["auto", "int", "str"])
def test_trec_files(id_type: str, tmp_path: Path) -> None:
    want = receval.evaluate(
        *((TRUTH_INT, RECS_INT) if id_type == "int" else (TRUTH_STR, RECS_STR)), METRICS
    )
    got = receval.evaluate(
        _trec(TRUTH_INT, "relevance", tmp_path), _trec(RECS_INT, "score", tmp_path), METRICS,
        id_type=id_type,
    )  # fmt: skip
    assert got.per_user.equals(want.per_user)


def test_auto_keeps_typed_sources_and_reads_text_files_as_text(tmp_path: Path) -> None:
    parquet = CONTAINERS["parquet"](TRUTH_INT, "relevance", tmp_path)
    csv = CONTAINERS["csv"](RECS_INT, "score", tmp_path)
    assert receval.evaluate(parquet, RECS_INT, "mrr").per_user["user"].dtype == pl.Int64
    assert receval.evaluate(TRUTH_STR, csv, "mrr").per_user["user"].dtype == pl.String


# -------------------------------------------------------------------------- errors


def test_int_ids_that_are_not_integers(tmp_path: Path) -> None:
    recs = write(
        tmp_path / "r.csv",
        "user,item,score\n1,5,0.1\n1,A1,0.2\n2,1.5,0.3\n2,007,0.4\n3,9223372036854775808,0.5\n",
    )
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH_INT, recs, "mrr", id_type="int")
    assert str(info.value) == (
        "recs has 3 value(s) in column 'item' that are not 64-bit integers (id_type 'int' reads "
        "these ids as integers); expected integer ids such as 42, or id_type='str' (CLI "
        "--id-type str) to compare ids as text. First offending rows:\n"
        "  row 1: user='1', item='A1'\n"
        "  row 2: user='2', item='1.5'\n"
        "  row 4: user='3', item='9223372036854775808'"
    )
    with pytest.raises(InputError, match=r"^truth has 1 value\(s\) in column 'user' that are not"):
        receval.evaluate({"u1": {1: 1}}, {1: {1: 0.5}}, "mrr", id_type="int")


@pytest.mark.parametrize(
    "bad", ["float", "INT", "item=float", "item=int,item=str", "thing=int", "", {}, 3, None,
            {"item": "int", "rank": "str"}, {"item": 1}],
)  # fmt: skip
def test_bad_id_type(bad: Any) -> None:
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH_INT, RECS_INT, "mrr", id_type=bad)
    assert str(info.value) == (
        "id_type must be one of auto, str, int, or kinds by id such as {'item': 'int'} (as "
        f"text: 'item=int' or 'user=str,item=int'); got {bad!r}."
    )


def test_parquet_int_truth_and_csv_recs_say_how_to_fix(tmp_path: Path) -> None:
    truth = CONTAINERS["parquet"](TRUTH_INT, "relevance", tmp_path)
    recs = CONTAINERS["csv"](RECS_INT, "score", tmp_path)
    with pytest.raises(InputError) as info:
        receval.evaluate(truth, recs, "mrr")
    assert str(info.value) == (
        "user ids of truth and recs have different types: truth column 'user' is Int64, recs "
        "column 'user' is String; expected both integers or both strings. CSV, TSV and TREC "
        "files give text ids: pass id_type='int' (CLI --id-type int) or id_type={'user': 'int'} "
        "(--id-type user=int) to read ids as integers, or id_type='str' (--id-type str) to read "
        "every id as text, or convert one side, e.g. pl.col('user').cast(pl.String)."
    )
    want = receval.evaluate(TRUTH_INT, RECS_INT, METRICS)
    assert receval.evaluate(truth, recs, METRICS, id_type="int").per_user.equals(want.per_user)


# ------------------------------------------------------------------ train and items

BEYOND = ["coverage@2", "novelty@2", "ils@2"]
TRAIN_INT = pl.DataFrame({"user": [7, 8, 8], "item": [5, 70, 9]})
ITEMS_INT = pl.DataFrame({"item": [5, 9, 70, 71], "genre": ["a", "b", "a", "c"]})


def test_train_and_items_follow_id_type(tmp_path: Path) -> None:
    options: dict[str, Any] = {"item_features": ["genre"]}
    want = receval.evaluate(
        TRUTH_INT, RECS_INT, BEYOND, train=TRAIN_INT, items=ITEMS_INT, **options
    )
    train = CONTAINERS["csv"](TRAIN_INT, "train", tmp_path)
    items = CONTAINERS["csv"](ITEMS_INT, "items", tmp_path)
    got = receval.evaluate(
        TRUTH_INT, RECS_INT, BEYOND, train=train, items=items, id_type="int", **options
    )
    assert got.means == want.means
    want_str = receval.evaluate(
        TRUTH_STR, RECS_STR, BEYOND, train=TRAIN_INT.cast({"item": pl.String, "user": pl.String}),
        items=ITEMS_INT.cast({"item": pl.String}), **options,
    )  # fmt: skip
    for id_type in ("auto", "str"):  # CSV recs: text ids, as train's and items'
        recs = CONTAINERS["csv"](RECS_INT, "score", tmp_path)
        truth = CONTAINERS["csv"](TRUTH_INT, "relevance", tmp_path)
        got = receval.evaluate(
            truth, recs, BEYOND, train=train, items=items, id_type=id_type, **options
        )
        assert got.means == want_str.means
    with pytest.raises(InputError, match=r"^item ids of train and recs have different types: "):
        receval.evaluate(TRUTH_INT, RECS_INT, "novelty@2", train=train)
    with pytest.raises(InputError, match=r"^item ids of items and recs have different types: "):
        receval.evaluate(TRUTH_INT, RECS_INT, "coverage@2", items=items)
    bad = write(tmp_path / "bad_items.csv", "item,genre\n5,a\n9,b\n70,a\nx7,c\n")
    with pytest.raises(InputError) as info:
        receval.evaluate(TRUTH_INT, RECS_INT, "coverage@2", items=bad, id_type="int")
    assert str(info.value).startswith(
        "items has 1 value(s) in column 'item' that are not 64-bit integers"
    )
    assert str(info.value).endswith("First offending rows:\n  row 3: item='x7'")


# ---------------------------------------------------------------- command line, config


def test_cli_id_type(tmp_path: Path) -> None:
    truth = write(tmp_path / "t.csv", "user,item\nu1,007\n")
    recs = write(tmp_path / "r.csv", "user,item,score\nu1,7,1.0\n")
    base = ["evaluate", "--truth", truth, "--recs", recs, "-m", "recall@2", "--format", "json"]
    code, out, err = cli(*base)
    assert code == 0, err
    assert json.loads(out)["metrics"]["recall@2"] == 0.0
    code, out, err = cli(*base, "--id-type", "item=int")
    assert code == 0, err
    assert json.loads(out)["metrics"]["recall@2"] == 1.0
    code, out, err = cli(*base, "--id-type", "int")
    assert code == 2
    assert out == ""
    assert err.startswith("error: truth has 1 value(s) in column 'user' that are not 64-bit")
    code, _, err = cli(*base, "--id-type", "float")
    assert code == 2
    assert "id_type must be one of auto, str, int" in err
    assert "Traceback" not in err


def test_cli_compare_and_plots_take_id_type(tmp_path: Path) -> None:
    truth = CONTAINERS["parquet"](TRUTH_INT, "relevance", tmp_path)
    recs = CONTAINERS["csv"](RECS_INT, "score", tmp_path)
    args = ["compare", "--truth", truth, "--run", f"a={recs}", "-m", "mrr", "--format", "json",
            "--no-progress"]  # fmt: skip
    code, _, err = cli(*args)
    assert code == 2
    assert "--id-type int" in err
    code, out, err = cli(*args, "--id-type", "int")
    assert code == 0, err
    assert json.loads(out)
    for kind in ("roc", "metric-at-k"):
        png = tmp_path / f"{kind}.png"
        code, _, err = cli("plot", kind, "--truth", truth, "--recs", recs, "-o", png,
                           "--id-type", "int")  # fmt: skip
        assert code == 0, err
        assert png.stat().st_size > 0


def test_config_id_type(tmp_path: Path) -> None:
    write(tmp_path / "t.csv", "user,item\n1,007\n")
    write(tmp_path / "r.csv", "user,item,score\n1,7,1.0\n")
    common = 'truth = "t.csv"\nrecs = "r.csv"\nmetrics = ["recall@2"]\nformat = "json"\n'
    config = write(tmp_path / "eval.toml", common + 'id_type = "int"\n')
    code, out, err = cli("evaluate", "--config", config)
    assert code == 0, err
    assert json.loads(out)["metrics"]["recall@2"] == 1.0
    code, out, err = cli("evaluate", "--config", config, "--id-type", "str")  # the flag wins
    assert code == 0, err
    assert json.loads(out)["metrics"]["recall@2"] == 0.0
    write(config, common + "id_type = 3\n")
    code, _, err = cli("evaluate", "--config", config)
    assert code == 2
    assert "id_type must be a string; got 3." in err


# -------------------------------------------------------------------------- Spark


def test_spark_reads_csv_ids_as_the_local_engine(spark: Any, tmp_path: Path) -> None:
    truth = write(tmp_path / "t.csv", "user,item,relevance\n1,007,1\n1,8,2\n2,A1,1\n3,9,1\n")
    recs = write(
        tmp_path / "r.csv", "user,item,score\n1,7,0.9\n1,007,0.8\n1,8,0.5\n2,A1,0.4\n3,09,0.3\n"
    )
    metrics = ["recall@2", "ndcg@3", "auc"]
    for id_type in ("auto", "user=int"):
        want = receval.evaluate(truth, recs, metrics, id_type=id_type)
        got = receval.evaluate(truth, recs, metrics, id_type=id_type, engine="spark", spark=spark)
        assert got.means == want.means
        assert got.per_user.equals(want.per_user)
    assert want.per_user["user"].dtype == pl.Int64
    with pytest.raises(InputError) as info:
        receval.evaluate(truth, recs, "mrr", id_type="int", engine="spark", spark=spark)
    assert str(info.value) == (
        "truth has 1 value(s) in column 'item' that are not 64-bit integers (id_type 'int' reads "
        "these ids as integers); expected integer ids such as 42, or id_type='str' (CLI "
        "--id-type str) to compare ids as text. First offending rows:\n  user='2', item='A1'"
    )
