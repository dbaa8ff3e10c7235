"""The ``compare``, ``report`` and ``plot`` commands of the command line.

* ``receval compare --truth test.parquet --run pop=a.parquet --run knn=b.parquet -m ndcg@10``
  prints the comparison (table, markdown, latex, json or csv) and can write it to a file;
* ``receval report --truth ... --run ... -o report.html`` writes the self-contained HTML report;
* ``receval plot roc|pr|metric-at-k|per-user --truth ... --recs ... -o plot.png``.

``compare`` and ``report`` also read their settings from ``--config FILE`` (TOML or JSON, the
keys of ``receval evaluate --config`` plus the comparison's, see :mod:`receval.cli.config`); a
flag given on the command line overrides the file, and anything set by neither takes the
default shown in ``--help``.

Progress (Rich) goes to stderr; errors are printed as by the other commands (exit code 2).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

import typer

from receval._errors import InputError, RecevalError, about, check_choice
from receval.cli.common import (
    BlockMemoryOpt,
    CandidatesOpt,
    ColumnsOpt,
    DeviceOpt,
    ExcludeOpt,
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
    SegmentsOpt,
    SimilarityOpt,
    ThresholdOpt,
    TiesOpt,
    TrainOpt,
    UserColOpt,
    check_paths,
    evaluate_options,
    segment_specs,
)
from receval.cli.common import fail as _fail
from receval.cli.common import out as _out
from receval.cli.config import COMPARE_KEYS, REPORT_KEYS, load_config
from receval.cli.model_io import factor_model, model_options
from receval.comparison.compare import compare
from receval.comparison.curves import MAX_KS, metric_at_k, pr, roc
from receval.comparison.plots import per_user
from receval.comparison.report import best_models, format_p, legend
from receval.data.io import write_frame, write_text
from receval.evaluation import evaluate

if TYPE_CHECKING:
    from receval.comparison.compare import Comparison

__all__ = ["ComparisonFlags", "RowCurveFlags", "register_compare_commands"]

_COMPARE_METRICS = ["ndcg@10", "recall@20"]


class PairedTestOpt(StrEnum):
    """Paired tests."""

    paired_t = "paired_t"
    wilcoxon = "wilcoxon"
    randomization = "randomization"


class CorrectionOpt(StrEnum):
    """Multiple-comparison corrections."""

    holm = "holm"
    bonferroni = "bonferroni"
    bh = "bh"
    none = "none"


class CiOpt(StrEnum):
    """Bootstrap interval methods."""

    bca = "bca"
    percentile = "percentile"


class CompareFormat(StrEnum):
    """How ``compare`` prints."""

    table = "table"
    markdown = "markdown"
    latex = "latex"
    json = "json"
    csv = "csv"


class KindOpt(StrEnum):
    """Per-user distribution plots."""

    box = "box"
    violin = "violin"


# typer reads the annotations of the commands in this module's namespace
truth_opt = typer.Option(help="Truth file: Parquet, CSV, TSV or TREC qrels.")
config_opt = typer.Option(
    help="TOML or JSON file of settings: evaluate's keys (truth, metrics, ties, ...), runs (a "
    "table NAME = PATH) and the options below by their Python names (n_resamples, ...); see "
    "docs/compare.md. Flags given here override it."
)
run_opt = typer.Option(
    "--run", "-r", help="A model's recommendations as NAME=PATH; repeat for each model."
)
metric_opt = typer.Option(
    "--metric", "-m", help="Metric string, repeatable [default: ndcg@10, recall@20]."
)
factors_opt = typer.Option(
    "--factors",
    help="A factor model as NAME=USER_FACTORS,ITEM_FACTORS[,USER_IDS,ITEM_IDS] (the files of "
    "evaluate --user-factors, --item-factors, --user-ids, --item-ids), scored on the whole "
    "catalog: exact metrics, mrr and map not cut at a list length; repeat for each model "
    "(after the --run models).",
)
recs_opt = typer.Option(help="One model's recommendations (named by the file stem).")
out_opt = typer.Option("--output", "-o", help="Image file to write: .png, .svg or .pdf.")


# the statistics options of compare and report; None (not given) leaves the config file's
# value or the default (_DEFAULTS)
BaselineOpt = Annotated[
    str | None, typer.Option(help="Run tested against [default: the first --run].")
]
TestOpt = Annotated[PairedTestOpt | None, typer.Option(help="Paired test [default: paired_t].")]
CorrectionArg = Annotated[
    CorrectionOpt | None, typer.Option(help="Multiple-comparison correction [default: holm].")
]
AlphaOpt = Annotated[float | None, typer.Option(help="Significance level [default: 0.05].")]
ConfidenceOpt = Annotated[
    float | None, typer.Option(help="Interval confidence level [default: 0.95].")
]
CiArg = Annotated[CiOpt | None, typer.Option(help="Bootstrap interval method [default: bca].")]
ResamplesOpt = Annotated[int | None, typer.Option(help="Bootstrap resamples [default: 2000].")]
PermutationsOpt = Annotated[
    int | None, typer.Option(help="Sign flips of the randomization test [default: 10000].")
]
SeedOpt = Annotated[
    int | None, typer.Option(help="Seed of the bootstrap and permutations [default: 0].")
]
ProgressOpt = Annotated[bool, typer.Option(help="Progress on stderr.")]
UsersOpt = Annotated[
    str | None,
    typer.Option(
        help="'all' (every truth user) or 'common' (only the users every run can score; "
        "those left out are counted) [default: all]."
    ),
]


@dataclass(frozen=True)
class ComparisonFlags:
    """The flags that ``compare`` and ``report`` share, declared once: each field is an
    option (its annotation is typer's declaration of it, in the order ``--help`` lists them),
    None where not given, so that the config file's value or the default holds
    (:func:`_settings`). :func:`_with_flags` puts them in a command's signature."""

    truth: Annotated[Path | None, truth_opt] = None
    run: Annotated[list[str] | None, run_opt] = None
    factors: Annotated[list[str] | None, factors_opt] = None
    metric: Annotated[list[str] | None, metric_opt] = None
    config: Annotated[Path | None, config_opt] = None
    baseline: BaselineOpt = None
    test: TestOpt = None
    correction: CorrectionArg = None
    alpha: AlphaOpt = None
    confidence: ConfidenceOpt = None
    ci: CiArg = None
    resamples: ResamplesOpt = None
    permutations: PermutationsOpt = None
    seed: SeedOpt = None
    progress: ProgressOpt = True
    user_col: UserColOpt = None
    item_col: ItemColOpt = None
    score_col: ScoreColOpt = None
    rank_col: RankColOpt = None
    relevance_col: RelevanceColOpt = None
    ties: TiesOpt = None
    threshold: ThresholdOpt = None
    no_recs: NoRecsOpt = None
    train: TrainOpt = None
    items: ItemsOpt = None
    item_features: ItemFeaturesOpt = None
    rating_range: RatingRangeOpt = None
    id_type: IdTypeOpt = None
    input_format: InputFormatOpt = None
    columns: ColumnsOpt = None
    segments: SegmentsOpt = None
    exclude: ExcludeOpt = None
    candidates: CandidatesOpt = None
    similarity: SimilarityOpt = None
    device: DeviceOpt = None
    block_memory: BlockMemoryOpt = None
    users: UsersOpt = None

    def given(self, output: Path | None) -> dict[str, Any]:
        """The flags under their config keys (None: not given), ``--output`` (the command's
        own option) among them; the factor-model runs' options and ``users`` first."""
        options = evaluate_options(
            user_col=self.user_col, item_col=self.item_col, score_col=self.score_col,
            rank_col=self.rank_col, relevance_col=self.relevance_col, ties=self.ties,
            threshold=self.threshold, no_recs=self.no_recs, train=self.train, items=self.items,
            item_features=self.item_features, rating_range=self.rating_range,
            id_type=self.id_type, input_format=self.input_format, columns=self.columns,
            segments=self.segments,
        )  # fmt: skip
        test, correction, ci, similarity = self.test, self.correction, self.ci, self.similarity
        return {
            "exclude": self.exclude, "candidates": self.candidates, "device": self.device,
            "similarity": similarity.value if similarity else None,
            "block_memory": self.block_memory, "users": self.users,
            "truth": self.truth, "metrics": self.metric or None, "baseline": self.baseline,
            "test": test.value if test else None,
            "correction": correction.value if correction else None, "alpha": self.alpha,
            "confidence": self.confidence, "ci": ci.value if ci else None,
            "n_resamples": self.resamples, "n_permutations": self.permutations,
            "seed": self.seed, "output": output, **options,
        }  # fmt: skip


def _flag_parameters(flags: type[Any]) -> list[inspect.Parameter]:
    """The fields of the dataclass ``flags`` as keyword parameters, with their Annotated
    declarations (typer's) and defaults."""
    hints = get_type_hints(flags, include_extras=True)
    return [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name],
            default=inspect.Parameter.empty if f.default is MISSING else f.default,
        )
        for f in fields(flags)
    ]  # fmt: skip


