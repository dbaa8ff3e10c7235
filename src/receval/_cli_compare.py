"""The ``compare``, ``report`` and ``plot`` commands of the command line.

* ``receval compare --truth test.parquet --run pop=a.parquet --run knn=b.parquet -m ndcg@10``
  prints the comparison (table, markdown, latex, json or csv) and can write it to a file;
* ``receval report --truth ... --run ... -o report.html`` writes the self-contained HTML report;
* ``receval plot roc|pr|metric-at-k|per-user --truth ... --recs ... -o plot.png``.

Progress (Rich) goes to stderr; errors are printed as by the other commands (exit code 2).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._cli_common import (
    ItemColOpt,
    ItemFeaturesOpt,
    ItemsOpt,
    NoRecsOpt,
    RankColOpt,
    RatingRangeOpt,
    RelevanceColOpt,
    ScoreColOpt,
    ThresholdOpt,
    TiesOpt,
    TrainOpt,
    UserColOpt,
    evaluate_options,
)
from ._cli_common import fail as _fail
from ._cli_common import out as _out

if TYPE_CHECKING:
    from ._compare import Comparison

__all__ = ["register_compare_commands"]

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
run_opt = typer.Option(
    "--run", "-r", help="A model's recommendations as NAME=PATH; repeat for each model."
)
metric_opt = typer.Option(
    "--metric", "-m", help="Metric string, repeatable \\[default: ndcg@10, recall@20]."
)
recs_opt = typer.Option(help="One model's recommendations (named by the file stem).")
out_opt = typer.Option("--output", "-o", help="Image file to write: .png, .svg or .pdf.")


# the statistics options of compare and report
BaselineOpt = Annotated[
    str | None, typer.Option(help="Run tested against \\[default: the first --run].")
]
TestOpt = Annotated[PairedTestOpt, typer.Option(help="Paired test.")]
CorrectionArg = Annotated[CorrectionOpt, typer.Option(help="Multiple-comparison correction.")]
AlphaOpt = Annotated[float, typer.Option(help="Significance level.")]
ConfidenceOpt = Annotated[float, typer.Option(help="Interval confidence level.")]
CiArg = Annotated[CiOpt, typer.Option(help="Bootstrap interval method.")]
ResamplesOpt = Annotated[int, typer.Option(help="Bootstrap resamples.")]
PermutationsOpt = Annotated[int, typer.Option(help="Sign flips of the randomization test.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the bootstrap and permutations.")]
ProgressOpt = Annotated[bool, typer.Option(help="Progress on stderr.")]


def _runs(specs: list[str] | None, recs: Path | None = None) -> dict[str, Path]:
    """``--run NAME=PATH`` (repeatable) and ``--recs PATH`` (named by the file stem)."""
    from ._errors import InputError

    runs: dict[str, Path] = {}
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
    if not runs:
        msg = "missing --run NAME=PATH (repeat it for each model) or --recs PATH."
        raise InputError(msg)
    return runs


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
        from rich.table import Table
        from rich.text import Text

        from ._report import best_models

        best = best_models(cmp)
        cells = {(r["model"], r["metric"]): r for r in cmp.table.iter_rows(named=True)}
        table = Table(title=f"receval compare (baseline {cmp.baseline})", title_justify="left")
        table.add_column("model")
        for key in cmp.metrics:
            table.add_column(key, justify="right")
        for model in cmp.models:
            row = []
            for key in cmp.metrics:
                c = cells[model, key]
                bold = "bold" if model in best.get(key, ()) else ""
                text = Text()
                text.append("-" if c["mean"] is None else f"{c['mean']:.4f}", style=bold)
                if c["ci_low"] is not None:
                    text.append(f" [{c['ci_low']:.4f}, {c['ci_high']:.4f}]")
                if c["p_adjusted"] is not None:
                    p = c["p_adjusted"]
                    shown = "p<1e-16" if p < 1e-16 else f"p={p:.2g}"  # below float resolution
                    text.append(f" {shown}" + (" *" if c["significant"] else ""))
                row.append(text)
            table.add_row(Text(model), *row)
        _out.print(table)
        from ._report import legend

        _out.print(legend(cmp), highlight=False)


def _write_output(cmp: Comparison, path: Path) -> None:
    """Write the comparison to ``path`` in the format its suffix names."""

    from ._errors import InputError
    from ._io import write_frame, write_text

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


_MAX_CURVE_K = 100


def _report_curves(
    truth: Path, runs: dict[str, Any], cmp: Comparison, options: dict[str, Any]
) -> dict[str, Any]:
    """The report's extra figures: metric@K for K = 1..K of each ranking metric with a cutoff
    (one curve per base metric, its largest K, at most 100), and the ROC curves of the runs
    when a classification metric is among the compared ones."""
    from . import plot
    from ._registry import parse_metric

    longest: dict[str, int] = {}
    classification = False
    for name in cmp.metrics:
        m = parse_metric(name)
        classification |= m.spec.family == "classification"
        if m.spec.family == "ranking" and m.k is not None:
            base = m.canonical.rsplit("@", 1)[0]
            longest[base] = max(longest.get(base, 0), min(m.k, _MAX_CURVE_K))
    figures: dict[str, Any] = {}
    for base, k in longest.items():
        figures[f"{base}@K, K = 1..{k}"] = plot.metric_at_k(truth, runs, base, ks=k, **options)
    if classification:
        roc_options = {
            key: options[key]
            for key in ("user_col", "item_col", "score_col", "relevance_col", "relevance_threshold")
            if key in options
        }
        figures["ROC curves"] = plot.roc(truth, runs, **roc_options)
    return figures


def register_compare_commands(app: typer.Typer) -> None:
    """Add the ``compare``, ``report`` and ``plot`` commands to ``app``."""

    def run_compare(
        truth: Path,
        run: list[str] | None,
        metric: list[str] | None,
        settings: dict[str, Any],
        progress: bool,
    ) -> Comparison:
        from ._compare import compare

        return compare(truth, _runs(run), metric or _COMPARE_METRICS, progress=progress, **settings)

    def settings_of(
        baseline: str | None,
        test: PairedTestOpt,
        correction: CorrectionOpt,
        alpha: float,
        confidence: float,
        ci: CiOpt,
        resamples: int,
        permutations: int,
        seed: int,
        options: dict[str, Any],
    ) -> dict[str, Any]:
        return {
            "baseline": baseline, "test": test.value,
            "correction": None if correction is CorrectionOpt.none else correction.value,
            "alpha": alpha, "confidence": confidence, "ci": ci.value, "n_resamples": resamples,
            "n_permutations": permutations, "seed": seed, **options,
        }  # fmt: skip

    @app.command("compare")
    def compare_cmd(
        truth: Annotated[Path, truth_opt],
        run: Annotated[list[str] | None, run_opt] = None,
        metric: Annotated[list[str] | None, metric_opt] = None,
        baseline: BaselineOpt = None,
        test: TestOpt = PairedTestOpt.paired_t,
        correction: CorrectionArg = CorrectionOpt.holm,
        alpha: AlphaOpt = 0.05,
        confidence: ConfidenceOpt = 0.95,
        ci: CiArg = CiOpt.bca,
        resamples: ResamplesOpt = 2000,
        permutations: PermutationsOpt = 10_000,
        seed: SeedOpt = 0,
        fmt: Annotated[
            CompareFormat, typer.Option("--format", help="Output format.")
        ] = CompareFormat.table,
        output: Annotated[
            Path | None,
            typer.Option(
                "--output", "-o", help="Also write to this .md, .tex, .json, .html, .csv file."
            ),
        ] = None,
        progress: ProgressOpt = True,
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
    ) -> None:
        """Compare models on the same truth: means, intervals, paired tests."""
        from ._errors import RecevalError

        options = evaluate_options(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, threshold=threshold, no_recs=no_recs,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
        )  # fmt: skip
        settings = settings_of(baseline, test, correction, alpha, confidence, ci, resamples,
                               permutations, seed, options)  # fmt: skip
        try:
            cmp = run_compare(truth, run, metric, settings, progress)
            if output is not None:
                _write_output(cmp, output)
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        _print_comparison(cmp, fmt)

    @app.command("report")
    def report_cmd(
        truth: Annotated[Path, truth_opt],
        output: Annotated[Path, typer.Option("--output", "-o", help="The .html file to write.")],
        run: Annotated[list[str] | None, run_opt] = None,
        metric: Annotated[list[str] | None, metric_opt] = None,
        baseline: BaselineOpt = None,
        test: TestOpt = PairedTestOpt.paired_t,
        correction: CorrectionArg = CorrectionOpt.holm,
        alpha: AlphaOpt = 0.05,
        confidence: ConfidenceOpt = 0.95,
        ci: CiArg = CiOpt.bca,
        resamples: ResamplesOpt = 2000,
        permutations: PermutationsOpt = 10_000,
        seed: SeedOpt = 0,
        title: Annotated[str, typer.Option(help="Report title.")] = "receval comparison",
        curves: Annotated[
            bool,
            typer.Option(
                help="Add metric@K curves (K = 1..100 at most) of the ranking metrics with a "
                "cutoff, and ROC curves when a classification metric is compared."
            ),
        ] = True,
        progress: ProgressOpt = True,
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
    ) -> None:
        """Write a self-contained HTML report (tables and plots) comparing models."""
        from ._errors import RecevalError

        options = evaluate_options(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, threshold=threshold, no_recs=no_recs,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
        )  # fmt: skip
        settings = settings_of(baseline, test, correction, alpha, confidence, ci, resamples,
                               permutations, seed, options)  # fmt: skip
        try:
            cmp = run_compare(truth, run, metric, settings, progress)
            figures = _report_curves(truth, _runs(run), cmp, options) if curves else None
            path = cmp.to_html(output, title=title, figures=figures)
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        _out.print(f"wrote {path}", highlight=False)

    plot_app = typer.Typer(
        help="Plots: roc, pr, metric-at-k, per-user (PNG, SVG or PDF by the suffix of -o).",
        no_args_is_help=True,
    )
    app.add_typer(plot_app, name="plot")

    def curve(which: str, truth: Path, run: list[str] | None, recs: Path | None, output: Path,
              options: dict[str, Any]) -> None:  # fmt: skip
        from . import plot
        from ._errors import RecevalError

        try:
            runs = _runs(run, recs)
            draw = plot.roc if which == "roc" else plot.pr
            draw(truth, runs, path=output, **options)
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        _out.print(f"wrote {output}", highlight=False)

    @plot_app.command("roc")
    def roc_cmd(
        truth: Annotated[Path, truth_opt],
        output: Annotated[Path, out_opt],
        recs: Annotated[Path | None, recs_opt] = None,
        run: Annotated[list[str] | None, run_opt] = None,
        user_col: Annotated[str, typer.Option(help="User id column.")] = "user",
        item_col: Annotated[str, typer.Option(help="Item id column.")] = "item",
        score_col: Annotated[str, typer.Option(help="Score column of recs.")] = "score",
        relevance_col: Annotated[str | None, typer.Option(help="Relevance column.")] = None,
        threshold: Annotated[float, typer.Option(help="Relevance threshold.")] = 1.0,
    ) -> None:
        """ROC curves of the recommendation rows, labelled by truth."""
        curve("roc", truth, run, recs, output, {
            "user_col": user_col, "item_col": item_col, "score_col": score_col,
            "relevance_col": relevance_col, "relevance_threshold": threshold,
        })  # fmt: skip

    @plot_app.command("pr")
    def pr_cmd(
        truth: Annotated[Path, truth_opt],
        output: Annotated[Path, out_opt],
        recs: Annotated[Path | None, recs_opt] = None,
        run: Annotated[list[str] | None, run_opt] = None,
        user_col: Annotated[str, typer.Option(help="User id column.")] = "user",
        item_col: Annotated[str, typer.Option(help="Item id column.")] = "item",
        score_col: Annotated[str, typer.Option(help="Score column of recs.")] = "score",
        relevance_col: Annotated[str | None, typer.Option(help="Relevance column.")] = None,
        threshold: Annotated[float, typer.Option(help="Relevance threshold.")] = 1.0,
    ) -> None:
        """Precision-recall curves of the recommendation rows, labelled by truth."""
        curve("pr", truth, run, recs, output, {
            "user_col": user_col, "item_col": item_col, "score_col": score_col,
            "relevance_col": relevance_col, "relevance_threshold": threshold,
        })  # fmt: skip

    @plot_app.command("metric-at-k")
    def metric_at_k_cmd(
        truth: Annotated[Path, truth_opt],
        output: Annotated[Path, out_opt],
        recs: Annotated[Path | None, recs_opt] = None,
        run: Annotated[list[str] | None, run_opt] = None,
        metric: Annotated[
            str, typer.Option("--metric", "-m", help="Metric without @K, e.g. ndcg.")
        ] = "ndcg",
        k: Annotated[int, typer.Option("--k", help="Largest cutoff: K = 1..k.")] = 20,
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
    ) -> None:
        """A metric at every cutoff K = 1..k, one line per model."""
        from . import plot
        from ._errors import RecevalError

        options = evaluate_options(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, threshold=threshold, no_recs=no_recs,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
        )  # fmt: skip
        try:
            plot.metric_at_k(truth, _runs(run, recs), metric, ks=k, path=output, **options)
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        _out.print(f"wrote {output}", highlight=False)

    @plot_app.command("per-user")
    def per_user_cmd(
        truth: Annotated[Path, truth_opt],
        output: Annotated[Path, out_opt],
        recs: Annotated[Path | None, recs_opt] = None,
        run: Annotated[list[str] | None, run_opt] = None,
        metric: Annotated[str, typer.Option("--metric", "-m", help="Metric string.")] = "ndcg@10",
        kind: Annotated[KindOpt, typer.Option(help="box or violin.")] = KindOpt.box,
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
    ) -> None:
        """The distribution of a metric's per-user values, one box per model."""
        from . import plot
        from ._errors import RecevalError
        from ._evaluate import evaluate

        options = evaluate_options(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, threshold=threshold, no_recs=no_recs,
            train=train, items=items, item_features=item_features, rating_range=rating_range,
        )  # fmt: skip
        try:
            results = {
                name: evaluate(truth, path, metric, **options)
                for name, path in _runs(run, recs).items()
            }
            plot.per_user(results, metric, kind=kind.value, path=output)
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        _out.print(f"wrote {output}", highlight=False)
