"""Which truth users a comparison evaluates: all of them, or those every run can score.

A factor model has no recommendations for users it was not trained on (cold users score 0
under ``no_recs="zero"``), while a popularity baseline recommends to everyone: on a global
temporal split the baseline then "beats" the model on users the model could never serve.
``compare(users="common")`` evaluates every run on the truth users that every run can score
(:func:`common_users`), and says how many were left out, and by which run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import polars as pl

from receval._errors import InputError
from receval.data.io import Inputs
from receval.data.layout import cast_ids, check_id_type, unify_ids
from receval.data.models import FactorModel, ScoreModel
from receval.engines.spark import is_spark_frame

__all__ = ["USERS", "UsersArg", "common_users"]

UsersArg = Literal["all", "common"]
USERS: tuple[str, ...] = ("all", "common")


def _scorable(run: Any, reader: Inputs, order_col: str) -> pl.Series | None:
    """The users ``run`` can score: a model's user ids, a table's users (those with a list);
    None when it scores every user (a ScoreModel without ``user_ids``)."""
    if isinstance(run, FactorModel | ScoreModel):
        return run.user_ids
    recs = reader.read(run, "recs", order_col)
    return recs.get_column(reader.user_col).unique()


def common_users(
    truth: pl.DataFrame, runs: Mapping[str, Any], options: Mapping[str, Any]
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Truth (read) restricted to the users every run of ``runs`` can score, and the facts
    ``Comparison.settings["users"]`` reports: ``truth_users``, ``evaluated`` (the common
    users), ``left_out`` and, per run, ``left_out_by_run`` (truth users that run cannot
    score). ``options`` are evaluate's (column names, ``id_type``, ...)."""
    for name, run in runs.items():
        if is_spark_frame(run):
            msg = (
                f"users='common' reads each run's users on this machine; run {name!r} is a "
                "Spark DataFrame. Compare on the common users by filtering truth to them "
                "first (a join in Spark), or use users='all'."
            )
            raise InputError(msg)
    reader = Inputs.of(
        options.get("columns"), options.get("input_format"),
        str(options.get("user_col", "user")), str(options.get("item_col", "item")),
    )  # fmt: skip
    user_col = reader.user_col
    kind = check_id_type(options.get("id_type", "auto"))["user"]
    order_col = str(options.get("rank_col") or options.get("score_col") or "score")
    truth = cast_ids(truth, "truth", {user_col: kind})
    keep = truth.select(pl.col(user_col).unique())
    n_truth = keep.height
    left_out: dict[str, int] = {}
    for name, run in runs.items():
        users = _scorable(run, reader, order_col)
        if users is None:
            left_out[name] = 0
            continue
        scorable = cast_ids(pl.DataFrame({user_col: users}), "recs", {user_col: kind})
        own, scorable = unify_ids(
            truth.select(user_col).unique(), scorable, user_col, f"user (run {name!r})"
        )
        known = own.join(scorable, on=user_col, how="semi")
        left_out[name] = n_truth - known.height
        keep, known = unify_ids(keep, known, user_col, "user")
        keep = keep.join(known, on=user_col, how="semi")
    if keep.height == 0:
        msg = (
            "users='common': no truth user can be scored by every run (truth users each run "
            f"cannot score: {left_out}); nothing to compare. Check that the runs' user ids "
            "are truth's (id_type=...), or use users='all'."
        )
        raise InputError(msg)
    truth, keep = unify_ids(truth, keep, user_col, "user")
    restricted = truth.join(keep, on=user_col, how="semi", maintain_order="left")
    facts = {
        "users": "common", "truth_users": n_truth, "evaluated": keep.height,
        "left_out": n_truth - keep.height, "left_out_by_run": left_out,
    }  # fmt: skip
    return restricted, facts
