"""The command line of a factor model: ``receval evaluate --user-factors ... --item-factors
...`` and ``receval topk``, and the files they read (receval.data.model_files).

Every command's output equals the Python API's (receval.evaluate with a receval.FactorModel,
receval.topk) on the same arrays; every bad input is one line on stderr, exit code 2, naming
the option.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval.cli import app
from receval.data.model_files import load_candidates, load_factors, load_ids

runner = CliRunner()

USER_IDS = np.array([10, 11, 12, 13, 14, 15], dtype=np.int64)
ITEM_IDS = np.arange(100, 108, dtype=np.int64)
_rng = np.random.default_rng(7)
U = _rng.normal(size=(6, 3))
I = _rng.normal(size=(8, 3))  # noqa: E741
# user 99 is not in the model (no recs); item 200 is not in the catalog; (11, 101) is a truth
# row that exclude removes (dropped with a warning)
TRUTH = pl.DataFrame(
    {
        "user": [10, 10, 11, 11, 12, 13, 13, 14, 99],
        "item": [100, 103, 101, 104, 107, 102, 105, 200, 100],
        "relevance": [1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 3.0, 1.0, 1.0],
    }
)
EXCLUDE = pl.DataFrame({"user": [10, 10, 11, 13], "item": [101, 102, 101, 100]})
METRICS = ["ndcg@3", "recall@5", "mrr", "map@8", "precision@2", "hit_rate@1"]


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, err: str) -> str:
    """The error's text: exit code 2, one ``error:`` line (an error that shows offending rows
    lists them on the lines below it), no traceback."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: "), err
    assert all(line.startswith("  ") for line in lines[1:]), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    p = {
        name: tmp_path / name
        for name in (
            "U.npy", "I.npy", "users.npy", "items.npy", "users.txt", "items.txt", "model.npz",
            "U.parquet", "I.parquet", "truth.parquet", "exclude.parquet", "exclude.csv",
        )
    }  # fmt: skip
    np.save(p["U.npy"], U)
    np.save(p["I.npy"], I)
    np.save(p["users.npy"], USER_IDS)
    np.save(p["items.npy"], ITEM_IDS)
    p["users.txt"].write_text("".join(f"{u}\n" for u in USER_IDS))
    p["items.txt"].write_text("".join(f"{i}\n" for i in ITEM_IDS))
    np.savez(p["model.npz"], user_factors=U, item_factors=I, user_ids=USER_IDS, item_ids=ITEM_IDS)
    # users: one list column of factors; items: one numeric column per factor
    pl.DataFrame({"user": USER_IDS, "factors": U.tolist()}).write_parquet(p["U.parquet"])
    pl.DataFrame({"item": ITEM_IDS, **{f"f{j}": I[:, j] for j in range(3)}}).write_parquet(
        p["I.parquet"]
    )
    TRUTH.write_parquet(p["truth.parquet"])
    EXCLUDE.write_parquet(p["exclude.parquet"])
    EXCLUDE.write_csv(p["exclude.csv"])
    return p


def model_args(files: dict[str, Path], kind: str) -> list[str | Path]:
    """The factor options of each way to give the same model."""
    if kind == "npy":
        return [
            "--user-factors", files["U.npy"], "--item-factors", files["I.npy"],
            "--user-ids", files["users.npy"], "--item-ids", files["items.npy"],
        ]  # fmt: skip
    if kind == "npz":
        return ["--user-factors", files["model.npz"], "--item-factors", files["model.npz"]]
    return ["--user-factors", files["U.parquet"], "--item-factors", files["I.parquet"]]


def the_model(similarity: str = "dot") -> receval.FactorModel:
    return receval.FactorModel(
        U,
        I,
        user_ids=USER_IDS,
        item_ids=ITEM_IDS,
        similarity=similarity,  # type: ignore[arg-type]
    )


def fill(text: str, paths: dict[str, Path]) -> str:
    """``text`` with each ``{name}`` replaced by the path of that name."""
    return re.sub(r"\{([^}]+)\}", lambda m: str(paths[m.group(1)]), text)


def metric_args(metrics: list[str]) -> list[str]:
    return [a for m in metrics for a in ("-m", m)]


# -- the files ----------------------------------------------------------------------------------


