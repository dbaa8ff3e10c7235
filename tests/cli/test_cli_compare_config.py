"""``receval compare --config`` and ``receval report --config`` (issue 18, point 8): the same
settings from a TOML or JSON file as from flags, flags override the file, errors name the file
and the key, and an output path from the file may not be an input."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import receval.comparison.report
from receval.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from receval.datasets import make_interactions

    root = tmp_path_factory.mktemp("cmpcfg")
    data = make_interactions(200, n_recs=20, seed=0)
    other = data.recs.with_columns(pl.col("score").shuffle(seed=2).alias("score"))
    paths = {"truth": root / "truth.parquet", "a": root / "a.parquet", "b": root / "b.parquet"}
    data.truth.write_parquet(paths["truth"])
    data.recs.write_parquet(paths["a"])
    other.write_parquet(paths["b"])
    return paths


def _config(folder: Path, text: str, name: str = "cmp.toml") -> Path:
    """A config file in the folder of the data (its relative paths are relative to it)."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


TOML = """\
truth = "truth.parquet"
metrics = ["ndcg@10", "mrr"]
baseline = "knn"
test = "wilcoxon"
correction = "bonferroni"
alpha = 0.1
confidence = 0.9
ci = "percentile"
n_resamples = 150
seed = 3
ties = "optimistic"
relevance_threshold = 1

[runs]
pop = "a.parquet"
knn = "b.parquet"
"""

FLAGS = ["--metric", "ndcg@10", "--metric", "mrr", "--baseline", "knn", "--test", "wilcoxon",
         "--correction", "bonferroni", "--alpha", "0.1", "--confidence", "0.9", "--ci",
         "percentile", "--resamples", "150", "--seed", "3", "--ties", "optimistic",
         "--relevance-threshold", "1"]  # fmt: skip


def _inputs(files: dict[str, Path]) -> list[str]:
    return ["--truth", str(files["truth"]), "--run", f"pop={files['a']}", "--run",
            f"knn={files['b']}"]  # fmt: skip


def _error(output: str) -> str:
    return " ".join(output.split())


def test_compare_from_config_equals_flags(files: dict[str, Path]) -> None:
    config = _config(files["truth"].parent, TOML.replace("[runs]", 'format = "json"\n\n[runs]'))
    from_file = runner.invoke(app, ["compare", "--config", str(config), "--no-progress"])
    assert from_file.exit_code == 0, from_file.output
    flags = ["compare", *_inputs(files), *FLAGS, "--format", "json", "--no-progress"]
    from_flags = runner.invoke(app, flags)
    assert from_flags.exit_code == 0, from_flags.output
    doc = json.loads(from_file.stdout)
    assert doc == json.loads(from_flags.stdout)
    assert doc["models"] == ["pop", "knn"]  # the [runs] table, in order
    assert doc["baseline"] == "knn" and doc["settings"]["test"] == "wilcoxon"
    assert doc["settings"]["correction"] == "bonferroni" and doc["settings"]["ci"] == "percentile"
    assert doc["settings"]["evaluate"]["ties"] == "optimistic"


def test_compare_json_config(files: dict[str, Path]) -> None:
    """JSON too; correction "none" (or null) is no correction, as --correction none."""
    doc = {"truth": "truth.parquet", "runs": {"pop": "a.parquet", "knn": "b.parquet"},
           "metrics": "mrr", "correction": None, "n_resamples": 100, "format": "json"}  # fmt: skip
    config = _config(files["truth"].parent, json.dumps(doc), "cmp.json")
    out = runner.invoke(app, ["compare", "--config", str(config), "--no-progress"])
    assert out.exit_code == 0, out.output
    flags = ["compare", *_inputs(files), "-m", "mrr", "--correction", "none", "--resamples",
             "100", "--format", "json", "--no-progress"]  # fmt: skip
    assert json.loads(out.stdout) == json.loads(runner.invoke(app, flags).stdout)
    assert json.loads(out.stdout)["settings"]["correction"] is None


