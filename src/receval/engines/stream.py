"""Streaming evaluation: blocks of users in, one :class:`~receval.Result` out.

:class:`Evaluator` takes truth and recommendations block by block (a training loop's
validation batches, the row groups of files larger than memory), evaluates each block with
the shard code of the distributed engines (:func:`receval.engines.shard.run_shard`: the local
engine's own layout and families) and keeps only mergeable states
(:mod:`receval.families.states`): per-user values, exact expansions of every sum, and the
global states of ``auc`` / ``average_precision`` over rows, exposure and ratings.
:meth:`Evaluator.compute` merges them as the Spark engine merges its shards, so the Result
equals :func:`receval.evaluate`'s on all the rows, bit for bit.
"""

from __future__ import annotations

import copy
import hashlib
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from receval._errors import InputError, first_line
from receval.arrays.classification import check_exact_scores
from receval.data import tables as T
from receval.data.io import Inputs, Role, check_exists, format_of
from receval.data.layout import IdTypeArg, cast_ids, unify_ids
from receval.data.tables import warn_unused_relevance
from receval.engines.shard import (
    Merger,
    ShardOutput,
    ShardSpec,
    Sources,
    build_context,
    run_shard,
)
from receval.families import beyond as B
from receval.families.beyond_context import train_popularity
from receval.families.contract import (
    Context,
    NoRecsPolicy,
    Options,
    TiesPolicy,
)
from receval.metrics.registry import Metric, parse_metrics
from receval.metrics.result import Result

__all__ = ["Evaluator", "SortedArg", "evaluate_stream"]

_SHOW = 5

SortedArg = bool | Literal["auto"]


def _batch_ids(values: Any, name: str) -> pl.Series:
    """One batch's ids (``users`` or ``item_ids``): distinct integers or text, one dimension
    (a torch tensor is copied to the host)."""
    try:
        arr = _as_numpy(values).reshape(-1)
        ids = pl.Series(name, arr.tolist() if arr.dtype == object else arr)
    except (TypeError, ValueError, RuntimeError, OverflowError, pl.exceptions.PolarsError) as exc:
        first = first_line(exc)
        msg = f"{name} must be integer or text ids; could not read them ({first})."
        raise InputError(msg) from None
    if not (ids.dtype.is_integer() or ids.dtype == pl.String):
        msg = f"{name} must be integer or text ids; got {ids.dtype} ({ids.head(_SHOW).to_list()})."
        raise InputError(msg)
    if ids.null_count():
        msg = f"{name} holds {ids.null_count()} missing id(s); expected one id per row."
        raise InputError(msg)
    repeated = ids.filter(ids.is_duplicated()).unique(maintain_order=True)
    if repeated.len():
        msg = (
            f"{name} must be distinct (one row or column each); {repeated.len()} repeat, "
            f"e.g. {repeated.head(_SHOW).to_list()}."
        )
        raise InputError(msg)
    return ids


def _score_matrix(scores: Any, n_rows: int) -> Any:
    """A checked (batch x items) matrix of real scores: a torch tensor (float16 and bfloat16
    widened to float32, integers checked then made float64) or a NumPy float array (integers
    and long doubles held to :func:`check_exact_scores`, then float64)."""
    if hasattr(scores, "detach") and hasattr(scores, "dtype"):  # a torch tensor
        import torch

        s = scores.detach()
        shape = tuple(int(x) for x in s.shape)
        if s.dtype == torch.bool or s.is_complex():
            msg = f"scores must be real numbers; got a torch tensor of {s.dtype}."
            raise InputError(msg)
        if s.dtype in (torch.float16, torch.bfloat16):
            s = s.float()  # torch.topk has no half kernels on every device: widen, exactly
        elif not torch.is_floating_point(s):
            check_exact_scores(s.cpu().numpy(), "scores")
            s = s.double()
    else:
        try:
            arr = np.asarray(scores)
        except (TypeError, ValueError) as exc:
            msg = f"scores must be a (batch x items) matrix of numbers; could not read it ({exc})."
            raise InputError(msg.splitlines()[0]) from None
        shape = arr.shape
        kind = arr.dtype.kind
        if kind in "iuf":
            check_exact_scores(arr, "scores")
        elif kind == "O":
            check_exact_scores(arr.reshape(-1), "scores")
        else:
            what = {"b": "booleans", "c": "complex numbers", "U": "text", "S": "bytes"}
            msg = (
                "scores must be real numbers (integers or floats); got "
                f"{what.get(kind, str(arr.dtype))} (dtype {arr.dtype})."
            )
            raise InputError(msg)
        if len(shape) == 2 and arr.dtype != np.float64:
            try:
                with np.errstate(over="raise", invalid="raise"):
                    arr = arr.astype(np.float64)
            except (TypeError, ValueError, FloatingPointError, OverflowError) as exc:
                msg = f"scores must be real numbers; could not read them as float64 ({exc})."
                raise InputError(msg.splitlines()[0]) from None
        s = arr
    if len(shape) != 2 or shape[0] != n_rows:
        msg = (
            f"scores must be a (batch x items) matrix with one row per user ({n_rows} "
            f"users); got shape {shape}."
        )
        raise InputError(msg)
    if shape[1] == 0:
        msg = "scores has no column; expected at least one item."
        raise InputError(msg)
    return s


def _as_numpy(values: Any) -> np.ndarray:
    """Ids or scores as a NumPy array (a torch tensor is copied to the host)."""
    if hasattr(values, "detach"):
        return np.asarray(values.detach().cpu().numpy())
    if isinstance(values, pl.Series):
        return values.to_numpy()
    return np.asarray(values)


def _exclude_frame(
    exclude: Any, user_dtype: Any, item_dtype: Any, user_col: str, item_col: str, inputs: Inputs
) -> pl.DataFrame:
    """``exclude`` (a table, a file or ``{user: [items]}``) as (user, item) rows; a dict's
    ids typed as ``user_dtype`` / ``item_dtype`` (None: as Polars infers them)."""
    if isinstance(exclude, dict):
        try:
            pairs = [(u, i) for u, listed in exclude.items() for i in listed]
            return pl.DataFrame(
                {user_col: [u for u, _ in pairs], item_col: [i for _, i in pairs]},
                schema=None if user_dtype is None else {user_col: user_dtype, item_col: item_dtype},
                strict=False,
            )
        except (pl.exceptions.PolarsError, TypeError, ValueError) as exc:
            msg = f"exclude must map user ids to lists of item ids; could not read it ({exc})."
            raise InputError(msg.splitlines()[0]) from None
    frame = inputs.read(exclude, "exclude", "relevance")
    for col in (user_col, item_col):
        if col not in frame.columns:
            msg = f"exclude is missing column {col!r} (columns found: {frame.columns})."
            raise InputError(msg)
    return frame.select(user_col, item_col)


def _as_key(frame: pl.DataFrame, col: str, dtype: Any, role: str) -> pl.DataFrame:
    """``frame[col]`` cast to ``dtype`` to join on, when both are integers or both text."""
    have = frame.schema[col]
    if have == dtype:
        return frame
    if (have.is_integer() and dtype.is_integer()) or have == pl.Null:
        return frame.with_columns(pl.col(col).cast(dtype, strict=False))
    msg = (
        f"{role} {col} ids are {have}, the batch's are {dtype}; give both the same id type "
        "(or pass id_type)."
    )
    raise InputError(msg)


