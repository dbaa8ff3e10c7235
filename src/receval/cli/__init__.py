"""The ``receval`` command line: a thin layer over the library.

Commands: ``evaluate`` (metrics of a recommendation file, or of a factor model's scores,
against a truth file), ``topk`` (a factor model's top-K lists, written to a file), ``metrics``
(every metric with its definition and variants) and ``demo`` (realistic generated data,
evaluated end to end); ``compare``, ``report`` and ``plot`` (:mod:`receval.cli.compare`);
``split`` and ``audit`` (leakage-safe splits and their audit, :mod:`receval.cli.split`).
"""

from __future__ import annotations

import importlib
import json
import math
import sys
import time
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from receval._errors import InputError, RecevalError, check_choice, check_integer
from receval.cli.common import (
    BlockMemoryOpt,
    CandidatesOpt,
    ColumnsOpt,
    DeviceOpt,
    ExcludeOpt,
    IdTypeOpt,
    InputFormatOpt,
    ItemColOpt,
    ItemFactorsOpt,
    ItemFeaturesOpt,
    ItemIdsOpt,
    ItemsOpt,
    ModelProgressOpt,
    NoRecsOpt,
    RankColOpt,
    RatingRangeOpt,
    RelevanceColOpt,
    ScoreColOpt,
    SegmentsOpt,
    SimilarityOpt,
    ThresholdOpt,
    Ties,
    TiesOpt,
    TrainOpt,
    UserColOpt,
    UserFactorsOpt,
    UserIdsOpt,
    check_paths,
    err,
    evaluate_options,
    out,
    segment_specs,
    show_warning,
    shown_warnings,
)
from receval.cli.common import fail as _fail
from receval.cli.compare import register_compare_commands
from receval.cli.compile_notice import compile_notice
from receval.cli.config import TOPK_KEYS, load_config
from receval.cli.model_io import factor_model, model_options
from receval.cli.split import register_split_commands
from receval.data.datasets import make_interactions, make_items, make_train
from receval.data.io import check_output_path, write_frame
from receval.data.layout import check_id_type
from receval.data.model_files import load_ids
from receval.engines import spark as spark_engine
from receval.engines.model import topk
from receval.evaluation import evaluate
from receval.metrics.registry import MetricSpec, list_metrics
from receval.metrics.result import Result
from receval.metrics.sampling import Sampling

__all__ = ["app", "main"]

DEFAULT_METRICS = ["ndcg@10", "map@100", "mrr", "recall@20", "precision@10", "hit_rate@10"]
# the demo's lists judged against train and the item table: coverage, novelty, popularity
# bias, then one metric each of calibration, serendipity and exposure fairness
DEMO_BEYOND = [
    "coverage@10", "novelty@10", "gini@10", "miscalibration(by=genres)@10", "serendipity@10",
    "awrf(by=genre)@10",
]  # fmt: skip
DEMO_CASCADE = ["err(max_grade=5)@10"]  # a cascade metric on the demo's grades 1..5


def _click_module() -> Any:
    """The click that typer runs on: its own copy in recent typer (``typer._click``), click
    itself before; its exceptions are the ones a command line raises."""
    try:
        return importlib.import_module("typer._click")
    except ImportError:
        return importlib.import_module("click")