def test_load_factors_every_format(files: dict[str, Path], tmp_path: Path) -> None:
    factors, ids = load_factors(files["U.npy"], "user")
    assert ids is None
    np.testing.assert_array_equal(factors, U)
    for path in (files["model.npz"], files["U.parquet"]):
        factors, ids = load_factors(path, "user")
        np.testing.assert_array_equal(factors, U)
        assert ids is not None
        np.testing.assert_array_equal(ids, USER_IDS)
    factors, ids = load_factors(files["I.parquet"], "item")
    np.testing.assert_array_equal(factors, I)
    np.testing.assert_array_equal(ids, ITEM_IDS)  # type: ignore[arg-type]
    # an npz of one unnamed 2-D array; its ids under "ids"
    single = tmp_path / "single.npz"
    np.savez(single, emb=I.astype(np.float32), ids=np.array(["a", "b", "c", "d"] * 2))
    with pytest.raises(receval.InputError, match=r"4 id\(s\) appear more than once"):
        load_factors(single, "item")
    np.savez(single, emb=I.astype(np.float32), ids=np.array(list("abcdefgh")))
    factors, ids = load_factors(single, "item")
    assert factors.dtype == np.float32
    assert ids is not None
    assert ids.tolist() == list("abcdefgh")
    # a fixed-size array column, string ids in a column named "id"
    array = tmp_path / "array.parquet"
    frame = pl.DataFrame({"id": list("abcdef"), "v": U.tolist()})
    frame.with_columns(pl.col("v").list.to_array(3)).write_parquet(array)
    factors, ids = load_factors(array, "user")
    np.testing.assert_array_equal(factors, U)
    assert ids is not None
    assert ids.tolist() == list("abcdef")
    # id_type: text ids read as integers, integer ids as text
    _, ids = load_factors(files["U.parquet"], "user", kind="str")
    assert ids is not None
    assert ids.tolist() == [str(u) for u in USER_IDS]


def test_load_ids_every_format(files: dict[str, Path], tmp_path: Path) -> None:
    assert load_ids(files["users.npy"], "--user-ids").tolist() == USER_IDS.tolist()
    text = load_ids(files["users.txt"], "--user-ids")  # auto: a text file gives text ids
    assert text.dtype == object
    assert text.tolist() == [str(u) for u in USER_IDS]
    assert load_ids(files["users.txt"], "--user-ids", kind="int").tolist() == USER_IDS.tolist()
    csv = tmp_path / "ids.csv"
    csv.write_text("user\n007\n8\n")
    assert load_ids(csv, "--users").tolist() == ["007", "8"]
    assert load_ids(csv, "--users", kind="int").tolist() == [7, 8]
    table = tmp_path / "ids.parquet"
    pl.DataFrame({"user": [3, 1], "other": ["x", "y"]}).write_parquet(table)
    assert load_ids(table, "--users", id_col="user").tolist() == [3, 1]
    strings = tmp_path / "s.npy"
    np.save(strings, np.array(["a", "b"]))
    assert load_ids(strings, "--item-ids").tolist() == ["a", "b"]


