"""The ``receval`` command line: a thin layer over the library.

Commands: ``evaluate`` (metrics of a recommendation file against a truth file), ``metrics``
(every metric with its definition and variants) and ``demo`` (realistic generated data,
evaluated end to end).
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ._cli_common import (
    ColumnsOpt,
    IdTypeOpt,
    InputFormatOpt,
    ItemColOpt,
    ItemFeaturesOpt,
    ItemsOpt,
    NoRecsOpt,
    RankColOpt,
    RatingRangeOpt,
    RelevanceColOpt,
    ScoreColOpt,
    ThresholdOpt,
    Ties,
    TiesOpt,
    TrainOpt,
    UserColOpt,
    err,
    evaluate_options,
    out,
    show_warning,
)
from ._cli_common import fail as _fail
from ._cli_compare import register_compare_commands
from ._compile_notice import compile_notice
from ._config import load_config
from ._errors import InputError, RecevalError
from ._evaluate import evaluate
from ._io import check_outputs, write_frame
from ._registry import MetricSpec, list_metrics
from ._result import Result

__all__ = ["app", "main"]

DEFAULT_METRICS = ["ndcg@10", "map@100", "mrr", "recall@20", "precision@10", "hit_rate@10"]
DEMO_BEYOND = ["coverage@10", "novelty@10", "gini@10"]  # the demo's lists judged against train

app = typer.Typer(
    name="receval",
    help="Fast, exact offline evaluation of recommender systems and rankers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_out = out  # the console the commands print to


class Format(StrEnum):
    """How results are printed."""

    table = "table"
    json = "json"
    csv = "csv"


class Engine(StrEnum):
    """Where ``receval evaluate`` runs (``auto`` is for Python callers holding DataFrames)."""

    local = "local"
    spark = "spark"


class FamilyName(StrEnum):
    """Metric families (see MetricSpec.family)."""

    ranking = "ranking"
    classification = "classification"
    rating = "rating"
    beyond = "beyond"


def _print_result(res: Result, fmt: Format, seconds: float | None = None) -> None:
    if fmt is Format.json:
        sys.stdout.write(res.to_json() + "\n")
        return
    if fmt is Format.csv:
        sys.stdout.write("metric,value\n")
        for name, value in res.means.items():
            sys.stdout.write(f'"{name}",{"" if math.isnan(value) else repr(value)}\n')
        return
    table = Table(title="receval", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    details = res.details
    if details:
        table.add_column("details", style="dim")
    for name, value in res.means.items():
        facts = ", ".join(f"{k}={v}" for k, v in details.get(name, {}).items())
        table.add_row(name, f"{value:.6f}", *([facts] if details else []))
    _out.print(table)
    c = res.counts
    tail = f" in {seconds:.2f} s" if seconds is not None else ""
    in_train = "" if c.recs_in_train is None else f", {c.recs_in_train} recs rows in train"
    column = res.settings.get("relevance_col")
    relevance = "1 for every truth row" if column is None else f"column {column!r}"
    _out.print(
        f"users: {c.evaluated} evaluated, {c.no_recs} without recs (policy "
        f"{res.settings['no_recs']}), {c.no_relevant} without relevant items, "
        f"{c.recs_not_in_truth} recs users not in truth{in_train}; ties={res.settings['ties']}; "
        f"relevance: {relevance}{tail}",
        highlight=False,
    )


@app.command("evaluate")
def evaluate_cmd(
    truth: Annotated[
        Path | None, typer.Option(help="Truth file: Parquet, CSV, TSV or TREC qrels.")
    ] = None,
    recs: Annotated[
        Path | None, typer.Option(help="Recommendations: Parquet, CSV, TSV or TREC run.")
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="Metric string, repeatable, e.g. ndcg@10."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="TOML or JSON file of settings (keys as evaluate's options, plus truth, recs, "
            "metrics, per_user, format); flags given here override it."
        ),
    ] = None,
    fmt: Annotated[
        Format | None, typer.Option("--format", help="Output format \\[default: table].")
    ] = None,
    per_user: Annotated[
        Path | None,
        typer.Option(help="Write per-user values to this .parquet or .csv file (atomically)."),
    ] = None,
    user_col: UserColOpt = None,
    item_col: ItemColOpt = None,
    score_col: ScoreColOpt = None,
    rank_col: RankColOpt = None,
    relevance_col: RelevanceColOpt = None,
    ties: TiesOpt = None,
    threshold: ThresholdOpt = None,
    no_recs: NoRecsOpt = None,
    train: TrainOpt = None,
    items: ItemsOpt = None,
    item_features: ItemFeaturesOpt = None,
    rating_range: RatingRangeOpt = None,
    id_type: IdTypeOpt = None,
    input_format: InputFormatOpt = None,
    columns: ColumnsOpt = None,
    engine: Annotated[
        Engine,
        typer.Option(
            help="local (Polars and Numba in this process) or spark (Spark reads the "
            "files and evaluates users in shards; same results)."
        ),
    ] = Engine.local,
    spark_master: Annotated[
        str | None,
        typer.Option(
            help="Spark master for --engine spark, e.g. local[4] or spark://host:7077; "
            "sc://host:15002 connects through Spark Connect \\[default: local[*]]."
        ),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="User shards for --engine spark \\[default: the session's "
            "spark.sql.shuffle.partitions].",
        ),
    ] = None,
) -> None:
    """Evaluate recommendations against truth and print the metrics."""
    flags: dict[str, Any] = {
        "truth": truth, "recs": recs, "metrics": metric or None, "per_user": per_user,
        "format": fmt.value if fmt else None,
    }  # fmt: skip
    flags.update(
        evaluate_options(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, threshold=threshold, no_recs=no_recs,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
            id_type=id_type, input_format=input_format, columns=columns,
        )
    )  # fmt: skip
    try:
        # evaluate's own defaults apply to whatever neither the config nor a flag sets
        settings: dict[str, Any] = {"format": "table", "per_user": None}
        if config is not None:
            settings.update(load_config(config))
        settings.update({k: v for k, v in flags.items() if v is not None})
        for key, flag in (("truth", "--truth"), ("recs", "--recs"), ("metrics", "--metric")):
            if settings.get(key) is None:
                msg = f"missing {flag} (give it on the command line or as {key!r} in --config)."
                raise InputError(msg)
        fmt_value = settings.pop("format")
        try:
            out_format = Format(fmt_value)
        except ValueError:
            msg = f"format must be one of table, json, csv; got {fmt_value!r}."
            raise InputError(msg) from None
        out_path = settings.pop("per_user")
        check_outputs(
            {"--per-user": out_path},
            {"--truth": settings["truth"], "--recs": settings["recs"], "--config": config,
             "--train": settings.get("train"), "--items": settings.get("items")},
        )  # fmt: skip
        settings.update(_engine_options(engine, spark_master, partitions))
        start = time.perf_counter()
        with compile_notice(err):  # a first run compiles the kernels (spinner on a terminal)
            res = evaluate(
                settings.pop("truth"), settings.pop("recs"), settings.pop("metrics"), **settings
            )
        seconds = time.perf_counter() - start
        if out_path is not None:
            write_frame(res.per_user, out_path)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _print_result(res, out_format, seconds)


def _engine_options(engine: Engine, master: str | None, partitions: int | None) -> dict[str, Any]:
    """evaluate's engine keywords. With ``spark``: the session (the active one, else a new
    one on ``master``; ``sc://`` is Spark Connect), and pyspark imported here only; without
    pyspark, :class:`EngineError` says how to install it."""
    if engine is Engine.local:
        if master is not None or partitions is not None:
            msg = "--spark-master and --partitions need --engine spark."
            raise InputError(msg)
        return {}
    from ._spark import session

    return {"engine": "spark", "spark": session(master or "local[*]"), "partitions": partitions}


@app.command("metrics")
def metrics_cmd(
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    family: Annotated[
        FamilyName | None,
        typer.Option(help="Only this family: ranking, classification, rating or beyond."),
    ] = None,
) -> None:
    """List every metric with its definition, parameters and variants."""
    specs = [s for s in list_metrics() if family is None or s.family == family.value]
    if fmt is not Format.table:
        doc = [
            {
                "name": s.name,
                "family": s.family,
                "aliases": list(s.aliases),
                "cutoff": s.cutoff,
                "description": s.description,
                "formula": s.formula,
                "params": [
                    {"name": p.name, "default": p.default, "choices": list(p.choices), "doc": p.doc}
                    for p in s.params
                ],
                "higher_is_better": s.higher_is_better,
                "bounds": [s.bounds[0], None if math.isinf(s.bounds[1]) else s.bounds[1]],
                "variants": s.variants,
                "references": list(s.references),
            }
            for s in specs
        ]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    _out.print("receval metrics: name[(param=value, ...)][@K]", highlight=False, markup=False)
    for s in specs:
        _out.print(_metric_block(s), highlight=False, soft_wrap=False)


def _metric_block(spec: MetricSpec) -> Text:
    """One metric for ``receval metrics``: a block of short labelled lines that wraps to any
    terminal width (a table of five columns is unreadable at 80 columns)."""
    text = Text()
    text.append("\n" + spec.name + ("@K" if spec.cutoff else ""), style="bold")
    if spec.aliases:
        text.append(f"  (also {', '.join(spec.aliases)})")
    text.append(f"  [{spec.family}]\n", style="dim")
    text.append(f"  {spec.description}\n  = {spec.formula}\n")
    for param in spec.params:
        default = "evaluate's option" if param.default is None else str(param.default)
        choices = f" ({' | '.join(param.choices)})" if param.choices else ""
        text.append(f"  {param.name}={default}{choices}: {param.doc}\n")
    if spec.variants:
        text.append(f"  variants: {spec.variants}\n")
    refs = [r for r in spec.references if r not in (spec.variants or "")]  # said once
    if refs:
        text.append(f"  references: {'; '.join(refs)}\n")
    text.rstrip()
    return text


@app.command("demo")
def demo_cmd(
    users: Annotated[int, typer.Option(help="Number of users to generate.")] = 10_000,
    recs_per_user: Annotated[int, typer.Option("--recs", help="Recommendations per user.")] = 100,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help="Metric string, repeatable.")
    ] = None,
    ties: Annotated[Ties, typer.Option(help="Tie policy.")] = Ties.expected,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
    save: Annotated[
        Path | None,
        typer.Option(help="Also write truth.parquet and recs.parquet into this folder."),
    ] = None,
) -> None:
    """Generate realistic interaction data and evaluate a model's recommendations on it.

    Without --metric: the default ranking metrics, plus coverage, novelty and the Gini index of
    the top-10 lists against a generated training set.
    """
    from .datasets import make_interactions, make_train

    try:
        if users < 1:
            msg = f"--users must be an integer >= 1; got {users}."
            raise InputError(msg)
        with compile_notice(err):  # a first run compiles the generator's kernels
            data = make_interactions(users, n_recs=recs_per_user, seed=seed)
        n_items = max(1000, 10 * recs_per_user, users // 2)  # make_interactions' catalog
        train = make_train(users, n_items=n_items, seed=seed + 1)
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            write_frame(data.truth, save / "truth.parquet")
            write_frame(data.recs, save / "recs.parquet")
            write_frame(train, save / "train.parquet")
        if fmt is Format.table:
            _out.print(
                f"generated {data.truth.height:,} truth rows, {data.recs.height:,} "
                f"recommendation rows and {train.height:,} train rows for {users:,} users "
                f"(seed {seed})",
                highlight=False,
            )
        start = time.perf_counter()
        with compile_notice(err), warnings.catch_warnings():
            # generated train and recs are independent: their overlap is chance, not a model
            # repeating known items (the summary line counts it)
            warnings.filterwarnings("ignore", "[0-9]+ recommendation rows .* already has in train")
            res = evaluate(
                data.truth, data.recs, metric or DEFAULT_METRICS + DEMO_BEYOND, ties=ties.value,
                train=train,
            )  # fmt: skip
        seconds = time.perf_counter() - start
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _print_result(res, fmt, seconds)
    if save is not None and fmt is Format.table:
        _out.print(
            f"try: receval evaluate --truth {save / 'truth.parquet'} --recs "
            f"{save / 'recs.parquet'} --train {save / 'train.parquet'} -m ndcg@10 -m novelty@10",
            highlight=False,
        )


register_compare_commands(app)


@app.callback()
def _setup(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="Show Python tracebacks and warnings' source lines (for bug reports)."
        ),
    ] = False,
) -> None:
    """Fast, exact offline evaluation of recommender systems and rankers."""
    _DEBUG[0] = debug
    if not debug:
        warnings.showwarning = show_warning


_DEBUG = [False]


def main() -> None:
    """Entry point of the ``receval`` script.

    Errors on bad input exit with code 2 and one line on stderr. Anything else (a bug) exits
    with code 1 and one line naming ``--debug``, which shows the traceback.
    """
    pl.Config.set_tbl_rows(20)
    try:
        app()  # exits itself on success, usage errors and receval's errors (code 2)
    except Exception as exc:
        if _DEBUG[0]:
            raise
        err.print(
            f"[bold red]error:[/] unexpected {type(exc).__name__}: {escape(str(exc))} "
            "(a bug in receval, or an input it does not check yet; run again with --debug "
            "for the traceback and report it).",
            markup=True,
            highlight=False,
        )
        sys.exit(1)