def _with_flags(
    command: Callable[..., None],
    *,
    after: str | None = None,
    after_truth: tuple[str, ...] = (),
) -> Callable[..., None]:
    """``command(flags, **own)`` as a typer command, ``flags`` a dataclass of options
    (:class:`ComparisonFlags`, :class:`RowCurveFlags`): its signature is the dataclass'
    fields with the command's own options (its parameters after ``flags``) after the field
    ``after`` (default: the last), or right after ``truth`` (the first field) for those named
    in ``after_truth``; typer calls it with every option by name, and ``command`` gets the
    shared ones as one instance of the dataclass."""
    params = list(inspect.signature(command, eval_str=True).parameters.values())
    flags_type, own = params[0].annotation, params[1:]
    shared = _flag_parameters(flags_type)
    first = [p for p in own if p.name in after_truth]
    later = [p for p in own if p.name not in after_truth]
    at = len(shared) if after is None else [p.name for p in shared].index(after) + 1
    ordered = [shared[0], *first, *shared[1:at], *later, *shared[at:]]
    names = {p.name for p in own}

    @functools.wraps(command)
    def run(**options: Any) -> None:
        mine = {name: options.pop(name) for name in names}
        command(flags_type(**options), **mine)

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in ordered]
    )
    return run


_DEFAULTS: dict[str, Any] = {
    "metrics": _COMPARE_METRICS, "test": "paired_t", "correction": "holm", "alpha": 0.05,
    "confidence": 0.95, "ci": "bca", "n_resamples": 2000, "n_permutations": 10_000, "seed": 0,
}  # fmt: skip
_COMMAND_DEFAULTS: dict[str, dict[str, Any]] = {
    "compare": {"format": "table"},
    "report": {"title": "receval comparison", "curves": True},
}


