"""Every input source gives the same result (docs/CONTRACT.md "truth / recs").

Sources: Polars DataFrame and LazyFrame, pandas DataFrame, PyArrow Table and RecordBatch,
Parquet / CSV / TSV paths (str and pathlib), nested dicts and TREC qrels + run files.
Also: integer and string ids, custom column names, ``rank_col``, truth without a relevance
column, unsorted input, the TREC readers and ``write_frame``.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import receval
from receval import InputError
from receval.data.io import write_frame

METRICS = ["ndcg@2", "recall@1", "mrr", "precision@2"]
LOG2_3 = math.log2(3)

# u1: judged a (3), b (1), c (0); u2: d (1); u3: e (2), no recs; u4: recs only.
SMALL_TRUTH = [
    ("u1", "a", 3.0), ("u1", "b", 1.0), ("u1", "c", 0.0), ("u2", "d", 1.0), ("u3", "e", 2.0),
]  # fmt: skip
SMALL_RECS = [
    ("u1", "b", 0.9), ("u1", "a", 0.5), ("u1", "z", 0.1), ("u2", "d", 0.7), ("u2", "y", 0.2),
    ("u4", "a", 1.0),
]  # fmt: skip
# Hand-computed, no ties. u1 list b, a, z; u2 list d, y; u3 no recs (scores 0).
U1_NDCG2 = (1 + 3 / LOG2_3) / (3 + 1 / LOG2_3)
SMALL_WANT = {
    "ndcg@2": {"u1": U1_NDCG2, "u2": 1.0, "u3": 0.0},
    "recall@1": {"u1": 0.5, "u2": 1.0, "u3": 0.0},  # u1: b is 1 of its 2 relevant
    "mrr": {"u1": 1.0, "u2": 1.0, "u3": 0.0},
    "precision@2": {"u1": 1.0, "u2": 0.5, "u3": 0.0},
}

Rows = list[tuple[Hashable, Hashable, float]]


def to_frame(rows: Rows, value: str) -> pl.DataFrame:
    users, items, values = zip(*rows, strict=True)
    return pl.DataFrame({"user": list(users), "item": list(items), value: list(values)})


def to_nested(rows: Rows) -> dict[Hashable, dict[Hashable, float]]:
    out: dict[Hashable, dict[Hashable, float]] = {}
    for u, i, v in rows:
        out.setdefault(u, {})[i] = v
    return out


def qrels_text(rows: Rows) -> str:
    # odd whitespace on purpose: tabs, runs of spaces, leading/trailing blanks, blank lines
    seps = ["\t", "  ", " \t ", " "]
    lines = []
    for n, (u, i, rel) in enumerate(rows):
        s = seps[n % len(seps)]
        lines.append(f"{' ' * (n % 2)}{u}{s}0{s}{i}{s}{int(rel)}{'  ' * (n % 3)}")
        if n % 4 == 3:
            lines.append("")
    return "\n".join(lines) + "\n"


def run_text(rows: Rows) -> str:
    seps = [" ", "\t", "   ", "\t \t"]
    lines = []
    for n, (u, i, score) in enumerate(rows):
        s = seps[n % len(seps)]
        # the rank field is deliberately wrong: the score orders the list, as in trec_eval
        lines.append(f"{u}{s}Q0{s}{i}{s}{n + 1}{s}{score!r}{s}tag{' ' * (n % 2)}")
    return "\r\n".join(lines) + "\r\n"


Source = Callable[[Rows, str, Path], Any]


def _write_table(suffix: str, as_str: bool) -> Source:
    def make(rows: Rows, value: str, folder: Path) -> Any:
        path = folder / f"{value}{suffix}"
        df = to_frame(rows, value)
        if suffix == ".parquet":
            df.write_parquet(path)
        else:
            df.write_csv(path, separator="," if suffix == ".csv" else "\t")
        return str(path) if as_str else path

    return make


def _write_trec(suffix_truth: str, suffix_recs: str) -> Source:
    def make(rows: Rows, value: str, folder: Path) -> Any:
        if value == "relevance":
            path = folder / f"truth{suffix_truth}"
            path.write_text(qrels_text(rows))
        else:
            path = folder / f"recs{suffix_recs}"
            path.write_bytes(run_text(rows).encode())
        return path

    return make


SOURCES: dict[str, Source] = {
    "polars": lambda rows, value, _: to_frame(rows, value),
    "lazy": lambda rows, value, _: to_frame(rows, value).lazy(),
    "pandas": lambda rows, value, _: to_frame(rows, value).to_pandas(),
    "arrow-table": lambda rows, value, _: to_frame(rows, value).to_arrow(),
    "arrow-batch": lambda rows, value, _: to_frame(rows, value).to_arrow().to_batches()[0],
    "parquet-path": _write_table(".parquet", as_str=False),
    "parquet-str": _write_table(".parquet", as_str=True),
    "csv-path": _write_table(".csv", as_str=False),
    "csv-str": _write_table(".csv", as_str=True),
    "tsv-path": _write_table(".tsv", as_str=False),
    "nested-dict": lambda rows, value, _: to_nested(rows),
    "trec-suffix": _write_trec(".qrels", ".run"),
    "trec-trec-suffix": _write_trec(".trec", ".trec"),
    "trec-by-content": _write_trec(".txt", ".txt"),
}
STRING_ONLY = {"trec-suffix", "trec-trec-suffix", "trec-by-content"}  # TREC ids are strings
TEXT_TABLES = {"csv-path", "csv-str", "tsv-path"}  # text ids unless id_type says otherwise


def per_user_dict(res: receval.Result, metric: str) -> dict[Any, float]:
    frame = res.per_user
    return dict(zip(frame["user"].to_list(), frame[metric].to_list(), strict=True))


@pytest.mark.parametrize("source", list(SOURCES))
def test_small_case_every_source(source: str, tmp_path: Path) -> None:
    make = SOURCES[source]
    res = receval.evaluate(
        make(SMALL_TRUTH, "relevance", tmp_path), make(SMALL_RECS, "score", tmp_path), METRICS
    )
    for m in METRICS:
        got = per_user_dict(res, m)
        assert got.keys() == SMALL_WANT[m].keys()
        for u, want in SMALL_WANT[m].items():
            assert got[u] == pytest.approx(want, rel=1e-12, abs=1e-15), (m, u)
        assert res[m] == pytest.approx(sum(SMALL_WANT[m].values()) / 3, rel=1e-12)
    assert res.counts == receval.Counts(evaluated=3, no_recs=1, no_relevant=0, recs_not_in_truth=1)
    assert res.per_user["user"].dtype == pl.String


def random_case(seed: int, string_ids: bool) -> tuple[Rows, Rows]:
    """Random truth and recs with ties, grouped by user, no duplicate (user, item)."""
    rng = random.Random(seed)
    truth: Rows = []
    recs: Rows = []
    for u in range(1, 41):
        uid: Hashable = f"u{u}" if string_ids else u
        if rng.random() < 0.85:
            for i in rng.sample(range(1, 16), rng.randint(1, 6)):
                truth.append((uid, f"i{i}" if string_ids else i, float(rng.choice([0, 1, 2, 3]))))
        if rng.random() < 0.85:
            for i in rng.sample(range(1, 16), rng.randint(1, 8)):
                recs.append((uid, f"i{i}" if string_ids else i, rng.randrange(4) / 2))
    if not any(rel >= 1 for _, _, rel in truth):
        truth.append((truth[0][0], truth[0][1] + 100 if not string_ids else "i100", 1.0))
    return truth, recs


ALL = ["ndcg@3", "ndcg(gain=exp)@5", "map@10", "mrr", "recall@5", "precision@3", "r_precision"]


# TREC files hold string ids, so they run with string ids only (see test_trec_int_like_ids)
CASES = [
    pytest.param(source, string_ids, id=f"{source}-{'str' if string_ids else 'int'}-ids")
    for source in SOURCES
    for string_ids in (False, True)
    if string_ids or source not in STRING_ONLY
]


@pytest.mark.parametrize(("source", "string_ids"), CASES)
def test_random_case_every_source_identical(source: str, string_ids: bool, tmp_path: Path) -> None:
    truth, recs = random_case(7, string_ids)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    make = SOURCES[source]
    ids = {"id_type": "int"} if source in TEXT_TABLES and not string_ids else {}
    res = receval.evaluate(
        make(truth, "relevance", tmp_path), make(recs, "score", tmp_path), ALL, **ids
    )
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)
    assert res.counts == base.counts
    for m in ALL:
        assert res[m] == pytest.approx(base[m], rel=1e-12, abs=1e-15)


def test_trec_int_like_ids(tmp_path: Path) -> None:
    """TREC ids stay strings: numeric-looking ids match as strings and results are equal."""
    truth, recs = random_case(11, string_ids=False)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    (tmp_path / "t.qrels").write_text(qrels_text(truth))
    (tmp_path / "r.run").write_text(run_text(recs))
    res = receval.evaluate(tmp_path / "t.qrels", tmp_path / "r.run", ALL)
    assert res.per_user["user"].dtype == pl.String
    got = res.per_user.with_columns(pl.col("user").cast(pl.Int64)).sort("user")
    assert_frame_equal(got, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


def test_mixed_integer_widths() -> None:
    truth, recs = random_case(3, string_ids=False)
    t = to_frame(truth, "relevance")
    r = to_frame(recs, "score")
    base = receval.evaluate(t, r, ALL)
    t32 = t.with_columns(pl.col("user").cast(pl.Int32), pl.col("item").cast(pl.UInt16))
    r64 = r.with_columns(pl.col("user").cast(pl.UInt32), pl.col("score").cast(pl.Float32))
    res = receval.evaluate(t32, r64, ALL)
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


def test_categorical_and_dictionary_ids() -> None:
    truth, recs = random_case(5, string_ids=True)
    t = to_frame(truth, "relevance")
    r = to_frame(recs, "score")
    base = receval.evaluate(t, r, ALL)
    cat = t.with_columns(pl.col("user", "item").cast(pl.Categorical))
    table = r.to_arrow()
    dict_item = table.set_column(1, "item", table["item"].dictionary_encode())
    res = receval.evaluate(cat, dict_item, ALL)
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


def test_pandas_string_and_object_ids() -> None:
    truth, recs = random_case(9, string_ids=True)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    t = pd.DataFrame(truth, columns=["user", "item", "relevance"]).astype({"user": object})
    r = pd.DataFrame(recs, columns=["user", "item", "score"]).astype({"item": "string"})
    res = receval.evaluate(t, r, ALL)
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


# ----------------------------------------------------------------- columns, ranks, defaults


def test_custom_column_names() -> None:
    truth, recs = random_case(13, string_ids=False)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    t = to_frame(truth, "relevance").rename({"user": "uid", "item": "iid", "relevance": "grade"})
    r = to_frame(recs, "score").rename({"user": "uid", "item": "iid", "score": "pred"})
    t = t.with_columns(pl.lit("noise").alias("score"))  # unrelated columns are ignored
    r = r.with_columns(pl.lit(0).alias("user"), pl.lit(-1.0).alias("relevance"))
    res = receval.evaluate(
        t, r, ALL, user_col="uid", item_col="iid", score_col="pred", relevance_col="grade"
    )
    assert res.per_user.columns == ["uid", *ALL]
    assert_frame_equal(res.per_user.rename({"uid": "user"}), base.per_user, rel_tol=1e-12)


def test_custom_column_names_with_files_and_dicts(tmp_path: Path) -> None:
    """Nested dicts and TREC files fill the columns that the caller names."""
    t_path = tmp_path / "t.qrels"
    t_path.write_text(qrels_text(SMALL_TRUTH))
    kwargs: dict[str, Any] = {"user_col": "q", "item_col": "doc", "score_col": "s"}
    kwargs["relevance_col"] = "rel"
    res = receval.evaluate(t_path, to_nested(SMALL_RECS), METRICS, **kwargs)
    assert res.per_user.columns == ["q", *METRICS]
    assert res["mrr"] == pytest.approx(2 / 3)


def ranks_from_scores(recs: Rows) -> pl.DataFrame:
    """Rank 1 = highest score within each user; equal scores get equal (min) ranks."""
    df = to_frame(recs, "score")
    return df.with_columns(
        pl.col("score").rank("min", descending=True).over("user").cast(pl.Int64).alias("rank")
    ).drop("score")


def test_rank_col_equals_scores() -> None:
    truth, recs = random_case(17, string_ids=True)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    ranked = ranks_from_scores(recs)  # repeated ranks where scores tie
    assert ranked["rank"].min() == 1
    res = receval.evaluate(to_frame(truth, "relevance"), ranked, ALL, rank_col="rank")
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


def test_rank_col_hand_computed() -> None:
    truth = {"u": {"a": 1}}
    # rank 1 is best: b (1), a (2), c (3) -> the relevant a is second
    recs = pl.DataFrame({"user": ["u"] * 3, "item": ["a", "b", "c"], "rank": [2, 1, 3]})
    res = receval.evaluate(truth, recs, ["mrr", "precision@1", "hit_rate@2"], rank_col="rank")
    assert (res["mrr"], res["precision@1"], res["hit_rate@2"]) == (0.5, 0.0, 1.0)
    # repeated ranks are ties: a and b share rank 1 -> expected mrr (1 + 1/2) / 2
    tied = recs.with_columns(pl.Series("rank", [1, 1, 3]))
    res = receval.evaluate(truth, tied, ["mrr", "precision@1"], rank_col="rank")
    assert res["mrr"] == 0.75
    assert res["precision@1"] == 0.5
    # a score column, when present, is ignored in favour of rank_col
    both = tied.with_columns(pl.Series("score", [0.0, 9.0, 5.0]))
    assert receval.evaluate(truth, both, "mrr", rank_col="rank")["mrr"] == 0.75
    assert receval.evaluate(truth, both, "mrr")["mrr"] == 1 / 3


def test_truth_without_relevance_column_means_relevance_one(tmp_path: Path) -> None:
    truth, recs = random_case(19, string_ids=False)
    ones = [(u, i, 1.0) for u, i, _ in truth]
    base = receval.evaluate(to_frame(ones, "relevance"), to_frame(recs, "score"), ALL)
    bare = to_frame(truth, "relevance").drop("relevance")
    res = receval.evaluate(bare, to_frame(recs, "score"), ALL)
    assert_frame_equal(res.per_user, base.per_user)
    path = tmp_path / "bare.csv"
    bare.write_csv(path)
    res = receval.evaluate(path, to_frame(recs, "score"), ALL, id_type="int")  # CSV ids: text
    assert_frame_equal(res.per_user, base.per_user)


def test_unsorted_and_ungrouped_inputs() -> None:
    truth, recs = random_case(23, string_ids=True)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    rng = random.Random(0)
    for _ in range(3):
        t2, r2 = truth[:], recs[:]
        rng.shuffle(t2)
        rng.shuffle(r2)
        res = receval.evaluate(to_frame(t2, "relevance"), to_frame(r2, "score"), ALL)
        assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)
    # grouped but users in descending order
    res = receval.evaluate(
        to_frame(truth, "relevance").sort("user", descending=True, maintain_order=True),
        to_frame(recs, "score").sort("user", descending=True, maintain_order=True),
        ALL,
    )
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


def test_csv_with_extra_columns_and_header_order(tmp_path: Path) -> None:
    path = tmp_path / "recs.csv"
    path.write_text("score,extra,item,user\n0.9,x,b,u1\n0.5,y,a,u1\n0.1,z,z,u1\n0.7,,d,u2\n")
    res = receval.evaluate(to_nested(SMALL_TRUTH), path, ["mrr", "precision@2"])
    # u1: b, a relevant -> 1, 1; u2: d -> 1, 1/2; u3: no recs -> 0, 0
    assert res["mrr"] == pytest.approx(2 / 3)
    assert res["precision@2"] == pytest.approx(0.5)


# ---------------------------------------------------------------------------- TREC readers


def test_read_trec_qrels(tmp_path: Path) -> None:
    path = tmp_path / "q.qrels"
    path.write_bytes(b"  1\t0   a \t 3\r\n1 0 b 0\r\n\n20\t0\t007\t2  \n\n")
    df = receval.read_trec_qrels(path)
    assert df.columns == ["user", "item", "relevance"]
    assert df.schema == pl.Schema({"user": pl.String, "item": pl.String, "relevance": pl.Float64})
    assert df.rows() == [("1", "a", 3.0), ("1", "b", 0.0), ("20", "007", 2.0)]
    df = receval.read_trec_qrels(str(path), user_col="q", item_col="d", relevance_col="r")
    assert df.columns == ["q", "d", "r"]


def test_read_trec_run(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("1\tQ0\tdocA\t1\t12.5\tbm25\n 1 Q0  docB 2 -3 bm25  \n2 Q0 010 1 1e-3 x\n")
    df = receval.read_trec_run(path)
    assert df.columns == ["user", "item", "score"]
    assert df.schema == pl.Schema({"user": pl.String, "item": pl.String, "score": pl.Float64})
    assert df.rows() == [("1", "docA", 12.5), ("1", "docB", -3.0), ("2", "010", 0.001)]
    assert receval.read_trec_run(path, score_col="s").columns == ["user", "item", "s"]


def test_trec_ids_are_strings_not_numbers(tmp_path: Path) -> None:
    """'007' and '7' are different documents, as trec_eval compares ids as strings."""
    (tmp_path / "t.qrels").write_text("q1 0 007 1\n")
    (tmp_path / "r.run").write_text("q1 Q0 7 1 2.0 t\nq1 Q0 007 2 1.0 t\n")
    res = receval.evaluate(tmp_path / "t.qrels", tmp_path / "r.run", ["mrr"])
    assert res["mrr"] == 0.5


# ----------------------------------------------------------------------------- write_frame


FRAME = pl.DataFrame({"user": ["a", "b"], "ndcg@10": [0.5, None], "x": [1.0, 2.5]})


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv"])
def test_write_frame_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"out{suffix}"
    write_frame(FRAME, path)
    if suffix == ".parquet":
        back = pl.read_parquet(path)
    else:
        back = pl.read_csv(path, separator="," if suffix == ".csv" else "\t")
    assert_frame_equal(back, FRAME)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out{suffix}"]  # no temp files


def test_write_frame_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old content\n")
    write_frame(FRAME, str(path))
    assert path.read_text().splitlines()[0] == "user,ndcg@10,x"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_write_frame_rejects_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot write .*out\.json.*\.parquet, \.csv or \.tsv"):
        write_frame(FRAME, tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


def test_write_frame_failure_keeps_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    write_frame(FRAME, path)
    before = path.read_bytes()

    class Broken:
        def write_parquet(self, target: str) -> None:
            Path(target).write_bytes(b"half")
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_frame(Broken(), path)  # type: ignore[arg-type]
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_arrow_table_with_chunks() -> None:
    truth, recs = random_case(29, string_ids=False)
    base = receval.evaluate(to_frame(truth, "relevance"), to_frame(recs, "score"), ALL)
    table = to_frame(recs, "score").to_arrow()
    chunked = pa.concat_tables([table.slice(0, 7), table.slice(7)])
    assert chunked["user"].num_chunks == 2
    res = receval.evaluate(to_frame(truth, "relevance").to_arrow(), chunked, ALL)
    assert_frame_equal(res.per_user, base.per_user, rel_tol=1e-12, abs_tol=1e-12)


# --- RecBole atomic files: the header's types are honoured --------------------------------

ML_HEADER = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"


def ml_like(path: Path, n_users: int = 8, per_user: int = 6) -> pl.DataFrame:
    """A small ml-100k-like ``.inter`` file (ids ``007``-style text, ratings 1-5, seconds),
    and the same data as a frame (ids as text, rating and timestamp as Float64)."""
    rng = random.Random(5)
    rows = []
    for u in range(n_users):
        items = rng.sample(range(40), per_user)
        for j, i in enumerate(items):
            rows.append((f"{u:03d}", f"{i:03d}", float(rng.randint(1, 5)), 881250949.0 + 97 * j))
    lines = [f"{u}\t{i}\t{r:g}\t{t:.0f}\n" for u, i, r, t in rows]
    path.write_text(ML_HEADER + "".join(lines), encoding="utf-8")
    return pl.DataFrame(rows, schema=["user_id", "item_id", "rating", "timestamp"], orient="row")


def test_recbole_types_are_honoured(tmp_path: Path) -> None:
    # rating:float came back as text (timestamp:float only because it was the split's time)
    path = tmp_path / "ml.inter"
    want = ml_like(path)
    frame = receval.split(path, "leave_one_out", user_col="user_id", item_col="item_id").frame
    assert frame.schema == pl.Schema(
        {
            "user_id": pl.String,
            "item_id": pl.String,
            "rating": pl.Float64,
            "timestamp": pl.Float64,
        }
    )
    assert_frame_equal(frame, want)
    items = tmp_path / "ml.item"
    items.write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\t"
        "score:float\tvec:float_seq\tplain\n"
        "001\tToy Story \t1995\tAnimation Children's  Comedy\t4.5\t0.5 -1 2e3\t7\n"
        "002\t\t\t\t\t\t8\n",
        encoding="utf-8",
    )
    from receval.data.io import read_table

    got = read_table(items, "items", user_col="user_id", item_col="item_id", value_col="v")
    assert got.schema == pl.Schema(
        {
            "item_id": pl.String,
            "movie_title": pl.List(pl.String),
            "release_year": pl.String,
            "class": pl.List(pl.String),
            "score": pl.Float64,
            "vec": pl.List(pl.Float64),
            "plain": pl.Int64,
        }
    )
    assert got.row(0) == (
        "001", ["Toy", "Story"], "1995", ["Animation", "Children's", "Comedy"], 4.5,
        [0.5, -1.0, 2000.0], 7,
    )  # fmt: skip
    assert got.row(1) == ("002", [], None, [], None, [], 8)  # RecBole: an empty sequence


@pytest.mark.parametrize(
    ("header", "line", "match"),
    [
        ("u:token\ti:token\trating:float", "a\tb\tfive",
         r"(?s)column 'rating' is declared 'rating:float' in its RecBole header: every value must "
         r"be a number; 1 row\(s\) are not.*row 0: .*rating='five'"),
        ("u:token\ti:token\tw:float_seq", "a\tb\t1 x 2",
         r"(?s)column 'w' is declared 'w:float_seq'.*numbers separated by spaces.*w='1 x 2'"),
    ],
)  # fmt: skip
def test_recbole_type_errors_name_the_column(
    tmp_path: Path, header: str, line: str, match: str
) -> None:
    path = tmp_path / "bad.inter"
    path.write_text(f"{header}\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError, match=match):
        receval.split(path, "random", n=1, user_col="u", item_col="i", time_col=None)


def test_recbole_file_split_audited_and_evaluated_end_to_end(tmp_path: Path) -> None:
    # ml-100k as RecBole ships it: split (Python and CLI), audit the split's own output with
    # the rating as relevance, evaluate on it
    import json
    import warnings

    from typer.testing import CliRunner

    from receval.cli import app

    path = tmp_path / "ml-100k.inter"
    data = ml_like(path)
    ids = {"user_col": "user_id", "item_col": "item_id"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", receval.LeakageWarning)
        s = receval.split(path, "leave_one_out", **ids, relevance_col="rating",
                          relevance_threshold=4)  # fmt: skip
        s.write(tmp_path / "py")
        audit = receval.audit_split(
            tmp_path / "py" / "train.parquet", tmp_path / "py" / "test.parquet", **ids,
            relevance_col="rating", relevance_threshold=4,
        )  # fmt: skip
    assert s.test["rating"].dtype == pl.Float64
    assert audit["test_users_without_relevant"] == s.audit["test_users_without_relevant"]
    assert audit["test_users_without_relevant"] == sum(
        1 for r in s.test.iter_rows(named=True) if r["rating"] < 4
    )
    score = (pl.col("item_id").cast(pl.Int64) % 7).cast(pl.Float64)
    recs = data.select("user_id", "item_id", score.alias("score"))
    res = receval.evaluate(tmp_path / "py" / "test.parquet", recs, ["ndcg", "mrr"], **ids,
                           relevance_col="rating")  # fmt: skip
    want = receval.evaluate(s.test, recs, ["ndcg", "mrr"], **ids, relevance_col="rating")
    assert res.means == want.means and 0 < res["mrr"] < 1
    # id_type, as evaluate's: "int" reads the "007" ids as integers
    ints = receval.split(path, "leave_one_out", **ids, id_type="int")
    assert ints.train.schema["user_id"] == pl.Int64 and ints.train.schema["item_id"] == pl.Int64
    assert sorted(ints.test["user_id"].to_list()) == list(range(8))
    assert ints.test["rating"].to_list() == s.test["rating"].to_list()
    assert (
        receval.split(path, "leave_one_out", **ids, id_type={"item": "int"}).train.schema["user_id"]
        == pl.String
    )
    with pytest.raises(InputError, match="id_type must be one of auto, str, int"):
        receval.split(path, "leave_one_out", **ids, id_type="float")

    runner = CliRunner()
    flags = ["--user-col", "user_id", "--item-col", "item_id"]
    out = tmp_path / "cli"
    done = runner.invoke(app, ["split", str(path), "--method", "leave_one_out", *flags,
                               "--out-dir", str(out), "--format", "json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert pl.read_parquet(out / "test.parquet").equals(s.test)
    done = runner.invoke(
        app,
        [
            "audit",
            str(out / "train.parquet"),
            str(out / "test.parquet"),
            *flags,
            "--relevance-col",
            "rating",
            "--format",
            "json",
        ],
    )
    assert done.exit_code == 0, done.output
    recs.write_csv(tmp_path / "recs.csv")
    done = runner.invoke(app, ["evaluate", "--truth", str(out / "test.parquet"), "--recs",
                               str(tmp_path / "recs.csv"), *flags, "--relevance-col", "rating",
                               "-m", "ndcg", "--id-type", "str", "--format", "json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["metrics"]["ndcg"] == want["ndcg"]
    out = tmp_path / "cli_int"
    done = runner.invoke(app, ["split", str(path), "--method", "leave_one_out", *flags,
                               "--id-type", "int", "--out-dir", str(out)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert pl.read_parquet(out / "train.parquet").equals(ints.train)


# --- found by the generated robustness suite of split (tests/engines/test_robustness.py) -----


def test_a_fifo_is_not_a_file_and_is_never_opened(tmp_path: Path) -> None:
    # a FIFO was reported as "does not exist"; opening it would block until a writer came
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    msg = rf"^truth path {str(fifo)!r} is not a regular file \(a pipe, socket or device\)"
    with pytest.raises(InputError, match=msg):
        receval.evaluate(fifo, {1: {2: 1.0}}, ["ndcg@1"])
    with pytest.raises(InputError, match=msg.replace("truth", "interactions")):
        receval.split(fifo, "leave_one_out")
    with pytest.raises(InputError, match=msg.replace("truth", "test")):
        receval.audit_split(pl.DataFrame({"user": [1], "item": [2]}), fifo)
    missing = tmp_path / "missing.csv"
    with pytest.raises(InputError, match=rf"^truth file {str(missing)!r} does not exist\.$"):
        receval.evaluate(missing, {1: {2: 1.0}}, ["ndcg@1"])


def test_a_lazy_frame_that_fails_to_collect_is_an_input_error() -> None:
    # Polars' SchemaError came through from LazyFrame.collect()
    data = pl.DataFrame({"user": [1, 1, 2], "item": [1, 2, 3], "timestamp": [1, 2, 3]})
    broken = data.lazy().with_columns(pl.col("user").str.to_integer())
    match = r"^interactions: the LazyFrame could not be collected: .*invalid series dtype"
    with pytest.raises(InputError, match=match):
        receval.split(broken, "leave_one_out")
    with pytest.raises(InputError, match=r"^truth: the LazyFrame could not be collected"):
        receval.evaluate(broken, data, ["ndcg@1"])
