"""``evaluate``: every metric family of recommendations against truth.

Internal protocol between the families. :func:`evaluate` reads and checks the inputs, builds
the canonical layout once (:func:`prepare` -> :class:`Prepared`: rows grouped by user, item
keys, truth matched against recs by the ranking kernel) and hands each family's metrics to its part:

* ``ranking``: :func:`_ranking_part` (this module, :mod:`receval._kernels`);
* ``classification`` and ``rating``: :mod:`receval._pointwise`;
* ``beyond``: :mod:`receval._beyond`.

Each part returns a :class:`Part` (means, per-user columns, details); :func:`_merge` joins them
into one :class:`~receval.Result`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numba
import numpy as np
import polars as pl

from . import _kernels as K
from ._errors import InputError, MetricError
from ._io import ROLES, Inputs, check_exists, read_table
from ._layout import (
    Grouped,
    IdTypeArg,
    cast_ids,
    check_column_names,
    check_frame,
    check_id_type,
    exact_item_keys,
    group_by_user,
    item_keys,
    show_rows,
    trec_tie_keys,
    unify_ids,
)
from ._registry import Family, Metric, ParamValue, parse_metrics
from ._result import Counts, Result

__all__ = [
    "Engine",
    "KernelOutput",
    "NoRecsPolicy",
    "Part",
    "Prepared",
    "TiesPolicy",
    "check_inputs",
    "check_spark_options",
    "check_threshold",
    "evaluate",
    "join_per_user",
    "no_evaluated_message",
    "per_user_frame",
    "prepare",
    "warn_unused_relevance",
]

TiesPolicy = Literal["expected", "first", "trec", "optimistic", "pessimistic"]
NoRecsPolicy = Literal["zero", "skip", "raise"]
Engine = Literal["auto", "local", "spark"]

_POLICY = {
    "expected": K.POLICY_EXPECTED,
    "first": K.POLICY_FIRST,
    "trec": K.POLICY_TREC,
    "optimistic": K.POLICY_OPTIMISTIC,
    "pessimistic": K.POLICY_PESSIMISTIC,
}
_OPS = {
    "precision": K.OP_PRECISION,
    "recall": K.OP_RECALL,
    "f1": K.OP_FBETA,
    "fbeta": K.OP_FBETA,
    "hit_rate": K.OP_HIT_RATE,
    "mrr": K.OP_MRR,
    "arhr": K.OP_ARHR,
    "map": K.OP_AP,
    "cg": K.OP_CG,
    "dcg": K.OP_DCG,
    "ndcg": K.OP_NDCG,
    "ndcg_k": K.OP_NDCG_K,
    "r_precision": K.OP_R_PRECISION,
}
_USERS_PER_CHUNK = 256
# truth column names (compared in lower case) that look like a relevance grade: one of them
# left unused while every row gets relevance 1 is named in a warning
GRADE_NAMES = frozenset(
    {
        "relevance", "relevance_score", "rel", "rating", "ratings", "rate", "stars", "label",
        "labels", "grade", "grades", "score", "scores", "weight", "click", "clicks", "clicked",
        "judgment", "judgement", "gain", "preference", "target",
    }
)  # fmt: skip


def evaluate(
    truth: Any,
    recs: Any,
    metrics: str | Metric | Iterable[str | Metric],
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    rank_col: str | None = None,
    relevance_col: str | None = None,
    ties: TiesPolicy = "expected",
    relevance_threshold: float = 1,
    no_recs: NoRecsPolicy = "zero",
    train: Any = None,
    items: Any = None,
    item_features: str | list[str] | Callable[[Any, Any], float] | None = None,
    rating_range: tuple[float, float] | None = None,
    id_type: IdTypeArg = "auto",
    columns: Mapping[str, Mapping[str, str]] | Iterable[str] | None = None,
    input_format: str | Mapping[str, str] | None = None,
    engine: Engine = "auto",
    spark: Any = None,
    partitions: int | None = None,
    exclude: Any = None,
    candidates: Any = None,
    block_memory: int | str = "256MiB",
    excluded_truth: Literal["drop", "raise"] = "drop",
    progress: bool = False,
) -> Result:
    """Evaluate recommendations against truth: ranking, pointwise and beyond-accuracy metrics.

    Parameters
    ----------
    truth:
        What users really did: rows ``(user, item[, relevance])``. A Polars or pandas
        DataFrame, a PyArrow Table, a path to a Parquet/CSV/TSV file or a TREC qrels file, or a
        dict ``{user: {item: relevance}}``. Without a relevance column every row has relevance 1.
    recs:
        The model's output: rows ``(user, item, score)`` (higher is better) or
        ``(user, item, rank)`` with ``rank_col`` (1 is best); same sources as ``truth`` (a TREC
        run file, or ``{user: {item: score}}``). Or a model: a :class:`receval.FactorModel`
        (user and item factors) or :class:`receval.ScoreModel` (a function scoring every item
        for a batch of users), evaluated on the full catalog with exact ranks (docs/model.md).
    metrics:
        Metric strings such as ``"ndcg@10"``, ``"map(denominator=min)@100"``,
        ``"recall(rel=2)@20"``; see :func:`receval.list_metrics`.
    user_col, item_col, score_col, rank_col, relevance_col:
        Column names. ``user_col`` and ``item_col`` name the id columns of every input (truth,
        recs, train, items; ``columns`` names one input's own). ``rank_col`` replaces
        ``score_col`` when given. Without ``relevance_col``, truth's ``"relevance"`` column is
        used when present, else every row has relevance 1 (a truth column named like a grade,
        such as ``rating`` or ``label``, is then named in a warning); a ``relevance_col`` that
        is named must exist. ``result.settings["relevance_col"]`` says which was used (None:
        relevance 1).
    ties:
        How equal scores (or repeated ranks) are ordered: ``"expected"`` (the expected value
        over all orders of each tie group, in closed form), ``"first"`` (input row order),
        ``"trec"`` (item id descending, compared as strings, exactly as trec_eval),
        ``"optimistic"`` / ``"pessimistic"`` (within a tie, items in descending / ascending
        relevance: the best and the worst case, which bound ``"expected"``).
    relevance_threshold:
        An item is relevant when its relevance is >= this (> 0; trec_eval ``-l``). A metric's
        own ``rel=`` parameter overrides it for that metric.
    no_recs:
        Evaluated users with no recommendations score 0 (``"zero"``, trec_eval ``-c``), are
        left out (``"skip"``) or raise an error (``"raise"``).
    train:
        Training interactions ``(user, item)`` (same sources as ``truth``): item popularity
        for ``novelty``, ``arp`` and ``long_tail``, and catalog items for ``coverage``. When
        given, recs rows of truth users whose item the user already has in train are counted
        (``result.counts.recs_in_train``) and, if any, named in a warning.
    items:
        The item table (``item_col`` plus feature columns): the catalog for ``coverage`` and
        ``gini``, and the item features for ``ils`` / ``diversity``.
    item_features:
        How ``ils`` / ``diversity`` compare two items: the name of a list/array column of
        ``items`` (cosine of vectors), a list of categorical columns (Jaccard of feature
        sets), or a function ``sim(item_a, item_b) -> float`` of two item ids.
    rating_range:
        ``(r_min, r_max)`` of the rating scale for ``nmae``; read from truth when not given.
    id_type:
        The type of the user and item ids of truth, recs, train and items. ``"auto"``: typed
        sources (Parquet, DataFrames, Arrow, dicts) keep theirs, and CSV, TSV and TREC files
        give text ids (``"007"`` and ``"7"`` differ; never guessed from a sample of rows).
        ``"str"``: every id as text (integers become their decimal text). ``"int"``: every id
        as a 64-bit integer (``"007"`` becomes 7; a value that is not an integer raises). A
        kind by id: ``{"item": "int"}`` (or ``"item=int"``; ``"user=str,item=int"``), an id
        not named staying ``"auto"``.
    columns:
        The id column names of one input where they differ from ``user_col`` / ``item_col``:
        ``{input: {"user": name, "item": name}}``, inputs ``"truth"``, ``"recs"``,
        ``"train"``, ``"items"`` (item only), e.g. ``{"recs": {"user": "uid"}}``; or texts
        ``["recs.user=uid", "recs.item=iid"]`` (CLI ``--columns recs.user=uid``, repeatable).
        Every frame is read with its own names, then takes truth's: the output's user column
        is named by truth's user column.
    input_format:
        The format of file inputs whose suffix does not tell it: ``"parquet"``, ``"csv"``,
        ``"tsv"`` or ``"trec"`` for every file input, or by input, ``{"truth": "tsv"}`` (as
        text ``"truth=tsv,train=tsv"``); it overrides the suffix. RecBole's ``.inter``,
        ``.item`` and ``.user`` files are read as TSV by their suffix, the ``:token`` /
        ``:float`` type suffixes dropped from their header names (``user_id:token`` is
        ``user_id``).
    engine:
        ``"auto"`` (Spark when ``truth`` or ``recs`` is a pyspark DataFrame, else local),
        ``"local"`` or ``"spark"`` (also for paths, which Spark then reads). The Spark
        engine (``pip install "receval[spark]"``; docs/spark.md) returns the same Result.
    spark:
        The SparkSession of the Spark engine (default: that of a Spark DataFrame input, the
        active one, or a new local one).
    partitions:
        The Spark engine's number of user shards, an integer >= 1 (default: about 2 million
        rows a shard, at least one per core). ``spark`` and ``partitions`` need the Spark
        engine: with the local one they raise.

    exclude:
        With a model: ``(user, item)`` rows never recommended to that user nor counted as
        candidates (usually the training interactions): a table, a file or a dict
        ``{user: [items]}``. Truth rows that it lists for the same user are left out of truth
        with a warning (``excluded_truth="drop"``) or raise (``"raise"``).
    candidates:
        With a model: the items to rank within, instead of the whole catalog: item ids (one
        subset for every user) or ``(user, item)`` rows (a table, file or dict: per user).
    block_memory:
        With a model: the memory for one block of scores (users x items), in bytes or as text
        (``"256MiB"``, ``"2GB"``); the score matrix is never held whole.
    excluded_truth:
        ``"drop"`` (default) or ``"raise"``: see ``exclude``.
    progress:
        With a model: a progress bar on stderr while scoring.

    Returns
    -------
    Result
        ``result[name]`` -> mean, ``result.per_user``, ``result.counts``.

    Examples
    --------
    >>> import receval
    >>> truth = {"u1": {"a": 1, "b": 1}, "u2": {"c": 2}}
    >>> recs = {"u1": {"a": 0.9, "x": 0.8, "b": 0.1}, "u2": {"x": 0.5, "c": 0.5}}
    >>> res = receval.evaluate(truth, recs, ["mrr", "precision@2"], ties="first")
    >>> res["mrr"], res["precision@2"]
    (0.75, 0.5)

    With ``ties="expected"``, u2's tie between ``x`` and ``c`` counts as either order:

    >>> receval.evaluate(truth, recs, "mrr")["mrr"]
    0.875
    """
    if engine not in get_args(Engine):
        msg = f"engine must be one of {', '.join(get_args(Engine))}; got {engine!r}."
        raise InputError(msg)
    kinds = check_id_type(id_type)
    use_spark = engine == "spark" or (engine == "auto" and _spark_input(truth, recs, train, items))
    partitions = check_spark_options(spark, partitions, use_spark)
    order_option = "score_col" if rank_col is None else "rank_col"
    ids = {"user_col": user_col, "item_col": item_col}
    check_column_names({**ids, order_option: score_col if rank_col is None else rank_col}, "recs")
    relevance = {"relevance_col": relevance_col} if relevance_col is not None else {}
    check_column_names({**ids, **relevance}, "truth")
    inputs = Inputs.of(columns, input_format, user_col, item_col)
    for role in ROLES:  # an input's own id column names, where columns= gives them
        own_user, own_item = inputs.columns[role]
        if (own_user, own_item) == (user_col, item_col):
            continue
        named = {f"columns[{role!r}]['user']": own_user} if role != "items" else {}
        named[f"columns[{role!r}]['item']"] = own_item
        if role == "recs":
            named[order_option] = score_col if rank_col is None else rank_col
        check_column_names({**named, **(relevance if role == "truth" else {})}, role)
    options = {
        "train": train, "items": items, "item_features": item_features,
        "rating_range": rating_range,
    }  # fmt: skip
    request: dict[str, Any] = {
        "user_col": user_col, "item_col": item_col, "score_col": score_col, "rank_col": rank_col,
        "relevance_col": relevance_col, "ties": ties, "relevance_threshold": relevance_threshold,
        "no_recs": no_recs,
    }  # fmt: skip
    if use_spark:
        from ._model import is_model

        if is_model(recs):
            msg = (
                "a model source (FactorModel, ScoreModel) is evaluated by the local engine; "
                "the Spark engine takes recommendation tables (receval.topk builds one)."
            )
            raise InputError(msg)
        from ._spark import evaluate_spark

        return evaluate_spark(
            truth, recs, metrics, spark=spark, partitions=partitions, id_type=kinds,
            columns=columns, input_format=input_format, **request, **options,
        )  # fmt: skip
    if engine == "local":
        truth, recs, options = _local_inputs(truth, recs, options)
    for role in ("train", "items"):  # a path given must exist, whether a metric reads it or not
        check_exists(options[role], role)
    plan = parse_metrics(metrics)
    if ties not in _POLICY:
        msg = f"ties must be one of {', '.join(get_args(TiesPolicy))}; got {ties!r}."
        raise InputError(msg)
    if no_recs not in get_args(NoRecsPolicy):
        msg = f"no_recs must be one of {', '.join(get_args(NoRecsPolicy))}; got {no_recs!r}."
        raise InputError(msg)
    threshold = check_threshold(relevance_threshold)
    from ._model import evaluate_model, is_model  # the model source builds on this module

    if is_model(recs):
        return evaluate_model(  # type: ignore[no-any-return]
            truth, recs, plan, inputs=inputs, kinds=kinds, relevance_col=relevance_col,
            ties=ties, threshold=threshold, no_recs=no_recs, options=options, exclude=exclude,
            candidates=candidates, block_memory=block_memory, excluded_truth=excluded_truth,
            progress=progress, rank_col=rank_col,
        )  # fmt: skip
    if exclude is not None or candidates is not None:
        msg = (
            "exclude= and candidates= apply to a model source (receval.FactorModel or "
            "receval.ScoreModel); recs is a table: filter its rows instead."
        )
        raise InputError(msg)
    ranking = tuple(m for m in plan if m.spec.family == "ranking")
    user_col, item_col = inputs.user_col, inputs.item_col  # every frame gets truth's names
    truth = inputs.read(truth, "truth", relevance_col or "relevance")
    recs = inputs.read(recs, "recs", score_col if rank_col is None else rank_col)
    prep, kernel = prepare(
        truth, recs, ranking, user_col=user_col, item_col=item_col, score_col=score_col,
        rank_col=rank_col, relevance_col=relevance_col, ties=ties,
        relevance_threshold=threshold, no_recs=no_recs, id_type=kinds,
        options={**options, "_inputs": inputs},
    )  # fmt: skip
    if options["train"] is not None:
        from ._beyond import check_train  # the families import this module

        prep = check_train(prep, options["train"])
    settings = {
        "ties": ties, "relevance_threshold": prep.threshold, "no_recs": no_recs,
        "relevance_col": prep.relevance_col if prep.options["has_relevance"] else None,
    }  # fmt: skip
    parts = []
    if ranking:
        parts.append(_ranking_part(ranking, prep, kernel))
    handlers = _family_parts()
    for family in ("classification", "rating", "beyond"):
        chosen = tuple(m for m in plan if m.spec.family == family)
        if chosen:
            parts.append(handlers[family](chosen, prep))
    return _merge(plan, parts, prep, settings)


def _spark_input(*inputs: Any) -> bool:
    """Whether an input is a pyspark DataFrame (checked without importing pyspark)."""
    for data in inputs:
        cls = type(data)
        if cls.__module__.startswith("pyspark.sql") and cls.__name__ == "DataFrame":
            return True
    return False


def check_spark_options(spark: Any, partitions: object, use_spark: bool = True) -> int | None:
    """``partitions`` as an int (or None), after checking the Spark engine's options before
    any Spark job: ``partitions`` an integer >= 1, ``spark`` a SparkSession (classic or Spark
    Connect); with the local engine (``use_spark`` false) neither may be given."""
    if partitions is not None and (
        isinstance(partitions, bool) or not isinstance(partitions, numbers.Integral)
        or partitions < 1
    ):  # fmt: skip
        msg = f"partitions must be an integer >= 1; got {partitions!r}."
        raise InputError(msg)
    if spark is not None and not any(
        c.__name__ == "SparkSession" and c.__module__.startswith("pyspark.sql")
        for c in type(spark).__mro__
    ):
        msg = f"spark must be a SparkSession or None; got {type(spark).__name__}."
        raise InputError(msg)
    if not use_spark:
        for name, value in (("partitions", partitions), ("spark", spark)):
            if value is not None:
                msg = (
                    f"{name} is an option of the Spark engine; pass engine='spark' (or Spark "
                    f"DataFrames as inputs) to use it, or leave it out: this call runs on the "
                    "local engine."
                )
                raise InputError(msg)
    return None if partitions is None else int(partitions)


def _local_inputs(
    truth: Any, recs: Any, options: dict[str, Any]
) -> tuple[Any, Any, dict[str, Any]]:
    """engine="local" with pyspark DataFrames: collect them to the driver as Arrow tables."""

    def local(data: Any) -> Any:
        if not _spark_input(data):
            return data
        return data.toArrow() if hasattr(data, "toArrow") else data.toPandas()

    options = {**options, "train": local(options["train"]), "items": local(options["items"])}
    return local(truth), local(recs), options


def check_threshold(value: object) -> float:
    """``relevance_threshold`` as a float, or :class:`InputError` unless a finite number > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        msg = f"relevance_threshold must be a finite number > 0; got {value!r}."
        raise InputError(msg)
    return float(value)


