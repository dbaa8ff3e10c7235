"""The Spark engine: :func:`receval.evaluate` on data past one machine (``receval[spark]``).

Spark moves the data; the local engine computes (:mod:`receval.engines.shard`):

1. truth and recs rows, tagged by side and numbered in the DataFrames' own order, are
   shuffled by user (``repartition``) so each partition holds every row of its users;
2. ``mapInArrow`` runs :func:`receval.engines.shard.run_shard` on each partition: the local
   kernels, one pass; it returns per-user rows, a small pickled record of exact sums, counts
   and the detached global states, and the rows of those states
   (:class:`~receval.families.states.GlobalState`: score histograms, item exposure, true
   ratings), tagged by the state's key;
3. each global state's rows are cut as the state says (``repartitionByRange`` over scores for
   ``auc`` and ``average_precision``, ``repartition`` by key for exposure and ratings) and
   reduced part by part on the executors, pass by pass, by the state's own code; only the
   small pieces reach the driver (never every distinct score); train popularity by
   ``groupBy(item)`` over train's distinct (user, item) pairs;
4. the driver merges it all with :class:`receval.engines.shard.Merger`: the same Result as the
   local engine, to the last bit.

Only the DataFrame API is used (no RDD, no ``pyspark.mllib``), so a Spark Connect session
works too. pyspark is imported inside the functions here, never by ``import receval``.
"""

from __future__ import annotations

import numbers
import os
import pickle
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from receval._errors import EngineError, InputError, MetricError, RecevalError, check_integer
from receval._version import __version__
from receval.data import tables as T
from receval.data.io import RECBOLE_SUFFIXES, InputFormat, Inputs, Role, read_table, rename_ids
from receval.data.layout import (
    FLOAT_EXACT,
    IdType,
    IdTypeArg,
    check_frame,
    inexact_integers_message,
    not_integer_message,
    sort_by_user,
    unify_ids,
)
from receval.data.tables import (
    check_inputs,
    check_train_columns,
    join_key_type,
    read_train,
    unify_items,
    warn_unused_relevance,
)
from receval.engines.shard import (
    Merger,
    ShardOutput,
    ShardSpec,
    Sources,
    build_context,
    per_user_metrics,
    run_shard,
)
from receval.families import beyond as B
from receval.families.beyond_context import train_popularity
from receval.families.contract import Options
from receval.families.states import GlobalState
from receval.metrics.registry import Metric, parse_metrics
from receval.metrics.result import Result

__all__ = [
    "EngineError",
    "check_executors",
    "check_spark_options",
    "evaluate_spark",
    "evaluate_spark_plan",
    "is_spark_frame",
    "session",
]

_KIND_USER, _KIND_STATS, _KIND_STATE = 0, 1, 2
# a state row's key goes to the column of its type
_KEY_COLUMNS: dict[Any, str] = {pl.Float64: "gf", pl.Int64: "gi", pl.String: "gt"}
_MARK = re.compile(r"\[receval:(\w+)\](.*?)\[/receval\]", re.DOTALL)
_NOTE = (
    "\n(raised on a Spark executor while evaluating one shard of users; row numbers count "
    "rows within that shard)"
)
_checked: set[int] = set()


def _pyspark() -> Any:
    try:
        import pyspark
        from pyspark.sql import SparkSession  # noqa: F401 - checks the SQL module imports
    except ImportError as exc:
        msg = (
            f"the Spark engine needs pyspark, which cannot be imported ({exc}); install it "
            'with pip install "receval[spark]" (and Java 17 for a local Spark).'
        )
        raise EngineError(msg) from None
    return pyspark


def is_spark_frame(obj: object) -> bool:
    """True for a pyspark DataFrame, classic or Spark Connect (without importing pyspark)."""
    cls = type(obj)
    return cls.__module__.startswith("pyspark.sql") and cls.__name__ == "DataFrame"


def check_spark_options(spark: Any, partitions: object, use_spark: bool = True) -> int | None:
    """``partitions`` as an int (or None), after checking the Spark engine's options before
    any Spark job: ``partitions`` an integer >= 1, ``spark`` a SparkSession (classic or Spark
    Connect); with the local engine (``use_spark`` false) neither may be given."""
    count: int | None = None
    if partitions is not None:
        count = check_integer("partitions", partitions, 1, kinds=numbers.Integral)
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
    return count


def _is_stopped(spark: Any) -> bool:
    """True for a session that ``spark.stop()`` has stopped: Spark Connect says so
    (``is_stopped``); a classic session's SparkContext drops its Java context."""
    if isinstance(getattr(type(spark), "is_stopped", None), property):  # Spark Connect
        return bool(spark.is_stopped)
    context = getattr(spark, "_sc", None)
    return context is not None and getattr(context, "_jsc", None) is None


def _check_running(spark: Any, role: str | None = None) -> None:
    """:class:`EngineError` when ``spark`` (the session of input ``role``, when given) is
    stopped: pyspark would fail with a bare ``AssertionError`` at the first job."""
    if _is_stopped(spark):
        of = f" of {role}" if role else ""
        msg = (
            f"the SparkSession{of} is stopped (spark.stop() was called); start a new one "
            "(SparkSession.builder.getOrCreate(), or receval.engines.spark.session()) and "
            f"build {'the DataFrames' if role else 'the inputs'} in it."
        )
        raise EngineError(msg)


def _is_connect(spark: Any) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _check_one_session(frames: dict[str, Any], spark: Any) -> None:
    """:class:`InputError` when the Spark DataFrames among ``frames`` (role -> input) and
    ``spark`` mix Spark Connect with classic pyspark, or come from two Connect sessions: the
    engine combines them (``unionByName``, joins) and pyspark would fail with a bare
    ``AssertionError`` or a ``PySparkTypeError``. Classic sessions of one process share its
    SparkContext, so their frames combine."""
    owners = [(role, data.sparkSession) for role, data in frames.items() if is_spark_frame(data)]
    one = "a Spark evaluation runs in one session: build every Spark input (and spark=) in it."

    def kind(session: Any) -> str:
        return "a Spark Connect session" if _is_connect(session) else "a classic SparkSession"

    if not owners:
        return
    first, owner = owners[0]
    for role, other in owners[1:]:
        if _is_connect(other) != _is_connect(owner):
            msg = (
                f"{role} is a DataFrame of {kind(other)}, but {first} is one of "
                f"{kind(owner)}; {one}"
            )
            raise InputError(msg)
        if _is_connect(other) and other is not owner:
            msg = f"{role} is a DataFrame of another Spark Connect session than {first}'s; {one}"
            raise InputError(msg)
    if _is_connect(spark) != _is_connect(owner):
        msg = f"spark is {kind(spark)}, but {first} is a DataFrame of {kind(owner)}; {one}"
        raise InputError(msg)
    if _is_connect(spark) and spark is not owner:
        msg = f"spark is another Spark Connect session than {first}'s; {one}"
        raise InputError(msg)