def test_load_candidates(tmp_path: Path) -> None:
    kinds = {"user": "auto", "item": "auto"}
    pairs = tmp_path / "pairs.parquet"
    pl.DataFrame({"user": [10, 10], "item": [100, 101]}).write_parquet(pairs)
    got = load_candidates(pairs, user_col="user", item_col="item", kinds=kinds)  # type: ignore[arg-type]
    assert isinstance(got, pl.DataFrame)
    assert got.to_dict(as_series=False) == {"user": [10, 10], "item": [100, 101]}
    items = tmp_path / "items.txt"
    items.write_text("100\n101\n")
    kinds["item"] = "int"
    got = load_candidates(items, user_col="user", item_col="item", kinds=kinds)  # type: ignore[arg-type]
    assert isinstance(got, np.ndarray)
    assert got.tolist() == [100, 101]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: np.save(p, np.zeros(10)), "expected a 2-D array (rows x factors), found "
         "shape (10,)"),
        (lambda p: np.save(p, np.array([["a", "b"]])), "expected numbers"),
        (lambda p: np.save(p, np.zeros((0, 3))), "at least one row"),
        (lambda p: np.save(p, np.array([[{"a": 1}]], dtype=object)), "could not be read"),
        (lambda p: p.write_bytes(b"not numpy"), "could not be read"),
    ],
)  # fmt: skip
def test_bad_factor_files(tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "U.npy"
    make(path)  # type: ignore[operator]
    with pytest.raises(receval.InputError) as info:
        load_factors(path, "user")
    assert str(info.value).startswith(f"--user-factors file {str(path)!r}: ") or str(
        info.value
    ).startswith(f"--user-factors file {str(path)!r} could not be read")
    assert message in str(info.value)


def test_bad_factor_tables(tmp_path: Path) -> None:
    npz = tmp_path / "two.npz"
    np.savez(npz, a=U, b=I)
    with pytest.raises(receval.InputError, match=r"--item-factors .*item_factors or factors"):
        load_factors(npz, "item")
    two_lists = tmp_path / "two.parquet"
    pl.DataFrame({"a": U.tolist(), "b": U.tolist()}).write_parquet(two_lists)
    with pytest.raises(receval.InputError, match="one list column of numbers"):
        load_factors(two_lists, "user")
    text = tmp_path / "text.parquet"
    pl.DataFrame({"user": [1, 2], "name": ["x", "y"], "f": [1.0, 2.0]}).write_parquet(text)
    with pytest.raises(receval.InputError, match="column 'name' is String"):
        load_factors(text, "user")
    ragged = tmp_path / "ragged.parquet"
    pl.DataFrame({"v": [[1.0, 2.0], [1.0]]}).write_parquet(ragged)
    with pytest.raises(receval.InputError, match="differ in length"):
        load_factors(ragged, "user")
    with pytest.raises(receval.InputError, match="does not exist"):
        load_factors(tmp_path / "missing.npy", "user")
    with pytest.raises(receval.InputError, match=r"suffix '\.csv'"):
        load_factors(_touch(tmp_path / "U.csv"), "user")
    gaps = tmp_path / "gaps.txt"
    gaps.write_text("a\n\nb\n")
    with pytest.raises(receval.InputError, match=r"--item-ids .* empty line.* \(line 2\)"):
        load_ids(gaps, "--item-ids")
    letters = tmp_path / "letters.txt"
    letters.write_text("a\nb\n")
    with pytest.raises(receval.InputError, match="not 64-bit integers"):
        load_ids(letters, "--item-ids", kind="int")


def _touch(path: Path) -> Path:
    path.write_text("x\n")
    return path


# -- receval evaluate ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["npy", "npz", "parquet"])
def test_evaluate_equals_the_api(files: dict[str, Path], kind: str) -> None:
    args = [
        "evaluate", "--truth", files["truth.parquet"], *model_args(files, kind),
        "--exclude", files["exclude.parquet"], *metric_args(METRICS), "--format", "json",
    ]  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    assert "warning:" in err  # (11, 101) is in truth and excluded: dropped
    with pytest.warns(UserWarning):
        lib = receval.evaluate(
            files["truth.parquet"], the_model(), METRICS, exclude=files["exclude.parquet"]
        )
    assert json.loads(out) == json.loads(lib.to_json())
    model = lib.settings["model"]
    assert model["truth_users_not_in_model"] == 1
    assert model["truth_rows_excluded"] == 1


def test_evaluate_options_equal_the_api(files: dict[str, Path], tmp_path: Path) -> None:
    candidates = tmp_path / "candidates.parquet"
    pl.DataFrame(
        {"user": [10, 10, 10, 11, 11, 12, 13, 13, 13], "item": [100, 103, 105, 101, 104, 106,
         102, 105, 107]}
    ).write_parquet(candidates)  # fmt: skip
    metrics = [*METRICS, "gauc"]
    args = [
        "evaluate", "--truth", files["truth.parquet"], *model_args(files, "npy"),
        "--similarity", "cosine", "--candidates", candidates, "--block-memory", "100",
        "--ties", "first", "--no-recs", "skip", *metric_args(metrics), "--format", "json",
    ]  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    lib = receval.evaluate(
        files["truth.parquet"], the_model("cosine"), metrics,
        candidates=pl.read_parquet(candidates), block_memory=100, ties="first", no_recs="skip",
    )  # fmt: skip
    assert json.loads(out) == json.loads(lib.to_json())
    assert lib.settings["model"]["candidates"] == "per_user"
    # global candidates from a text file (ids as integers by --id-type item=int)
    items = tmp_path / "candidates.txt"
    items.write_text("100\n101\n103\n105\n")
    args = [
        "evaluate", "--truth", files["truth.parquet"], *model_args(files, "npz"),
        "--candidates", items, "--id-type", "item=int", *metric_args(METRICS),
        "--format", "json",
    ]  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    lib = receval.evaluate(
        files["truth.parquet"], the_model(), METRICS, candidates=[100, 101, 103, 105],
        id_type="item=int",
    )  # fmt: skip
    assert json.loads(out) == json.loads(lib.to_json())


def test_evaluate_config_file_and_per_user(files: dict[str, Path], tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(
        'truth = "truth.parquet"\nuser_factors = "U.npy"\nitem_factors = "I.npy"\n'
        'user_ids = "users.npy"\nitem_ids = "items.npy"\nexclude = "exclude.csv"\n'
        'block_memory = "1KiB"\nsimilarity = "dot"\nexcluded_truth = "drop"\n'
        f"metrics = {json.dumps(METRICS)}\nid_type = 'int'\nformat = 'json'\n"
    )
    per_user = tmp_path / "per_user.parquet"
    code, out, err = cli("evaluate", "--config", config, "--per-user", per_user, "--no-progress")
    assert code == 0, err
    with pytest.warns(UserWarning):
        lib = receval.evaluate(
            files["truth.parquet"], the_model(), METRICS, exclude=files["exclude.csv"],
            block_memory="1KiB", id_type="int",
        )  # fmt: skip
    assert json.loads(out) == json.loads(lib.to_json())
    assert_frame_equal(pl.read_parquet(per_user), lib.per_user)


def test_evaluate_table_prints_the_model_counts(files: dict[str, Path]) -> None:
    args = ["evaluate", "--truth", files["truth.parquet"], *model_args(files, "npz"), "-m", "mrr"]
    code, out, err = cli(*args)
    assert code == 0, err
    assert "model: users_scored=" in out
    code, _, err = cli(*args, "--progress")  # a bar on stderr, whatever the terminal
    assert code == 0, err


def test_evaluate_excluded_truth_raise(files: dict[str, Path]) -> None:
    code, _, err = cli(
        "evaluate", "--truth", files["truth.parquet"], *model_args(files, "npz"),
        "--exclude", files["exclude.parquet"], "--excluded-truth", "raise", "-m", "mrr",
    )  # fmt: skip
    assert "excluded_truth='raise'" in one_line_error(code, err)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--user-factors", "{U.npy}"], "--user-factors needs --item-factors"),
        (["--item-factors", "{I.npy}"], "--item-factors needs --user-factors"),
        ([], "missing --recs, or --user-factors and --item-factors"),
        (["--recs", "{truth.parquet}", "--user-factors", "{U.npy}", "--item-factors", "{I.npy}"],
         "--recs and --user-factors both"),
        (["--recs", "{truth.parquet}", "--exclude", "{exclude.parquet}"],
         "--exclude applies to a factor model"),
        (["--user-factors", "{users.npy}", "--item-factors", "{I.npy}"],
         "--user-factors file '{users.npy}': expected a 2-D array (rows x factors), found "
         "shape (6,)"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "--user-ids",
          "{items.npy}"], "--user-ids file '{items.npy}' holds 8 ids for the 6 rows of "
         "--user-factors"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "--exclude", "{nope.csv}"],
         "--exclude file '{nope.csv}' does not exist"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "--engine", "spark"],
         "--engine spark"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "--exclude",
          "{exclude.parquet}", "--per-user", "{exclude.parquet}"],
         "--per-user '{exclude.parquet}' is the --exclude file"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "--per-user",
          "{U.npy}"], "--per-user '{U.npy}' is the --user-factors file"),
    ],
)  # fmt: skip
def test_evaluate_bad_input(files: dict[str, Path], extra: list[str], named: str) -> None:
    paths = {**files, "nope.csv": files["U.npy"].parent / "nope.csv"}
    args = ["evaluate", "--truth", files["truth.parquet"], "-m", "mrr"]
    code, _, err = cli(*args, *(fill(a, paths) for a in extra))
    assert fill(named, paths) in one_line_error(code, err)