_FACTOR_FILES = ("user_factors", "item_factors", "user_ids", "item_ids")


def _factor_runs(specs: list[str], runs: dict[str, Any]) -> None:
    """``--factors NAME=USER_FACTORS,ITEM_FACTORS[,USER_IDS,ITEM_IDS]`` (repeatable), added to
    ``runs`` as tables of files (the config's form of a factor-model run)."""
    for spec in specs:
        name, sep, paths = spec.partition("=")
        files = [p.strip() for p in paths.split(",")]
        if not sep or not name.strip() or len(files) not in (2, 4) or not all(files):
            msg = (
                "--factors must be NAME=USER_FACTORS,ITEM_FACTORS or NAME=USER_FACTORS,"
                f"ITEM_FACTORS,USER_IDS,ITEM_IDS (e.g. --factors als=U.npy,I.npy); got {spec!r}."
            )
            raise InputError(msg)
        if name.strip() in runs:
            msg = f"--run and --factors names must be unique; {name.strip()!r} is given twice."
            raise InputError(msg)
        runs[name.strip()] = dict(zip(_FACTOR_FILES, map(Path, files), strict=False))


def _runs(
    specs: list[str] | None, recs: Path | None = None, factors: list[str] | None = None
) -> dict[str, Any]:
    """``--run NAME=PATH`` (repeatable), ``--recs PATH`` (named by the file stem) and
    ``--factors NAME=FILES`` (a table of the model's files)."""
    runs: dict[str, Any] = {}
    for spec in specs or []:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path.strip():
            msg = f"--run must be NAME=PATH (e.g. --run pop=pop.parquet); got {spec!r}."
            raise InputError(msg)
        if name.strip() in runs:
            msg = f"--run names must be unique; {name.strip()!r} is given twice."
            raise InputError(msg)
        runs[name.strip()] = Path(path.strip())
    if recs is not None:
        if recs.stem in runs:
            msg = f"--recs {str(recs)!r} is named {recs.stem!r}, which a --run already uses."
            raise InputError(msg)
        runs[recs.stem] = recs
    _factor_runs(factors or [], runs)
    if not runs:
        msg = "missing --run NAME=PATH (repeat it for each model) or --recs PATH."
        raise InputError(msg)
    return runs