def session(master: str = "local[*]", **conf: str) -> Any:
    """A SparkSession: the active one, else a new one on ``master`` (``sc://...``: Spark
    Connect). Local workers run this Python (``PYSPARK_PYTHON``, when unset) and the UI is
    off unless ``conf`` says otherwise."""
    _pyspark()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("sc://"):
        builder = SparkSession.builder.remote(master)
    else:
        active = SparkSession.getActiveSession()
        if active is not None and not conf:
            return active
        builder = (
            SparkSession.builder.master(master)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
        )
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _import_on_executor(module: str) -> Any:
    def check(batches: Iterator[Any]) -> Iterator[Any]:  # runs on an executor
        import importlib

        import pyarrow as pa

        for _ in batches:
            pass
        mod = importlib.import_module(module)
        version = str(getattr(mod, "__version__", ""))
        yield pa.RecordBatch.from_pydict({"version": [version]})

    return check


def check_executors(spark: Any, module: str = "receval") -> None:
    """Run a one-row job that imports ``module`` on an executor; :class:`EngineError` when
    it cannot, or when the executors' receval is another version than the driver's."""
    frame = spark.range(1).mapInArrow(_import_on_executor(module), "version string")
    try:
        rows = frame.collect()
    except Exception as exc:
        text = str(exc)
        if "ModuleNotFoundError" in text or "No module named" in text or "ImportError" in text:
            found = re.search(r"((?:ModuleNotFound|Import)Error: [^\n]*)", text)
            msg = (
                f"the Spark executors cannot import {module!r} "
                f"({found.group(1) if found else 'import failed'}). Install receval "
                f"{__version__} in the executors' Python (pip install on every node, or ship "
                "a packed environment with spark.archives and point PYSPARK_PYTHON at it)."
            )
            raise EngineError(msg) from None
        raise
    if module == "receval" and rows and rows[0][0] != __version__:
        msg = (
            f"the Spark executors run receval {rows[0][0]} but the driver runs {__version__}; "
            "install the same version on both."
        )
        raise EngineError(msg)


@contextmanager
def _executor_errors() -> Iterator[None]:
    """Turn a receval error raised on an executor back into itself, on the driver."""
    try:
        yield
    except RecevalError:
        raise
    except Exception as exc:
        found = _MARK.search(str(exc))
        if found is None:
            raise
        kind, text = found.group(1), found.group(2)
        cls = {"MetricError": MetricError, "EngineError": EngineError}.get(kind, InputError)
        raise cls(text + _NOTE) from None


# ------------------------------------------------------------------------------ inputs


def _as_spark(
    spark: Any, data: Any, role: Role, cols: dict[str, str], fmt: InputFormat | None = None
) -> Any:
    """A Spark DataFrame of ``data``: as is, read by Spark (Parquet, CSV/TSV paths, or the
    format ``fmt`` names), or made from a local source (frames, dicts, TREC and RecBole files)
    by the local reader.

    A path goes to Spark as given (``os.fspath``: ``s3a://bucket/x`` keeps its ``//``); a
    path Spark cannot find or read raises the local reader's :class:`InputError`."""
    if is_spark_frame(data):
        return data
    if isinstance(data, str | os.PathLike) and Path(data).suffix.lower() not in RECBOLE_SUFFIXES:
        path = Path(data)
        suffix = path.suffix.lower()
        text = os.fspath(data)
        if fmt == "parquet" or (fmt is None and (path.is_dir() or suffix in (".parquet", ".pq"))):
            return _spark_read(role, text, lambda: spark.read.parquet(text), spark)
        if fmt in ("csv", "tsv") or (fmt is None and suffix in (".csv", ".tsv")):
            sep = "\t" if (fmt or suffix.lstrip(".")) == "tsv" else ","
            ids = (cols["user_col"], cols["item_col"])
            return _spark_read(role, text, lambda: _spark_csv(spark, text, sep, ids), spark)
    frame = read_table(data, role, input_format=fmt, **cols)
    return spark.createDataFrame(frame.to_arrow())


def _rename_spark(
    frame: Any, role: Role, names: tuple[str, str], canonical: tuple[str, str]
) -> Any:
    """A Spark frame's id columns ``names`` renamed to truth's ``canonical`` ones, checked
    and done as :func:`~receval.data.io.rename_ids` does for a local frame."""
    if names == canonical:
        return frame
    rename_ids(_empty_like(frame), role, names, canonical)  # the local engine's checks
    pairs = {src: dst for src, dst in zip(names, canonical, strict=True) if src != dst}
    clash = [c for c in pairs.values() if c in frame.columns and c not in pairs]
    return frame.drop(*clash).withColumnsRenamed(pairs)


def _path_found(spark: Any, path: str) -> bool:
    """False when Spark's file system (Hadoop's, with the session's configuration: local,
    ``hdfs://``, ``s3a://`` ...) has nothing at ``path`` (a glob: nothing matches). Classic
    sessions only; True when it cannot tell (Spark Connect), so that Spark's read decides."""
    try:
        jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
        target = jvm.org.apache.hadoop.fs.Path(path)
        found = target.getFileSystem(conf).globStatus(target)
    except Exception:  # Spark Connect, or a file system that cannot be asked
        return True
    return found is not None and len(found) > 0