def prepare(
    truth: Any,
    recs: Any,
    ranking: tuple[Metric, ...] = (),
    *,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    rank_col: str | None = None,
    relevance_col: str | None = None,
    ties: TiesPolicy = "expected",
    relevance_threshold: float = 1.0,
    no_recs: NoRecsPolicy = "zero",
    id_type: IdTypeArg = "auto",
    options: dict[str, Any] | None = None,
) -> tuple[Prepared, KernelOutput]:
    """Read, check, group and match ``truth`` and ``recs``; run the ranking kernel.

    The shared first half of :func:`evaluate` (options already checked): every family's part
    reads the returned :class:`Prepared` layout; the :class:`KernelOutput` holds the values of
    the ``ranking`` metrics (none when ``ranking`` is empty: the kernel then only matches).
    """
    order_col = rank_col if rank_col is not None else score_col
    given_relevance = relevance_col is not None
    relevance_col = relevance_col or "relevance"
    t_raw = read_table(
        truth, "truth", user_col=user_col, item_col=item_col, value_col=relevance_col
    )
    r_raw = read_table(recs, "recs", user_col=user_col, item_col=item_col, value_col=order_col)
    has_relevance = given_relevance or relevance_col in t_raw.columns
    if not has_relevance:
        warn_unused_relevance(t_raw.columns, [user_col, item_col], stacklevel=3)
    if not given_relevance and relevance_col not in t_raw.columns and t_raw.height:
        t_raw = t_raw.with_columns(pl.lit(1.0).alias(relevance_col))  # columns checked next
    ids = [user_col, item_col]
    t_frame, r_frame = check_inputs(
        t_raw, r_raw, ids=ids, relevance_col=relevance_col, order_col=order_col,
        by_rank=rank_col is not None, allow_empty=bool((options or {}).get("_shard")),
    )  # fmt: skip
    kinds = check_id_type(id_type)
    id_kinds = {user_col: kinds["user"], item_col: kinds["item"]}
    t_frame = cast_ids(t_frame, "truth", id_kinds)
    r_frame = cast_ids(r_frame, "recs", id_kinds)
    t_frame, r_frame = unify_ids(t_frame, r_frame, user_col, "user")
    t_frame, r_frame = unify_ids(t_frame, r_frame, item_col, "item")

    t_grp = group_by_user(t_frame, user_col)
    r_grp = group_by_user(r_frame, user_col)
    u2r = _match_users(t_grp.keys, r_grp.keys)
    return _match(
        ranking, t_grp, r_grp, u2r,
        user_col=user_col, item_col=item_col, relevance_col=relevance_col, order_col=order_col,
        by_rank=rank_col is not None, ties=ties, threshold=float(relevance_threshold),
        no_recs=no_recs,
        options={"has_relevance": has_relevance, "id_type": kinds, **(options or {})},
    )  # fmt: skip


