"""The ``receval`` command line (typer app in receval.cli), a thin layer over the library."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import receval
from receval.cli import _demo_metrics, app

runner = CliRunner()

# u1: a (3), b (1), c (0); u2: d (1); u3: e (2), no recs; u4: recs only.
TRUTH = pl.DataFrame(
    {
        "user": ["u1", "u1", "u1", "u2", "u3"],
        "item": ["a", "b", "c", "d", "e"],
        "relevance": [3.0, 1.0, 0.0, 1.0, 2.0],
    }
)
# u1's b and z tie at 0.5: ties matter for the tie policies
RECS = pl.DataFrame(
    {
        "user": ["u1", "u1", "u1", "u1", "u2", "u2", "u4"],
        "item": ["z", "b", "a", "c", "y", "d", "a"],
        "score": [0.5, 0.5, 0.4, 0.1, 0.9, 0.2, 1.0],
        "rank": [1, 1, 3, 4, 1, 2, 1],
    }
)
METRICS = ["ndcg@3", "mrr", "precision@1", "recall@2"]
# Hand-computed with ties="expected" (z/b tie at the top of u1), no_recs zero (u3 scores 0):
# mrr: u1 (1 + 1/2) / 2 = 3/4, u2 1/2, u3 0 -> 5/12
# precision@1: u1 1/2, u2 0, u3 0 -> 1/6
HAND = {"mrr": 5 / 12, "precision@1": 1 / 6}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "truth.parquet": tmp_path / "truth.parquet",
        "recs.parquet": tmp_path / "recs.parquet",
        "truth.csv": tmp_path / "truth.csv",
        "recs.csv": tmp_path / "recs.csv",
        "truth.qrels": tmp_path / "truth.qrels",
        "recs.run": tmp_path / "recs.run",
    }
    TRUTH.write_parquet(paths["truth.parquet"])
    RECS.write_parquet(paths["recs.parquet"])
    TRUTH.write_csv(paths["truth.csv"])
    RECS.write_csv(paths["recs.csv"])
    paths["truth.qrels"].write_text(
        "".join(f"{u}\t0\t{i}\t{int(r)}\n" for u, i, r in TRUTH.iter_rows())
    )
    paths["recs.run"].write_text(
        "".join(f"{u} Q0 {i} {k} {s!r} run\n" for u, i, s, k in RECS.iter_rows())
    )
    return paths


def cli(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def evaluate_args(truth: Path, recs: Path, metrics: list[str], *extra: str) -> list[str | Path]:
    args: list[str | Path] = ["evaluate", "--truth", truth, "--recs", recs]
    for m in metrics:
        args += ["-m", m]
    return [*args, *extra]


def parse_csv(text: str) -> dict[str, float]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["metric", "value"]
    return {name: (math.nan if value == "" else float(value)) for name, value in rows[1:]}


@pytest.mark.parametrize(
    ("truth", "recs"),
    [("truth.parquet", "recs.parquet"), ("truth.csv", "recs.csv"), ("truth.qrels", "recs.run")],
)
def test_evaluate_json(files: dict[str, Path], truth: str, recs: str) -> None:
    code, out, err = cli(*evaluate_args(files[truth], files[recs], METRICS, "--format", "json"))
    assert code == 0, err
    doc = json.loads(out)
    lib = receval.evaluate(files[truth], files[recs], METRICS)
    assert doc == json.loads(lib.to_json())
    assert list(doc["metrics"]) == METRICS
    for m, want in HAND.items():
        assert doc["metrics"][m] == pytest.approx(want, rel=1e-12)
    assert doc["counts"] == {
        "evaluated": 3, "no_recs": 1, "no_relevant": 0, "recs_not_in_truth": 1,
        "recs_in_train": None,
    }  # fmt: skip


def test_evaluate_csv(files: dict[str, Path]) -> None:
    args = evaluate_args(files["truth.csv"], files["recs.csv"], METRICS, "--format", "csv")
    code, out, err = cli(*args)
    assert code == 0, err
    got = parse_csv(out)
    lib = receval.evaluate(files["truth.csv"], files["recs.csv"], METRICS)
    assert list(got) == METRICS
    assert got == lib.means  # written with repr: exact


def test_evaluate_csv_quotes_names_with_commas(files: dict[str, Path]) -> None:
    metric = "ndcg(gain={0: 0, 1: 1, 2: 3, 3: 7})@3"
    args = evaluate_args(files["truth.parquet"], files["recs.parquet"], [metric], "--format", "csv")
    code, out, _ = cli(*args)
    assert code == 0
    lib = receval.evaluate(files["truth.parquet"], files["recs.parquet"], [metric])
    assert parse_csv(out) == lib.means


def test_evaluate_table(files: dict[str, Path]) -> None:
    code, out, err = cli(*evaluate_args(files["truth.parquet"], files["recs.parquet"], METRICS))
    assert code == 0, err
    lib = receval.evaluate(files["truth.parquet"], files["recs.parquet"], METRICS)
    lines = out.splitlines()
    for m in METRICS:
        row = [line for line in lines if f" {m} " in line]
        assert len(row) == 1, (m, out)
        assert f"{lib[m]:.6f}" in row[0]
    assert "3 evaluated" in out
    assert "1 without recs" in out
    assert "ties=expected" in out


def test_repeated_metrics_and_aliases(files: dict[str, Path]) -> None:
    metrics = ["mrr", "recip_rank", "P@1", "precision@1", "hr@2"]
    args = evaluate_args(files["truth.parquet"], files["recs.parquet"], metrics, "--format", "json")
    code, out, _ = cli(*args)
    assert code == 0
    doc = json.loads(out)
    assert list(doc["metrics"]) == ["mrr", "precision@1", "hit_rate@2"]
    assert doc["metrics"]["mrr"] == pytest.approx(HAND["mrr"])


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_per_user_output(files: dict[str, Path], tmp_path: Path, suffix: str) -> None:
    out_path = tmp_path / "out" / f"per_user{suffix}"
    out_path.parent.mkdir()
    args = evaluate_args(
        files["truth.parquet"], files["recs.parquet"], METRICS, "--per-user", str(out_path)
    )
    code, _, err = cli(*args)
    assert code == 0, err
    lib = receval.evaluate(files["truth.parquet"], files["recs.parquet"], METRICS)
    back = pl.read_parquet(out_path) if suffix == ".parquet" else pl.read_csv(out_path)
    assert_frame_equal(back, lib.per_user, rel_tol=1e-15, abs_tol=0.0)
    assert back["user"].to_list() == ["u1", "u2", "u3"]
    assert [p.name for p in out_path.parent.iterdir()] == [out_path.name]  # no temp files


@pytest.mark.parametrize("ties", ["expected", "first", "trec", "optimistic", "pessimistic"])
def test_ties_option(files: dict[str, Path], ties: str) -> None:
    args = evaluate_args(
        files["truth.parquet"], files["recs.parquet"], METRICS, "--ties", ties, "--format", "json"
    )
    code, out, _ = cli(*args)
    assert code == 0
    doc = json.loads(out)
    lib = receval.evaluate(files["truth.parquet"], files["recs.parquet"], METRICS, ties=ties)
    assert doc["metrics"] == lib.means
    assert doc["settings"]["ties"] == ties
    # u1's tie is z (not relevant) vs b (relevant): optimistic puts b first, pessimistic z
    want_mrr = {"optimistic": (1 + 0.5) / 3, "pessimistic": (0.5 + 0.5) / 3}
    if ties in want_mrr:
        assert doc["metrics"]["mrr"] == pytest.approx(want_mrr[ties])


def test_threshold_option(files: dict[str, Path]) -> None:
    args = evaluate_args(
        files["truth.parquet"], files["recs.parquet"], METRICS, "--threshold", "2", "--format",
        "json",
    )  # fmt: skip
    code, out, _ = cli(*args)
    assert code == 0
    doc = json.loads(out)
    lib = receval.evaluate(
        files["truth.parquet"], files["recs.parquet"], METRICS, relevance_threshold=2
    )
    assert doc["metrics"] == lib.means
    # relevant at >= 2: u1's a (third after the z/b tie) and u3's e (no recs)
    assert doc["counts"] == {
        "evaluated": 2, "no_recs": 1, "no_relevant": 1, "recs_not_in_truth": 1,
        "recs_in_train": None,
    }  # fmt: skip
    assert doc["metrics"]["mrr"] == pytest.approx((1 / 3) / 2)


def test_rank_col_option(files: dict[str, Path]) -> None:
    args = evaluate_args(
        files["truth.csv"], files["recs.csv"], METRICS, "--rank-col", "rank", "--format", "json"
    )
    code, out, _ = cli(*args)
    assert code == 0
    doc = json.loads(out)
    lib = receval.evaluate(files["truth.csv"], files["recs.csv"], METRICS, rank_col="rank")
    assert doc["metrics"] == lib.means
    # ranks: u1 z and b share rank 1 (a tie); u2 y then d -> the same as the scores
    assert doc["metrics"]["mrr"] == pytest.approx(HAND["mrr"])


def test_custom_columns_and_no_recs_option(tmp_path: Path) -> None:
    truth = tmp_path / "t.tsv"
    recs = tmp_path / "r.tsv"
    TRUTH.rename({"user": "uid", "relevance": "grade"}).write_csv(truth, separator="\t")
    RECS.rename({"user": "uid", "score": "pred"}).write_csv(recs, separator="\t")
    args = evaluate_args(
        truth, recs, ["mrr"], "--user-col", "uid", "--score-col", "pred", "--relevance-col",
        "grade", "--no-recs", "skip", "--format", "json",
    )  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    # skip: u3 (no recs) left out -> (3/4 + 1/2) / 2
    assert json.loads(out)["metrics"]["mrr"] == pytest.approx(5 / 8)


# ----------------------------------------------------------------------------------- errors


def test_unknown_metric_exit_code(files: dict[str, Path]) -> None:
    code, out, err = cli(*evaluate_args(files["truth.parquet"], files["recs.parquet"], ["ndgc@10"]))
    assert code == 2
    assert "error:" in err
    assert "unknown metric 'ndgc'" in err
    assert "did you mean 'ndcg'" in err
    assert "Traceback" not in err + out


def test_missing_file_exit_code(files: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nope.parquet"
    code, _, err = cli(*evaluate_args(missing, files["recs.parquet"], ["mrr"]))
    assert code == 2
    assert "error: truth file" in err
    assert "does not exist" in err
    assert "nope.parquet" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--no-recs", "raise"], "1 evaluated user(s) have no recommendations"),
        (["--threshold", "0"], "relevance_threshold must be a finite number > 0"),
        (["--score-col", "pred"], "recs is missing column 'pred'"),
    ],
)
def test_input_error_exit_code(files: dict[str, Path], extra: list[str], message: str) -> None:
    code, _, err = cli(
        *evaluate_args(files["truth.parquet"], files["recs.parquet"], ["mrr"]), *extra
    )
    assert code == 2
    assert message in " ".join(err.split())  # unwrapped


def test_bad_per_user_suffix(files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = evaluate_args(files["truth.parquet"], files["recs.parquet"], ["mrr"], "--per-user", out)
    code, _, err = cli(*args)
    assert code == 2
    assert "cannot write" in err
    assert not out.exists()


@pytest.mark.parametrize("metric", ["ndcg(gain=[a])", "ndcg(("])
def test_error_messages_are_printed_verbatim(files: dict[str, Path], metric: str) -> None:
    code, _, err = cli(*evaluate_args(files["truth.parquet"], files["recs.parquet"], [metric]))
    assert code == 2
    with pytest.raises(receval.MetricError) as info:
        receval.parse_metric(metric)
    assert str(info.value) in " ".join(err.split())


def test_usage_error_without_metric(files: dict[str, Path]) -> None:
    code, _, err = cli("evaluate", "--truth", files["truth.parquet"], "--recs", files["recs.run"])
    assert code == 2
    assert "--metric" in err


# ---------------------------------------------------------------------------------- metrics


def test_metrics_table() -> None:
    code, out, _ = cli("metrics")
    assert code == 0
    for spec in receval.list_metrics():
        assert spec.name in out


@pytest.mark.parametrize("family", ["ranking", "classification", "rating", "beyond"])
def test_metrics_of_one_family(family: str) -> None:
    code, out, _ = cli("metrics", "--format", "json", "--family", family)
    assert code == 0
    doc = json.loads(out)
    want = [s.name for s in receval.list_metrics() if s.family == family]
    assert want
    assert [d["name"] for d in doc] == want
    assert {d["family"] for d in doc} == {family}


def test_metrics_json() -> None:
    code, out, _ = cli("metrics", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    specs = receval.list_metrics()
    assert [d["name"] for d in doc] == [s.name for s in specs]
    for d, s in zip(doc, specs, strict=True):
        assert d["aliases"] == list(s.aliases)
        assert d["cutoff"] is s.cutoff
        assert [p["name"] for p in d["params"]] == [p.name for p in s.params]
        assert d["bounds"][0] == s.bounds[0]
        assert d["bounds"][1] == (None if math.isinf(s.bounds[1]) else s.bounds[1])
        assert d["description"] == s.description


# ------------------------------------------------------------------------------------- demo


def test_demo_prints_every_default_metric() -> None:
    code, out, err = cli("demo", "--users", "500")
    assert code == 0, err
    assert "look cut" not in err  # the demo names its top-100 lists' cutoff (mrr@100)
    lines = out.splitlines()
    for m in _demo_metrics(100):
        row = [line for line in lines if f" {m} " in line]
        assert len(row) == 1, (m, out)
        value = float(row[0].split("│")[2])  # │ metric │ value │ details │
        if m.startswith("novelty"):
            assert value > 0.0  # bits of self-information
        else:
            low, high = receval.parse_metric(m).spec.bounds
            assert low <= value <= high
    assert "500 users" in out


def test_table_shows_each_metrics_details(files: dict[str, Path]) -> None:
    code, out, err = cli(
        *evaluate_args(files["truth.parquet"], files["recs.parquet"], ["mrr", "coverage@2"])
    )
    assert code == 0, err
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if "│" in line}
    assert "catalog=truth+recs" in rows["coverage@2"]
    assert rows["mrr"].split("│")[3].strip() == ""  # no details for mrr


def test_demo_json_holds_ranking_and_beyond_metrics() -> None:
    code, out, err = cli("demo", "--users", "200", "--recs", "20", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc["metrics"]) == _demo_metrics(20)
    assert "mrr@20" in doc["metrics"] and "mrr" not in doc["metrics"]
    assert doc["details"]["coverage@10"]["catalog"] == "items"  # the generated item table
    assert 0.0 < doc["metrics"]["coverage@10"] <= 1.0


def test_demo_recommends_no_item_of_the_users_train(tmp_path: Path) -> None:
    # the flagship example must not show the mistake receval warns about: its model leaves
    # out (exclude=) what each user already has in train, and train shares no pair with truth
    code, out, err = cli("demo", "--users", "300", "--recs", "20", "--format", "json",
                         "-m", "mrr", "--save", tmp_path)  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["counts"]["recs_in_train"] == 0
    train = pl.read_parquet(tmp_path / "train.parquet")
    for name in ("recs", "truth"):
        frame = pl.read_parquet(tmp_path / f"{name}.parquet")
        assert frame.join(train, on=["user", "item"]).height == 0, name
    assert train.height > 0
    code, out, _ = cli("demo", "--users", "300", "--recs", "20")
    assert code == 0
    assert "0 recs rows in train" in out


def test_demo_rejects_no_users() -> None:
    code, _, err = cli("demo", "--users", "0")
    assert code == 2
    assert "--users must be an integer >= 1; got 0." in err


def test_demo_save_then_evaluate(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    code, out, err = cli(
        "demo", "--users", "300", "--recs", "20", "--seed", "3", "--save", folder, "--format",
        "json", "-m", "ndcg@10", "-m", "mrr",
    )  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == [
        "items.parquet",
        "recs.parquet",
        "train.parquet",
        "truth.parquet",
    ]
    truth = pl.read_parquet(folder / "truth.parquet")
    recs = pl.read_parquet(folder / "recs.parquet")
    assert {"user", "item", "relevance"} <= set(truth.columns)
    assert {"user", "item", "score"} <= set(recs.columns)
    assert truth["user"].n_unique() <= 300
    # the printed metrics are those of the saved files
    doc = json.loads(out)
    lib = receval.evaluate(folder / "truth.parquet", folder / "recs.parquet", ["ndcg@10", "mrr"])
    assert doc["metrics"] == lib.means
    # and the files evaluate through the CLI the same way
    code, out2, _ = cli(
        *evaluate_args(folder / "truth.parquet", folder / "recs.parquet", ["ndcg@10", "mrr"]),
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out2)["metrics"] == lib.means


# ---------------------------------------------------------------------------------- config


def test_config_toml_with_relative_paths(files: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "eval.toml").write_text(
        'truth = "truth.parquet"\nrecs = "recs.parquet"\nmetrics = ["mrr", "precision@1"]\n'
        'ties = "expected"\nformat = "json"\nper_user = "out/pu.csv"\n'
    )
    (tmp_path / "out").mkdir()
    code, out, _ = cli("evaluate", "--config", tmp_path / "eval.toml")
    assert code == 0
    doc = json.loads(out)
    assert doc["metrics"]["mrr"] == pytest.approx(HAND["mrr"], rel=1e-15)
    assert doc["metrics"]["precision@1"] == pytest.approx(HAND["precision@1"], rel=1e-15)
    assert pl.read_csv(tmp_path / "out" / "pu.csv").columns == ["user", "mrr", "precision@1"]


def test_flags_override_the_config(files: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "eval.json").write_text(
        json.dumps({"truth": "truth.parquet", "recs": "recs.parquet", "metrics": ["mrr"],
                    "ties": "optimistic", "format": "json"})
    )  # fmt: skip
    code, out, _ = cli("evaluate", "--config", tmp_path / "eval.json", "--ties", "pessimistic")
    assert code == 0
    assert json.loads(out)["settings"]["ties"] == "pessimistic"
    # pessimistic: u1's z before b -> 1/2; u2 1/2; u3 0 -> 1/3
    assert json.loads(out)["metrics"]["mrr"] == pytest.approx(1 / 3, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('truth = "t.parquet"\nrecs = "r.parquet"\nmetrix = ["mrr"]\n', "unknown key 'metrix'"),
        ('truth = "t.parquet"\nrecs = "r.parquet"\nmetrics = [3]\n', "list of metric strings"),
        ('truth = 3\nrecs = "r.parquet"\nmetrics = ["mrr"]\n', "truth must be a path string"),
        ('recs = "r.parquet"\nmetrics = ["mrr"]\n', "missing --truth"),
        ("truth = [\n", "is not valid TOML"),
        ('truth = "t"\nrecs = "r"\nmetrics = ["mrr"]\nformat = "xml"\n', "got 'xml'"),
    ],
    ids=["unknown-key", "bad-metrics", "bad-path", "no-truth", "bad-toml", "bad-format"],
)
def test_config_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "eval.toml").write_text(text)
    code, _, err = cli("evaluate", "--config", tmp_path / "eval.toml")
    assert code == 2
    assert message in " ".join(err.split())
    if message.startswith("unknown key"):
        assert "did you mean 'metrics'" in " ".join(err.split())


# ------------------------------------------------------------------- usage errors and --help


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["evaluate", "--nope"], "No such option: --nope"),
        (["evaluate", "--truth"], "Option '--truth' requires an argument."),
        (["evaluate", "--ties", "random"], "'random' is not one of"),
        (["evaluate", "--partitions", "0"], "Invalid value for '--partitions'"),
        (["nope"], "No such command 'nope'."),
        (["plot", "roc", "--output", "x.png"], "Missing option '--truth'."),
    ],
)
def test_usage_errors_are_one_line(args: list[str], says: str) -> None:
    # the README promises one line on stderr for every error: typer's usage errors too (they
    # were boxes of five lines)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and says in lines[0], lines[0]
    assert "--help" in lines[0]  # where to look next
    assert result.stdout == ""


def test_usage_error_is_one_line_from_the_script() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import sys; from receval.cli import main; "
         "sys.argv = ['receval', 'compare', '--resamples', 'many']; main()"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    assert "Invalid value for '--resamples'" in done.stderr


def test_no_arguments_show_the_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage: receval" in result.output and "evaluate" in result.output


@pytest.mark.parametrize("columns", [80, 200])
def test_help_uses_the_terminal_width(columns: int) -> None:
    # option help was wrapped to about 20 characters in an 80-column box. In a real process:
    # CliRunner forces click's width to 80
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import sys; from receval.cli import main; "
         "sys.argv = ['receval', 'compare', '--help']; main()"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "COLUMNS": str(columns)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns
    truth = next(line for line in lines if line.lstrip().startswith("--truth"))
    assert truth.rstrip().endswith("Truth file: Parquet, CSV, TSV or TREC qrels.")
    config = [line for line in lines if "TOML or JSON file of settings" in line]
    assert len(config) == 1
    start = lines.index(config[0])
    body = lines[start : start + 8]
    width = len(config[0]) - config[0].index("TOML")  # the help column's width
    assert width >= 40
    if columns == 200:  # the whole width is used: the config's help takes two lines at most
        assert "Flags given here override it." in " ".join(body[:2])
    assert "\\[" not in result.stdout  # no markup escapes shown