def test_evaluate_text_ids_against_integer_truth(files: dict[str, Path]) -> None:
    # auto: a .txt file gives text ids; truth's are integers: the error says how to fix it
    code, _, err = cli(
        "evaluate", "--truth", files["truth.parquet"], "--user-factors", files["U.npy"],
        "--item-factors", files["I.npy"], "--user-ids", files["users.txt"], "-m", "mrr",
    )  # fmt: skip
    assert "id_type" in one_line_error(code, err)
    code, _, err = cli(
        "evaluate", "--truth", files["truth.parquet"], "--user-factors", files["U.npy"],
        "--item-factors", files["I.npy"], "--user-ids", files["users.txt"], "--item-ids",
        files["items.txt"], "--id-type", "int", "-m", "mrr",
    )  # fmt: skip
    assert code == 0, err


# -- receval topk -------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv"])
def test_topk_equals_the_api(files: dict[str, Path], tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"top{suffix}"
    code, stdout, err = cli(
        "topk", *model_args(files, "npy"), "-k", "3", "--exclude", files["exclude.parquet"],
        "-o", out,
    )  # fmt: skip
    assert code == 0, err
    assert stdout == ""
    assert f"wrote 18 rows (top 3 of 6 users) to {out}" in err
    want = receval.topk(the_model(), 3, exclude=files["exclude.parquet"])
    if suffix == ".parquet":
        got = pl.read_parquet(out)
    else:
        got = pl.read_csv(out, separator="," if suffix == ".csv" else "\t", schema=want.schema)
    assert_frame_equal(got, want)  # CSV: floats written in full (shortest round-trip text)


def test_topk_users_candidates_config(files: dict[str, Path], tmp_path: Path) -> None:
    users = tmp_path / "users.csv"
    users.write_text("user\n13\n10\n")
    candidates = tmp_path / "cand.npy"
    np.save(candidates, np.array([100, 101, 102, 103]))
    config = tmp_path / "topk.toml"
    config.write_text(
        'user_factors = "model.npz"\nitem_factors = "model.npz"\nk = 2\nusers = "users.csv"\n'
        'candidates = "cand.npy"\nid_type = "int"\nsimilarity = "cosine"\noutput = "out.parquet"\n'
    )
    code, _, err = cli("topk", "--config", config)
    assert code == 0, err
    want = receval.topk(
        the_model("cosine"), 2, users=np.array([13, 10]), candidates=np.array([100, 101, 102, 103]),
        id_type="int",
    )  # fmt: skip
    assert_frame_equal(pl.read_parquet(tmp_path / "out.parquet"), want)
    assert want["user"].unique(maintain_order=True).to_list() == [13, 10]


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--user-factors", "{U.npy}", "-k", "3", "-o", "{out.parquet}"],
         "missing --item-factors"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "-o", "{out.parquet}"],
         "missing -k"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "-k", "3"],
         "missing --output"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "-k", "3", "-o",
          "{out.json}"], "--output '{out.json}': expected a .parquet, .csv or .tsv path"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "-k", "3", "-o",
          "{exclude.parquet}", "--exclude", "{exclude.parquet}"],
         "--output '{exclude.parquet}' is the --exclude file"),
        (["--user-factors", "{U.parquet}", "--item-factors", "{I.npy}", "-k", "3", "-o",
          "{U.parquet}"], "--output '{U.parquet}' is the --user-factors file"),
        (["--user-factors", "{U.npy}", "--item-factors", "{users.npy}", "-k", "3", "-o",
          "{out.parquet}"], "--item-factors file '{users.npy}': expected a 2-D array"),
        (["--user-factors", "{U.npy}", "--item-factors", "{I.npy}", "-k", "0", "-o",
          "{out.parquet}"], "k"),
    ],
)  # fmt: skip
def test_topk_bad_input(files: dict[str, Path], extra: list[str], named: str) -> None:
    folder = files["U.npy"].parent
    paths = {**files, "out.parquet": folder / "out.parquet", "out.json": folder / "out.json"}
    code, _, err = cli("topk", *(fill(a, paths) for a in extra))
    assert fill(named, paths) in one_line_error(code, err)
    assert not (folder / "out.parquet").exists()


def test_device_option(files: dict[str, Path]) -> None:
    """--device scores with torch on that device (the same numbers as NumPy); a device that
    does not exist is one line, exit 2, naming it. Without torch, the option says so."""
    base = [
        "evaluate", "--truth", files["truth.parquet"], *model_args(files, "npy"),
        "--exclude", files["exclude.parquet"], *metric_args(METRICS), "--format", "json",
    ]  # fmt: skip
    code, out, err = cli(*base)
    assert code == 0, err
    code, _, bad_err = cli(*base, "--device", "nowhere")
    assert "--device" in one_line_error(code, bad_err) or "device=" in bad_err
    pytest.importorskip("torch", reason="torch is not installed: --device cpu is not run")
    code, on_torch, err = cli(*base, "--device", "cpu")
    assert code == 0, err
    assert json.loads(on_torch) == json.loads(out)
