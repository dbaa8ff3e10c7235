"""What the command modules share: the consoles, option sets, the error exit, and the options
of :func:`receval.evaluate` as typer annotations (``receval evaluate``, ``compare``, ``report``
and the plots declare them once, here)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from receval._errors import InputError, OutputError
from receval.data.io import check_outputs
from receval.data.segments import read_segment_file

__all__ = [
    "BlockMemoryOpt",
    "CandidatesOpt",
    "ColumnsOpt",
    "DeviceOpt",
    "ExcludeOpt",
    "IdTypeOpt",
    "InputFormatOpt",
    "ItemColOpt",
    "ItemFactorsOpt",
    "ItemFeaturesOpt",
    "ItemIdsOpt",
    "ItemsOpt",
    "ModelProgressOpt",
    "NoRecs",
    "NoRecsOpt",
    "RankColOpt",
    "RatingRangeOpt",
    "RelevanceColOpt",
    "ScoreColOpt",
    "SegmentsOpt",
    "Similarity",
    "SimilarityOpt",
    "ThresholdOpt",
    "Ties",
    "TiesOpt",
    "TrainOpt",
    "UserColOpt",
    "UserFactorsOpt",
    "UserIdsOpt",
    "check_paths",
    "check_regular_input",
    "evaluate_options",
    "fail",
    "features",
    "out",
    "segment_specs",
    "show_warning",
    "shown_warnings",
    "special_file",
]

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class Ties(StrEnum):
    """Tie policies (see docs/metrics.md, "Ties")."""

    expected = "expected"
    first = "first"
    trec = "trec"
    optimistic = "optimistic"
    pessimistic = "pessimistic"


class NoRecs(StrEnum):
    """What happens to evaluated users without recommendations."""

    zero = "zero"
    skip = "skip"
    raise_ = "raise"


class Similarity(StrEnum):
    """How a factor model scores an item for a user."""

    dot = "dot"
    cosine = "cosine"


def fail(exc: Exception) -> typer.Exit:
    """Print ``exc`` as an error on stderr; the exit (code 2) to raise."""
    err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False)
    return typer.Exit(code=2)


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning`` for the command line: one line ``warning: ...`` on stderr,
    without the Python file, line number and source line of the default format, and each text
    once per command. Python's own once-per-location rule does not hold here: a warning about
    an input shared by several evaluations (compare's truth, read for each run) comes from
    several places, and any ``catch_warnings`` block in between resets Python's registry."""
    text = str(message)
    if text in shown_warnings:
        return
    shown_warnings.add(text)
    err.print(f"[yellow]warning:[/] {escape(text)}", markup=True, highlight=False)


shown_warnings: set[str] = set()  # the texts printed by this command (one per process)