_CLICK = _click_module()
_NO_ARGS = getattr(_CLICK.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2
_ABORT = (typer.Abort, getattr(_CLICK.exceptions, "Abort", typer.Abort))  # click's, typer's


class _Commands(TyperGroup):
    """The ``receval`` group: a usage error (an unknown option, a missing or malformed value)
    is one line on stderr with exit code 2, as every other error, not click's lines of
    usage and hint (or Rich's box of them)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        call = (args, prog_name, complete_var)
        if not standalone_mode:
            return super().main(*call, False, windows_expand_args, **extra)
        try:
            code = super().main(*call, False, windows_expand_args, **extra)
        except _NO_ARGS as exc:  # no arguments: the help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except _CLICK.exceptions.ClickException as exc:
            sys.exit(_usage_error(exc))
        except _ABORT:
            err.print("error: aborted.", markup=False, highlight=False)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _usage_error(exc: Any) -> int:
    """Print a click error as one line, with where to look next; return its exit code."""
    message = " ".join(str(exc.format_message()).split())
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{'receval' if ctx is None else ctx.command_path} --help')"
    err.print(f"error: {message}{hint}", markup=False, highlight=False)
    return int(exc.exit_code)


app = typer.Typer(
    name="receval",
    help="Fast, exact offline evaluation of recommender systems and rankers.",
    cls=_Commands,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain help (click's): the option help takes the terminal's width and reads at 80
    # columns; Rich's boxes left it about 20 characters there
    rich_markup_mode=None,
    context_settings={"max_content_width": 10_000},
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
    stream = "stream"


class SortedByUser(StrEnum):
    """--sorted-by-user: read Parquet files sorted by user in order (--engine stream)."""

    auto = "auto"
    true = "true"
    false = "false"


_SORTED = {"auto": "auto", "true": True, "false": False}


class ExcludedTruth(StrEnum):
    """What happens to truth rows that --exclude removes from a user's candidates."""

    drop = "drop"
    raise_ = "raise"


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
        if res.by_segment is not None:  # the whole run's rows, then each segment's
            whole = pl.DataFrame(
                {"metric": list(res.means), "value": list(res.means.values())},
                schema={"metric": pl.String, "value": pl.Float64},
            ).fill_nan(None)
            rows = pl.concat([whole, res.by_segment.drop("note")], how="diagonal_relaxed")
            sys.stdout.write(rows.select("segmentation", "kind", "segment", "metric", "value",
                                         "users").write_csv())  # fmt: skip
            return
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
    model = res.settings.get("model")
    if isinstance(model, dict):  # a factor model's counts (receval evaluate --user-factors)
        first = [k for k in _MODEL_COUNTS if k in model]
        keys = [*first, *(k for k in model if k not in first)]
        facts = ", ".join(f"{k}={model[k]}" for k in keys)
        _out.print(f"model: {facts}", highlight=False)
    if res.by_segment is not None:
        _print_segments(res.by_segment)


def _print_segments(frame: pl.DataFrame) -> None:
    """One table per segmentation: a row per segment, a column per metric (and users)."""
    for (name, kind), rows in frame.group_by("segmentation", "kind", maintain_order=True):
        table = Table(title=f"by {kind} segment: {name}", title_justify="left")
        table.add_column("segment")
        metrics = rows["metric"].unique(maintain_order=True).to_list()
        for metric in metrics:
            table.add_column(metric, justify="right")
        table.add_column("users", justify="right")
        for (label,), seg in rows.group_by("segment", maintain_order=True):
            values = dict(zip(seg["metric"], seg["value"], strict=True))
            cells = ["-" if values.get(m) is None else f"{values[m]:.6f}" for m in metrics]
            shown = "(not listed)" if label is None else str(label)
            most = seg["users"].max()  # users evaluated by any metric of the segment
            table.add_row(shown, *cells, str(most if isinstance(most, int) else 0))
        _out.print(table)
        for note in rows.filter(pl.col("note").is_not_null()).iter_rows(named=True):
            where = "(not listed)" if note["segment"] is None else note["segment"]
            _out.print(f"  {where}, {note['metric']}: {note['note']}", highlight=False)


_MODEL_COUNTS = (
    "users_scored", "truth_users_not_in_model", "truth_rows_not_in_catalog",
    "truth_rows_excluded", "exclude_rows_not_in_catalog", "candidates",
)  # fmt: skip


@app.command("evaluate")
def evaluate_cmd(
    truth: Annotated[
        Path | None, typer.Option(help="Truth file: Parquet, CSV, TSV or TREC qrels.")
    ] = None,
    recs: Annotated[
        Path | None, typer.Option(help="Recommendations: Parquet, CSV, TSV or TREC run.")
    ] = None,
    user_factors: UserFactorsOpt = None,
    item_factors: ItemFactorsOpt = None,
    user_ids: UserIdsOpt = None,
    item_ids: ItemIdsOpt = None,
    similarity: SimilarityOpt = None,
    device: DeviceOpt = None,
    exclude: ExcludeOpt = None,
    candidates: CandidatesOpt = None,
    block_memory: BlockMemoryOpt = None,
    excluded_truth: Annotated[
        ExcludedTruth | None,
        typer.Option(
            help="Truth rows that --exclude removes: drop (with a warning) or raise "
            "[default: drop]."
        ),
    ] = None,
    progress: ModelProgressOpt = None,
    sampling: Annotated[
        str | None,
        typer.Option(
            help="Rank each test item against sampled negatives instead of the whole catalog, "
            "e.g. 'sampled(100)' (uncorrected) or 'rescale(100, seed=0)'; estimators rescale, "
            "minimal_bias, bias_variance, mle; options seed, replace, distribution, gamma, "
            "catalog_size (docs/sampled.md). With --recs, the file is a candidates table."
        ),
    ] = None,
    sample_col: Annotated[
        str | None,
        typer.Option(
            help="The --recs column naming each row's sampled ranking: several sampled "
            "rankings per user (a stochastic ranker); only ee_loss, ee_disparity and "
            "ee_relevance accept it (docs/fairness.md)."
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="Metric string, repeatable, e.g. ndcg@10."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="TOML or JSON file of settings (keys as evaluate's options, plus truth, recs "
            "or user_factors and item_factors, metrics, per_user, format); flags given here "
            "override it."
        ),
    ] = None,
    fmt: Annotated[
        Format | None, typer.Option("--format", help="Output format [default: table].")
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
    segments: SegmentsOpt = None,
    engine: Annotated[
        Engine,
        typer.Option(
            help="local (Polars and Numba in this process), spark (Spark reads the files "
            "and evaluates users in shards) or stream (files larger than memory, in blocks of "
            "users of --block-memory each); same results."
        ),
    ] = Engine.local,
    sorted_by_user: Annotated[
        SortedByUser | None,
        typer.Option(
            help="--engine stream with Parquet files: auto reads files whose footer says they "
            "are sorted by user in order, without the partition pass (checked as read; "
            "unsorted rows fall back to it); true always reads in order and fails on a row out "
            "of order; false always partitions [default: auto]."
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            help="Spark master for --engine spark, e.g. local[4] or spark://host:7077; "
            "sc://host:15002 connects through Spark Connect [default: local[*]]."
        ),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="User shards for --engine spark [default: the session's "
            "spark.sql.shuffle.partitions].",
        ),
    ] = None,
) -> None:
    """Evaluate recommendations against truth and print the metrics.

    The recommendations are a file (--recs), or a factor model's scores of every catalog item
    (--user-factors and --item-factors; --exclude and --candidates narrow each user's items).
    """
    flags: dict[str, Any] = {
        "truth": truth, "recs": recs, "metrics": metric or None, "per_user": per_user,
        "format": fmt.value if fmt else None, "user_factors": user_factors,
        "item_factors": item_factors, "user_ids": user_ids, "item_ids": item_ids,
        "similarity": similarity.value if similarity else None, "exclude": exclude,
        "candidates": candidates, "block_memory": block_memory, "device": device,
        "excluded_truth": excluded_truth.value if excluded_truth else None,
        "sampling": sampling, "sample_col": sample_col,
        "sorted_by_user": _SORTED[sorted_by_user.value] if sorted_by_user else None,
    }  # fmt: skip
    flags.update(
        evaluate_options(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, threshold=threshold, no_recs=no_recs,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
            id_type=id_type, input_format=input_format, columns=columns, segments=segments,
        )
    )  # fmt: skip
    try:
        # evaluate's own defaults apply to whatever neither the config nor a flag sets
        settings: dict[str, Any] = {"format": "table", "per_user": None}
        if config is not None:
            settings.update(load_config(config))
        settings.update({k: v for k, v in flags.items() if v is not None})
        for key, flag in (("truth", "--truth"), ("metrics", "--metric")):
            if settings.get(key) is None:
                msg = f"missing {flag} (give it on the command line or as {key!r} in --config)."
                raise InputError(msg)
        model = _model_source(settings, engine)
        if settings.get("sampling") is not None:
            settings["sampling"] = Sampling.parse(settings["sampling"])
        fmt_value = settings.pop("format")
        check_choice("format", fmt_value, tuple(Format))
        out_format = Format(fmt_value)
        out_path = settings.pop("per_user")
        check_paths(
            {"--per-user": out_path},
            {"--truth": settings["truth"], "--recs": settings.get("recs"), "--config": config,
             "--train": settings.get("train"), "--items": settings.get("items"),
             **_model_inputs(settings)},
        )  # fmt: skip
        settings.update(_engine_options(engine, spark_master, partitions))
        if settings.get("segments") is not None:
            settings["segments"] = segment_specs(settings["segments"])
        block = settings.get("block_memory")
        if not model and isinstance(block, str) and block.isdigit():
            settings["block_memory"] = int(block)  # bytes, as for a model
        notice: AbstractContextManager[None] = compile_notice(err)
        if model:
            progress = err.is_terminal if progress is None else progress
            if progress:
                notice = nullcontext()  # the progress bar shows the work (one live display)
            settings.update(recs=factor_model(settings), progress=progress)
            settings.update(model_options(settings))
        start = time.perf_counter()
        with notice:  # a first run compiles the kernels (spinner on a terminal)
            res = evaluate(
                settings.pop("truth"), settings.pop("recs"), settings.pop("metrics"), **settings
            )
        seconds = time.perf_counter() - start
        if out_path is not None:
            write_frame(res.per_user, out_path)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _print_result(res, out_format, seconds)


_MODEL_FLAGS = {
    "user_factors": "--user-factors", "item_factors": "--item-factors", "user_ids": "--user-ids",
    "item_ids": "--item-ids", "similarity": "--similarity", "device": "--device",
    "exclude": "--exclude",
    "candidates": "--candidates", "block_memory": "--block-memory",
    "excluded_truth": "--excluded-truth",
}  # fmt: skip


def _model_source(settings: dict[str, Any], engine: Engine) -> bool:
    """Whether ``receval evaluate`` scores a factor model (else it reads --recs); exactly one
    source must be given, and the model's options only with a model."""
    has_recs = settings.get("recs") is not None
    factors = [k for k in ("user_factors", "item_factors") if settings.get(k) is not None]
    if has_recs and factors:
        msg = (
            f"--recs and {_MODEL_FLAGS[factors[0]]} both give the recommendations; give either "
            "--recs (a file of recommendations) or --user-factors and --item-factors (a model)."
        )
        raise InputError(msg)
    if not has_recs and not factors:
        msg = (
            "missing --recs, or --user-factors and --item-factors (give them on the command "
            "line or as 'recs', or 'user_factors' and 'item_factors', in --config)."
        )
        raise InputError(msg)
    if len(factors) == 1:
        given, other = (
            ("--user-factors", "--item-factors")
            if factors == ["user_factors"]
            else ("--item-factors", "--user-factors")
        )
        msg = f"{given} needs {other} too: a factor model is user factors and item factors."
        raise InputError(msg)
    if has_recs:
        extra = [
            f
            for k, f in _MODEL_FLAGS.items()
            if settings.get(k) is not None and not (k == "block_memory" and engine is Engine.stream)
        ]
        if extra:
            msg = (
                f"{extra[0]} applies to a factor model (--user-factors and --item-factors), not "
                "to --recs; filter the recommendations file instead."
            )
            raise InputError(msg)
        return False
    if engine is Engine.spark:
        msg = (
            "--engine spark reads --recs files; a factor model (--user-factors) is scored by "
            "the local engine: drop --engine spark."
        )
        raise InputError(msg)
    return True


def _model_inputs(settings: dict[str, Any]) -> dict[str, Any]:
    """The model's input files by option, for :func:`check_paths`."""
    keys = ("user_factors", "item_factors", "user_ids", "item_ids", "exclude", "candidates")
    return {_MODEL_FLAGS[k]: settings.get(k) for k in keys}


def _engine_options(engine: Engine, master: str | None, partitions: int | None) -> dict[str, Any]:
    """evaluate's engine keywords. With ``spark``: the session (the active one, else a new
    one on ``master``; ``sc://`` is Spark Connect), and pyspark imported here only; without
    pyspark, :class:`EngineError` says how to install it."""
    if engine in (Engine.local, Engine.stream):
        if master is not None or partitions is not None:
            msg = "--spark-master and --partitions need --engine spark."
            raise InputError(msg)
        return {"engine": "stream"} if engine is Engine.stream else {}

    return {
        "engine": "spark",
        "spark": spark_engine.session(master or "local[*]"),
        "partitions": partitions,
    }


_TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv")


@app.command("topk")
def topk_cmd(
    user_factors: UserFactorsOpt = None,
    item_factors: ItemFactorsOpt = None,
    k: Annotated[
        int | None, typer.Option("--k", "-k", help="Items per user (the K of top-K).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="File to write: .parquet, .csv or .tsv (by the suffix)."
        ),
    ] = None,
    user_ids: UserIdsOpt = None,
    item_ids: ItemIdsOpt = None,
    similarity: SimilarityOpt = None,
    device: DeviceOpt = None,
    users: Annotated[
        Path | None,
        typer.Option(
            help="Only these users, in this order: .npy, .txt (one per line), Parquet, CSV or "
            "TSV [default: every user of the factors]."
        ),
    ] = None,
    exclude: ExcludeOpt = None,
    candidates: CandidatesOpt = None,
    block_memory: BlockMemoryOpt = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="TOML or JSON file of settings (keys as the options: user_factors, k, output, "
            "...); flags given here override it."
        ),
    ] = None,
    user_col: UserColOpt = None,
    item_col: ItemColOpt = None,
    id_type: IdTypeOpt = None,
    progress: ModelProgressOpt = None,
) -> None:
    """Write a factor model's top-K items of every user to a file (atomically).

    Columns: user, item, score, rank (1..K); a user with fewer candidate items than K gets
    fewer rows. Scores are user factors · item factors (or their cosine).
    """

    flags: dict[str, Any] = {
        "user_factors": user_factors, "item_factors": item_factors, "k": k, "output": output,
        "user_ids": user_ids, "item_ids": item_ids,
        "similarity": similarity.value if similarity else None, "users": users,
        "exclude": exclude, "candidates": candidates, "block_memory": block_memory,
        "user_col": user_col, "item_col": item_col, "id_type": id_type, "device": device,
    }  # fmt: skip
    try:
        settings: dict[str, Any] = load_config(config, TOPK_KEYS) if config is not None else {}
        settings.update({key: v for key, v in flags.items() if v is not None})
        required = (
            ("user_factors", "--user-factors"), ("item_factors", "--item-factors"),
            ("k", "-k"), ("output", "--output"),
        )  # fmt: skip
        for key, flag in required:
            if settings.get(key) is None:
                msg = f"missing {flag} (give it on the command line or as {key!r} in --config)."
                raise InputError(msg)
        out_path = Path(settings.pop("output"))
        if out_path.suffix.lower() not in _TABLE_SUFFIXES:
            msg = f"--output {str(out_path)!r}: expected a .parquet, .csv or .tsv path."
            raise InputError(msg)
        check_output_path(out_path)
        check_paths(
            {"--output": out_path},
            {"--config": config, "--users": settings.get("users"), **_model_inputs(settings)},
        )
        options: dict[str, Any] = {
            key: settings[key] for key in ("user_col", "item_col", "id_type") if key in settings
        }
        show = err.is_terminal if progress is None else progress
        model = factor_model(settings)
        options.update(model_options(settings))
        if settings.get("users") is not None:
            kinds = check_id_type(settings.get("id_type", "auto"))
            options["users"] = load_ids(
                settings["users"], "--users", id_col=settings.get("user_col", "user"),
                kind=kinds["user"],
            )  # fmt: skip
        notice: AbstractContextManager[None] = nullcontext() if show else compile_notice(err)
        with notice:  # the progress bar, else the spinner while kernels compile (first run)
            table = topk(model, settings["k"], progress=show, **options)
        write_frame(table, out_path)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    n_users = table.get_column(options.get("user_col", "user")).n_unique()
    err.print(
        f"wrote {table.height:,} rows (top {settings['k']} of {n_users:,} users) to {out_path}",
        highlight=False,
        markup=False,
    )


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
        default = str(param.default)
        if param.default is None:
            default = "item_features" if param.name == "by" else "evaluate's option"
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
        typer.Option(help="Also write truth, recs, train and items (Parquet) into this folder."),
    ] = None,
) -> None:
    """Generate realistic interaction data and evaluate a model's recommendations on it.

    The model's lists leave out the items each user already has in the generated train (as
    exclude= does for a model), and train shares no (user, item) pair with truth.

    Without --metric: the default ranking metrics, the expected reciprocal rank on the data's
    grades 1..5, plus coverage, novelty and the Gini index of the top-10 lists against a
    generated training set, and their miscalibration, serendipity and attention-weighted rank
    fairness against it and a generated item table.
    """
    try:
        check_integer("--users", users, 1)
        with compile_notice(err):  # a first run compiles the generator's kernels
            data = make_interactions(users, n_recs=recs_per_user, seed=seed)
        n_items = max(1000, 10 * recs_per_user, users // 2)  # make_interactions' catalog
        train = _demo_train(data.truth, make_train(users, n_items=n_items, seed=seed + 1))
        recs = _exclude_train(data.recs, train)
        items = make_items(n_items, dim=16, seed=seed + 2)
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            write_frame(data.truth, save / "truth.parquet")
            write_frame(recs, save / "recs.parquet")
            write_frame(train, save / "train.parquet")
            write_frame(items, save / "items.parquet")
        if fmt is Format.table:
            _out.print(
                f"generated {data.truth.height:,} truth rows, {recs.height:,} "
                f"recommendation rows (the users' train items excluded) and {train.height:,} "
                f"train rows for {users:,} users (seed {seed})",
                highlight=False,
            )
        start = time.perf_counter()
        with compile_notice(err):
            res = evaluate(
                data.truth, recs, metric or _demo_metrics(recs_per_user),
                ties=ties.value, train=train, items=items, item_features="embedding",
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


def _demo_metrics(k: int) -> list[str]:
    """The demo's default metrics: its lists are a model's top ``k``, so a metric without a
    cutoff is named at ``k`` (``mrr@100``: what a top-K table can give; receval warns when a
    table's lists look cut under a full metric's name)."""
    named = [f"{m}@{k}" if "@" not in m else m for m in DEFAULT_METRICS]
    return named + DEMO_CASCADE + DEMO_BEYOND


def _demo_train(truth: pl.DataFrame, train: pl.DataFrame) -> pl.DataFrame:
    """The demo's train: the generated interactions less the (user, item) pairs of truth, as
    a split leaves them (test interactions are not training ones)."""
    return train.join(truth, on=["user", "item"], how="anti", maintain_order="left")


def _exclude_train(recs: pl.DataFrame, train: pl.DataFrame) -> pl.DataFrame:
    """The demo model's lists with ``exclude=`` train, as a model's top-K is made (what
    ``receval.FactorModel`` does with ``exclude=``): no user is recommended an item they
    already have in train, so a list may be shorter than ``--recs``. Generated apart, recs
    would repeat a few train items by chance, the very mistake ``evaluate(train=...)`` warns
    about."""
    return recs.join(train, on=["user", "item"], how="anti", maintain_order="left")


register_compare_commands(app)
register_split_commands(app)


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
        shown_warnings.clear()  # each command says each warning once (tests run several)


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