def _check_output(
    output: Path | None,
    truth: Path,
    runs: dict[str, Any],
    options: dict[str, Any],
    config: Path | None = None,
) -> None:
    """Refuse an output path that names an input file (or the config file), before any work
    (it would be lost), and inputs or outputs that are pipes or devices."""
    inputs: dict[str, Any] = {"--truth": truth, "--config": config}
    for name, run in runs.items():
        if isinstance(run, dict):  # a factor model's files
            inputs.update({f"--factors {name} ({key})": path for key, path in run.items()})
        else:
            inputs[f"--run {name}"] = run
    inputs.update({f"--{key}": options.get(key) for key in ("train", "items")})
    inputs.update({f"--{key}": options.get(key) for key in ("exclude", "candidates")})
    check_paths({"--output": output}, inputs)


def _print_comparison(cmp: Comparison, fmt: CompareFormat) -> None:
    if fmt is CompareFormat.json:
        sys.stdout.write(cmp.to_json() + "\n")
    elif fmt is CompareFormat.markdown:
        sys.stdout.write(cmp.to_markdown())
    elif fmt is CompareFormat.latex:
        sys.stdout.write(cmp.to_latex(ci=True))
    elif fmt is CompareFormat.csv:
        sys.stdout.write(cmp.table.write_csv())
    else:
        _print_table(cmp)


BEST = "^"  # marks the best mean per metric (also bold on a terminal): visible through a pipe


def _print_table(cmp: Comparison) -> None:
    """The terminal tables: means with intervals (models x metrics, or one row per model and
    metric when that is too wide for the terminal), then the tests against the baseline
    (adjusted p, effect size, paired users, as the Markdown report), then the legend."""
    from rich.table import Table
    from rich.text import Text

    best = best_models(cmp)
    cells = {(r["model"], r["metric"]): r for r in cmp.table.iter_rows(named=True)}

    def mean(model: str, key: str) -> Text:
        c = cells[model, key]
        text = Text()
        top = model in best.get(key, ())
        text.append("-" if c["mean"] is None else f"{c['mean']:.4f}", style="bold" if top else "")
        text.append(BEST if top else " ")
        return text

    def interval(model: str, key: str) -> str:
        c = cells[model, key]
        return "" if c["ci_low"] is None else f"[{c['ci_low']:.4f}, {c['ci_high']:.4f}]"

    title = f"receval compare (baseline {cmp.baseline})"
    wide = Table(title=title, title_justify="left")
    wide.add_column("model")
    for key in cmp.metrics:
        wide.add_column(key, justify="right")
    for model in cmp.models:
        row = []
        for key in cmp.metrics:
            text = mean(model, key)
            if interval(model, key):
                text.append(" " + interval(model, key))
            if cells[model, key]["significant"]:
                text.append(" *")
            row.append(text)
        wide.add_row(Text(model), *row)
    natural = _out.measure(wide, options=_out.options.update_width(100_000)).maximum
    if natural <= _out.width:
        _out.print(wide)
    else:  # one row per (model, metric): fits 80 columns whatever the number of metrics
        long = Table(title=title, title_justify="left")
        for name in ("model", "metric"):
            long.add_column(name, overflow="fold")
        long.add_column("mean", justify="right", no_wrap=True)
        long.add_column("interval", justify="right", no_wrap=True)
        for model in cmp.models:
            for key in cmp.metrics:
                long.add_row(Text(model), Text(key), mean(model, key), interval(model, key))
        _out.print(long)
    tests = [
        r for r in cmp.table.iter_rows(named=True)
        if r["model"] != cmp.baseline and r["p_value"] is not None
    ]  # fmt: skip
    if tests:
        table = Table(title=f"tests against {cmp.baseline}", title_justify="left")
        for name in ("model", "metric"):
            table.add_column(name, overflow="fold")
        for name in ("p", "p adjusted", "signif.", "effect d", "users"):
            table.add_column(name, justify="right", no_wrap=True)
        for r in tests:
            d = "-" if r["effect_size"] is None else f"{r['effect_size']:.3f}"
            table.add_row(
                Text(r["model"]), Text(r["metric"]), format_p(r["p_value"], 4),
                format_p(r["p_adjusted"], 4), "yes *" if r["significant"] else "no", d,
                str(r["n_paired"]),
            )  # fmt: skip
        _out.print(table)
    _out.print(legend(cmp, best=f"{BEST} (bold on a terminal)"), highlight=False)


