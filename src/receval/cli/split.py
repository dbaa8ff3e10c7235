"""The ``split`` and ``audit`` commands of the command line.

* ``receval split INPUT --method temporal_user --n 1 --out-dir DIR`` splits an interaction
  file and writes ``train.parquet`` and ``test.parquet`` (``validation.parquet`` where asked;
  ``fold_{i}_train.parquet`` / ``fold_{i}_test.parquet`` for ``kfold_user``) and
  ``split.json`` into DIR, each atomically, then prints the leakage audit;
* ``receval audit TRAIN TEST`` prints the leakage audit of a split made elsewhere.

Leaks are printed as warnings on stderr; ``--fail-on-leak`` makes them exit with code 3.
``split`` also reads its settings from ``--config FILE`` (the keys of :func:`receval.split`
plus ``input``, ``out_dir`` and ``format``; see :mod:`receval.cli.config`).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from receval._errors import InputError, RecevalError, check_choice
from receval.cli.common import check_paths, err, out
from receval.cli.common import fail as _fail
from receval.cli.config import SPLIT_KEYS, load_config
from receval.data.audit import SplitAudit, audit_split
from receval.data.split import split

__all__ = ["LEAK_EXIT", "register_split_commands"]

LEAK_EXIT = 3
"""The exit code of ``--fail-on-leak`` when the audit finds a leak."""


class Method(StrEnum):
    """The splitters (receval.split's methods)."""

    temporal_global = "temporal_global"
    temporal_user = "temporal_user"
    leave_one_out = "leave_one_out"
    random_user = "random_user"
    random = "random"
    kfold_user = "kfold_user"


class Order(StrEnum):
    """How a user's interactions are ordered for the holdout."""

    time = "time"
    random = "random"


class TiesOpt(StrEnum):
    """Timestamps tied at the cut."""

    random = "random"
    together = "together"


class DuplicatesOpt(StrEnum):
    """Repeated (user, item) pairs."""

    first = "first"
    last = "last"
    keep = "keep"
    raise_ = "raise"


class ShortOpt(StrEnum):
    """Users with too few interactions for the holdout."""

    train = "train"
    drop = "drop"
    raise_ = "raise"


class ColdOpt(StrEnum):
    """Test rows whose user or item has no train row."""

    none = "none"
    users = "users"
    items = "items"
    both = "both"


class AuditFormat(StrEnum):
    """How the audit is printed."""

    table = "table"
    json = "json"


UserOpt = Annotated[str | None, typer.Option(help="User id column [default: user].")]
ItemOpt = Annotated[str | None, typer.Option(help="Item id column [default: item].")]
TimeOpt = Annotated[str | None, typer.Option(help="Timestamp column [default: timestamp].")]
FormatOpt = Annotated[
    AuditFormat | None,
    typer.Option("--format", help="How the audit is printed [default: table]."),
]
InputFormatOpt = Annotated[
    str | None,
    typer.Option(help="Format of the input files when their suffix does not tell: parquet, "
                 "csv or tsv."),
]  # fmt: skip
IdTypeOpt = Annotated[
    str | None,
    typer.Option(help="Type of the user and item ids: auto (text from CSV, TSV and RecBole "
                 "files), str, int, or by id such as item=int \\[default: auto]."),
]  # fmt: skip
FailOpt = Annotated[
    bool,
    typer.Option(help=f"Exit with code {LEAK_EXIT} when the audit finds a leak (for CI)."),
]


def print_audit(audit: SplitAudit, fmt: AuditFormat, extra: dict[str, Any] | None = None) -> None:
    """The audit on stdout: a Rich table (and its notes), or JSON."""
    if fmt is AuditFormat.json:
        doc = {**(extra or {}), "audit": audit.table.to_dicts(), "warnings": list(audit.warnings),
               "notes": list(audit.notes)}  # fmt: skip
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
        return
    table = Table(title="leakage audit", title_justify="left")
    folds = "fold" in audit.table.columns
    if folds:
        table.add_column("fold", justify="right")
    for name, justify in (
        ("check", "left"),
        ("count", "right"),
        ("share", "right"),
        ("of", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in audit.table.iter_rows(named=True):
        count, share = row["count"], row["share"]
        cells = [
            row["check"], "-" if count is None else f"{count:,}",
            "-" if share is None else f"{share:.2%}", row["of"],
        ]  # fmt: skip
        table.add_row(*([str(row["fold"])] if folds else []), *cells)
    out.print(table)
    for note in audit.notes:
        out.print(f"note: {note}", highlight=False, markup=False)


def _bound(value: str | None) -> object:
    """A time bound from the command line: an integer or float where the text is one (the
    splitter reads text as a date or datetime on such a column)."""
    if value is None:
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def register_split_commands(app: typer.Typer) -> None:
    """Add the ``split`` and ``audit`` commands to ``app``."""

    @app.command("split")
    def split_cmd(
        input_path: Annotated[
            Path | None,
            typer.Argument(
                metavar="INPUT",
                help="Interactions (Parquet, CSV or TSV): user, item, timestamp, any other "
                "column kept.",
            ),
        ] = None,
        method: Annotated[
            Method | None, typer.Option(help="How to split (see docs/protocol.md).")
        ] = None,
        out_dir: Annotated[
            Path | None,
            typer.Option(help="Folder for train.parquet, test.parquet, ... (made if missing)."),
        ] = None,
        n: Annotated[
            int | None, typer.Option("--n", "-n", help="Rows held out: per user, or in all.")
        ] = None,
        fraction: Annotated[
            float | None, typer.Option(help="Fraction held out, in (0, 1), rounded down.")
        ] = None,
        cutoff: Annotated[
            str | None,
            typer.Option(
                help="temporal_global: test is every row at or after this time "
                "(a number, or a date / datetime such as 2024-01-31)."
            ),
        ] = None,
        end: Annotated[
            str | None, typer.Option(help="temporal_global: rows at or after this are dropped.")
        ] = None,
        k: Annotated[
            int | None, typer.Option("--k", help="kfold_user: folds [default: 5].")
        ] = None,
        by: Annotated[
            Order | None,
            typer.Option(help="leave_one_out, kfold_user: hold out by time or at random."),
        ] = None,
        validation_n: Annotated[
            int | None, typer.Option(help="Validation rows, just before test.")
        ] = None,
        validation_fraction: Annotated[
            float | None, typer.Option(help="Validation fraction, just before test.")
        ] = None,
        validation_cutoff: Annotated[
            str | None,
            typer.Option(help="temporal_global: validation is this time <= t < --cutoff."),
        ] = None,
        seed: Annotated[
            int | None, typer.Option(help="Seed of the random keys [default: 0].")
        ] = None,
        ties: Annotated[
            TiesOpt | None,
            typer.Option(
                help="Timestamps tied at the cut: random (seeded) or together [default: random]."
            ),
        ] = None,
        duplicates: Annotated[
            DuplicatesOpt | None,
            typer.Option(
                help="Repeated (user, item) pairs: first, last, keep or raise [default: first]."
            ),
        ] = None,
        min_user_interactions: Annotated[
            int | None, typer.Option(help="k-core before the split: rows per user.")
        ] = None,
        min_item_interactions: Annotated[
            int | None, typer.Option(help="k-core before the split: rows per item.")
        ] = None,
        short_users: Annotated[
            ShortOpt | None,
            typer.Option(
                help="Users too short for the holdout: train, drop or raise [default: train]."
            ),
        ] = None,
        drop_cold: Annotated[
            ColdOpt | None,
            typer.Option(
                help="Drop test rows whose user / item has no train row: none, "
                "users, items or both [default: none]."
            ),
        ] = None,
        user_col: UserOpt = None,
        item_col: ItemOpt = None,
        time_col: TimeOpt = None,
        input_format: InputFormatOpt = None,
        id_type: IdTypeOpt = None,
        config: Annotated[
            Path | None,
            typer.Option(
                help="TOML or JSON file of settings (receval.split's options by "
                "their Python names, plus input and out_dir); flags override it."
            ),
        ] = None,
        fmt: FormatOpt = None,
        fail_on_leak: FailOpt = False,
    ) -> None:
        """Split interactions into train and test (and validation, or k folds), write them as
        Parquet files and print the leakage audit."""
        flags: dict[str, Any] = {
            "input": input_path, "out_dir": out_dir, "method": method, "n": n,
            "fraction": fraction, "cutoff": _bound(cutoff), "end": _bound(end), "k": k, "by": by,
            "validation_n": validation_n, "validation_fraction": validation_fraction,
            "validation_cutoff": _bound(validation_cutoff), "seed": seed, "ties": ties,
            "duplicates": duplicates, "min_user_interactions": min_user_interactions,
            "min_item_interactions": min_item_interactions, "short_users": short_users,
            "drop_cold": drop_cold, "user_col": user_col, "item_col": item_col,
            "time_col": time_col, "input_format": input_format, "id_type": id_type,
            "format": fmt,
        }  # fmt: skip
        try:
            settings: dict[str, Any] = load_config(config, SPLIT_KEYS) if config else {}
            settings.update({key: _plain(v) for key, v in flags.items() if v is not None})
            for key, flag in (("input", "INPUT"), ("method", "--method"), ("out_dir", "--out-dir")):
                if settings.get(key) is None:
                    msg = f"missing {flag} (give it on the command line or as {key!r} in --config)."
                    raise InputError(msg)
            out_format = settings.pop("format", "table")
            check_choice("format", out_format, tuple(AuditFormat))
            source, folder = Path(settings.pop("input")), Path(settings.pop("out_dir"))
            outputs = {f"--out-dir {name}": folder / name for name in _file_names(settings)}
            check_paths(outputs, {"INPUT": source, "--config": config})
            result = split(source, settings.pop("method"), **settings)
            written = result.write(folder)
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        counts = result.counts()
        info = {"method": result.method, "counts": counts, "files": [str(p) for p in written]}
        print_audit(result.audit, AuditFormat(out_format), info)
        if out_format == AuditFormat.table:
            parts = [(k, v) for k, v in counts.items() if v or k in ("train", "test")]
            shown = ", ".join(f"{v:,} {k}" for k, v in parts)
            err.print(f"wrote {len(written)} files to {folder} ({shown} rows)", highlight=False,
                      markup=False)  # fmt: skip
        _exit_on_leak(result.audit, fail_on_leak)

    @app.command("audit")
    def audit_cmd(
        train: Annotated[Path, typer.Argument(help="Training interactions (Parquet, CSV, TSV).")],
        test: Annotated[Path, typer.Argument(help="Test interactions.")],
        validation: Annotated[
            Path | None, typer.Option(help="Validation interactions, audited against train too.")
        ] = None,
        user_col: UserOpt = None,
        item_col: ItemOpt = None,
        time_col: TimeOpt = None,
        relevance_col: Annotated[
            str | None,
            typer.Option(help="Relevance column of test [default: every row relevant]."),
        ] = None,
        threshold: Annotated[
            float | None,
            typer.Option("--relevance-threshold", help="Relevant when >= this [default: 1]."),
        ] = None,
        input_format: InputFormatOpt = None,
        id_type: IdTypeOpt = None,
        fmt: FormatOpt = None,
        fail_on_leak: FailOpt = False,
    ) -> None:
        """Audit a train/test split made elsewhere for leakage and print the table."""
        options: dict[str, Any] = {
            "user_col": user_col, "item_col": item_col, "time_col": time_col,
            "relevance_col": relevance_col, "relevance_threshold": threshold,
            "input_format": input_format, "validation": validation, "id_type": id_type,
        }  # fmt: skip
        try:
            check_paths({}, {"TRAIN": train, "TEST": test, "--validation": validation})
            audit = audit_split(train, test, **{k: v for k, v in options.items() if v is not None})
        except (RecevalError, OSError) as exc:
            raise _fail(exc) from None
        print_audit(audit, fmt or AuditFormat.table)
        _exit_on_leak(audit, fail_on_leak)


def _plain(value: object) -> object:
    """An enum flag as its value (what receval.split takes)."""
    return value.value if isinstance(value, StrEnum) else value


def _file_names(settings: dict[str, Any]) -> list[str]:
    """The files ``receval split`` writes into --out-dir (checked against the inputs)."""
    if settings.get("method") == "kfold_user":
        k = settings.get("k") or 5
        names = [f"fold_{i}_{p}.parquet" for i in range(int(k)) for p in ("train", "test")]
    else:
        names = ["train.parquet", "test.parquet", "validation.parquet"]
    return [*names, "split.json"]


def _exit_on_leak(audit: SplitAudit, fail: bool) -> None:
    if fail and audit.warnings:
        err.print(
            f"{len(audit.warnings)} leak(s) found (--fail-on-leak): exit code {LEAK_EXIT}",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(code=LEAK_EXIT)
