"""``evaluate``: every metric family of recommendations against truth, on the engine that
fits the inputs.

:func:`evaluate` checks the options every engine shares, then hands the work to one engine:
a model source (:class:`~receval.FactorModel`, :class:`~receval.ScoreModel`) to
:mod:`receval.engines.model`, Spark DataFrames (or ``engine="spark"``) to
:mod:`receval.engines.spark`, anything else to :mod:`receval.engines.local`. Each returns
the same :class:`~receval.Result`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Literal, get_args

from receval._errors import InputError, check_choice
from receval.data.io import Inputs, check_exists
from receval.data.layout import IdTypeArg
from receval.data.models import is_model
from receval.data.segments import resolve_segments
from receval.engines.local import evaluate_local
from receval.engines.model import evaluate_model
from receval.engines.sampled import evaluate_sampled
from receval.engines.scoring import parse_memory
from receval.engines.segments import evaluate_segments
from receval.engines.spark import check_spark_options, evaluate_spark_plan, is_spark_frame
from receval.engines.stream import SortedArg, evaluate_stream
from receval.families.beyond import check_sampled_metrics
from receval.families.contract import NoRecsPolicy, Options, TiesPolicy
from receval.metrics.registry import Metric, parse_metrics
from receval.metrics.result import Result
from receval.metrics.sampling import Sampling

__all__ = ["Engine", "NoRecsPolicy", "TiesPolicy", "evaluate"]

Engine = Literal["auto", "local", "spark", "stream"]


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
    sorted_by_user: SortedArg = "auto",
    excluded_truth: Literal["drop", "raise"] = "drop",
    progress: bool = False,
    segments: Any = None,
    sampling: Sampling | None = None,
    sample_col: str | None = None,
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
        ``"local"``, ``"spark"`` (also for paths, which Spark then reads) or ``"stream"``
        (in blocks of users that each fit in ``block_memory``: Parquet, CSV and TSV files
        larger than memory are cut into blocks in one streaming pass, never read whole;
        docs/streaming.md). The Spark engine (``pip install "receval[spark]"``;
        docs/spark.md) and the streaming engine return the same Result as the local one.
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
        With a model: the memory of its scan, in bytes or as text (``"256MiB"``, ``"2GB"``):
        the blocks of scores (users x items) and the scan's per-user arrays; the score matrix
        is never held whole. With
        ``engine="stream"``: the memory for one block of rows (about 200 bytes a row).
    sorted_by_user:
        ``engine="stream"`` with Parquet files: ``"auto"`` reads files whose metadata says
        they are sorted by user (``sorting_columns``, or row groups whose user ranges follow
        one another) in order, in batches, without the partition pass, checking the order as
        it reads and falling back to the partition pass at the first row out of order;
        ``True`` reads them in order and raises at a row out of order; ``False`` always
        cuts the users into blocks by hash (docs/streaming.md). The Result is the same.
    excluded_truth:
        ``"drop"`` (default) or ``"raise"``: see ``exclude``.
    progress:
        With a model: a progress bar on stderr while scoring.
    segments:
        Results by segment as well (``result.by_segment``, ``result.segments``): a built-in
        computed from ``train`` (``"activity"``: users by their number of training rows;
        ``"cold_warm"``; ``"popularity"``: items head / mid / tail by their share of the
        training rows), the name of a truth column with one value per user, a table of the
        user (or item) column and a segment column, a dict ``{user: segment}``, or a list of
        these. Each segment is evaluated on its own rows: a user segment's truth users and
        their recs; an item segment's truth rows (ranking metrics count only its relevant
        items; beyond-accuracy metrics are not reported by item segment). Local engine and
        model sources (docs/segments.md).
    sampling:
        A :class:`receval.Sampling`: rank each relevant truth item against sampled negatives
        instead of the whole catalog (from a model, or from ``recs`` as a candidates table:
        each user's rows not in truth are the negatives), and report the sampled metrics or
        their corrections under names that carry the protocol, e.g.
        ``ndcg@10~rescale(100)`` (docs/sampled.md).
    sample_col:
        A recs column naming each row's sampled ranking: a stochastic ranker given as several
        sampled rankings per user (Diaz et al. 2020). Only ``ee_loss``, ``ee_disparity`` and
        ``ee_relevance`` accept it (each item's exposure is its mean over the user's samples;
        any other metric raises :class:`~receval.MetricError`); recommendation tables, local,
        streaming and Spark engines (docs/fairness.md).

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
    if segments is not None and sample_col is not None:
        msg = "sample_col= is not evaluated by segment: leave segments= or sample_col out."
        raise InputError(msg)
    if segments is not None:
        return _with_segments(dict(locals()))  # every argument, as given
    check_choice("engine", engine, get_args(Engine))
    if sorted_by_user not in (True, False, "auto") or not isinstance(sorted_by_user, bool | str):
        msg = f"sorted_by_user must be 'auto', True or False; got {sorted_by_user!r}."
        raise InputError(msg)
    if sorted_by_user != "auto" and engine != "stream":
        msg = (
            f"sorted_by_user={sorted_by_user!r} applies to engine='stream' (files read in "
            f"blocks of users); got engine={engine!r}."
        )
        raise InputError(msg)
    use_spark = engine == "spark" or (
        engine == "auto" and any(map(is_spark_frame, (truth, recs, train, items)))
    )
    partitions = check_spark_options(spark, partitions, use_spark)
    options = Options.of(
        user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
        relevance_col=relevance_col, ties=ties, relevance_threshold=relevance_threshold,
        no_recs=no_recs, train=train, items=items, item_features=item_features,
        rating_range=rating_range, id_type=id_type, columns=columns, input_format=input_format,
        sample_col=sample_col,
    )  # fmt: skip
    if sample_col is not None:
        _check_sampled(parse_metrics(metrics), recs, sample_col, sampling)
    if use_spark and sampling is not None:
        msg = "sampling= runs on the local engine, not Spark: collect the inputs, or leave it out."
        raise InputError(msg)
    if use_spark:
        if is_model(recs):
            msg = (
                "a model source (FactorModel, ScoreModel) is evaluated by the local engine; "
                "the Spark engine takes recommendation tables (receval.topk builds one)."
            )
            raise InputError(msg)
        return evaluate_spark_plan(truth, recs, parse_metrics(metrics), options, spark, partitions)
    if engine in ("local", "stream"):
        truth, recs, options = _local_inputs(truth, recs, options)
    for role in ("train", "items"):  # a path given must exist, whether a metric reads it or not
        check_exists(getattr(options, role), role)
    plan = parse_metrics(metrics)
    if is_model(recs) and engine == "stream":
        msg = (
            "a model source (FactorModel, ScoreModel) is already scored in blocks of users by "
            "its own engine: leave engine= out; engine='stream' takes recommendation tables "
            "and files."
        )
        raise InputError(msg)
    if sampling is not None:
        if engine == "stream":
            msg = "sampling= runs on the local engine; leave engine= out."
            raise InputError(msg)
        return evaluate_sampled(
            truth, recs, plan, sampling, options, exclude=exclude, candidates=candidates,
            block_memory=block_memory, excluded_truth=excluded_truth, progress=progress,
        )  # fmt: skip
    if is_model(recs):
        return evaluate_model(
            truth, recs, plan, options, exclude=exclude, candidates=candidates,
            block_memory=block_memory, excluded_truth=excluded_truth, progress=progress,
        )  # fmt: skip
    if exclude is not None or candidates is not None:
        msg = (
            "exclude= and candidates= apply to a model source (receval.FactorModel or "
            "receval.ScoreModel); recs is a table: filter its rows instead."
        )
        raise InputError(msg)
    if engine == "stream":
        return evaluate_stream(
            truth, recs, plan, options, block_bytes=parse_memory(block_memory),
            sorted_by_user=sorted_by_user,
        )  # fmt: skip
    return evaluate_local(truth, recs, plan, options)


def _with_segments(args: dict[str, Any]) -> Result:
    """:func:`evaluate` of every row, then of each segment's rows (``args``: evaluate's.)"""
    segments, truth, recs = args.pop("segments"), args.pop("truth"), args.pop("recs")
    plan = parse_metrics(args.pop("metrics"))
    sources = (truth, recs, args["train"], args["items"])
    spark_frames = any(map(is_spark_frame, sources))
    if args["engine"] in ("spark", "stream") or spark_frames:
        msg = (
            "segments= runs with the local engine (tables in memory) and with model sources; "
            f"got engine={args['engine']!r}{' and a Spark DataFrame' if spark_frames else ''}. "
            "Evaluate each segment's rows with the Spark or streaming engine instead."
        )
        raise InputError(msg)
    whole = evaluate(truth, recs, plan, **args)  # checks every option first
    inputs = Inputs.of(args["columns"], args["input_format"], args["user_col"], args["item_col"])
    user_col, item_col = inputs.user_col, inputs.item_col
    truth = inputs.read(truth, "truth", args["relevance_col"] or "relevance")
    if not is_model(recs):
        order = args["score_col"] if args["rank_col"] is None else args["rank_col"]
        recs = inputs.read(recs, "recs", order)
    train = args["train"]
    if train is not None:
        train = inputs.read(train, "train", "relevance")
    chosen = resolve_segments(segments, truth, train, user_col, item_col)
    own_item = inputs.columns["items"][1]  # the item table is read by evaluate, as given
    fmt = inputs.formats["items"]
    same = {
        **args, "user_col": user_col, "item_col": item_col, "train": train,
        "columns": None if own_item == item_col else {"items": {"item": own_item}},
        "input_format": None if fmt is None else {"items": fmt},
    }  # fmt: skip

    def run(part: Any, part_recs: Any, metrics: tuple[Metric, ...]) -> Result:
        with warnings.catch_warnings():  # the whole run has warned already
            warnings.simplefilter("ignore")
            return evaluate(part, part_recs, metrics, **same)

    frame, results = evaluate_segments(
        run, truth, recs, chosen, plan, user_col=user_col, item_col=item_col
    )
    return whole.with_segments(frame, results)


def _check_sampled(plan: tuple[Metric, ...], recs: Any, sample_col: str, sampling: Any) -> None:
    """``sample_col``: only the metrics over a stochastic ranking, on a recommendation table
    (local, streaming and Spark engines), without ``sampling=``."""
    check_sampled_metrics(plan, sample_col)
    if is_model(recs):
        msg = (
            f"sample_col={sample_col!r} names the sampled rankings of a recommendation table; a "
            "model source (FactorModel, ScoreModel) gives one deterministic ranking per user: "
            "leave sample_col out, or evaluate a table of sampled rankings."
        )
        raise InputError(msg)
    if sampling is not None:
        msg = (
            "sample_col= runs on the local, streaming and Spark engines, not with sampling=: "
            "leave sampling= or sample_col out."
        )
        raise InputError(msg)


def _local_inputs(truth: Any, recs: Any, options: Options) -> tuple[Any, Any, Options]:
    """engine="local" with pyspark DataFrames: collect them to the driver as Arrow tables."""

    def local(data: Any) -> Any:
        if not is_spark_frame(data):
            return data
        return data.toArrow() if hasattr(data, "toArrow") else data.toPandas()

    options = replace(options, train=local(options.train), items=local(options.items))
    return local(truth), local(recs), options