def _write_output(cmp: Comparison, path: Path) -> None:
    """Write the comparison to ``path`` in the format its suffix names."""

    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        cmp.to_html(path)
        return
    if suffix in (".parquet", ".pq", ".csv", ".tsv"):
        write_frame(cmp.table, path)
        return
    texts = {".md": cmp.to_markdown, ".tex": lambda: cmp.to_latex(ci=True), ".json": cmp.to_json}
    if suffix not in texts:
        msg = (
            f"cannot write {str(path)!r}: expected a .md, .tex, .json, .html, .csv, .tsv or "
            ".parquet path."
        )
        raise InputError(msg)
    write_text(texts[suffix](), path)


def _settings(
    command: str,
    config: Path | None,
    flags: dict[str, Any],
    run: list[str] | None,
    factors: list[str] | None = None,
) -> dict[str, Any]:
    """The settings of ``compare`` or ``report``: the defaults, then the config file, then the
    flags given (``flags``: None where not given; ``--run`` and ``--factors`` replace the
    config's runs)."""

    settings: dict[str, Any] = {**_DEFAULTS, **_COMMAND_DEFAULTS[command]}
    if config is not None:
        settings.update(load_config(config, COMPARE_KEYS if command == "compare" else REPORT_KEYS))
    settings.update({k: v for k, v in flags.items() if v is not None})
    if run or factors:
        settings["runs"] = _runs(run, factors=factors)
    needed = [("truth", "--truth", "'truth'"), ("runs", "--run NAME=PATH", "a [runs] table")]
    if command == "report":
        needed.append(("output", "--output", "'output'"))
    for key, flag, where in needed:
        if settings.get(key) is None:
            msg = f"missing {flag} (give it on the command line or as {where} in --config)."
            raise InputError(msg)
    if settings["correction"] == CorrectionOpt.none.value:
        settings["correction"] = None
    return settings


_MODEL_OPTIONS = {
    "exclude": "--exclude", "candidates": "--candidates", "similarity": "--similarity",
    "device": "--device", "block_memory": "--block-memory",
}  # fmt: skip


def _models(runs: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """``runs`` with each factor-model run (a table of files) read into a
    :class:`receval.FactorModel` by the code path of ``receval evaluate --user-factors``
    (:func:`~receval.cli.model_io.factor_model`); the model options (``exclude``,
    ``candidates``, ...) popped from ``settings`` and, for ``exclude``, ``candidates`` and
    ``block_memory``, put back as evaluate's keywords.

    ``compare`` evaluates every run with the same options, and evaluate takes ``exclude=``
    for a model only (a table of recommendations is filtered by whoever made it): the model
    options need every run to be a factor model."""
    given = [k for k in _MODEL_OPTIONS if settings.get(k) is not None]
    models = [name for name, run in runs.items() if isinstance(run, dict)]
    tables = [name for name in runs if name not in models]
    if given and (tables or not models):
        first = _MODEL_OPTIONS[given[0]]
        if not models:
            msg = (
                f"{first} applies to factor-model runs (--factors NAME=U,I); every run here "
                "is a table of recommendations: filter those files instead."
            )
        else:
            msg = (
                f"{first} applies to factor-model runs, and run(s) {', '.join(map(repr, tables))} "
                "are tables of recommendations, which every run's options would reach: give "
                f"every run as --factors, or leave {first} out and filter the tables (and "
                "score the models with candidates or exclude built into their files)."
            )
        raise InputError(msg)
    common: dict[str, Any] = {
        k: settings[k] for k in ("user_col", "item_col", "id_type") if k in settings
    }
    model_settings = {k: settings.pop(k) for k in given}
    out = dict(runs)
    for name in models:
        spec = {**runs[name], **common}
        spec.update({k: model_settings[k] for k in ("similarity", "device") if k in model_settings})
        with about(f"--factors {name}"):
            out[name] = factor_model(spec)
    keys = ("exclude", "candidates", "block_memory")
    keywords: dict[str, Any] = {k: model_settings[k] for k in keys if k in model_settings}
    settings.update(model_options({**keywords, **common}))
    return out


def _compare_format(value: Any) -> CompareFormat:
    check_choice("format", value, tuple(CompareFormat))
    return CompareFormat(value)


def _run_compare(settings: dict[str, Any], config: Path | None, progress: bool) -> Comparison:
    """Check the output path, then compare; ``settings`` as :func:`_settings` returns them,
    less the command's own keys (output, format, title, curves)."""
    truth, runs = settings.pop("truth"), settings.pop("runs")
    output = settings.pop("output", None)
    _check_output(output, truth, runs, settings, config)
    if settings.get("segments") is not None:
        settings["segments"] = segment_specs(settings["segments"])
    runs = _models(runs, settings)
    return compare(truth, runs, settings.pop("metrics"), progress=progress, **settings)


CompareFormatArg = Annotated[
    CompareFormat | None, typer.Option("--format", help="Output format [default: table].")
]
CompareOutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Also write to this .md, .tex, .json, .html, .csv file."),
]
ReportOutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="The .html file to write.")
]
TitleOpt = Annotated[str | None, typer.Option(help="Report title [default: receval comparison].")]
CurvesOpt = Annotated[
    bool | None,
    typer.Option(
        help="Add metric@K curves (K = 1..100 at most) of the ranking metrics with a "
        "cutoff, and ROC curves when a classification metric is compared "
        "[default: curves]."
    ),
]