def _spark_read(role: str, path: str, read: Any, spark: Any = None) -> Any:
    """``read()``, with Spark's errors on a missing or unreadable path as :class:`InputError`
    (the local reader's message for a missing file). A missing path is found before Spark
    reads (``spark`` given), so Spark logs no stack trace about it."""
    if spark is not None and not _path_found(spark, path):
        msg = f"{role} file {path!r} does not exist."
        raise InputError(msg)
    try:
        return read()
    except Exception as exc:
        if not any(c.__module__.startswith(("pyspark", "py4j")) for c in type(exc).__mro__):
            raise
        text = str(exc).strip()
        if "PATH_NOT_FOUND" in text or "Path does not exist" in text:
            msg = f"{role} file {path!r} does not exist."
        else:
            first = text.splitlines()[0] if text else type(exc).__name__
            msg = f"{role} file {path!r} could not be read by Spark: {first}"
        raise InputError(msg) from None


def _spark_csv(spark: Any, path: str, sep: str, ids: tuple[str, str]) -> Any:
    """A CSV/TSV file read by Spark as the local reader reads it: the id columns as text
    (``007`` stays ``"007"``); the other columns' types inferred from every row."""
    from pyspark.sql.types import StringType, StructField, StructType

    inferred = spark.read.csv(path, header=True, inferSchema=True, sep=sep)
    fields = inferred.schema.fields
    if all(f.name not in ids or isinstance(f.dataType, StringType) for f in fields):
        return inferred
    schema = StructType(
        [StructField(f.name, StringType(), True) if f.name in ids else f for f in fields]
    )
    return spark.read.csv(path, header=True, schema=schema, sep=sep)


_SPARK_TEXT = ("StringType", "VarcharType", "CharType")
_INTEGER_TEXT = r"^[+-]?[0-9]+$"  # what Polars' strict cast of text to Int64 accepts


def _spark_ids(frame: Any, role: str, kinds: dict[str, IdType]) -> Any:
    """Each id column of a Spark frame (checked: integers or text) cast to its kind (``kinds``:
    column -> kind), as :func:`~receval.data.layout.cast_ids` casts a local one. ``"int"`` on text
    ids runs one job (counting the values that are not 64-bit integers; a second one shows
    the first of them) and raises the local engine's error."""
    from pyspark.sql import functions as F

    types = {f.name: type(f.dataType).__name__ for f in frame.schema.fields}
    casts = {c: F.col(c).cast("string") for c, k in kinds.items() if k == "str"}
    integers = [c for c, k in kinds.items() if k == "int"]
    casts.update({c: F.col(c).cast("bigint") for c in integers})
    texts = [c for c in integers if types[c] in _SPARK_TEXT]
    if texts:

        def not_integer(col: str) -> Any:
            as_int = F.expr(f"try_cast({_quoted(col)} AS BIGINT)")
            value = F.col(col)
            return value.isNotNull() & (~value.rlike(_INTEGER_TEXT) | as_int.isNull())

        counts = frame.agg(
            *[F.sum(not_integer(c).cast("bigint")).alias(f"n{j}") for j, c in enumerate(texts)]
        ).collect()[0]
        for j, col in enumerate(texts):
            if counts[j]:
                found = frame.filter(not_integer(col)).select(*kinds).limit(5).collect()
                rows = "\n".join(
                    "  " + ", ".join(f"{k}={v!r}" for k, v in row.asDict().items()) for row in found
                )
                raise InputError(not_integer_message(role, col, int(counts[j]), rows))
    return frame.withColumns(casts) if casts else frame


def _check_unique_columns(frame: Any, role: str, used: list[str] | None = None) -> None:
    """:class:`InputError` when a column that the engine reads (``used``) has more than one
    column of the Spark frame under its name: Spark refuses the reference as ambiguous (an
    ``AnalysisException``), comparing names without case unless ``spark.sql.caseSensitive``.
    ``used`` None: a frame collected to Polars whole, which cannot hold two columns of one
    name (case counts there), so every column is checked. A duplicate the engine does not read
    is left alone: Spark never resolves it."""
    columns = list(frame.columns)
    fold = False
    if used is not None:
        conf = frame.sparkSession.conf.get("spark.sql.caseSensitive", "false")
        fold = str(conf).strip().lower() != "true"
    note = "; Spark compares names without case unless spark.sql.caseSensitive is true"
    note = note if fold else ""
    for name in columns if used is None else used:
        same = [c for c in columns if (c.lower() == name.lower() if fold else c == name)]
        if len(same) > 1:
            msg = (
                f"{role} has {len(same)} columns named {name!r} (columns found: {columns}"
                f"{note}); expected one: rename or drop the others first."
            )
            raise InputError(msg)


def _quoted(col: str) -> str:
    return "`" + col.replace("`", "``") + "`"


def _inexact_values(field: Any) -> str | None:
    """A Spark SQL predicate true on the values of ``field`` that change when they become
    float64 (the rule of :func:`~receval.data.layout.check_frame` and
    :func:`~receval.arrays.classification.check_exact_scores`), or None for a type whose
    values float64 always holds (doubles, floats, 32-bit integers, decimals of at most 15
    digits).

    A long beyond 2^53 must come back from float64 unchanged. A decimal whose value is an
    integer in the long range is held to the same rule; any other decimal must come back
    unchanged from Spark's cast to double and back to its own type (the shortest decimal
    text of the double, rounded to the column's scale): so no two values that pass meet on
    one double, while 0.1 passes though float64's 0.1 is not exactly a tenth."""
    name = type(field.dataType).__name__
    q = _quoted(field.name)
    # Spark casts a double of 2^63 to the largest long (2^63 - 1), so that case is tested apart
    back = f"(CAST({q} AS DOUBLE) < power(2, 63) AND try_cast(CAST({q} AS DOUBLE) AS BIGINT)"
    if name == "LongType":
        exact = f"coalesce({back} = {q}), false)"
        return f"({q} > {FLOAT_EXACT} OR {q} < -{FLOAT_EXACT}) AND NOT {exact}"
    if name != "DecimalType" or field.dataType.precision <= 15:
        return None
    own = f"DECIMAL({field.dataType.precision},{field.dataType.scale})"
    as_long = f"try_cast({q} AS BIGINT)"
    integral = f"{as_long} IS NOT NULL AND CAST({as_long} AS {own}) = {q}"
    exact = f"coalesce({back} = {as_long}), false)"
    round_trip = f"coalesce(try_cast(CAST({q} AS DOUBLE) AS {own}) = {q}, false)"
    return f"{q} IS NOT NULL AND NOT (CASE WHEN {integral} THEN {exact} ELSE {round_trip} END)"


