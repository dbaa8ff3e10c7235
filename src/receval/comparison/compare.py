"""``compare``: several models evaluated on the same truth, with confidence intervals, paired
significance tests against a baseline, multiple-comparison correction and effect sizes.

See docs/compare.md for the decisions (which users are paired, what a global metric gets,
the bootstrap, the tests and their edge cases).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args

import numpy as np
import polars as pl

from receval._errors import (
    InputError,
    about,
    caller_stacklevel,
    check_choice,
    check_seed,
)
from receval.comparison.curves import report_curves
from receval.comparison.data import (
    NOTE_BASELINE,
    NOTE_GLOBAL,
    NOTE_WEIGHTED,
    TABLE_SCHEMA,
    ComparisonData,
)
from receval.comparison.report import (
    check_html,
    html_tables,
    text_table,
    to_latex,
    to_markdown,
    write_html,
)
from receval.comparison.stats import (
    MAX_PERMUTATIONS,
    CiMethod,
    Correction,
    TestName,
    bootstrap_ci,
    check_count,
    cohens_d,
    correct,
    paired_test,
)
from receval.comparison.users import USERS, UsersArg, common_users
from receval.data.io import Inputs
from receval.engines.segments import segment_plan
from receval.evaluation import evaluate
from receval.metrics.registry import Metric, parse_metric, parse_metrics
from receval.metrics.result import Result

__all__ = ["Comparison", "compare"]


class Comparison(ComparisonData):
    """Models compared on the same truth: the result of :func:`compare`.

    Its numbers are those of :class:`~receval.comparison.data.ComparisonData` (``table``,
    ``results``, ``baseline``, ``settings``, ``inputs``, ``by_segment``; ``cell``,
    ``to_dict``, ``to_json``: see there); this class adds the reports that render them:
    Markdown, LaTeX, the HTML file, and the notebook and terminal views.
    """

    def to_markdown(self, *, digits: int = 4) -> str:
        """A Markdown report: means with intervals (best per metric in bold, significance
        marks), then the tests against the baseline, then a legend."""
        return to_markdown(self, digits=digits)

    def to_latex(self, *, digits: int = 4, ci: bool = False) -> str:
        """A LaTeX ``tabular`` (booktabs): models x metrics, best per metric in bold,
        significance marks explained under the table; ``ci=True`` adds the intervals."""
        return to_latex(self, digits=digits, ci=ci)

    def to_html(
        self,
        path: str | os.PathLike[str],
        *,
        plots: bool = True,
        curves: bool = True,
        title: str = "receval comparison",
        figures: Mapping[str, Any] | None = None,
        digits: int = 4,
    ) -> Path:
        """Write one self-contained HTML file (tables, plots and provenance; images embedded
        as base64 PNG, no external URL) atomically; return its path.

        Parameters
        ----------
        path:
            The ``.html`` file to write.
        plots:
            The intervals plot and the per-user distributions; ``False`` leaves every plot
            out (no matplotlib needed).
        curves:
            With ``plots``: a metric@K curve for K = 1..K of each compared ranking metric with
            a cutoff (its largest K, at most 100) and the runs' ROC curves when a
            classification metric is compared, drawn from the comparison's own inputs (the
            runs are evaluated again at each K). Left out when the inputs are not known. A
            model source has no ROC curve (no recommendation rows): the report says so under
            its figures.
        title:
            The page title.
        figures:
            More matplotlib figures, by caption, after the others.
        digits:
            Decimals of the means and p-values.
        """
        target, digits = check_html(path, digits)  # before the curves evaluate the runs again
        drawn = report_curves(self) if plots and curves else None
        return write_html(
            self, target, plots=plots, curves=drawn, title=title, figures=figures, digits=digits
        )

    def _repr_html_(self) -> str:
        return html_tables(self, digits=4)

    def __repr__(self) -> str:
        return text_table(self, digits=4)


def compare(
    truth: Any,
    runs: Mapping[str, Any],
    metrics: str | Metric | Iterable[str | Metric],
    *,
    baseline: str | None = None,
    test: TestName = "paired_t",
    correction: Correction | None = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    ci: CiMethod = "bca",
    n_resamples: int = 2_000,
    n_permutations: int = 10_000,
    seed: int = 0,
    progress: bool = False,
    users: UsersArg = "all",
    **options: Any,
) -> Comparison:
    """Compare models on the same truth: means, bootstrap intervals and paired tests.

    Each run is evaluated with :func:`receval.evaluate` (same metrics and options). For each
    metric with per-user values, every model's per-user values are aligned with the
    baseline's on the user (users only one side evaluated are left out of the test and
    counted in ``note``), tested with a paired test, and the p-values of all (model, metric)
    comparisons are corrected together.

    Parameters
    ----------
    truth:
        Truth, any source :func:`receval.evaluate` accepts (a file is read once).
    runs:
        Model name -> its recommendations (any source :func:`receval.evaluate` accepts).
    metrics:
        Metric strings, as for :func:`receval.evaluate`.
    baseline:
        The run the others are tested against; default the first run.
    test:
        ``"paired_t"`` (``scipy.stats.ttest_rel``), ``"wilcoxon"`` (``scipy.stats.wilcoxon``)
        or ``"randomization"`` (Fisher sign-flip test, ``n_permutations`` seeded sign vectors,
        exact enumeration when ``2**n_paired <= n_permutations``). All two-sided.
    correction:
        ``"holm"``, ``"bonferroni"``, ``"bh"`` (Benjamini-Hochberg) or None, across all
        (model, metric) tests.
    alpha:
        Level of ``significant`` (``p_adjusted <= alpha``).
    confidence, ci, n_resamples:
        The bootstrap intervals of each model's mean: level, ``"bca"`` or ``"percentile"``,
        and the number of user-level resamples.
    seed:
        Seeds the bootstrap and the randomization test (an integer from 0 to 2^64 - 1):
        equal inputs give equal output.
    progress:
        Show a progress bar on stderr (Rich). The library is quiet otherwise.
    users:
        ``"all"`` (default): every truth user, each run scoring 0 where it has no list
        (``no_recs``). ``"common"``: only the truth users that every run can score (a model's
        ``user_ids``, a table's users with a list), so that a factor model is not judged on
        the cold users it cannot know; ``settings["users"]`` counts the users left out, in
        all and by run (``left_out_by_run``).
    **options:
        Passed to :func:`receval.evaluate` (``user_col``, ``ties``, ``no_recs``, ...).

    Returns
    -------
    Comparison
        ``.table`` (Polars), ``.results``, ``.to_markdown()``, ``.to_latex()``,
        ``.to_json()``, ``.to_html(path)``.

    Examples
    --------
    >>> import receval
    >>> truth = {u: {"a": 1, "b": 1} for u in range(1, 9)}
    >>> good = {u: {"a": 0.9, "b": 0.8, "x": 0.1} for u in range(1, 9)}
    >>> bad = {u: {"x": 0.9, "a": 0.5, "y": 0.3 + u / 100} for u in range(1, 9)}
    >>> cmp = receval.compare(truth, {"bad": bad, "good": good}, ["mrr", "hit_rate@1"])
    >>> cmp.table.select("model", "metric", "mean", "p_value", "n_paired")
    shape: (4, 5)
    ┌───────┬────────────┬──────┬─────────┬──────────┐
    │ model ┆ metric     ┆ mean ┆ p_value ┆ n_paired │
    │ ---   ┆ ---        ┆ ---  ┆ ---     ┆ ---      │
    │ str   ┆ str        ┆ f64  ┆ f64     ┆ i64      │
    ╞═══════╪════════════╪══════╪═════════╪══════════╡
    │ bad   ┆ mrr        ┆ 0.5  ┆ null    ┆ null     │
    │ bad   ┆ hit_rate@1 ┆ 0.0  ┆ null    ┆ null     │
    │ good  ┆ mrr        ┆ 1.0  ┆ 0.0     ┆ 8        │
    │ good  ┆ hit_rate@1 ┆ 1.0  ┆ 0.0     ┆ 8        │
    └───────┴────────────┴──────┴─────────┴──────────┘

    Every user gains the same, so the paired t statistic is infinite and p is 0 (scipy's
    answer). The randomization test enumerates all 2^8 sign flips: only "all +" and "all -"
    are as extreme.

    >>> cmp = receval.compare(truth, {"bad": bad, "good": good}, "mrr", test="randomization")
    >>> cmp.cell("good", "mrr")["p_value"] == 2 / 2**8
    True
    """
    _check_options(runs, test, correction, alpha, n_permutations, seed)
    bootstrap_ci(np.zeros(0), confidence=confidence, method=ci, n_resamples=n_resamples)  # checks
    names = list(runs)
    base = names[0] if baseline is None else baseline
    if base not in runs:
        msg = f"baseline must be one of the runs ({', '.join(map(repr, names))}); got {base!r}."
        raise InputError(msg)
    # as given (references): the report's curves evaluate them again, its provenance names them
    inputs = {"truth": truth, "runs": dict(runs), "options": dict(options)}
    reader = Inputs.of(
        options.get("columns"), options.get("input_format"),
        str(options.get("user_col", "user")), str(options.get("item_col", "item")),
    )  # fmt: skip
    user_col = reader.user_col  # truth's (every run's per-user frame is keyed by it)
    check_choice("users", users, USERS)
    relevance = str(options.get("relevance_col") or "relevance")
    if isinstance(truth, str | os.PathLike) or users == "common":  # read once for every run
        truth = reader.read(truth, "truth", relevance)
    chosen: dict[str, Any] = {"users": "all"}
    if users == "common":
        truth, chosen = common_users(truth, runs, options)
    plan = parse_metrics(metrics)
    results: dict[str, Result] = {}
    with _progress(progress) as step:
        for name in names:
            step(f"evaluating {name}")
            with about(f"run {name!r}"):
                results[name] = evaluate(truth, runs[name], plan, **options)
        if users == "all":
            _warn_users_differ(results)
        if options.get("sampling") is not None:  # the names carry the protocol: ndcg@10~...
            plan = tuple(parse_metric(name) for name in results[base].metrics)
        step("bootstrap intervals and tests")
        rows = _rows(
            results, plan, base, user_col, test=test, confidence=confidence, ci=ci,
            n_resamples=n_resamples, n_permutations=n_permutations, seed=seed,
        )  # fmt: skip
    table = pl.DataFrame(rows, schema=TABLE_SCHEMA, orient="row")
    table = _adjusted(table, correction, alpha)
    by_segment = None
    if results[base].by_segment is not None:
        by_segment = _segment_table(
            results, plan, base, user_col, test=test, confidence=confidence, ci=ci,
            n_resamples=n_resamples, n_permutations=n_permutations, seed=seed,
        )  # fmt: skip
        by_segment = _adjusted(by_segment, correction, alpha)
    settings = {
        "baseline": base, "test": test, "correction": correction, "alpha": alpha,
        "confidence": confidence, "ci": ci, "n_resamples": n_resamples,
        "n_permutations": n_permutations, "seed": seed, "users": chosen,
        "evaluate": results[base].settings,
    }  # fmt: skip
    return Comparison(table, results, base, plan, settings, inputs=inputs, by_segment=by_segment)


def _warn_users_differ(results: Mapping[str, Result]) -> None:
    """Warn when the runs leave different numbers of truth users without recommendations:
    each run is then judged (0 under ``no_recs="zero"``) on users it cannot score."""
    without = {name: res.counts.no_recs for name, res in results.items()}
    if len(set(without.values())) <= 1:
        return
    said = ", ".join(f"{name} {n}" for name, n in without.items())
    warnings.warn(
        f"the runs leave different numbers of truth users without recommendations ({said}): "
        "each run is judged on users it cannot score (0 under no_recs='zero'; a model's cold "
        "users). users='common' (CLI --users common) compares on the users every run can "
        "score, and counts those left out.",
        UserWarning,
        stacklevel=caller_stacklevel(),
    )


def _adjusted(table: pl.DataFrame, correction: Correction | None, alpha: float) -> pl.DataFrame:
    """``table`` with ``p_adjusted`` (``correction`` over all its tests) and ``significant``."""
    p_adj = correct(table["p_value"].fill_null(math.nan).to_numpy(), correction)
    table = table.with_columns(pl.Series("p_adjusted", p_adj, dtype=pl.Float64, nan_to_null=True))
    return table.with_columns(
        pl.when(pl.col("p_adjusted").is_null())
        .then(None)
        .otherwise(pl.col("p_adjusted") <= alpha)
        .alias("significant")
    )


_SEGMENT_KEYS = {"segmentation": pl.String, "kind": pl.String, "segment": pl.String}


def _segment_table(
    results: dict[str, Result],
    plan: tuple[Metric, ...],
    base: str,
    user_col: str,
    **how: Any,
) -> pl.DataFrame:
    """The rows of :func:`_rows` in every segment (segments in the baseline's order; an empty
    segment has one row per model and metric, with null values and 0 users)."""
    frames = []
    order = results[base].by_segment
    assert order is not None
    keys = order.select(*_SEGMENT_KEYS).unique(maintain_order=True).iter_rows()
    for name, kind, label in keys:
        metrics = segment_plan(plan, kind)
        parts = {model: res.segments.get((name, label)) for model, res in results.items()}
        metrics = tuple(
            k for k in metrics if all(p is None or k.canonical in p.means for p in parts.values())
        )  # a metric undefined on the segment for one run is compared in none
        if any(p is None for p in parts.values()):
            empty = [(m, k.canonical) for m in results for k in metrics]
            rows = [(m, k, None, None, None, None, None, None, None, 0, None, "no truth rows")
                    for m, k in empty]  # fmt: skip
        else:
            present = {model: p for model, p in parts.items() if p is not None}
            rows = _rows(present, metrics, base, user_col, **how)
        frame = pl.DataFrame(rows, schema=TABLE_SCHEMA, orient="row")
        frames.append(
            frame.select(
                pl.lit(name, pl.String).alias("segmentation"),
                pl.lit(kind, pl.String).alias("kind"),
                pl.lit(label, pl.String).alias("segment"),
                pl.all(),
            )
        )
    return pl.concat(frames)


def _check_options(
    runs: Mapping[str, Any],
    test: str,
    correction: str | None,
    alpha: float,
    n_permutations: int,
    seed: int,
) -> None:
    if not isinstance(runs, Mapping) or not runs:
        msg = (
            "runs must be a non-empty mapping {model name: recommendations}; got "
            f"{type(runs).__name__}{' (empty)' if isinstance(runs, Mapping) else ''}."
        )
        raise InputError(msg)
    bad = [k for k in runs if not isinstance(k, str) or not k]
    if bad:
        msg = f"run names must be non-empty strings; got {bad[:5]!r}."
        raise InputError(msg)
    check_choice("test", test, get_args(TestName))
    if correction is not None:
        check_choice("correction", correction, get_args(Correction), more=" or None")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        msg = f"alpha must be a number strictly between 0 and 1; got {alpha!r}."
        raise InputError(msg)
    check_count("n_permutations", n_permutations, 1, MAX_PERMUTATIONS)
    check_seed(seed)


def _rows(
    results: dict[str, Result],
    plan: tuple[Metric, ...],
    base: str,
    user_col: str,
    *,
    test: TestName,
    confidence: float,
    ci: CiMethod,
    n_resamples: int,
    n_permutations: int,
    seed: int,
) -> list[tuple[Any, ...]]:
    names = list(results)
    j_base = names.index(base)
    # looked up once per model, not once per metric: linear in the number of metrics
    means = {name: res.means for name, res in results.items()}
    columns = {name: set(res.per_user.columns) for name, res in results.items()}
    axis = _UserAxis(results, user_col)
    cells: dict[tuple[str, str], tuple[Any, ...]] = {}
    for metric in plan:
        key = metric.canonical
        kind = _kind(results, metric, user_col, columns)
        if kind != "per_user":
            note = NOTE_GLOBAL if kind == "global" else NOTE_WEIGHTED
            for name in names:
                res = results[name]
                n = res.per_user[key].drop_nulls().len() if key in columns[name] else None
                cells[name, key] = (
                    name, key, means[name][key], None, None, None, None, None, None, n, None,
                    note,
                )  # fmt: skip
            continue
        values, masks = axis.aligned(key)
        bounds = _intervals(values, masks, confidence, ci, n_resamples, seed)
        for j, name in enumerate(names):
            mean = means[name][key]
            n_users = int(masks[:, j].sum())
            low, high = bounds[j]
            if j == j_base:
                cells[name, key] = (
                    name, key, mean, low, high, None, None, None, None, n_users, None,
                    NOTE_BASELINE,
                )  # fmt: skip
                continue
            both = masks[:, j] & masks[:, j_base]
            a, b = values[both, j], values[both, j_base]
            p = paired_test(test, a, b, n_permutations=n_permutations, seed=seed)
            notes = []
            only_model = n_users - int(both.sum())
            only_base = int(masks[:, j_base].sum()) - int(both.sum())
            if only_model or only_base:
                notes.append(
                    f"{only_model} user(s) only in {name}, {only_base} only in {base}: "
                    "left out of the test"
                )
            if math.isnan(p):
                notes.append("too few paired users for the test")
            cells[name, key] = (
                name, key, mean, low, high, p, None, None, cohens_d(a, b), n_users,
                int(both.sum()), "; ".join(notes),
            )  # fmt: skip
    return [_nan_to_none(cells[name, m.canonical]) for name in names for m in plan]


def _nan_to_none(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(None if isinstance(v, float) and math.isnan(v) else v for v in row)


def _kind(
    results: dict[str, Result],
    metric: Metric,
    user_col: str,
    columns: dict[str, set[str]] | None = None,
) -> str:
    """``per_user`` (CI and test), ``global`` (no per-user values) or ``weighted`` (per-user
    values whose plain mean is not the reported mean). ``columns``: each model's per-user
    column names, as sets (read from the results when not given)."""
    key = metric.canonical
    if columns is None:
        columns = {name: set(res.per_user.columns) for name, res in results.items()}
    if not metric.has_per_user() or any(key not in columns[name] for name in results):
        return "global"
    if metric.is_weighted():  # recall(average=micro), gauc weighted by impressions or clicks
        return "weighted"
    for res in results.values():  # guard: the reported mean must be the plain per-user mean
        col = res.per_user[key].drop_nulls().to_numpy()
        mean = res[key]  # a canonical name: a dict lookup
        if col.size and not math.isclose(
            math.fsum(col) / col.size, mean, rel_tol=1e-9, abs_tol=1e-12
        ):
            return "weighted"
    return "per_user"


class _UserAxis:
    """The users of every model's per-user frame, sorted by id, joined once for all metrics:
    for each model, the row of its per-user frame at each position of the axis (-1: none)."""

    def __init__(self, results: dict[str, Result], user_col: str) -> None:
        self._frames = [res.per_user for res in results.values()]
        rows = [
            frame.select(user_col, pl.int_range(pl.len(), dtype=pl.Int64).alias(f"r{j}"))
            for j, frame in enumerate(self._frames)
        ]
        wide = rows[0]
        for other in rows[1:]:
            wide = wide.join(other, on=user_col, how="full", coalesce=True)
        wide = wide.sort(user_col)
        self._rows = [wide[f"r{j}"].fill_null(-1).to_numpy() for j in range(len(rows))]
        self._size = wide.height

    def aligned(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Per-user values of metric ``key`` of every model on the axis: ``(n_users,
        n_models)`` values (0 where missing) and the mask of present (non-null) values. Users
        no model has a value for are all-False rows, which no interval or test reads."""
        values = np.zeros((self._size, len(self._frames)), dtype=np.float64)
        masks = np.zeros((self._size, len(self._frames)), dtype=np.bool_)
        for j, (frame, rows) in enumerate(zip(self._frames, self._rows, strict=True)):
            col = frame[key]
            at = rows >= 0
            if col.null_count():
                values[at, j] = col.fill_null(0.0).to_numpy()[rows[at]]
                masks[at, j] = col.is_not_null().to_numpy()[rows[at]]
            else:  # the common case, without a Polars expression per metric
                values[at, j] = col.to_numpy()[rows[at]]
                masks[at, j] = True
        return values, masks


def _intervals(
    values: np.ndarray,
    masks: np.ndarray,
    confidence: float,
    ci: CiMethod,
    n_resamples: int,
    seed: int,
) -> list[tuple[float | None, float | None]]:
    """Bootstrap interval of each model's mean; models with the same users share one resample
    matrix (the draws depend only on the seed and the number of users)."""
    groups: dict[bytes, list[int]] = {}
    for j in range(masks.shape[1]):
        groups.setdefault(np.packbits(masks[:, j]).tobytes(), []).append(j)
    out: list[tuple[float | None, float | None]] = [(None, None)] * masks.shape[1]
    for cols in groups.values():
        rows = masks[:, cols[0]]
        if not rows.any():
            continue
        bounds = bootstrap_ci(
            values[rows][:, cols],
            confidence=confidence,
            method=ci,
            n_resamples=n_resamples,
            seed=seed,
        )
        for j, (low, high) in zip(cols, bounds, strict=True):
            out[j] = (float(low), float(high))
    return out


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A ``step(description)`` callable: a Rich progress display on stderr when enabled."""
    if not enabled:
        yield lambda _description: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        current: list[Any] = []

        def step(description: str) -> None:
            if current:
                bar.update(current[-1], completed=1, total=1)
            current.append(bar.add_task(description, total=None))

        yield step