def compare_cmd(
    flags: ComparisonFlags, fmt: CompareFormatArg = None, output: CompareOutputOpt = None
) -> None:
    """Compare models on the same truth: means, intervals, paired tests."""
    given = flags.given(output)
    given["format"] = fmt.value if fmt else None
    try:
        settings = _settings("compare", flags.config, given, flags.run, flags.factors)
        out_format = _compare_format(settings.pop("format"))
        out_path = settings.get("output")
        cmp = _run_compare(settings, flags.config, flags.progress)
        if out_path is not None:
            _write_output(cmp, out_path)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _print_comparison(cmp, out_format)


def report_cmd(
    flags: ComparisonFlags,
    output: ReportOutputOpt = None,
    title: TitleOpt = None,
    curves: CurvesOpt = None,
) -> None:
    """Write a self-contained HTML report (tables, plots, provenance) comparing models."""
    given = flags.given(output)
    given.update({"title": title, "curves": curves})
    try:
        settings = _settings("report", flags.config, given, flags.run, flags.factors)
        title_text, with_curves = settings.pop("title"), settings.pop("curves")
        out_path = settings["output"]
        cmp = _run_compare(settings, flags.config, flags.progress)
        path = cmp.to_html(out_path, title=title_text, curves=with_curves)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _out.print(f"wrote {path}", highlight=False)


@dataclass(frozen=True)
class RowCurveFlags:
    """The options of ``plot roc`` and ``plot pr``, declared once (as :class:`ComparisonFlags`)."""

    truth: Annotated[Path, truth_opt]
    output: Annotated[Path, out_opt]
    recs: Annotated[Path | None, recs_opt] = None
    run: Annotated[list[str] | None, run_opt] = None
    user_col: Annotated[str, typer.Option(help="User id column.")] = "user"
    item_col: Annotated[str, typer.Option(help="Item id column.")] = "item"
    score_col: Annotated[str, typer.Option(help="Score column of recs.")] = "score"
    relevance_col: Annotated[str | None, typer.Option(help="Relevance column.")] = None
    threshold: Annotated[float, typer.Option(help="Relevance threshold.")] = 1.0
    id_type: IdTypeOpt = None


def _row_curves(draw: Callable[..., Any], flags: RowCurveFlags) -> None:
    """Draw ``roc`` or ``pr`` of the runs of ``flags`` to its ``--output``."""
    options = {
        "user_col": flags.user_col, "item_col": flags.item_col, "score_col": flags.score_col,
        "relevance_col": flags.relevance_col, "relevance_threshold": flags.threshold,
        **({"id_type": flags.id_type} if flags.id_type else {}),
    }  # fmt: skip
    try:
        runs = _runs(flags.run, flags.recs)
        _check_output(flags.output, flags.truth, runs, options)
        draw(flags.truth, runs, path=flags.output, **options)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _out.print(f"wrote {flags.output}", highlight=False)


def roc_cmd(flags: RowCurveFlags) -> None:
    """ROC curves of the recommendation rows, labelled by truth."""
    _row_curves(roc, flags)


def pr_cmd(flags: RowCurveFlags) -> None:
    """Precision-recall curves of the recommendation rows, labelled by truth."""
    _row_curves(pr, flags)