def _check_exact_values(
    frame: Any, role: Role, ids: list[str], value_col: str, value_name: str
) -> None:
    """Refuse values of ``value_col`` that float64 cannot hold (:func:`_inexact_values`), as
    the local engine refuses them and with its message: one Spark aggregate counts them
    (types that need it only: a long or a decimal of more than 15 digits), a second job shows
    the first few."""
    from pyspark.sql import functions as F

    field = frame.schema[value_col]
    predicate = _inexact_values(field)
    if predicate is None:
        return
    inexact = F.expr(predicate)
    count = frame.agg(F.sum(inexact.cast("bigint"))).collect()[0][0]
    if not count:
        return
    found = frame.filter(inexact).select(*ids, value_col).limit(5).collect()
    rows = "\n".join(
        "  " + ", ".join(f"{k}={v!r}" for k, v in row.asDict().items()) for row in found
    )
    what = f"{role} column {value_col!r} ({value_name})"
    if type(field.dataType).__name__ == "DecimalType" and field.dataType.scale > 0:
        msg = (
            f"{what} has {count} {field.dataType.simpleString()} value(s) that float64 cannot "
            "hold exactly (receval scores in float64, so distinct values would compare equal "
            "and silently tie); round them to at most 15 significant digits, or cast the "
            f"column to double if that is what you mean, first. First offending rows:\n{rows}"
        )
        raise InputError(msg)
    fix = (
        f"rescale them (subtract the smallest {value_name}, or use ranks) first. First "
        f"offending rows:\n{rows}"
    )
    raise InputError(inexact_integers_message(what, int(count), fix))


_POLARS_OF = {
    "LongType": pl.Int64, "IntegerType": pl.Int32, "ShortType": pl.Int16, "ByteType": pl.Int8,
    "StringType": pl.String, "DoubleType": pl.Float64, "FloatType": pl.Float32,
    "BooleanType": pl.Boolean, "DecimalType": pl.Float64, "VarcharType": pl.String,
    "CharType": pl.String,
}  # fmt: skip


def _empty_like(frame: Any) -> pl.DataFrame:
    """A 0-row Polars frame with the Spark frame's columns and matching types, for the local
    engine's column and type checks (identical messages)."""
    columns = {}
    for f in frame.schema.fields:
        name = type(f.dataType).__name__
        columns[f.name] = pl.Series(f.name, [], dtype=_POLARS_OF.get(name, pl.Object))
    return pl.DataFrame(columns)


def _arrow_type(polars_type: Any) -> Any:
    import pyarrow as pa

    return {
        pl.Int64: pa.int64(), pl.Int32: pa.int32(), pl.Int16: pa.int16(), pl.Int8: pa.int8(),
        pl.String: pa.string(),
    }[polars_type]  # fmt: skip


def _spark_type(polars_type: Any) -> str:
    return {pl.Int64: "bigint", pl.Int32: "int", pl.Int16: "smallint", pl.Int8: "tinyint",
            pl.String: "string"}[polars_type]  # fmt: skip


# ------------------------------------------------------------------------ on executors


def _gather(batches: Iterator[Any]) -> Any:
    """One partition's Arrow batches as a table, or None when it has no row (an empty
    partition: more shards than users, more ranges than distinct scores, ...)."""
    import pyarrow as pa

    received = list(batches)
    if not received:
        return None
    table = pa.Table.from_batches(received)
    return table if table.num_rows else None


def _shard_task(spec: ShardSpec, user_type: Any, n_metrics: int, threads: int) -> Any:
    """The function ``mapInArrow`` runs on each partition of users (see the module doc)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import numba

        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]
        table = _gather(batches)
        if table is None:
            return
        rows = pl.from_arrow(table)
        assert isinstance(rows, pl.DataFrame)
        # grouped by user (ascending), in input order within a user: a counting sort
        rows = sort_by_user(rows, "__u", "__row")
        names = {"__u": spec.user_col, "__i": spec.item_col}
        truth = rows.filter(pl.col("__side") == 0).select(
            pl.col("__u").alias(spec.user_col), pl.col("__i").alias(spec.item_col),
            pl.col("__v").alias(spec.relevance_col),
        )  # fmt: skip
        sample_col = spec.options.sample_col
        recs = rows.filter(pl.col("__side") == 1).select(
            *[pl.col(k).alias(v) for k, v in names.items()],
            pl.col("__v").alias(spec.order_col),
            *([] if sample_col is None else [pl.col("__s").alias(sample_col)]),
        )
        if truth.height == 0 and recs.height == 0:
            return  # train rows of users without truth or recs: nothing to evaluate
        shard_spec = spec
        if spec.context.history is not None:  # this shard's users' train pairs (side 2)
            history = rows.filter(pl.col("__side") == 2).select(
                *[pl.col(k).alias(v) for k, v in names.items()]
            )
            shard_spec = replace(spec, context=replace(spec.context, history=history))
        try:
            out = run_shard(shard_spec, truth, recs)
        except RecevalError as exc:  # marked, so the driver raises it again as itself
            raise RuntimeError(f"[receval:{type(exc).__name__}]{exc}[/receval]") from None
        yield from _output_batches(spec, out, user_type, n_metrics)

    return run


def _output_schema(user_type: Any, n_metrics: int) -> tuple[Any, str]:
    """The shard task's rows: ``kind`` (per-user row, the pickled statistics, a global
    state's row), the user and per-user values, the ``blob`` of statistics, and a state's
    row: its key ``gs``, the row's key (``gf``, ``gi`` or ``gt`` by type) and counts ``gc``."""
    import pyarrow as pa

    fields = [("kind", pa.int8()), ("u", _arrow_type(user_type))]
    fields += [(f"m{j}", pa.float64()) for j in range(n_metrics)]
    fields += [("blob", pa.binary()), ("gs", pa.string()), ("gf", pa.float64()),
               ("gi", pa.int64()), ("gt", pa.string()), ("gc", pa.list_(pa.int64()))]  # fmt: skip
    spark_types = [("kind", "tinyint"), ("u", _spark_type(user_type))]
    spark_types += [(f"m{j}", "double") for j in range(n_metrics)]
    spark_types += [("blob", "binary"), ("gs", "string"), ("gf", "double"), ("gi", "bigint")]
    spark_types += [("gt", "string"), ("gc", "array<bigint>")]
    ddl = ", ".join(f"{name} {t}" for name, t in spark_types)
    return pa.schema(fields), ddl