def _excluded_cells(
    frame: pl.DataFrame, users: pl.Series, items: pl.Series, user_col: str, item_col: str
) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every excluded (user, item) of the batch."""
    frame = _as_key(frame, user_col, users.dtype, "exclude")
    frame = _as_key(frame, item_col, items.dtype, "exclude")
    at_row = pl.DataFrame({user_col: users, "__row": np.arange(users.len(), dtype=np.int64)})
    at_col = pl.DataFrame({item_col: items, "__col": np.arange(items.len(), dtype=np.int64)})
    cells = frame.join(at_row, on=user_col).join(at_col, on=item_col)
    return cells["__row"].to_numpy(), cells["__col"].to_numpy()


class _ByUser:
    """A table's rows grouped by user once (a stable sort), so that each batch of
    :meth:`Evaluator.update_scores` takes the rows of its users by binary search instead of
    a pass over the whole table."""

    def __init__(self, frame: pl.DataFrame, user_col: str, role: str) -> None:
        if user_col not in frame.columns:
            msg = f"{role} is missing column {user_col!r} (columns found: {frame.columns})."
            raise InputError(msg)
        self.role = role
        self.user_col = user_col
        self.frame = frame.sort(user_col, maintain_order=True, nulls_last=True)
        runs = self.frame[user_col].rle()
        keys = runs.struct.field("value")
        self.keys = keys.cast(pl.Int64, strict=False) if keys.dtype.is_integer() else keys
        lengths = runs.struct.field("len").to_numpy().astype(np.int64)
        self.lengths = lengths
        self.starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)

    def take(self, users: pl.Series) -> pl.DataFrame:
        """The rows of ``users`` (distinct ids), in the table's order within each user."""
        keys, probe = self.keys, users
        if probe.dtype != keys.dtype:
            if probe.dtype.is_integer() and keys.dtype.is_integer():
                probe = probe.cast(pl.Int64)
            elif keys.dtype != pl.Null:
                msg = (
                    f"the batch's user ids are {probe.dtype}, those of the Evaluator's {self.role} "
                    f"{keys.dtype}; give both the same id type (or pass id_type)."
                )
                raise InputError(msg)
        if keys.len() == 0 or keys.dtype == pl.Null or probe.len() == 0:
            return self.frame.clear()
        pos = keys.search_sorted(probe).to_numpy().astype(np.int64)
        inside = pos < keys.len()
        found = np.zeros(pos.size, dtype=np.bool_)
        if inside.any():
            at = pl.Series(pos[inside])
            found[inside] = (
                (keys.gather(at) == probe.filter(pl.Series(inside))).fill_null(False).to_numpy()
            )
        groups = np.unique(pos[found])
        lengths = self.lengths[groups]
        shift = self.starts[groups] - np.concatenate(([0], np.cumsum(lengths)[:-1]))
        index = np.repeat(shift, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
        return self.frame[index]


def _select(
    scores: Any, k: int, banned: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's ``k`` best columns and every column tied with its k-th, excluded cells left
    out: (rows, columns, scores as float64), rows ascending and columns ascending within a
    row (catalog order: what ``ties="first"`` follows)."""
    if hasattr(scores, "detach"):  # a torch tensor: select on its device
        import torch

        with torch.no_grad():
            s = scores.detach()
            if not bool(torch.isfinite(s).all()) and bool(torch.isnan(s).any()):
                msg = "scores hold NaN; expected numbers (mask items with exclude=)."
                raise InputError(msg)
            allowed = torch.ones(s.shape, dtype=torch.bool, device=s.device)
            if banned is not None and banned[0].size:
                rows_t = torch.as_tensor(banned[0], device=s.device)
                cols_t = torch.as_tensor(banned[1], device=s.device)
                allowed[rows_t, cols_t] = False
            masked = s.masked_fill(~allowed, -torch.inf)  # a new tensor: scores stay as given
            kth = torch.topk(masked, k, dim=1, sorted=True).values[:, -1:]
            keep = (masked >= kth) & allowed
            rows, cols = keep.nonzero(as_tuple=True)
            values = s[rows, cols].double()
            return rows.cpu().numpy(), cols.cpu().numpy(), values.cpu().numpy()
    arr = np.asarray(scores)
    if np.isnan(arr).any():
        msg = "scores hold NaN; expected numbers (mask items with exclude=)."
        raise InputError(msg)
    arr = arr.astype(np.float64)  # a copy: the input is left as it is
    allowed_np = np.ones(arr.shape, dtype=np.bool_)
    if banned is not None and banned[0].size:
        allowed_np[banned] = False
    masked_np = np.where(allowed_np, arr, -np.inf)
    cut = arr.shape[1] - k
    kth_np = np.partition(masked_np, cut, axis=1)[:, cut : cut + 1]
    r_idx, c_idx = np.nonzero((masked_np >= kth_np) & allowed_np)
    return r_idx, c_idx, arr[r_idx, c_idx]


def _concat_ids(series: list[pl.Series]) -> pl.Series:
    """Id columns as one Series: integers of different widths as Int64; ids of different
    kinds (integers and text) raise."""
    kept = [x for x in series if x.dtype != pl.Null]
    if not kept:
        return series[0] if series else pl.Series([], dtype=pl.Int64)
    dtypes = {x.dtype for x in kept}
    if len(dtypes) > 1:
        if all(d.is_integer() for d in dtypes):
            kept = [x.cast(pl.Int64) for x in kept]
        else:
            names = ", ".join(sorted(str(d) for d in dtypes))
            msg = (
                f"user ids come as {names} in truth and recs or across blocks; give every "
                "block the same id type (or pass id_type)."
            )
            raise InputError(msg)
    return pl.concat(kept)


class Evaluator:
    """Evaluate blocks of users as they arrive; :meth:`compute` gives the Result of all.

    Every block holds **whole users**: all the truth rows and all the recommendation rows of
    each of its users (a user seen in an earlier block raises). With ``sorted_by_user=True``
    the blocks may cut a user in two, provided the rows arrive sorted by user id: the rows of
    each block's last user are then held back and evaluated with the next block.

    Options are :func:`receval.evaluate`'s (file inputs, ``columns`` and ``input_format`` of
    ``train`` and ``items`` included). ``nmae`` needs ``rating_range`` (the range observed in
    truth is known only after the last block). ``train`` and ``items`` are read once, here.
    ``truth`` and ``exclude`` serve :meth:`update_scores` only: given once here (the whole
    validation truth, the rows never recommended), each batch takes its users' rows.

    Memory is the state, not the rows: one row per user (its per-user values), a few
    floats per exact sum, and for ``auc`` / ``average_precision`` over rows the distinct
    scores with their class counts, for ``coverage`` / ``gini`` / ``entropy`` the exposure of
    each item recommended.

    Examples
    --------
    >>> import receval
    >>> ev = receval.Evaluator(["ndcg@2", "recall@1"])
    >>> ev.update({"u1": {"a": 3, "b": 1}}, {"u1": {"b": 0.9, "a": 0.5, "z": 0.1}})
    >>> ev.update({"u2": {"c": 1}}, {"u2": {"c": 0.7, "y": 0.2}})
    >>> res = ev.compute()
    >>> round(res["ndcg@2"], 4), res["recall@1"]
    (0.8984, 0.75)
    """

    _truth: _ByUser | None  # update_scores' truth and exclude, given once (or None)
    _exclude: _ByUser | None

    def __init__(
        self,
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
        sorted_by_user: bool = False,
        sample_col: str | None = None,
        truth: Any = None,
        exclude: Any = None,
    ) -> None:
        if not isinstance(sorted_by_user, bool):
            msg = f"sorted_by_user must be True or False; got {sorted_by_user!r}."
            raise InputError(msg)
        options = Options.of(
            user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
            relevance_col=relevance_col, ties=ties, relevance_threshold=relevance_threshold,
            no_recs=no_recs, train=train, items=items, item_features=item_features,
            rating_range=rating_range, id_type=id_type, columns=columns,
            input_format=input_format, sample_col=sample_col,
        )  # fmt: skip
        plan = parse_metrics(metrics)
        if sample_col is not None:
            B.check_sampled_metrics(plan, sample_col)
        self._setup(plan, options, sorted_by_user)
        inputs = self._inputs
        if truth is not None:  # read once; each update_scores batch takes its users' rows
            rows = inputs.read(truth, "truth", self._relevance_col or "relevance")
            self._truth = _ByUser(rows, inputs.user_col, "truth")
        if exclude is not None:
            rows = _exclude_frame(exclude, None, None, inputs.user_col, inputs.item_col, inputs)
            self._exclude = _ByUser(rows, inputs.user_col, "exclude")

    @classmethod
    def _of(
        cls,
        plan: tuple[Metric, ...],
        options: Options,
        catalog: Callable[[type[pl.DataType]], pl.Series] | None = None,
    ) -> Evaluator:
        """An Evaluator of ``plan`` with options already checked (``engine="stream"``);
        ``catalog``: the distinct item ids of truth and recs, typed as asked (read before the
        first block by the metrics whose per-user values depend on the catalog's size)."""
        ev = cls.__new__(cls)
        ev._setup(plan, options, sorted_by_user=False, catalog=catalog)
        return ev

    def _setup(
        self,
        plan: tuple[Metric, ...],
        options: Options,
        sorted_by_user: bool,
        catalog: Callable[[type[pl.DataType]], pl.Series] | None = None,
    ) -> None:
        """The state before the first block."""
        sized = [m.canonical for m in plan if m.spec.uses_catalog_size]
        if sized and options.items is None and catalog is None:
            msg = (
                f"{sized} give each user a value that depends on the catalog's size, which is "
                "not known while blocks arrive: pass items= (a table of every catalog item "
                "id) to the Evaluator, or evaluate the whole tables or files with "
                "receval.evaluate (engine='stream' reads the catalog first)."
            )
            raise InputError(msg)
        self._catalog_of = catalog
        self._inputs = options.inputs
        self._kinds = options.kinds
        self._relevance_col = options.relevance_col
        self._order_col = options.order_col
        self._sorted = sorted_by_user
        # the request; has_relevance is set by the first block
        self._spec = ShardSpec.of(plan, options, has_relevance=options.relevance_col is not None)
        self._plan = self._spec.plan
        if any(m.name == "nmae" for m in self._plan) and options.rating_range is None:
            msg = (
                "nmae needs rating_range=(r_min, r_max) when evaluating in blocks: the range "
                "observed in truth is known only after the last block."
            )
            raise InputError(msg)
        self._options = options.context()  # the family options
        self._context: Context | None = None  # built with the first block
        self._kind: type[pl.DataType] | None = None  # item ids: pl.String or pl.Int64
        self._train: pl.DataFrame | None = None
        self._has_relevance: bool | None = None
        self._merger = Merger(self._spec)
        self._frames: list[pl.DataFrame] = []
        self._in_train = [0, 0]
        self._users: list[pl.Series] = []  # users seen, one Series per block
        self._items: list[pl.Series] = []  # items of truth and recs (the catalog)
        self._rows = [0, 0]
        self._carry: tuple[pl.DataFrame, pl.DataFrame] | None = None
        self._blocks = 0
        # False when the caller cuts the users itself (engine="stream": hashed users), so
        # that no block can repeat a user and the users need not be kept
        self._check_users = True
        self._digests: dict[tuple[str, str], str | None] = {}  # (train|items, kind) -> digest
        # update_scores' truth and exclude, given once to the Evaluator
        self._truth = None
        self._exclude = None
        self._warned_train = False  # the warning for train pairs that may be recommended
        # update() from several threads: the state is read and merged under this lock, the
        # block's evaluation (the kernels) runs outside it
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        """The state to pickle or deep-copy: everything but the lock."""
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # ------------------------------------------------------------------------------ update

    def update(self, truth: Any, recs: Any) -> None:
        """Evaluate one block: ``truth`` and ``recs`` (any source :func:`receval.evaluate`
        takes) holding every row of their users."""
        user_col = self._inputs.user_col
        t = self._inputs.read(truth, "truth", self._relevance_col or "relevance")
        r = self._inputs.read(recs, "recs", self._order_col)
        with self._lock:  # the users and the first block's context: checked and set at once
            prepared = self._admit(t, r, user_col)
        if prepared is None:
            return
        block_spec, t, r = prepared
        out = run_shard(block_spec, t, r)  # outside the lock: blocks evaluate in parallel
        with self._lock:
            self._absorb(out, block_spec.context, t, r)

    def _admit(
        self, t: pl.DataFrame, r: pl.DataFrame, user_col: str
    ) -> tuple[ShardSpec, pl.DataFrame, pl.DataFrame] | None:
        """A block's rows typed, its users checked and remembered, and the spec it is
        evaluated with (None: nothing to evaluate); called under the lock."""
        item_col = self._inputs.item_col
        t, r = self._typed(t, r)
        if self._carry is not None:
            t = pl.concat([self._carry[0], t], how="vertical_relaxed")
            r = pl.concat([self._carry[1], r], how="vertical_relaxed")
            self._carry = None
        if self._sorted:
            t, r = self._hold_last_user(t, r, user_col)
        if t.height == 0 and r.height == 0:
            return None
        if self._check_users:
            block = _concat_ids([t[user_col], r[user_col]]).unique()
            self._check_new_users(block, ordered=self._sorted)
        if t.height and r.height and item_col in t.columns and item_col in r.columns:
            t, r = unify_ids(t, r, item_col, "item")  # integers beside text raise
        if self._context is None:
            self._start(t, r)
        assert self._context is not None and self._kind is not None
        for side in (t, r):
            dtype = side.schema.get(item_col)
            if (
                side.height
                and dtype is not None
                and (dtype == pl.String) != (self._kind == pl.String)
            ):
                msg = (
                    f"item ids of this block are {dtype}, those of the first block "
                    f"{self._kind}; give every block the same id type (or pass id_type)."
                )
                raise InputError(msg)
        context = self._context
        if context.items is None and context.catalog is None:
            # the block's catalog: its items (+ train's); codes -> ids
            ids = [t[item_col].cast(self._kind), r[item_col].cast(self._kind)]
            if self._train is not None:
                ids.append(self._train[item_col])
            context = replace(context, catalog=pl.concat(ids).unique().sort())
        return replace(self._spec, context=context), t, r

    def update_scores(
        self,
        users: Any,
        scores: Any,
        truth: Any = None,
        *,
        item_ids: Any = None,
        exclude: Any = None,
        k: int | str | None = None,
    ) -> None:
        """Evaluate one batch of a training loop from its score matrix.

        ``scores``: (batch x items) scores of ``users`` (distinct ids, one per row) for every
        item (``item_ids``, distinct, one per column; default ``0 .. n_items - 1``): a torch
        tensor on any device (the selection runs there; torch is needed only for tensors;
        float16 and bfloat16 are widened to float32) or a NumPy array of real numbers
        (integers beyond 2^53 and long doubles that float64 cannot hold raise). ``truth``:
        the truth rows of these users (any source :func:`receval.evaluate` takes; its other
        users raise); leave it out when the Evaluator was given ``truth=``, whose rows of the
        batch's users are taken. ``exclude``: ``(user, item)`` rows never recommended
        (usually the training interactions; a table or ``{user: [items]}``; rows of other
        users are ignored); leave it out when the Evaluator was given ``exclude=``. With
        ``train=`` and no exclude anywhere, a warning says how many train pairs of the
        batch's users may be recommended. ``k``: how many items of each user's list are
        kept, default the largest cutoff of the metrics; items tied with the k-th are kept
        too, so that every ties policy is exact. A metric without a cutoff (``mrr``, ``map``,
        ``auc`` ...) needs the whole list: ``k="all"``. The inputs are not modified.
        """
        if self._spec.options.sample_col is not None:
            msg = (
                "update_scores gives one deterministic ranking per user; this Evaluator has "
                "sample_col= (sampled rankings): pass them to update() as a table."
            )
            raise InputError(msg)
        for name, given, kept in (
            ("truth", truth, self._truth),
            ("exclude", exclude, self._exclude),
        ):
            if given is not None and kept is not None:
                msg = (
                    f"{name} was given to the Evaluator already; update_scores takes the "
                    f"batch's rows from it: leave {name}= out here."
                )
                raise InputError(msg)
        if truth is None and self._truth is None:
            msg = (
                "update_scores needs the batch's truth: pass truth= here, or once to the "
                "Evaluator (receval.Evaluator(metrics, truth=...))."
            )
            raise InputError(msg)
        user_col, item_col = self._inputs.user_col, self._inputs.item_col
        user_series = _batch_ids(users, "users").alias(user_col)
        n_rows = user_series.len()
        matrix = _score_matrix(scores, n_rows)
        n_items = int(matrix.shape[1])
        items = (
            pl.Series(item_col, np.arange(n_items, dtype=np.int64))
            if item_ids is None
            else _batch_ids(item_ids, "item_ids").alias(item_col)
        )
        if items.len() != n_items:
            msg = f"item_ids has {items.len()} ids; expected one per score column ({n_items})."
            raise InputError(msg)
        keep = self._list_length(k, n_items)
        banned = None
        if exclude is not None:
            pairs = _exclude_frame(
                exclude, user_series.dtype, items.dtype, user_col, item_col, self._inputs
            )
            banned = _excluded_cells(pairs, user_series, items, user_col, item_col)
        elif self._exclude is not None:
            pairs = self._exclude.take(user_series)
            banned = _excluded_cells(pairs, user_series, items, user_col, item_col)
        rows, cols, values = _select(matrix, keep, banned)
        recs = pl.DataFrame(
            {
                user_col: user_series.gather(rows),
                item_col: items.gather(cols),
                self._order_col: values,
            }
        )
        if truth is None:
            assert self._truth is not None
            t = self._truth.take(user_series)
        else:
            t = self._inputs.read(truth, "truth", self._relevance_col or "relevance")
            if user_col not in t.columns:
                msg = f"truth is missing column {user_col!r} (columns found: {t.columns})."
                raise InputError(msg)
            t = _as_key(t, user_col, user_series.dtype, "truth")
            outside = t.filter(~pl.col(user_col).is_in(user_series.implode()))
            if outside.height:
                shown = outside[user_col].unique(maintain_order=True).head(_SHOW).to_list()
                msg = (
                    f"truth has {outside.height} row(s) of users not in this batch, e.g. "
                    f"{shown}; give update_scores the truth rows of the batch's users only."
                )
                raise InputError(msg)
        self.update(t, recs)
        if banned is None and self._train is not None and not self._warned_train:
            self._warn_train_candidates(user_series, items)

    def _warn_train_candidates(self, users: pl.Series, items: pl.Series) -> None:
        """Warn (once) when train holds (user, item) pairs of the batch's users whose item is
        a column of the scores: with no exclude, the lists may hold items the user already
        has (the rule and message of the model path, ``engines/model.py``)."""
        assert self._train is not None
        user_col, item_col = self._inputs.user_col, self._inputs.item_col
        train = self._train
        try:
            batch = _as_key(pl.DataFrame({user_col: users}), user_col, train[user_col].dtype, "")
            cols = _as_key(pl.DataFrame({item_col: items}), item_col, train[item_col].dtype, "")
        except InputError:
            return  # ids of another kind than train's: no pair can match
        found = train.join(batch, on=user_col, how="semi").join(cols, on=item_col, how="semi")
        if found.height == 0:
            return
        with self._lock:
            if self._warned_train:
                return
            self._warned_train = True
        warnings.warn(
            f"train has {found.height} (user, item) pair(s) of {found[user_col].n_unique()} "
            "batch user(s) that are columns of the scores: update_scores may recommend items "
            "the user already has. Pass exclude=train to the Evaluator (or to update_scores) "
            "to leave them out, or keep them knowingly (result.counts.recs_in_train counts "
            "them). Warned once per Evaluator.",
            UserWarning,
            stacklevel=3,
        )

    def _list_length(self, k: int | str | None, n_items: int) -> int:
        """The list length to keep per user."""
        if k == "all":
            return n_items
        if k is None:
            uncut = [m.canonical for m in self._plan if m.k is None and m.spec.family != "rating"]
            if uncut:
                msg = (
                    f"{', '.join(uncut[:_SHOW])} has no cutoff: its value needs each user's "
                    "whole list; pass k='all' (or ask for it at a cutoff, e.g. 'mrr@10')."
                )
                raise InputError(msg)
            return min(n_items, max((m.k or 0) for m in self._plan))
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            msg = f"k must be an integer >= 1, 'all' or None; got {k!r}."
            raise InputError(msg)
        return min(int(k), n_items)

    def _typed(self, t: pl.DataFrame, r: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Truth with its relevance column (1.0 when it has none) and ids cast as
        ``id_type`` asks."""
        user_col, item_col = self._inputs.user_col, self._inputs.item_col
        rel = self._relevance_col or "relevance"
        has = self._relevance_col is not None or rel in t.columns
        if self._has_relevance is None:
            self._has_relevance = has
            self._spec = replace(self._spec, has_relevance=has)
            self._merger.spec = self._spec
            if not has:
                warn_unused_relevance(t.columns, [user_col, item_col], stacklevel=5)
        elif has != self._has_relevance:
            msg = (
                f"truth blocks disagree on the relevance column {rel!r}: the first block "
                f"{'had' if self._has_relevance else 'had no'} such column, this one "
                f"{'has' if has else 'has none'}; give every block the same columns."
            )
            raise InputError(msg)
        if not has and user_col in t.columns and item_col in t.columns:
            t = t.select(user_col, item_col).with_columns(pl.lit(1.0).alias(rel))
        kinds = {user_col: self._kinds["user"], item_col: self._kinds["item"]}
        # an empty side too: a block without recs rows must not keep integer ids beside
        # truth's text ids (id_type="str")
        if all(c in t.columns for c in (user_col, item_col)):
            t = cast_ids(t, "truth", kinds)
        if all(c in r.columns for c in (user_col, item_col)):
            r = cast_ids(r, "recs", kinds)
        return t, r

    def _hold_last_user(
        self, t: pl.DataFrame, r: pl.DataFrame, user_col: str
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Keep back the rows of the block's last user (sorted blocks) for the next block."""
        users = _concat_ids([t[user_col], r[user_col]])
        if users.len() == 0:
            return t, r
        last = users.max()
        self._carry = (t.filter(pl.col(user_col) == last), r.filter(pl.col(user_col) == last))
        return t.filter(pl.col(user_col) != last), r.filter(pl.col(user_col) != last)

    def _check_new_users(self, block: pl.Series, *, ordered: bool) -> None:
        """Raise when a user of ``block`` (distinct ids) was in an earlier block (or, sorted,
        comes too late); then remember them."""
        if self._users:
            seen = _concat_ids(self._users)
            if seen.dtype != block.dtype:
                if seen.dtype.is_integer() and block.dtype.is_integer():
                    seen, block = seen.cast(pl.Int64), block.cast(pl.Int64)
                else:
                    msg = (
                        f"user ids of this block are {block.dtype}, those of earlier blocks "
                        f"{seen.dtype}; give every block the same id type (or pass id_type)."
                    )
                    raise InputError(msg)
            again = block.filter(block.is_in(seen.implode()))
            if again.len():
                shown = again.sort().head(_SHOW).to_list()
                how = (
                    "blocks must arrive sorted by user id (sorted_by_user=True)"
                    if ordered
                    else "every block must hold all the rows of its users, or pass "
                    "sorted_by_user=True when the rows arrive sorted by user"
                )
                msg = (
                    f"{again.len()} user(s) of this block were in an earlier block, e.g. "
                    f"{shown}; {how}."
                )
                raise InputError(msg)
            if ordered and block.len() and block.min() < seen.max():  # type: ignore[operator]
                msg = (
                    f"sorted_by_user=True: this block starts at user {block.min()!r}, below "
                    f"user {seen.max()!r} of an earlier block; the rows must arrive sorted by "
                    "user id."
                )
                raise InputError(msg)
        self._users = [_concat_ids([*self._users, block])]  # one Series: no growing list

    def _start(self, t: pl.DataFrame, r: pl.DataFrame) -> None:
        """The context of every block (train popularity, the item table), from the first."""
        inputs = self._inputs
        user_col, item_col = inputs.user_col, inputs.item_col
        kind_of = r if r.height else t
        self._kind = pl.String if kind_of.schema.get(item_col) == pl.String else pl.Int64
        kind = self._kind
        train = self._options.train
        if train is not None:
            self._train = T.read_train(
                train, user_col, item_col, kind, self._kinds, inputs=inputs, unify=True
            )

        def truth_range() -> tuple[float, float]:  # pragma: no cover - nmae needs rating_range
            msg = "the observed rating range is not known while blocks arrive"
            raise InputError(msg)

        def popularity(_: Any) -> tuple[pl.DataFrame, int]:
            assert self._train is not None
            return train_popularity(self._train, user_col, item_col)

        def history(_: Any) -> pl.DataFrame:
            assert self._train is not None
            return self._train

        sources = Sources(
            user_col, item_col, kind, truth_range, popularity,
            lambda data: T.read_items(data, user_col, item_col, kind, self._kinds, inputs),
            lambda: [], history,
        )  # fmt: skip
        context = build_context(self._plan, self._options, sources)
        source = "truth+recs" + ("+train" if train is not None else "")
        catalog = None  # each block gets its own catalog; the final one is merged
        if context.items is None and self._catalog_of is not None:  # the whole one, read first
            ids = [self._catalog_of(kind)]
            if self._train is not None:
                ids.append(self._train[item_col])
            catalog = pl.concat(ids).unique().sort()
        self._context = replace(
            context, catalog=catalog, catalog_source=source if context.items is None else None
        )

    def _absorb(self, out: ShardOutput, context: Context, t: pl.DataFrame, r: pl.DataFrame) -> None:
        """Merge one block's output into the states."""
        user_col, item_col = self._inputs.user_col, self._inputs.item_col
        self._blocks += 1
        self._frames.append(out.per_user)
        self._merger.add(out.stats)  # the block's global states merge into the merger's
        self._merger.compact()  # constant memory: one expansion per sum, states compacted
        if self._train is not None and t.height:
            rows, users = T.in_train_counts(
                t[user_col].unique(), r, self._train, user_col, item_col
            )
            self._in_train[0] += rows
            self._in_train[1] += users
        if context.items is None:
            assert self._kind is not None
            new = pl.concat([t[item_col].cast(self._kind), r[item_col].cast(self._kind)])
            self._items.append(new.unique())
            if len(self._items) >= 8:
                self._items = [pl.concat(self._items).unique()]

    # ------------------------------------------------------------------------------- merge

    def merge(self, other: Evaluator) -> Evaluator:
        """Add the blocks ``other`` has seen (disjoint users, the same request); returns self.

        The request is the metrics, the options and the data of ``train`` and ``items``
        (compared by content: another table with the same rows merges). Evaluators filled
        in other processes merge too (they pickle)."""
        if not isinstance(other, Evaluator):
            msg = f"merge takes an Evaluator; got {type(other).__name__}."
            raise InputError(msg)
        if other is self:
            msg = "an Evaluator cannot merge with itself (its users would be counted twice)."
            raise InputError(msg)
        first, second = sorted((self, other), key=id)  # one lock order: no deadlock
        with first._lock, second._lock:
            return self._merge(other)

    def _merge(self, other: Evaluator) -> Evaluator:
        """:meth:`merge`, both locks held."""
        mine, theirs = self._signature(), other._signature()
        differ = [name for name in mine if mine[name] != theirs[name]]
        if differ:
            msg = (
                f"these evaluators differ in {', '.join(differ)}; only evaluators made with "
                "the same arguments merge."
            )
            raise InputError(msg)
        for ev in (self, other):
            ev._flush()
        if other._blocks == 0 and self._blocks == 0:
            return self
        self._same_data(other)
        if other._blocks == 0:
            return self
        if self._blocks == 0:
            self.__dict__.update(copy.deepcopy(other.__getstate__()))
            return self
        if self._has_relevance != other._has_relevance:
            msg = "these evaluators saw truth blocks with and without a relevance column."
            raise InputError(msg)
        for users in other._users:
            self._check_new_users(users, ordered=False)
        self._frames += other._frames
        self._merger.merge(other._merger)
        self._merger.compact()
        self._in_train = [a + b for a, b in zip(self._in_train, other._in_train, strict=True)]
        self._items += other._items
        self._blocks += other._blocks
        return self

    def _same_data(self, other: Evaluator) -> None:
        """Raise unless both evaluators have the same ``train`` and ``items`` rows (their
        merged exposure and catalog would hold both, a result ``evaluate`` gives for
        neither)."""
        started = self if self._kind is not None else other
        assert started._kind is not None
        kind = started._kind
        for role in ("train", "items"):
            mine, theirs = self._digest(role, kind), other._digest(role, kind)
            if mine != theirs:
                msg = (
                    f"these evaluators were made with different {role} (this one: "
                    f"{'a table' if mine else 'none'}, the other: "
                    f"{'a table' if theirs else 'none'}"
                    f"{' with other rows' if mine and theirs else ''}); only evaluators made "
                    f"with the same {role} merge."
                )
                raise InputError(msg)

    def _digest(self, role: Literal["train", "items"], kind: type[pl.DataType]) -> str | None:
        """A digest of the distinct rows of ``train`` or ``items`` as read with item ids of
        ``kind`` (None when not given); computed once per kind."""
        key = (role, str(kind))
        if key not in self._digests:
            raw = self._options.train if role == "train" else self._options.items
            if raw is None:
                self._digests[key] = None
            else:
                frame = self._read_side(role, raw, kind)
                rows = frame.unique().hash_rows(seed=0)
                digest = hashlib.sha256(rows.sort().to_numpy().tobytes())
                digest.update(str(frame.columns).encode())
                self._digests[key] = digest.hexdigest()
        return self._digests[key]

    def _read_side(self, role: str, raw: Any, kind: type[pl.DataType]) -> pl.DataFrame:
        """``train`` (distinct pairs) or ``items`` (the table) as the first block reads it."""
        user_col, item_col = self._inputs.user_col, self._inputs.item_col
        if role == "train":
            if self._train is not None and self._kind == kind:
                return self._train
            frame = T.read_train(
                raw, user_col, item_col, kind, self._kinds, inputs=self._inputs, unify=True
            )
        else:
            context = self._context
            if context is not None and context.items is not None and self._kind == kind:
                return context.items  # type: ignore[no-any-return]
            frame = T.read_items(raw, user_col, item_col, kind, self._kinds, self._inputs)
        assert frame is not None
        return frame

    def _signature(self) -> dict[str, Any]:
        """The request, by argument name: what two evaluators must share to merge."""
        spec = self._spec
        opts = self._options
        features = opts.item_features
        return {
            "metrics": spec.metrics, "user_col": spec.user_col, "item_col": spec.item_col,
            "score_col/rank_col": (spec.order_col, spec.by_rank),
            "relevance_col": spec.relevance_col, "ties": spec.ties,
            "relevance_threshold": spec.threshold, "no_recs": spec.no_recs,
            "id_type": self._kinds, "rating_range": opts.rating_range,
            "train": opts.train is None, "items": opts.items is None,
            "item_features": features if isinstance(features, str | list | None)
            else id(features),
        }  # fmt: skip

    def _flush(self) -> None:
        """Evaluate the held-back rows of the last user (sorted blocks)."""
        if self._carry is not None:
            t, r = self._carry
            self._carry = None
            sorted_ = self._sorted
            self._sorted = False
            try:
                if t.height or r.height:
                    self.update(t, r)
            finally:
                self._sorted = sorted_

    # ----------------------------------------------------------------------------- compute

    def compute(self) -> Result:
        """The Result of every block so far. More blocks may follow (with ``sorted_by_user``,
        the held-back last user is evaluated now: later blocks must start after it)."""
        with self._lock:  # no block merges while the result is read
            return self._compute()

    def _compute(self) -> Result:
        """:meth:`compute`, the lock held."""
        self._flush()
        if self._blocks == 0:
            msg = "no block was evaluated: call update(truth, recs) with at least one row first."
            raise InputError(msg)
        merger = self._merger
        user_col, item_col = self._inputs.user_col, self._inputs.item_col
        if merger.rows[0] == 0:
            msg = "truth is empty (0 rows in every block); expected at least one row."
            raise InputError(msg)
        if merger.rows[1] == 0:
            msg = "recs is empty (0 rows in every block); expected at least one row."
            raise InputError(msg)
        per_user = pl.concat(self._frames, how="vertical_relaxed").sort(user_col)
        if per_user.width == 1 and per_user.height == 0:
            per_user = self._frames[0]
        if self._train is not None:
            merger.in_train = (self._in_train[0], self._in_train[1])
        n_catalog = self._catalog_size(item_col)
        for m in self._plan:
            info = merger.details.get(m.canonical, {})
            if "catalog_size" in info and n_catalog is not None:
                info["catalog_size"] = n_catalog
        result = merger.result(per_user)
        merger.in_train = None
        return result

    def _catalog_size(self, item_col: str) -> int | None:
        """The catalog's size: the item table's, else the distinct items of truth, recs and
        train."""
        assert self._context is not None
        if self._context.items is not None:
            return None  # every block reported the item table's size
        if self._context.catalog is not None:
            return self._context.catalog.len()  # read before the first block
        ids = list(self._items)
        if self._train is not None:
            ids.append(self._train[item_col])
        if not ids:
            return 0
        return int(pl.concat(ids).n_unique())

    @property
    def blocks(self) -> int:
        """How many blocks were evaluated."""
        return self._blocks

    def state_bytes(self) -> int:
        """An estimate of the memory the state holds (per-user frames and global states)."""
        with self._lock:
            return self._state_bytes()

    def _state_bytes(self) -> int:
        size = sum(f.estimated_size() for f in self._frames)
        size += sum(u.estimated_size() for u in self._users)
        size += sum(i.estimated_size() for i in self._items)
        size += sum(state.nbytes for state in self._merger.states.values())
        return int(size)


# ----------------------------------------------------------------------- files, in blocks

_BYTES_PER_ROW = 200  # what one row costs while its block is evaluated (read, layout, kernels)


def _lazy(data: Any, role: Role, inputs: Inputs, value_col: str) -> tuple[pl.LazyFrame, bool]:
    """``data`` as a lazy query with truth's column names, and whether it streams from a file
    (Parquet, CSV, TSV); any other source is read whole first."""
    user, item = inputs.columns[role]
    canonical = inputs.columns["truth"]
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        check_exists(path, role)
        fmt = format_of(path, role, inputs.formats[role])
        lf: pl.LazyFrame | None = None
        if fmt == "parquet":
            _check_parquet(path, role)
            lf = pl.scan_parquet(path)
        elif fmt in ("csv", "tsv"):  # every column as text, as the in-memory reader does
            sep = "\t" if fmt == "tsv" else ","
            lf = pl.scan_csv(path, separator=sep, infer_schema=False)
            names = lf.collect_schema().names()
            if value_col in names and value_col not in (user, item):
                lf = lf.with_columns(pl.col(value_col).cast(pl.Float64, strict=False))
        if lf is not None:
            names = lf.collect_schema().names()
            renames = {
                src: dst
                for src, dst in ((user, canonical[0]), (item, canonical[1]))
                if src != dst and src in names
            }
            return (lf.rename(renames) if renames else lf), True
    if isinstance(data, pl.LazyFrame):
        return data.rename({user: canonical[0], item: canonical[1]}, strict=False), True
    return inputs.read(data, role, value_col).lazy(), False


def _check_parquet(path: Path, role: Role) -> None:
    """Raise :class:`InputError` naming the file when ``path`` is not a Parquet file that can
    be read (0 bytes, cut short, not Parquet at all): its footer and row-group metadata are
    read here, before any pass over the rows."""
    try:
        meta = pq.ParquetFile(path).metadata
        meta.row_group(meta.num_row_groups - 1) if meta.num_row_groups else None
    except (OSError, pa.ArrowException, ValueError) as exc:
        first = first_line(exc)
        size = path.stat().st_size
        msg = (
            f"{role} file {str(path)!r} ({size} bytes) is not a readable Parquet file "
            f"({first}); expected a complete Parquet file (was it cut short while written?)."
        )
        raise InputError(msg) from None


def _bucket_key(t_type: pl.DataType, r_type: pl.DataType, user_col: str, kind: str) -> pl.Expr:
    """The user id as one type on both sides, so that equal users hash equal."""
    col = pl.col(user_col)
    if kind == "str":
        return col.cast(pl.String)
    if kind == "int" or (t_type.is_integer() and r_type.is_integer()):
        return col.cast(pl.Int64, strict=False)
    return col.cast(pl.String)  # mixed kinds: the first block's layout raises


def evaluate_stream(
    truth: Any,
    recs: Any,
    plan: tuple[Metric, ...],
    options: Options,
    *,
    block_bytes: int,
    sorted_by_user: SortedArg = "auto",
) -> Result:
    """:func:`receval.evaluate` with ``engine="stream"``: the users are cut into blocks that
    each fit in ``block_bytes`` (about 200 bytes a row), each block evaluated by an
    :class:`Evaluator`.

    Parquet files sorted by user (``sorted_by_user=True``, or ``"auto"`` when their metadata
    says so: ``sorting_columns``, else row groups whose user ranges do not overlap) are read
    in order, in batches, truth and recs in lock-step by user (:func:`_sorted_blocks`); each
    batch is checked on the fly, and at the first row out of order ``"auto"`` starts again
    with the partition pass below (``True`` raises), so the Result never depends on the guess.

    Otherwise, files (Parquet, CSV, TSV) are never read whole: one streaming pass of Polars
    writes each input's rows into one Parquet file per block of users (hashed user ids; rows
    keep their order, so ``ties="first"`` is unchanged) in a temporary directory (``TMPDIR``;
    as large as the inputs), then the blocks are read back one at a time.
    """
    inputs, kinds = options.inputs, options.kinds
    user_col = inputs.user_col
    t_lf, t_file = _lazy(truth, "truth", inputs, options.relevance_name)
    r_lf, r_file = _lazy(recs, "recs", inputs, options.order_col)
    # the blocks come read, with truth's names; train and items keep their own
    read = Inputs(
        {
            **inputs.columns,
            "truth": (user_col, inputs.item_col),
            "recs": (user_col, inputs.item_col),
        },
        {**inputs.formats, "truth": None, "recs": None},
    )

    def catalog(kind: type[pl.DataType]) -> pl.Series:
        """The distinct items of truth and recs, one streaming pass over each."""
        item_col, sides = inputs.item_col, []
        pairs: tuple[tuple[pl.LazyFrame, Role], ...] = ((t_lf, "truth"), (r_lf, "recs"))
        for lf, role in pairs:
            try:
                distinct = lf.select(pl.col(item_col).unique()).collect(engine="streaming")
            except (pl.exceptions.ComputeError, OSError, pa.ArrowException) as exc:
                raise _unreadable(role, truth if role == "truth" else recs, exc) from None
            distinct = cast_ids(distinct, role, {item_col: kinds["item"]})
            sides.append(distinct[item_col].drop_nulls().cast(kind))
        return pl.concat(sides)

    sized = options.items is None and any(m.spec.uses_catalog_size for m in plan)

    def evaluator() -> Evaluator:
        ev = Evaluator._of(plan, replace(options, inputs=read), catalog if sized else None)
        ev._check_users = False  # the blocks below hold disjoint users by construction
        return ev

    t_schema, r_schema = t_lf.collect_schema(), r_lf.collect_schema()
    for schema, role, path in ((t_schema, "truth", truth), (r_schema, "recs", recs)):
        for col in (user_col, inputs.item_col):
            if col not in schema:
                where = f" file {str(path)!r}" if isinstance(path, str | os.PathLike) else ""
                msg = (
                    f"{role}{where} is missing column {col!r} (columns found: "
                    f"{schema.names()}); name the column with user_col= / item_col= or "
                    "columns=."
                )
                raise InputError(msg)
    rows = sum(
        _collected(lf.select(pl.len()), role, data).item()
        for lf, role, data in ((t_lf, "truth", truth), (r_lf, "recs", recs))
    )
    n_blocks = max(1, -(-rows * _BYTES_PER_ROW // block_bytes))
    half = max(1, block_bytes // _BYTES_PER_ROW // 2)  # rows each sorted side buffers
    sides = _sorted_sides(
        truth, recs, inputs, t_schema, r_schema, kinds["user"], sorted_by_user, half
    )
    if sides is not None and (sorted_by_user is True or n_blocks > 1):
        ev = evaluator()
        try:
            for t, r in _sorted_blocks(*sides, half):
                ev.update(t, r)
            return ev.compute()
        except _Unsorted as exc:
            if sorted_by_user is True:
                msg = f"sorted_by_user=True: {exc}; sort the file by user or pass 'auto'."
                raise InputError(msg) from None
        except _NotSortable:
            pass  # the partition pass reads it (and its checks name what is wrong)
    ev = evaluator()
    if n_blocks == 1 or not (t_file or r_file):
        for t, r in _whole(
            t_lf, r_lf, n_blocks, user_col, t_schema, r_schema, kinds["user"], (truth, recs)
        ):
            ev.update(t, r)
        return ev.compute()
    key = _bucket_key(t_schema[user_col], r_schema[user_col], user_col, kinds["user"])
    with tempfile.TemporaryDirectory(prefix="receval-stream-") as tmp:
        for lf, name in ((t_lf, "truth"), (r_lf, "recs")):
            try:
                lf.sink_parquet(
                    pl.PartitionBy(
                        Path(tmp, name), key={"block": key.hash(seed=0) % n_blocks},
                        include_key=False, approximate_bytes_per_file=None,
                    ),
                    maintain_order=True, mkdir=True, compression="lz4",
                )  # fmt: skip
            except (pl.exceptions.PolarsError, OSError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                msg = f"{name} could not be cut into blocks of users: {first}"
                raise InputError(msg) from exc
        for b in range(n_blocks):
            t = _read_block(Path(tmp, "truth", f"block={b}"), t_schema)
            r = _read_block(Path(tmp, "recs", f"block={b}"), r_schema)
            if t.height or r.height:
                ev.update(t, r)
    return ev.compute()


# ------------------------------------------------------------- Parquet files sorted by user


class _Unsorted(Exception):
    """A sorted file's rows are out of user order (the message names the rows)."""


class _NotSortable(Exception):
    """A row whose user cannot be ordered (a null, or not an integer under id_type='int'):
    the partition pass reads the file and its checks raise the usual error."""


_BATCH_ROWS = 1 << 16  # the most rows read from a file at once


def _sort_key(t_type: pl.DataType, r_type: pl.DataType, kind: str) -> type[pl.DataType] | None:
    """The type in which both files' user ids are compared (the order the files are sorted
    in, and one value per user after ``id_type``), or None when there is none: integers
    compare as Int64 (also under ``id_type="str"``: the decimal text of distinct integers is
    distinct), text as String unless ``id_type="int"`` asks for integers."""
    if kind == "int" or (t_type.is_integer() and r_type.is_integer()):
        return pl.Int64
    if t_type == pl.String and r_type == pl.String:
        return pl.String
    return None


def _metadata_sorted(path: Path, column: str) -> bool:
    """Whether the Parquet footer says the rows are sorted by ``column``: a ``sorting_columns``
    entry ascending on it in every row group, else min/max statistics in every row group
    whose ranges follow one another (within a row group the batches are checked as read)."""
    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException):
        return False
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if column not in names or meta.num_row_groups == 0:
        return False
    index = names.index(column)
    groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
    declared = [getattr(g, "sorting_columns", None) or () for g in groups]
    if all(d and d[0].column_index == index and not d[0].descending for d in declared):
        return True
    last: Any = None
    for group in groups:
        stats = group.column(index).statistics
        if stats is None or not stats.has_min_max or stats.null_count:
            return False
        try:
            if last is not None and stats.min < last:
                return False
        except TypeError:
            return False
        last = stats.max
    return True


class _SortedSide:
    """One Parquet file read in batches, rows checked to be non-decreasing in user, held in
    a buffer until a block takes them."""

    def __init__(
        self, path: Path, role: str, user_col: str, renames: dict[str, str], schema: pl.Schema,
        key: pl.Expr, batch_rows: int,
    ) -> None:  # fmt: skip
        self.role = role
        self.path = path
        self.user_col = user_col
        self.renames = renames
        self.schema = schema
        self.key = key
        self.batches = pq.ParquetFile(path).iter_batches(batch_size=batch_rows)
        self.frames: list[pl.DataFrame] = []
        self.rows = 0  # rows in the buffer
        self.read = 0  # rows read from the file
        self.first: Any = None  # the buffer's first and last user (the key)
        self.last: Any = None
        self.done = False

    def fill(self, target: int) -> None:
        """Read until the buffer holds ``target`` rows and more than one user (or the file
        ends): then the rows below its last user are whole users."""
        while not self.done and (self.rows < target or self.first == self.last):
            try:
                batch = next(self.batches, None)
            except (OSError, pa.ArrowException) as exc:
                raise _unreadable(self.role, self.path, exc) from None
            if batch is None:
                self.done = True
                return
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if self.renames:
                frame = frame.rename(self.renames, strict=False)
            try:  # the types Polars' own reader gives (the partition pass reads with it)
                frame = frame.cast(dict(self.schema), strict=True)  # type: ignore[arg-type]
                keys = frame.select(self.key.alias("__key")).to_series()
            except pl.exceptions.PolarsError as exc:
                raise _NotSortable from exc
            if keys.null_count():
                raise _NotSortable
            self._check(keys, frame)
            if keys.len():
                if self.first is None or not self.rows:
                    self.first = keys[0]
                self.last = keys[-1]
                self.frames.append(frame.with_columns(keys))
                self.rows += frame.height
            self.read += frame.height

    def _check(self, keys: pl.Series, frame: pl.DataFrame) -> None:
        """Raise :class:`_Unsorted` at the batch's first user below the one before it."""
        if keys.len() == 0:
            return
        user = self.user_col
        if self.last is not None and self.read and keys[0] < self.last:
            at = 0
            before: Any = self.last
        else:
            down = (keys < keys.shift(1)).arg_true()
            if down.len() == 0:
                return
            at = int(down[0])
            before = frame[user][at - 1]
        msg = (
            f"{self.role} is not sorted by user: row {self.read + at} has user "
            f"{frame[user][at]!r}, after user {before!r} in the row before"
        )
        raise _Unsorted(msg)

    def take(self, bound: Any) -> pl.DataFrame:
        """The buffer's rows whose user is below ``bound`` (all of them for None)."""
        if not self.frames:
            return pl.DataFrame(schema=self.schema)
        buffer = pl.concat(self.frames) if len(self.frames) > 1 else self.frames[0]
        cut = buffer.height if bound is None else int(buffer["__key"].search_sorted(bound))
        rest = buffer.slice(cut)
        self.frames = [rest] if rest.height else []
        self.rows = rest.height
        self.first = rest["__key"][0] if rest.height else None
        return buffer.slice(0, cut).drop("__key")


def _sorted_sides(
    truth: Any, recs: Any, inputs: Inputs, t_schema: pl.Schema, r_schema: pl.Schema, kind: str,
    sorted_by_user: SortedArg, half: int,
) -> tuple[_SortedSide, _SortedSide] | None:  # fmt: skip
    """Readers of truth and recs in user order, or None when the sorted path does not apply
    (not two Parquet files, ``sorted_by_user=False``, ids of no common order, or with
    ``"auto"`` metadata that does not say sorted)."""
    if sorted_by_user is False:
        return None
    user_col = inputs.user_col
    paths: list[Path] = []
    roles: tuple[Role, Role] = ("truth", "recs")
    for data, role in zip((truth, recs), roles, strict=True):
        fmt = None
        if isinstance(data, str | os.PathLike):
            fmt = format_of(Path(data), role, inputs.formats[role])
        if fmt != "parquet":
            if sorted_by_user is True:
                msg = (
                    f"sorted_by_user=True reads Parquet files in order; {role} is "
                    f"{fmt or type(data).__name__}: pass sorted_by_user='auto' (or False)."
                )
                raise InputError(msg)
            return None
        paths.append(Path(data))
    key_type = _sort_key(t_schema[user_col], r_schema[user_col], kind)
    if key_type is None:
        if sorted_by_user is True:
            msg = (
                f"sorted_by_user=True: the user ids of truth ({t_schema[user_col]}) and recs "
                f"({r_schema[user_col]}) have no common order; give both integer or text ids."
            )
            raise InputError(msg)
        return None
    sources = {"truth": inputs.columns["truth"][0], "recs": inputs.columns["recs"][0]}
    if sorted_by_user == "auto" and not all(
        _metadata_sorted(p, sources[role]) for p, role in zip(paths, sources, strict=True)
    ):
        return None
    key = pl.col(user_col).cast(key_type, strict=False)
    batch = max(1, min(_BATCH_ROWS, half))
    sides = []
    for path, role, schema in zip(paths, roles, (t_schema, r_schema), strict=True):
        own = inputs.columns[role]
        canonical = inputs.columns["truth"]
        renames = {s: d for s, d in ((own[0], canonical[0]), (own[1], canonical[1])) if s != d}
        sides.append(_SortedSide(path, role, user_col, renames, schema, key, batch))
    return sides[0], sides[1]


def _sorted_blocks(
    t: _SortedSide, r: _SortedSide, half: int
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """Blocks of whole users from two files sorted by user: each side buffers about ``half``
    rows; the block takes both sides' rows below the smaller of the last users still being
    read (a user's rows are then all in the buffers), and the rest waits for the next."""
    while True:
        t.fill(half)
        r.fill(half)
        live = [side.last for side in (t, r) if not side.done]
        if not live:
            t_rows, r_rows = t.take(None), r.take(None)
            if t_rows.height or r_rows.height:
                yield t_rows, r_rows
            return
        bound = min(live)
        t_rows, r_rows = t.take(bound), r.take(bound)
        if t_rows.height or r_rows.height:
            yield t_rows, r_rows


def _unreadable(role: str, data: Any, exc: BaseException) -> InputError:
    """The error for rows of ``role`` that could not be read (a damaged file)."""
    first = first_line(exc)
    where = f" file {str(data)!r}" if isinstance(data, str | os.PathLike) else ""
    msg = f"{role}{where} could not be read ({first}); expected a complete, valid file."
    return InputError(msg)


def _collected(lf: pl.LazyFrame, role: str, data: Any) -> pl.DataFrame:
    """``lf`` read whole; a damaged file an :class:`InputError` naming it."""
    try:
        return lf.collect()
    except (pl.exceptions.ComputeError, OSError, pa.ArrowException) as exc:
        raise _unreadable(role, data, exc) from None


def _read_block(folder: Path, schema: pl.Schema) -> pl.DataFrame:
    """One block's rows (its files in write order), or no row."""
    files = sorted(folder.glob("*.parquet"))
    if not files:
        return pl.DataFrame(schema=schema)
    return pl.read_parquet(files)


def _whole(
    t_lf: pl.LazyFrame,
    r_lf: pl.LazyFrame,
    n_blocks: int,
    user_col: str,
    t_schema: pl.Schema,
    r_schema: pl.Schema,
    kind: str,
    files: tuple[Any, Any] = (None, None),
) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
    """Inputs held in memory (or small): cut by hashed user into ``n_blocks`` blocks."""
    t, r = _collected(t_lf, "truth", files[0]), _collected(r_lf, "recs", files[1])
    if n_blocks == 1:
        yield t, r
        return
    key = _bucket_key(t_schema[user_col], r_schema[user_col], user_col, kind)
    t_b = t.select((key.hash(seed=0) % n_blocks).alias("b"))["b"]
    r_b = r.select((key.hash(seed=0) % n_blocks).alias("b"))["b"]
    for b in range(n_blocks):
        yield t.filter(t_b == b), r.filter(r_b == b)