_EVALUATE_FLAGS = (
    "user_col", "item_col", "score_col", "rank_col", "relevance_col", "ties", "threshold",
    "no_recs", "train", "items", "item_features", "rating_range", "id_type", "input_format",
    "columns",
)  # fmt: skip


@dataclass(frozen=True)
class PlotRunFlags:
    """The options of ``plot metric-at-k`` and ``plot per-user``, declared once (as
    :class:`ComparisonFlags`): the runs, and evaluate's options for each of them."""

    truth: Annotated[Path, truth_opt]
    output: Annotated[Path, out_opt]
    recs: Annotated[Path | None, recs_opt] = None
    run: Annotated[list[str] | None, run_opt] = None
    user_col: UserColOpt = None
    item_col: ItemColOpt = None
    score_col: ScoreColOpt = None
    rank_col: RankColOpt = None
    relevance_col: RelevanceColOpt = None
    ties: TiesOpt = None
    threshold: ThresholdOpt = None
    no_recs: NoRecsOpt = None
    train: TrainOpt = None
    items: ItemsOpt = None
    item_features: ItemFeaturesOpt = None
    rating_range: RatingRangeOpt = None
    id_type: IdTypeOpt = None
    input_format: InputFormatOpt = None
    columns: ColumnsOpt = None

    def options(self) -> dict[str, Any]:
        """The keyword options of :func:`receval.evaluate` that the flags give."""
        return evaluate_options(**{name: getattr(self, name) for name in _EVALUATE_FLAGS})


def _plot_runs(flags: PlotRunFlags, draw: Callable[[dict[str, Any], dict[str, Any]], Any]) -> None:
    """Check ``--output`` against the runs of ``flags``, then ``draw(runs, options)`` to it."""
    options = flags.options()
    try:
        runs = _runs(flags.run, flags.recs)
        _check_output(flags.output, flags.truth, runs, options)
        draw(runs, options)
    except (RecevalError, OSError) as exc:
        raise _fail(exc) from None
    _out.print(f"wrote {flags.output}", highlight=False)


def metric_at_k_cmd(
    flags: PlotRunFlags,
    metric: Annotated[
        str, typer.Option("--metric", "-m", help="Metric without @K, e.g. ndcg.")
    ] = "ndcg",
    k: Annotated[
        int, typer.Option("--k", help=f"Largest cutoff: K = 1..k (at most {MAX_KS}).")
    ] = 20,
) -> None:
    """A metric at every cutoff K = 1..k, one line per model."""
    if not 1 <= k <= MAX_KS:
        msg = f"--k must be an integer from 1 to {MAX_KS} (K = 1..k); got {k}."
        if k > MAX_KS:
            msg += " For more cutoffs, give receval.plot.metric_at_k a list (ks=[...])."
        raise _fail(InputError(msg)) from None
    _plot_runs(
        flags,
        lambda runs, options: metric_at_k(
            flags.truth, runs, metric, ks=k, path=flags.output, **options
        ),
    )


def per_user_cmd(
    flags: PlotRunFlags,
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric string.")] = "ndcg@10",
    kind: Annotated[KindOpt, typer.Option(help="box or violin.")] = KindOpt.box,
) -> None:
    """The distribution of a metric's per-user values, one box per model."""

    def draw(runs: dict[str, Any], options: dict[str, Any]) -> None:
        results = {
            name: evaluate(flags.truth, path, metric, **options) for name, path in runs.items()
        }
        per_user(results, metric, kind=kind.value, path=flags.output)

    _plot_runs(flags, draw)


def register_compare_commands(app: typer.Typer) -> None:
    """Add the ``compare``, ``report`` and ``plot`` commands to ``app``."""
    # their own options after the statistics options (report's --output after --truth)
    app.command("compare")(_with_flags(compare_cmd, after="seed"))
    app.command("report")(_with_flags(report_cmd, after="seed", after_truth=("output",)))
    plot_app = typer.Typer(
        help="Plots: roc, pr, metric-at-k, per-user (PNG, SVG or PDF by the suffix of -o).",
        no_args_is_help=True,
        rich_markup_mode=None,  # plain help, as the app's
    )
    app.add_typer(plot_app, name="plot")
    plot_app.command("roc")(_with_flags(roc_cmd))
    plot_app.command("pr")(_with_flags(pr_cmd))
    plot_app.command("metric-at-k")(_with_flags(metric_at_k_cmd, after="run"))
    plot_app.command("per-user")(_with_flags(per_user_cmd, after="run"))