def _output_batches(
    spec: ShardSpec, out: ShardOutput, user_type: Any, n_metrics: int
) -> Iterator[Any]:
    import pyarrow as pa

    schema, _ = _output_schema(user_type, n_metrics)

    def batch(n: int, **cols: Any) -> Any:
        arrays = []
        for f in schema:
            if f.name == "kind":
                arrays.append(pa.array(np.full(n, cols["kind"], dtype=np.int8)))
            elif f.name in cols:
                arrays.append(pa.array(cols[f.name], type=f.type))
            else:
                arrays.append(pa.nulls(n, type=f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    frame = out.per_user
    if frame.height:
        cols = {"u": frame[spec.user_col].to_arrow()}
        for j, name in enumerate(frame.columns[1:]):
            cols[f"m{j}"] = frame[name].to_arrow()  # nulls stay null
        yield batch(frame.height, kind=_KIND_USER, **cols)
    states: dict[str, GlobalState] = out.stats["states"]
    detached = {key: state.detach() for key, state in states.items()}
    stats = {**out.stats, "states": detached}
    yield batch(1, kind=_KIND_STATS, blob=[pickle.dumps(stats, protocol=5)])
    for key, state in states.items():
        rows = state.rows()
        if rows is None or rows.height == 0:
            continue
        keys = rows["key"]
        column = _KEY_COLUMNS.get(keys.dtype, "gi")
        key_type = pa.float64() if column == "gf" else pa.int64() if column == "gi" else pa.string()
        yield batch(
            rows.height, kind=_KIND_STATE, gs=pa.array([key] * rows.height, type=pa.string()),
            gc=rows["counts"].to_arrow().cast(pa.list_(pa.int64())),
            **{column: keys.to_arrow().cast(key_type)},
        )  # fmt: skip


def _state_task(state: GlobalState, step: int) -> Any:
    """A ``mapInArrow`` function: pass ``step`` of ``state``'s reduction over one part of its
    rows, pickled into one ``blob`` row (nothing for an empty part)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        table = _gather(batches)
        if table is None:
            return
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        key = next((c for c in ("gf", "gi", "gt") if frame[c].null_count() < frame.height), "gf")
        rows = frame.select(pl.col(key).alias("key"), pl.col("gc").alias("counts"))
        piece = state.reduce_part(step, rows)
        yield pa.RecordBatch.from_pydict({"blob": [pickle.dumps(piece, protocol=5)]})

    return run


# ------------------------------------------------------------------------------ driver


def evaluate_spark(
    truth: Any,
    recs: Any,
    metrics: Any,
    *,
    spark: Any = None,
    partitions: int | None = None,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    rank_col: str | None = None,
    relevance_col: str | None = None,
    ties: Any = "expected",
    relevance_threshold: float = 1,
    no_recs: Any = "zero",
    train: Any = None,
    items: Any = None,
    item_features: Any = None,
    rating_range: tuple[float, float] | None = None,
    id_type: IdTypeArg = "auto",
    columns: Any = None,
    input_format: Any = None,
    sample_col: str | None = None,
) -> Result:
    """:func:`receval.evaluate` with Spark (see the module doc); same arguments and Result.

    ``spark``: the session (default: that of a Spark DataFrame input, the active one, or a
    local one); ``partitions``: how many user shards (default: about 2 million rows each, at
    most ``spark.sql.shuffle.partitions``). Every option is checked before any Spark job.
    """
    partitions = check_spark_options(spark, partitions)
    options = Options.of(
        user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
        relevance_col=relevance_col, ties=ties, relevance_threshold=relevance_threshold,
        no_recs=no_recs, train=train, items=items, item_features=item_features,
        rating_range=rating_range, id_type=id_type, columns=columns, input_format=input_format,
        sample_col=sample_col,
    )  # fmt: skip
    plan = parse_metrics(metrics)
    if sample_col is not None:
        B.check_sampled_metrics(plan, sample_col)
    return evaluate_spark_plan(truth, recs, plan, options, spark, partitions)


def evaluate_spark_plan(
    truth: Any,
    recs: Any,
    plan: tuple[Metric, ...],
    options: Options,
    spark: Any,
    partitions: int | None,
) -> Result:
    """:func:`evaluate_spark` with its metrics and options checked (``partitions`` too)."""
    inputs, kinds = options.inputs, options.kinds
    user_col, item_col = options.user_col, options.item_col  # every frame gets truth's names
    _pyspark()
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    frames = {"truth": truth, "recs": recs, "train": options.train, "items": options.items}
    for role, data in frames.items():
        if is_spark_frame(data):
            _check_running(data.sparkSession, role)
    if spark is None:
        for data in (recs, truth):
            if is_spark_frame(data):
                spark = data.sparkSession
                break
        else:
            spark = session()
    _check_running(spark)
    _check_one_session(frames, spark)
    if id(spark) not in _checked:
        check_executors(spark)
        _checked.add(id(spark))
    order_col, rel_name = options.order_col, options.relevance_name
    read = []
    sides: tuple[tuple[Any, Role, str], ...] = (
        (truth, "truth", rel_name), (recs, "recs", order_col),
    )  # fmt: skip
    for data, role, value_col in sides:
        own = inputs.columns[role]
        cols = {"user_col": own[0], "item_col": own[1], "value_col": value_col}
        frame = _as_spark(spark, data, role, cols, inputs.formats[role])
        sample = [options.sample_col] if role == "recs" and options.sample_col else []
        _check_unique_columns(frame, role, [*own, value_col, *sample])
        read.append(_rename_spark(frame, role, own, (user_col, item_col)))
    t, r = read
    has_relevance = options.relevance_col is not None or rel_name in t.columns
    if not has_relevance:
        warn_unused_relevance(t.columns, [user_col, item_col], stacklevel=3)
    if not has_relevance and user_col in t.columns and item_col in t.columns:
        t = t.select(user_col, item_col).withColumn(rel_name, F.lit(1.0))
    spec = ShardSpec.of(plan, options, has_relevance)
    plan = spec.plan
    t_empty, r_empty = _empty_like(t), _empty_like(r)
    check_inputs(
        t_empty,
        r_empty,
        ids=[user_col, item_col],
        relevance_col=spec.relevance_col,
        order_col=spec.order_col,
        by_rank=spec.by_rank,
        allow_empty=True,
    )  # columns and types; values are checked in each shard
    if kinds != {"user": "auto", "item": "auto"}:
        id_kinds = {user_col: kinds["user"], item_col: kinds["item"]}
        t, r = _spark_ids(t, "truth", id_kinds), _spark_ids(r, "recs", id_kinds)
        t_empty, r_empty = _empty_like(t), _empty_like(r)
    if has_relevance:
        _check_exact_values(t, "truth", [user_col, item_col], rel_name, "relevance")
    value_name = "rank" if spec.by_rank else "score"
    _check_exact_values(r, "recs", [user_col, item_col], order_col, value_name)
    t_empty, r_empty = unify_ids(t_empty, r_empty, user_col, "user")
    t_empty, r_empty = unify_ids(t_empty, r_empty, item_col, "item")
    user_type = t_empty.schema[user_col]
    item_type = t_empty.schema[item_col]
    sample_col = options.sample_col
    if sample_col is not None:  # the column and its type, before any job; values per shard
        T.split_samples(
            r_empty, user_col=user_col, item_col=item_col, order_col=order_col,
            sample_col=sample_col, by_rank=spec.by_rank, allow_empty=True,
        )  # fmt: skip
    t = t.select(
        F.col(user_col).cast(_spark_type(user_type)).alias("__u"),
        F.col(item_col).cast(_spark_type(item_type)).alias("__i"),
        F.col(rel_name).cast("double").alias("__v"),
    )
    r = r.select(
        F.col(user_col).cast(_spark_type(user_type)).alias("__u"),
        F.col(item_col).cast(_spark_type(item_type)).alias("__i"),
        F.col(order_col).cast("double").alias("__v"),
        *([] if sample_col is None else [F.col(sample_col).alias("__s")]),
    )
    if sample_col is not None:  # truth rows (and train pairs) carry a null sample
        t = t.withColumn("__s", F.lit(None).cast(r.schema["__s"].dataType))
    kind = pl.String if item_type == pl.String else pl.Int64
    train = options.train
    if train is not None and not is_spark_frame(train):  # a local train, read once
        train = read_train(train, user_col, item_col, kind, kinds, inputs, unify=False)
    with _executor_errors():
        sources = _spark_sources(spec, t, r, item_type, kinds, inputs)
        context = build_context(plan, replace(options, train=train).context(), sources)
    spec = replace(spec, context=context)

    rows = (
        t.withColumn("__side", F.lit(0).cast("tinyint"))
        .withColumn("__row", F.monotonically_increasing_id())
        .unionByName(
            r.withColumn("__side", F.lit(1).cast("tinyint")).withColumn(
                "__row", F.monotonically_increasing_id()
            )
        )
    )
    if context.history is not None:  # each shard gets its own users' train pairs
        pairs = _history_rows(spark, train, user_type, item_type, kinds, inputs, user_col, item_col)
        pairs = pairs.withColumn("__v", F.lit(None).cast("double"))
        if sample_col is not None:
            pairs = pairs.withColumn("__s", F.lit(None).cast(r.schema["__s"].dataType))
        rows = rows.unionByName(
            pairs.withColumn("__side", F.lit(2).cast("tinyint")).withColumn(
                "__row", F.monotonically_increasing_id()
            )
        )
    partitions = _shard_count(spark, t, r, partitions)
    shuffled = rows.repartition(partitions, "__u")
    columns = per_user_metrics(plan)
    _, ddl = _output_schema(user_type, len(columns))
    threads = _conf_int(spark, "spark.task.cpus", 1)
    out = shuffled.mapInArrow(_shard_task(spec, user_type, len(columns), threads), ddl)
    # metrics that may leave global states (their rows are read again): computed once
    global_rows = any(m.is_global() or m.spec.needs_train for m in plan)
    if global_rows:
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with _executor_errors():
            in_train = None
            if train is not None:  # sampled rankings: each (user, item) pair once
                pairs_r = r if sample_col is None else r.select("__u", "__i").distinct()
                in_train = _in_train_job(spark, t, pairs_r, train, spec, user_type, kinds, inputs)
            return _finish(spark, spec, out, columns, user_type, partitions, in_train)
    finally:
        if global_rows:
            out.unpersist()


ROWS_PER_SHARD = 2_000_000
MIN_ROWS_PER_SHARD = 10_000


def _shard_count(spark: Any, truth: Any, recs: Any, partitions: int | None) -> int:
    """The user shards to run: ``partitions`` as given up to :func:`_most_partitions`;
    beyond it, at most the number of users (a shard with no user is a task that does
    nothing, and ``partitions=10**6`` would start a million of them), counted by one job over
    the user columns; None: :func:`_default_partitions`. ``truth``, ``recs``: ``__u`` frames."""
    if partitions is None:
        return _default_partitions(spark, truth, recs)
    if partitions <= _most_partitions(spark):
        return partitions
    users = truth.select("__u").unionByName(recs.select("__u")).distinct().count()
    return max(1, min(partitions, int(users)))


def _default_partitions(spark: Any, truth: Any, recs: Any) -> int:
    """About ``ROWS_PER_SHARD`` rows per shard, so a task's fixed cost (a Python worker, Arrow
    transfers) stays small next to its rows; at least one shard per core while shards keep
    ``MIN_ROWS_PER_SHARD`` rows; at most :func:`_most_partitions`.

    Counting reads the inputs once more: cheap for files, and why an input computed by a long
    pipeline is best cached (or ``partitions=`` given)."""
    rows = int(truth.count()) + int(recs.count())
    wanted = max(-(-rows // ROWS_PER_SHARD), min(_cores(spark), rows // MIN_ROWS_PER_SHARD))
    return max(1, min(_most_partitions(spark), wanted))


def _conf_int(spark: Any, key: str, default: int) -> int:
    """A session setting that counts something, or ``default`` when it is unset or not an
    integer >= 1 (Databricks sets ``spark.sql.shuffle.partitions`` to ``"auto"``)."""
    text = str(spark.conf.get(key, str(default)) or default).strip()
    return int(text) if text.isdigit() and int(text) >= 1 else default


def _most_partitions(spark: Any) -> int:
    """The most shards the default picks: ``spark.sql.shuffle.partitions`` (200 unless set)
    or the cores, whichever is larger."""
    return max(_conf_int(spark, "spark.sql.shuffle.partitions", 200), _cores(spark))


def _cores(spark: Any) -> int:
    """The cluster's task slots: classic Spark's default parallelism; Spark Connect has no
    SparkContext, so ``spark.default.parallelism`` when set, else 1."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect: no SparkContext on the client
        return _conf_int(spark, "spark.default.parallelism", 1)


def _collect_polars(frame: Any) -> pl.DataFrame:
    if hasattr(frame, "toArrow"):
        out = pl.from_arrow(frame.toArrow())
    else:  # pyspark < 4
        out = pl.from_pandas(frame.toPandas())
    assert isinstance(out, pl.DataFrame)
    return out


def _finish(
    spark: Any,
    spec: ShardSpec,
    out: Any,
    columns: list[str],
    user_type: Any,
    partitions: int,
    in_train: Callable[[], tuple[int, int]] | None = None,
) -> Result:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    user_col = spec.user_col
    picked = ["kind", "blob", F.col("u").alias(user_col)] + [
        F.col(f"m{j}").alias(name) for j, name in enumerate(columns)
    ]
    # one job brings back the per-user rows and the shards' records
    local = _collect_polars(out.filter(F.col("kind") <= _KIND_STATS).select(*picked))
    merger = Merger(spec)
    for blob in local.filter(pl.col("kind") == _KIND_STATS)["blob"]:
        merger.add(pickle.loads(blob))
    for side, rows in (("truth", merger.rows[0]), ("recs", merger.rows[1])):
        if rows == 0:
            msg = f"{side} is empty (0 rows); expected at least one row."
            raise InputError(msg)
    if in_train is not None:  # a job run once the shards have checked truth and recs
        merger.in_train = in_train()
    per_user = local.filter(pl.col("kind") == _KIND_USER).drop("kind", "blob")
    per_user = per_user.with_columns(pl.col(user_col).cast(user_type)).sort(user_col)
    if not columns:
        per_user = pl.DataFrame({user_col: pl.Series(user_col, [], dtype=user_type)})

    cut: dict[str, Any] = {}  # each state's rows, cut as the state says (persisted)

    def run_pass(key: str, state: GlobalState, step: int) -> list[Any]:
        if key not in cut:
            rows = out.filter((F.col("kind") == _KIND_STATE) & (F.col("gs") == key)).select(
                "gf", "gi", "gt", "gc"
            )
            if state.spread == "range":
                rows = rows.repartitionByRange(partitions, "gf", "gi", "gt")
            else:
                rows = rows.repartition(partitions, "gf", "gi", "gt")
            cut[key] = rows.persist(StorageLevel.MEMORY_AND_DISK) if state.passes() > 1 else rows
        found = cut[key].mapInArrow(_state_task(state, step), "blob binary").collect()
        return [pickle.loads(b[0]) for b in found]

    try:
        return merger.result(per_user, run_pass)
    finally:
        for key, rows in cut.items():
            if merger.states[key].passes() > 1:
                rows.unpersist()


# ------------------------------------------------------------------------- the context


def _in_train_job(
    spark: Any,
    t: Any,
    r: Any,
    train: Any,
    spec: ShardSpec,
    user_type: Any,
    kinds: dict[str, IdType],
    inputs: Inputs,
) -> Callable[[], tuple[int, int]]:
    """The job counting recs rows of truth users whose (user, item) pair is in train, and
    their users (:func:`~receval.data.tables.in_train_counts`, by semi joins); ``t``, ``r``: the
    ``__u, __i`` frames; ``train``: a Spark frame, or the local distinct pairs already read.
    Its checks (train's id types) run here, before any job."""
    from pyspark.sql import functions as F

    user_col, item_col = spec.user_col, spec.item_col
    item_type = _empty_like(t.select("__i")).schema["__i"]
    if is_spark_frame(train):
        own_user, own_item = inputs.columns["train"]
        pairs = _spark_train(train, own_user, own_item, item_type, kinds, check_items=False)
        found = _empty_like(pairs).schema
        train_types = (found["__u"], found["__i"])
    else:
        pairs = spark.createDataFrame(
            train.select(pl.col(user_col).alias("__u"), pl.col(item_col).alias("__i")).to_arrow()
        )
        train_types = (train.schema[user_col], train.schema[item_col])
    key = {  # ids compared as the local engine compares them
        c: "bigint" if join_key_type(ours, theirs) == pl.Int64 else "string"
        for c, ours, theirs in zip(("__u", "__i"), (user_type, item_type), train_types, strict=True)
    }

    def typed(frame: Any) -> Any:
        return frame.select(*[F.col(c).cast(k).alias(c) for c, k in key.items()])

    def run() -> tuple[int, int]:
        users = t.select(F.col("__u").cast(key["__u"]).alias("__u")).distinct()
        found = typed(r).join(users, "__u", "left_semi")
        found = found.join(typed(pairs), ["__u", "__i"], "left_semi")
        rows, n_users = found.agg(F.count(F.lit(1)), F.countDistinct("__u")).collect()[0]
        return int(rows), int(n_users)

    return run


def _spark_sources(
    spec: ShardSpec,
    t: Any,
    r: Any,
    item_type: Any,
    kinds: dict[str, IdType],
    inputs: Inputs | None = None,
) -> Sources:
    """:class:`~receval.engines.shard.Sources` computed by Spark where the data lives there (truth,
    recs, a Spark train or item table); local train and item tables are read locally (a local
    train comes read, with truth's names; ``inputs``: the other inputs' own column names)."""
    from pyspark.sql import functions as F

    user_col, item_col = spec.user_col, spec.item_col
    kind = pl.String if item_type == pl.String else pl.Int64

    def truth_range() -> tuple[float, float]:
        lo, hi = t.agg(F.min("__v"), F.max("__v")).collect()[0]
        return float(lo), float(hi)

    def popularity(train: Any) -> tuple[pl.DataFrame, int]:
        if not is_spark_frame(train):
            local = T.read_train(train, user_col, item_col, kind, kinds)
            assert local is not None
            return train_popularity(local, user_col, item_col)
        own_user, own_item = inputs.columns["train"] if inputs else (user_col, item_col)
        pairs = _spark_train(train, own_user, own_item, item_type, kinds).persist()
        try:  # distinct (user, item) pairs: users per item, and train's users
            per_item = _collect_polars(pairs.groupBy("__i").agg(F.count(F.lit(1)).alias("n")))
            n_users = int(pairs.select("__u").distinct().count())
        finally:
            pairs.unpersist()
        per_item = per_item.select(
            pl.col("__i").cast(kind).alias(item_col), pl.col("n").cast(pl.Int64)
        ).sort(item_col)
        return per_item, n_users

    def items(data: Any) -> pl.DataFrame | None:
        if is_spark_frame(data):
            _check_unique_columns(data, "items")
            data = _collect_polars(data)
        return T.read_items(data, user_col, item_col, kind, kinds, inputs)

    def item_ids() -> list[pl.Series]:
        union = t.select("__i").unionByName(r.select("__i")).distinct()
        return [_collect_polars(union)["__i"].cast(kind)]

    def history(train: Any) -> pl.DataFrame:
        """No row: each shard's users' train pairs travel with its rows (side 2 of the
        frame the shards read, :func:`_history_rows`), never through the driver; this empty
        frame marks that the shards need them."""
        user_type = _empty_like(t.select("__u")).schema["__u"]
        return pl.DataFrame(schema={user_col: user_type, item_col: kind})

    return Sources(user_col, item_col, kind, truth_range, popularity, items, item_ids, history)


def _history_rows(
    spark: Any,
    train: Any,
    user_type: Any,
    item_type: Any,
    kinds: dict[str, IdType],
    inputs: Inputs,
    user_col: str,
    item_col: str,
) -> Any:
    """Train's distinct (user, item) pairs as a Spark frame ``__u, __i`` in the types of truth
    and recs' ``__u, __i`` columns, so that a user's pairs hash to its shard: a Spark train is
    checked and cast as :func:`_spark_train` does; a local train (read on the driver) becomes
    a Spark frame. Users compare as the local engine compares them
    (:func:`~receval.data.tables.join_key_type`): integers as integers; text against
    integer users as text, so a train user such as ``"007"``, whose text is not an integer's
    decimal text, matches no user and is left out."""
    from pyspark.sql import functions as F

    kind = pl.String if item_type == pl.String else pl.Int64
    if is_spark_frame(train):
        own_user, own_item = inputs.columns["train"]
        pairs = _spark_train(train, own_user, own_item, item_type, kinds)
        found = _empty_like(pairs).schema["__u"]
    else:
        local = T.read_train(train, user_col, item_col, kind, kinds)
        assert local is not None
        found = local.schema[user_col]
        pairs = spark.createDataFrame(
            local.select(pl.col(user_col).alias("__u"), pl.col(item_col).alias("__i")).to_arrow()
        )
    u_type, i_type = _spark_type(user_type), _spark_type(item_type)
    user = F.col("__u")
    if join_key_type(user_type, found) == pl.Int64 or user_type == pl.String:
        typed = user.cast(u_type)
    else:  # integer users, text train users: only the decimal text of an integer can match
        as_int = user.try_cast("bigint")
        pairs = pairs.filter(as_int.isNotNull() & (as_int.cast("string") == user))
        typed = as_int.cast(u_type)
    return pairs.select(typed.alias("__u"), F.col("__i").cast(i_type).alias("__i"))


def _spark_train(
    train: Any,
    user_col: str,
    item_col: str,
    item_type: Any,
    kinds: dict[str, IdType] | None = None,
    check_items: bool = True,
) -> Any:
    """Train's distinct (user, item) pairs as ``__u, __i``, checked and cast (``kinds``: the
    id kinds of ``id_type``) as the local reader does (``check_items`` false: item ids of
    another type than recs' are kept, for the in-train count)."""
    from pyspark.sql import functions as F

    check_train_columns(train.columns, user_col, item_col)
    _check_unique_columns(train, "train", [user_col, item_col])
    kind = pl.String if item_type == pl.String else pl.Int64
    if kinds is not None and kinds != {"user": "auto", "item": "auto"}:
        ids = [user_col, item_col]
        empty = _empty_like(train).select(ids).with_columns(pl.lit(1.0).alias("__one"))
        check_frame(  # the id types, before the cast
            empty, "train", id_cols=ids, value_col="__one", value_name="unused", fix="",
            allow_empty=True,
        )  # fmt: skip
        train = _spark_ids(train, "train", {user_col: kinds["user"], item_col: kinds["item"]})
    if check_items:
        unify_items(_empty_like(train), "train", item_col, kind)  # the local engine's check
    # one job counts the rows and the null ids (the local reader refuses an empty train)
    null = F.col(user_col).isNull() | F.col(item_col).isNull()
    rows, nulls = train.agg(F.count(F.lit(1)), F.sum(null.cast("bigint"))).collect()[0]
    if not rows:
        msg = "train is empty (0 rows); expected at least one row."
        raise InputError(msg)
    if nulls:
        bad = train.filter(null).limit(5).collect()
        shown = "\n".join(f"  {row.asDict()}" for row in bad)
        msg = f"train has null value(s) in {user_col!r} or {item_col!r}; expected none:\n{shown}"
        raise InputError(msg)
    return train.select(F.col(user_col).alias("__u"), F.col(item_col).alias("__i")).distinct()