def warn_unused_relevance(columns: list[str], ids: list[str], stacklevel: int = 2) -> None:
    """Warn when truth, read without a relevance column (every row relevance 1), has columns
    named like a relevance grade (:data:`GRADE_NAMES`, any case) that are not its ids."""
    found = [c for c in columns if c.lower() in GRADE_NAMES and c not in ids]
    if not found:
        return
    first = found[0]
    names = ", ".join(repr(c) for c in found)
    warnings.warn(
        f"truth column(s) {names} look like relevance grades but are not used: without "
        "relevance_col and without a column 'relevance', every truth row has relevance 1. "
        f"Pass relevance_col={first!r} (CLI --relevance-col {first}) to use it.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


def check_inputs(
    truth: pl.DataFrame,
    recs: pl.DataFrame,
    *,
    ids: list[str],
    relevance_col: str,
    order_col: str,
    by_rank: bool,
    allow_empty: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Truth and recs checked by :func:`~receval._layout.check_frame` (columns, types,
    values), with the messages every engine gives."""
    t_frame = check_frame(
        truth, "truth", id_cols=ids, value_col=relevance_col, value_name="relevance",
        fix="pass relevance_col= to name the relevance column, or leave it out (every row then "
        "has relevance 1).", allow_empty=allow_empty,
    )  # fmt: skip
    r_frame = check_frame(
        recs, "recs", id_cols=ids, value_col=order_col,
        value_name="rank" if by_rank else "score",
        fix="pass score_col= or rank_col= to name the column that orders each user's list.",
        allow_empty=allow_empty,
    )  # fmt: skip
    return t_frame, r_frame


def _match_users(t_keys: pl.Series, r_keys: pl.Series) -> np.ndarray:
    """For each truth user, the index of its recs group, or -1 (for any ids: each value of
    ``t_keys``, its position in the distinct ``r_keys``)."""
    left = pl.DataFrame({"k": t_keys})
    right = pl.DataFrame({"k": r_keys, "g": pl.int_range(r_keys.len(), dtype=pl.Int64, eager=True)})
    joined = left.join(right, on="k", how="left", maintain_order="left")
    return np.ascontiguousarray(joined["g"].fill_null(-1).to_numpy(), dtype=np.int64)


def _gain_matrix(
    metrics: tuple[Metric, ...], rel: np.ndarray, relevance_col: str
) -> tuple[np.ndarray, list[int]]:
    """One row of per-truth-row gains for each distinct gain among the metrics."""
    variants: dict[ParamValue, int] = {}  # gain -> its row, in first-seen order
    index: list[int] = []
    for m in metrics:
        if _OPS[m.name] in (K.OP_CG, K.OP_DCG, K.OP_NDCG, K.OP_NDCG_K):
            index.append(variants.setdefault(m.get("gain"), len(variants)))
        else:
            index.append(0)
    rows = []
    clipped = np.maximum(rel, 0.0)
    for gain in variants:
        if gain == "linear":
            rows.append(clipped)
        elif gain == "exp":
            rows.append(np.exp2(clipped) - 1.0)
        else:
            assert isinstance(gain, tuple)
            keys = np.array([k for k, _ in gain], dtype=np.float64)
            vals = np.array([v for _, v in gain], dtype=np.float64)
            pos = np.clip(np.searchsorted(keys, rel), 0, len(keys) - 1)
            found = keys[pos] == rel
            missing = ~found & (rel > 0)
            if missing.any():
                absent = np.unique(rel[missing])[:5].tolist()
                msg = (
                    f"the gain map {dict(gain)} has no gain for relevance value(s) {absent} "
                    f"found in truth column {relevance_col!r}; map every positive relevance "
                    "(relevance <= 0 gains 0 unless mapped)."
                )
                raise InputError(msg)
            rows.append(np.where(found, vals[pos], 0.0))
    if not rows:
        return np.zeros((0, rel.shape[0]), dtype=np.float64), index
    return np.ascontiguousarray(np.vstack(rows)), index


@dataclass(frozen=True)
class Prepared:
    """The canonical layout that every metric family reads.

    Truth and recs rows are grouped by user (``t_grp`` / ``r_grp``: flat frames plus offsets);
    row ``a`` of the arrays below is row ``a`` of ``t_grp.frame`` / ``r_grp.frame``.

    Attributes
    ----------
    u2r:
        For each truth user (group), its recs group or -1.
    t_match:
        For each truth row, the recs row with the same (user, item), or -1.
    t_rel, r_score:
        Truth relevance (1.0 when truth has no relevance column) and the recs order column as
        given (a score, or a rank when ``by_rank``), as float64.
    t_item, r_item:
        64-bit item keys: equal keys are equal items within a user (verified).
    options:
        Family options of :func:`evaluate`: ``train``, ``items``, ``item_features``,
        ``rating_range``, ``id_type`` (train and items follow it) and ``has_relevance``
        (whether truth had a relevance column); ``_inputs`` (each input's own column names
        and format, :class:`~receval._io.Inputs`) and ``_train_pairs`` (train read once).
    """

    t_grp: Grouped
    r_grp: Grouped
    u2r: np.ndarray
    t_match: np.ndarray
    t_rel: np.ndarray
    r_score: np.ndarray
    t_item: np.ndarray
    r_item: np.ndarray
    user_col: str
    item_col: str
    relevance_col: str
    order_col: str
    by_rank: bool
    ties: TiesPolicy
    threshold: float
    no_recs: NoRecsPolicy
    counts: Counts
    options: dict[str, Any] = field(default_factory=dict)

    def threshold_of(self, metric: Metric) -> float:
        """The relevance threshold of ``metric``: its ``rel=``, else evaluate's."""
        if not any(p.name == "rel" for p in metric.spec.params):
            return self.threshold
        rel = metric.get("rel")
        return self.threshold if rel is None else float(rel)  # type: ignore[arg-type]


@dataclass
class Part:
    """What one family's part of an evaluation returns.

    ``per_user`` holds the user column (``user_col``) and one Float64 column per metric that
    has per-user values (canonical names), or is None when none has; ``details`` maps a
    canonical name to extra facts about it (users skipped, the catalog used, ...).

    For the distributed engine (:mod:`receval._shard`), ``sums[name] = (terms, den)`` says how
    a per-user metric's mean is made: ``fsum(terms) / den``, ``den`` a count or an array of
    weights (summed exactly); ``pending[name]`` holds what a global metric needs from every
    shard before it has a value (a shard's part has no mean for it).
    """

    means: dict[str, float]
    per_user: pl.DataFrame | None = None
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    sums: dict[str, tuple[np.ndarray, np.ndarray | int]] = field(default_factory=dict)
    pending: dict[str, tuple[str, Any]] = field(default_factory=dict)


def _family_parts() -> dict[Family, Callable[[tuple[Metric, ...], Prepared], Part]]:
    from ._beyond import beyond_part  # the families import this module
    from ._pointwise import classification_part, rating_part

    return {
        "classification": classification_part,
        "rating": rating_part,
        "beyond": beyond_part,
    }


@dataclass(frozen=True)
class KernelOutput:
    """The ranking kernel's values: ``out`` (users x ranking metrics), ``nrel`` (|R| per user
    and threshold), ``thr_idx`` (each metric's threshold column) and ``ops`` (opcodes)."""

    out: np.ndarray
    nrel: np.ndarray
    thr_idx: list[int]
    ops: np.ndarray


@dataclass(frozen=True)
class PlanArrays:
    """The ranking metrics as the kernels read them: ``thresholds`` (distinct, first-seen
    order; evaluate's own first), ``thr_idx`` / ``thr_arr`` (each metric's threshold column),
    ``t_gain`` (a row of gains per distinct gain, per truth row), ``gain_idx``, ``ops``, ``ks``
    (0: no cutoff) and ``fpar`` (a metric's float parameter, see :func:`_fpar`)."""

    thresholds: np.ndarray
    thr_idx: list[int]
    thr_arr: np.ndarray
    t_gain: np.ndarray
    gain_idx: np.ndarray
    ops: np.ndarray
    ks: np.ndarray
    fpar: np.ndarray


def plan_arrays(
    ranking: tuple[Metric, ...], threshold: float, t_rel: np.ndarray, relevance_col: str
) -> PlanArrays:
    """The kernels' view of the ranking metrics (:class:`PlanArrays`)."""
    thresholds = {threshold: 0}  # threshold -> its column, in first-seen order
    thr_idx = []
    for m in ranking:
        rel = m.get("rel")
        value = threshold if rel is None else float(rel)  # type: ignore[arg-type]
        thr_idx.append(thresholds.setdefault(value, len(thresholds)))
    t_gain, gain_idx = _gain_matrix(ranking, t_rel, relevance_col)
    ops = np.array(
        [
            K.OP_HITS if m.name == "recall" and m.get("average") == "micro" else _OPS[m.name]
            for m in ranking
        ],
        dtype=np.int64,
    )
    return PlanArrays(
        thresholds=np.array(list(thresholds), dtype=np.float64),
        thr_idx=thr_idx,
        thr_arr=np.array(thr_idx, dtype=np.int64),
        t_gain=t_gain,
        gain_idx=np.array(gain_idx, dtype=np.int64),
        ops=ops,
        ks=np.array([m.k or 0 for m in ranking], dtype=np.int64),
        fpar=np.array([_fpar(m) for m in ranking], dtype=np.float64),
    )


def _match(
    ranking: tuple[Metric, ...],
    t_grp: Grouped,
    r_grp: Grouped,
    u2r: np.ndarray,
    *,
    user_col: str,
    item_col: str,
    relevance_col: str,
    order_col: str,
    by_rank: bool,
    ties: TiesPolicy,
    threshold: float,
    no_recs: NoRecsPolicy,
    options: dict[str, Any],
) -> tuple[Prepared, KernelOutput]:
    t_rel = np.ascontiguousarray(t_grp.frame[relevance_col].to_numpy(), dtype=np.float64)
    r_order = np.ascontiguousarray(r_grp.frame[order_col].to_numpy(), dtype=np.float64)
    r_score = -r_order if by_rank else r_order
    ids = [user_col, item_col]
    t_items = t_grp.frame[item_col]
    r_items = r_grp.frame[item_col]
    hashed = t_items.dtype == pl.String
    t_item = item_keys(t_items)
    r_item = item_keys(r_items)
    r_tie = trec_tie_keys(r_items, r_item) if ties == "trec" else np.zeros(0, dtype=np.int64)

    plan_args = plan_arrays(ranking, threshold, t_rel, relevance_col)
    thr_idx = plan_args.thr_idx
    t_gain = plan_args.t_gain

    longest = max(
        int(np.diff(t_grp.offsets).max(initial=0)), int(np.diff(r_grp.offsets).max(initial=0))
    )
    log2p = np.log2(np.arange(2, longest + 3, dtype=np.float64))
    n_users = t_grp.n_users
    n_chunks = max(1, min(n_users // _USERS_PER_CHUNK, numba.get_num_threads() * 16))
    pa = plan_args
    args = (
        t_grp.offsets, t_item, t_rel, t_gain, r_grp.offsets, r_item, r_score, r_tie, u2r,
        pa.thresholds, pa.ops, pa.ks, pa.thr_arr, pa.gain_idx, pa.fpar, log2p,
    )  # fmt: skip
    out, nrel, status, t_match = K.rank_users(args, _POLICY[ties], n_chunks)

    unmatched = np.ones(r_grp.n_users, dtype=np.bool_)
    unmatched[u2r[u2r >= 0]] = False
    others = np.flatnonzero(unmatched)
    other_dups = K.duplicate_groups(r_grp.offsets, r_item, others)

    exact = False
    if status.any() or other_dups.any():
        exact = _check_duplicates(status, others[other_dups], t_grp, r_grp, u2r, ids, hashed)
    elif hashed:
        exact = not _matches_verified(t_items, r_items, t_match)
    if exact:  # a 64-bit hash collision between distinct ids: redo with exact codes
        t_item, r_item = exact_item_keys(t_items, r_items)
        if ties == "trec":
            r_tie = trec_tie_keys(r_items, r_item)
        args = (*args[:1], t_item, *args[2:5], r_item, r_score, r_tie, *args[8:])
        out, nrel, status, t_match = K.rank_users(args, _POLICY[ties], n_chunks)
        other_dups = K.duplicate_groups(r_grp.offsets, r_item, others)
        if status.any() or other_dups.any():
            _check_duplicates(status, others[other_dups], t_grp, r_grp, u2r, ids, False)

    has_recs = u2r >= 0
    evaluated = nrel[:, 0] >= 1
    counts = Counts(
        evaluated=int(evaluated.sum()),
        no_recs=int((evaluated & ~has_recs).sum()),
        no_relevant=int((~evaluated).sum()),
        recs_not_in_truth=int(r_grp.n_users - has_recs.sum()),
    )
    prep = Prepared(
        t_grp=t_grp, r_grp=r_grp, u2r=u2r, t_match=t_match, t_rel=t_rel, r_score=r_order,
        t_item=t_item, r_item=r_item, user_col=user_col, item_col=item_col,
        relevance_col=relevance_col, order_col=order_col, by_rank=by_rank, ties=ties,
        threshold=threshold, no_recs=no_recs, counts=counts, options=options,
    )  # fmt: skip
    return prep, KernelOutput(out, nrel, thr_idx, plan_args.ops)


def _merge(
    plan: tuple[Metric, ...], parts: list[Part], prep: Prepared, settings: dict[str, Any]
) -> Result:
    """One Result from the families' parts: means in request order, per-user columns joined on
    the user (sorted by user id), details."""
    means: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    for p in parts:
        means.update(p.means)
        details.update(p.details)
    per_user = join_per_user(plan, parts, prep)
    ordered = {m.canonical: means[m.canonical] for m in plan}
    return Result(plan, ordered, per_user, prep.counts, settings, details)


def join_per_user(plan: tuple[Metric, ...], parts: list[Part], prep: Prepared) -> pl.DataFrame:
    """The parts' per-user columns joined on the user (sorted by user id), in request order."""
    frames = [p.per_user for p in parts if p.per_user is not None]
    user_col = prep.user_col
    if len(frames) == 1:
        per_user = frames[0]
    elif frames:
        per_user = frames[0]
        for other in frames[1:]:
            per_user = per_user.join(other, on=user_col, how="full", coalesce=True)
        per_user = per_user.sort(user_col)
    else:
        per_user = pl.DataFrame({user_col: prep.t_grp.keys.head(0)})
    present = set(per_user.columns)  # a set: one lookup per metric, not a scan of the columns
    columns = [m.canonical for m in plan if m.canonical in present]
    return per_user.select(user_col, *columns)


def _fpar(m: Metric) -> float:
    if m.name == "fbeta":
        return float(m.get("beta"))  # type: ignore[arg-type]
    if m.name == "f1":
        return 1.0
    if m.name == "map":
        return 1.0 if m.get("denominator") == "min" else 0.0
    if m.name == "ndcg_k" and m.k is not None:  # the ideal DCG of K items of gain 1
        if m.k > NDCG_K_MAX:
            msg = (
                f"`k` of ndcg_k must be at most {NDCG_K_MAX:,} (its ideal DCG sums K terms); "
                f"got {m.k}."
            )
            raise MetricError(msg)
        return float(np.sum(1.0 / np.log2(np.arange(2, m.k + 2, dtype=np.float64))))
    return 0.0


NDCG_K_MAX = 10_000_000


def _matches_verified(t_items: pl.Series, r_items: pl.Series, t_match: np.ndarray) -> bool:
    """True when every hash-key match joins equal item strings."""
    rows = np.flatnonzero(t_match >= 0)
    if rows.size == 0:
        return True
    left = t_items.gather(rows)
    right = r_items.gather(t_match[rows])
    return bool((left == right).all())


def _check_duplicates(
    status: np.ndarray,
    other_groups: np.ndarray,
    t_grp: Grouped,
    r_grp: Grouped,
    u2r: np.ndarray,
    ids: list[str],
    hashed: bool,
) -> bool:
    """Raise on real duplicate (user, item) rows; return True when hash keys collided instead.

    ``status`` flags truth users (and, through them, their recs groups); ``other_groups``
    are flagged recs groups of users not in truth.
    """
    flagged = (
        ("truth", t_grp, np.flatnonzero(status == K.STATUS_DUP_TRUTH)),
        ("recs", r_grp, np.concatenate([u2r[status == K.STATUS_DUP_RECS], other_groups])),
    )
    for role, grp, groups in flagged:
        if groups.size == 0:
            continue
        users = grp.keys.gather(groups).implode()
        dup = pl.struct(ids).is_duplicated()
        found = grp.frame.filter(pl.col(ids[0]).is_in(users)).select(dup.sum()).item()
        if found == 0 and hashed:
            continue
        total = grp.source.select(dup.sum()).item()
        msg = (
            f"{role} has {total} duplicate (user, item) row(s); expected each item at most once "
            f"per user. First offending rows:\n{show_rows(grp.source, dup, grp.source.columns)}"
        )
        raise InputError(msg)
    return True


def _ranking_part(plan: tuple[Metric, ...], prep: Prepared, kernel: KernelOutput) -> Part:
    """Means and per-user values of the ranking metrics from the kernel's output."""
    out, nrel, thr_idx, ops = kernel.out, kernel.nrel, kernel.thr_idx, kernel.ops
    counts, t_grp, u2r = prep.counts, prep.t_grp, prep.u2r
    user_col, no_recs = prep.user_col, prep.no_recs
    has_recs = u2r >= 0
    shard = bool(prep.options.get("_shard"))
    if counts.evaluated == 0 and not shard:
        raise InputError(no_evaluated_message(prep.threshold))
    in_any = (nrel[:, thr_idx] >= 1).any(axis=1)
    if no_recs == "raise" and (in_any & ~has_recs).any():
        missing = t_grp.keys.filter(pl.Series(in_any & ~has_recs))
        msg = (
            f"{missing.len()} evaluated user(s) have no recommendations (no_recs='raise'), "
            f"e.g. {missing.head(5).to_list()}; use no_recs='zero' to score them 0 or 'skip'."
        )
        raise InputError(msg)

    # means are exactly rounded sums (math.fsum): no mean depends on the order of users
    columns: dict[str, np.ndarray] = {}
    means: dict[str, float] = {}
    sums: dict[str, tuple[np.ndarray, np.ndarray | int]] = {}
    keep = in_any if no_recs != "skip" else in_any & has_recs
    for j, m in enumerate(plan):
        den = nrel[:, thr_idx[j]]
        values = out[:, j]
        counted = den >= 1
        if no_recs == "skip":
            counted &= has_recs
            values = np.where(has_recs, values, np.nan)
        if ops[j] == K.OP_HITS:
            total = den[counted].sum()
            means[m.canonical] = math.fsum(values[counted]) / float(total) if total else math.nan
            sums[m.canonical] = (values[counted], int(total))
            values = values / np.where(den > 0, den, 1.0)
        else:
            n_counted = int(counted.sum())
            means[m.canonical] = math.fsum(values[counted]) / n_counted if n_counted else math.nan
            sums[m.canonical] = (values[counted], n_counted)
        if not counted.any():
            warnings.warn(f"no user is evaluated by {m.canonical}; its mean is NaN.", stacklevel=3)
        columns[m.canonical] = values

    frame = per_user_frame(t_grp.keys, np.flatnonzero(keep), columns, user_col)
    return Part(means, frame, sums=sums)


def no_evaluated_message(threshold: float) -> str:
    """The error when truth has no user with a relevant item."""
    return (
        f"truth has no user with a relevant item (relevance >= {threshold}); nothing to "
        "evaluate. Check relevance_col and relevance_threshold."
    )


def per_user_frame(
    keys: pl.Series, rows: np.ndarray, columns: dict[str, np.ndarray], user_col: str
) -> pl.DataFrame:
    """A part's per-user frame: the users ``keys[rows]`` sorted by id (column ``user_col``),
    then one Float64 column per metric, ``columns[name][rows]`` (NaN becomes null)."""
    users = keys.gather(rows)
    by_id = users.arg_sort().to_numpy()
    rows = rows[by_id]
    return pl.DataFrame(
        [users.gather(by_id).alias(user_col)]
        + [
            pl.Series(name, col[rows], dtype=pl.Float64, nan_to_null=True)
            for name, col in columns.items()
        ]
    )