def test_flags_override_the_config(files: dict[str, Path], tmp_path: Path) -> None:
    config = _config(files["truth"].parent, TOML.replace("[runs]", 'format = "json"\n\n[runs]'))
    args = ["compare", "--config", str(config), "--test", "paired_t", "--baseline", "pop",
            "--resamples", "120", "--no-progress"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    s = doc["settings"]
    assert (s["test"], s["baseline"], s["n_resamples"]) == ("paired_t", "pop", 120)
    assert (s["correction"], s["alpha"], s["seed"]) == ("bonferroni", 0.1, 3)  # from the file
    # --run replaces the file's runs; --format and -m override too
    args += ["--run", f"pop={files['a']}", "--run", f"other={files['b']}", "-m", "mrr",
             "--format", "csv"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    table = pl.read_csv(out.stdout.encode())
    assert table["model"].to_list() == ["pop", "other"] and set(table["metric"]) == {"mrr"}


def test_unset_keys_take_the_defaults(files: dict[str, Path]) -> None:
    config = _config(
        files["truth"].parent,
        'truth = "truth.parquet"\nformat = "json"\nn_resamples = 100\n\n'
        '[runs]\npop = "a.parquet"\nknn = "b.parquet"\n',
    )
    out = runner.invoke(app, ["compare", "--config", str(config), "--no-progress"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["metrics"] == ["ndcg@10", "recall@20"] and doc["baseline"] == "pop"
    s = doc["settings"]
    assert (s["test"], s["correction"], s["alpha"], s["confidence"], s["ci"]) == (
        "paired_t", "holm", 0.05, 0.95, "bca",
    )  # fmt: skip
    assert (s["n_permutations"], s["seed"]) == (10_000, 0)
    # evaluate's config does not take the comparison's keys
    config = _config(
        files["truth"].parent,
        'truth = "truth.parquet"\nrecs = "a.parquet"\nmetrics = ["mrr"]\nseed = 1\n',
        "eval.toml",
    )
    out = runner.invoke(app, ["evaluate", "--config", str(config)])
    assert out.exit_code == 2
    assert "has an unknown key 'seed'" in _error(out.stderr)


def test_report_from_config_equals_flags(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    when = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    monkeypatch.setattr(receval.comparison.report, "utc_now", lambda: when)
    text = TOML.replace("[runs]", f'title = "From a file"\noutput = "{tmp_path}/c.html"\n\n[runs]')
    config = _config(files["truth"].parent, text, "report.toml")
    out = runner.invoke(app, ["report", "--config", str(config), "--no-progress"])
    assert out.exit_code == 0, out.output
    assert f"wrote {tmp_path}/c.html" in out.stdout
    flags = ["report", *_inputs(files), *FLAGS, "--title", "From a file", "-o",
             str(tmp_path / "f.html"), "--no-progress"]  # fmt: skip
    out = runner.invoke(app, flags)
    assert out.exit_code == 0, out.output
    html = (tmp_path / "c.html").read_text()
    assert html == (tmp_path / "f.html").read_text()
    assert "<title>From a file</title>" in html
    # intervals, 2 per-user plots, the ndcg@K curve
    assert html.count("data:image/png;base64,") == 4 and "ndcg@K, K = 1..10" in html
    assert '<tr><th scope="row">date</th><td>2024-05-06T07:08:09Z</td></tr>' in html
    assert f'<tr><th scope="row">run knn</th><td>{files["b"]}</td></tr>' in html


def test_report_curves_from_config_and_flag(files: dict[str, Path], tmp_path: Path) -> None:
    text = (
        f'truth = "truth.parquet"\nmetrics = ["ndcg@10"]\nn_resamples = 100\ncurves = false\n'
        f'output = "{tmp_path}/r.html"\n\n[runs]\npop = "a.parquet"\nknn = "b.parquet"\n'
    )
    config = _config(files["truth"].parent, text, "curves.toml")
    out = runner.invoke(app, ["report", "--config", str(config), "--no-progress"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "r.html").read_text().count("data:image/png;base64,") == 2
    out = runner.invoke(app, ["report", "--config", str(config), "--curves", "--no-progress"])
    assert out.exit_code == 0, out.output
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:image/png;base64,") == 3 and "ndcg@K, K = 1..10" in html


@pytest.mark.parametrize(
    ("command", "text", "message"),
    [
        ("compare", 'truth = "t.parquet"\ntset = "wilcoxon"\n',
         "has an unknown key 'tset'; did you mean 'test'?"),
        ("compare", 'truth = "t.parquet"\nrecs = "r.parquet"\n',
         "has an unknown key 'recs'; did you mean 'runs', 'no_recs'?"),
        ("report", "resamples = 100\n", "unknown key 'resamples'; did you mean 'n_resamples'?"),
        ("report", 'truth = "t.parquet"\nformat = "json"\n', "has an unknown key 'format'"),
        ("compare", 'truth = "t.parquet"\ncurves = true\n', "has an unknown key 'curves'"),
        ("compare", 'alpha = "0.05"\n', "cmp.toml': alpha must be a number; got '0.05'."),
        ("compare", "n_resamples = 1.5\n", "cmp.toml': n_resamples must be an integer; got 1.5."),
        ("compare", "seed = true\n", "cmp.toml': seed must be an integer; got True."),
        ("report", 'curves = "no"\n', "cmp.toml': curves must be true or false; got 'no'."),
        ("compare", 'runs = ["a.parquet"]\n',
         "cmp.toml': runs must be a non-empty table NAME = PATH"),
        ("compare", "[runs]\npop = 3\n", "cmp.toml': runs must be a non-empty table NAME = PATH"),
        ("compare", "output = 3\n", "cmp.toml': output must be a path string; got 3."),
        ("compare", "test = 1\n", "cmp.toml': test must be a string; got 1."),
        ("compare", '[runs]\npop = "a.parquet"\n',
         "missing --truth (give it on the command line or as 'truth' in --config)."),
        ("compare", 'truth = "truth.parquet"\n',
         "missing --run NAME=PATH (give it on the command line or as a [runs] table in "
         "--config)."),
        ("report", 'truth = "truth.parquet"\n[runs]\npop = "a.parquet"\n',
         "missing --output (give it on the command line or as 'output' in --config)."),
        ("compare", 'truth = "truth.parquet"\nformat = "xml"\n[runs]\npop = "a.parquet"\n',
         "format must be one of table, markdown, latex, json, csv; got 'xml'."),
        ("compare", 'truth = "truth.parquet"\ntest = "sign"\n[runs]\npop = "a.parquet"\n',
         "test must be one of paired_t, wilcoxon, randomization; got 'sign'."),
    ],
)  # fmt: skip
def test_config_errors(files: dict[str, Path], command: str, text: str, message: str) -> None:
    config = _config(files["truth"].parent, text)
    out = runner.invoke(app, [command, "--config", str(config), "--no-progress"])
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, out.stderr
    assert message in _error(out.stderr)


def test_output_from_config_may_not_be_an_input(files: dict[str, Path]) -> None:
    folder = files["truth"].parent
    before = {name: path.read_bytes() for name, path in files.items()}
    runs = '\n[runs]\npop = "a.parquet"\nknn = "b.parquet"\n'
    cases = [
        ("compare", 'truth = "truth.parquet"\noutput = "truth.parquet"\n', "cmp.toml",
         f"--output {str(folder / 'truth.parquet')!r} is the --truth file"),
        ("compare", 'truth = "truth.parquet"\noutput = "b.parquet"\n', "cmp.toml",
         f"--output {str(folder / 'b.parquet')!r} is the --run knn file"),
        ("compare", 'truth = "truth.parquet"\noutput = "self.json"\n', "self.json",
         "is the --config file"),
        ("report", 'truth = "truth.parquet"\noutput = "own.html"\n', "own.html",
         "is the --config file"),
    ]  # fmt: skip
    for command, text, name, message in cases:
        if name.endswith(".json"):
            doc = {"truth": "truth.parquet", "output": "self.json",
                   "runs": {"pop": "a.parquet", "knn": "b.parquet"}}  # fmt: skip
            config = _config(folder, json.dumps(doc), name)
        else:
            config = _config(folder, text + runs, name)
        kept = config.read_bytes()
        out = runner.invoke(app, [command, "--config", str(config), "--no-progress"])
        assert out.exit_code == 2, out.output
        assert message in _error(out.stderr), out.stderr
        assert "writing it would replace that input" in _error(out.stderr)
        assert config.read_bytes() == kept
        config.unlink()
    # the flag --output is checked against the inputs the file names, too
    config = _config(folder, 'truth = "truth.parquet"' + runs)
    out = runner.invoke(
        app, ["compare", "--config", str(config), "-o", str(files["a"]), "--no-progress"]
    )
    assert out.exit_code == 2 and "is the --run pop file" in _error(out.stderr)
    assert {name: path.read_bytes() for name, path in files.items()} == before


def test_help_shows_the_defaults() -> None:
    out = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert out.exit_code == 0
    text = re.sub(r"\s+", " ", out.stdout)
    for default in ("[default: paired_t]", "[default: holm]", "[default: 0.05]",
                    "[default: 0.95]", "[default: bca]", "[default: 2000]", "[default: 10000]",
                    "[default: 0]", "[default: table]"):  # fmt: skip
        assert default in text, default
    assert "--config" in text


def test_compare_takes_per_input_columns_and_formats(tmp_path: Path) -> None:
    """compare and report read truth as evaluate does: its format and each input's own ids."""
    truth = tmp_path / "test.inter"
    truth.write_text(
        "user_id:token\titem_id:token\trating:float\nu1\ta\t5\nu1\tb\t3\nu2\tc\t4\n",
        encoding="utf-8",
    )
    recs = pl.DataFrame(
        {
            "uid": ["u1", "u1", "u2", "u2"],
            "iid": ["b", "x", "c", "a"],
            "score": [0.9, 0.8, 0.1, 0.7],
        }
    )
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    recs.write_parquet(a)
    recs.with_columns(pl.col("score").reverse()).write_parquet(b)
    options = {"user_col": "user_id", "item_col": "item_id", "relevance_col": "rating",
               "columns": ["recs.user=uid", "recs.item=iid"]}  # fmt: skip
    cmp = receval.compare(truth, {"a": a, "b": b}, ["mrr", "recall@1"], n_resamples=50,
                          progress=False, **options)  # fmt: skip
    renamed = recs.rename({"uid": "user_id", "iid": "item_id"})
    want = receval.evaluate(truth, renamed, ["mrr", "recall@1"], user_col="user_id",
                            item_col="item_id", relevance_col="rating")  # fmt: skip
    assert cmp.cell("a", "mrr")["mean"] == want["mrr"]
    args = ["compare", "--truth", str(truth), "--run", f"a={a}", "--run", f"b={b}", "-m", "mrr",
            "--user-col", "user_id", "--item-col", "item_id", "--relevance-col", "rating",
            "--columns", "recs.user=uid", "--columns", "recs.item=iid", "--format", "json",
            "--resamples", "50", "--no-progress"]  # fmt: skip
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.stderr
    rows = {(r["model"], r["metric"]): r for r in json.loads(out.stdout)["rows"]}
    assert rows["a", "mrr"]["mean"] == want["mrr"]