_SPECIAL = (
    (stat.S_ISFIFO, "a pipe (a FIFO)"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)  # fmt: skip


def special_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder ("a pipe (a
    FIFO)", "a character device", ...), else None. ``stat`` never opens the path, so a FIFO
    with no writer does not block here."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((what for test, what in _SPECIAL if test(mode)), None)


def check_regular_input(option: str, path: str | os.PathLike[str] | None) -> None:
    """:class:`InputError` when the input ``path`` is a pipe, FIFO, device or socket: receval
    reads files (a Parquet file by seeking, a file sometimes twice), and a FIFO without a writer
    would block the command. (Without this, such a path is reported as "does not exist".)"""
    if path is None or not isinstance(path, str | os.PathLike):
        return
    what = special_file(path)
    if what is not None:
        msg = (
            f"{option} {str(path)!r} is {what}, not a regular file; receval reads its inputs "
            "from regular files (it may seek in them or read them twice): save the data to a "
            "file and give that path."
        )
        raise InputError(msg)


def check_paths(
    outputs: Mapping[str, str | os.PathLike[str] | None],
    inputs: Mapping[str, Any],
) -> None:
    """Before any work: no input is a pipe, FIFO or device (:func:`check_regular_input`), no
    output is one (an output is written to a new file that then replaces the path: that would
    replace the FIFO, or a device), and no output names an input
    (:func:`receval.data.io.check_outputs`)."""
    for option, path in inputs.items():
        check_regular_input(option, path)
    for option, path in outputs.items():
        what = None if path is None else special_file(path)
        if what is not None:
            msg = (
                f"cannot write {option} {str(path)!r}: it is {what}, not a regular file. "
                "Outputs are written to a new file that then replaces the path (atomically), "
                f"which would replace {what}; give the path of a regular file."
            )
            raise OutputError(msg)
    check_outputs(outputs, {k: v for k, v in inputs.items() if isinstance(v, str | os.PathLike)})


def features(text: str | None) -> str | list[str] | None:
    """``--item-features``: one column name, or several separated by commas (a list)."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    return names if "," in text else (names[0] if names else text)


# evaluate's options; None (not given) leaves evaluate's own default (or a config file's value)
UserColOpt = Annotated[str | None, typer.Option(help="User id column [default: user].")]
ItemColOpt = Annotated[str | None, typer.Option(help="Item id column [default: item].")]
ScoreColOpt = Annotated[
    str | None, typer.Option(help="Score column of recs, higher is better [default: score].")
]
RankColOpt = Annotated[
    str | None, typer.Option(help="Rank column of recs (1 is best), instead of a score.")
]
RelevanceColOpt = Annotated[
    str | None,
    typer.Option(help="Relevance column of truth [default: relevance, or 1 when absent]."),
]
TiesOpt = Annotated[Ties | None, typer.Option(help="Tie policy [default: expected].")]
ThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--relevance-threshold",
        "--threshold",
        help="Relevance threshold: relevant when relevance >= this [default: 1].",
    ),
]
NoRecsOpt = Annotated[
    NoRecs | None,
    typer.Option(help="Evaluated users without recs: zero, skip or raise [default: zero]."),
]
TrainOpt = Annotated[
    Path | None,
    typer.Option(help="Training interactions: popularity for novelty, arp, long_tail."),
]
ItemsOpt = Annotated[
    Path | None,
    typer.Option(help="Item table: the catalog (coverage, gini) and item features (ils)."),
]
ItemFeaturesOpt = Annotated[
    str | None,
    typer.Option(
        help="Features of items for ils/diversity: a vector column (cosine), or categorical "
        "columns separated by commas (Jaccard)."
    ),
]
IdTypeOpt = Annotated[
    str | None,
    typer.Option(
        metavar="[auto|str|int|user=KIND,item=KIND]",
        help="Type of user and item ids: auto (CSV, TSV and TREC ids are text, Parquet keeps "
        "its types), str (all text), int (all integers: 007 = 7), or a kind by id, e.g. "
        "item=int [default: auto].",
    ),
]
RatingRangeOpt = Annotated[
    tuple[float, float] | None,
    typer.Option(help="Rating scale R_MIN R_MAX for nmae [default: read from truth]."),
]
InputFormatOpt = Annotated[
    str | None,
    typer.Option(
        metavar="[parquet|csv|tsv|trec|INPUT=FORMAT,...]",
        help="Format of the input files, overriding their suffix: one for every file, or by "
        "input, e.g. truth=tsv,train=tsv [default: by suffix; RecBole's .inter is TSV].",
    ),
]
ColumnsOpt = Annotated[
    list[str] | None,
    typer.Option(
        metavar="INPUT.ID=NAME",
        help="One input's own id column, repeatable: INPUT is truth, recs, train or items, ID "
        "user or item, e.g. --columns recs.user=uid [default: --user-col / --item-col].",
    ),
]

SegmentsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--segments",
        metavar="SEGMENTS",
        help="Results by segment too, repeatable: activity, cold_warm or popularity (from "
        "--train), a truth column with one value per user, or a Parquet/CSV/TSV file of the "
        "user (or item) column and a segment column.",
    ),
]


def segment_specs(values: Any) -> list[Any]:
    """``--segments`` values (or the config's ``segments``): a file path becomes its table
    (:func:`receval.data.segments.read_segment_file`: Parquet, CSV or TSV by the suffix, ids
    typed as read); any other text stays a name."""
    specs = [values] if isinstance(values, str) else list(values)
    out: list[Any] = []
    for spec in specs:
        path = Path(str(spec))
        if not isinstance(spec, str) or not path.suffix or not path.is_file():
            out.append(spec)
            continue
        out.append(read_segment_file(path))
    return out


def evaluate_options(
    *,
    user_col: str | None = None,
    item_col: str | None = None,
    score_col: str | None = None,
    rank_col: str | None = None,
    relevance_col: str | None = None,
    ties: Ties | None = None,
    threshold: float | None = None,
    no_recs: NoRecs | None = None,
    train: Path | None = None,
    items: Path | None = None,
    item_features: str | None = None,
    rating_range: tuple[float, float] | None = None,
    id_type: str | None = None,
    input_format: str | None = None,
    columns: list[str] | None = None,
    segments: list[str] | None = None,
) -> dict[str, Any]:
    """The options given on the command line, as :func:`receval.evaluate`'s keywords."""
    given = {
        "user_col": user_col, "item_col": item_col, "score_col": score_col,
        "rank_col": rank_col, "relevance_col": relevance_col,
        "ties": ties.value if ties else None, "relevance_threshold": threshold,
        "no_recs": no_recs.value if no_recs else None, "train": train, "items": items,
        "item_features": features(item_features), "rating_range": rating_range,
        "id_type": id_type, "input_format": input_format, "columns": columns or None,
        "segments": segments or None,
    }  # fmt: skip
    return {k: v for k, v in given.items() if v is not None}


# a factor model in place of recommendations (receval evaluate and receval topk)
UserFactorsOpt = Annotated[
    Path | None,
    typer.Option(
        help="The user factors of a factor model, one row per user (.npy, .npz or Parquet): a "
        "user's score of an item is the dot product of their factors (evaluate: instead of "
        "--recs)."
    ),
]
ItemFactorsOpt = Annotated[
    Path | None,
    typer.Option(help="The item factors, one row per catalog item (.npy, .npz or Parquet)."),
]
UserIdsOpt = Annotated[
    Path | None,
    typer.Option(
        help="The user ids of the rows of --user-factors, in row order: .npy, .txt (one per "
        "line), Parquet, CSV or TSV [default: the factor file's ids, else 0..n-1]."
    ),
]
ItemIdsOpt = Annotated[
    Path | None,
    typer.Option(
        help="The item ids of the rows of --item-factors (as --user-ids) [default: the factor "
        "file's ids, else 0..n-1]."
    ),
]
SimilarityOpt = Annotated[
    Similarity | None,
    typer.Option(help="Score of a user and an item: dot or cosine [default: dot]."),
]
DeviceOpt = Annotated[
    str | None,
    typer.Option(
        help="torch device to score the factors on (cuda, cuda:1, cpu); needs torch "
        '(pip install "receval[torch]") [default: NumPy and Numba on the CPU].'
    ),
]
ExcludeOpt = Annotated[
    Path | None,
    typer.Option(
        help="(user, item) rows never recommended, e.g. the training interactions: Parquet, CSV "
        "or TSV."
    ),
]
CandidatesOpt = Annotated[
    Path | None,
    typer.Option(
        help="The items that may be recommended: item ids (one column, .txt or .npy: for every "
        "user) or (user, item) rows (per user) [default: every catalog item]."
    ),
]
BlockMemoryOpt = Annotated[
    str | None,
    typer.Option(
        help="Memory of a model's scan (its blocks of scores and per-user arrays) or of one "
        "block of rows (--engine stream), "
        "e.g. 1GiB, or bytes [default: 256MiB]."
    ),
]
ModelProgressOpt = Annotated[
    bool | None,
    typer.Option(
        help="Progress bar on stderr while scoring a factor model [default: when stderr is a "
        "terminal]."
    ),
]
