"""The scan engine: exact full-catalog metrics from a model source, and its top-K lists.

A model source, :class:`~receval.FactorModel` (user and item factors, dot product or cosine)
or :class:`~receval.ScoreModel` (any function scoring every catalog item for a batch of users),
read and checked in :mod:`receval.data.models` (and importable from here too), stands in for a
recommendations table in :func:`receval.evaluate` and :func:`receval.compare`; :func:`topk`
returns the top-K table itself. This module matches truth, ``exclude`` and ``candidates`` to
the model (:func:`setup_model`), scans the blocks of scores that a
:class:`~receval.engines.scoring.Scorer` gives, and turns the scan into the metric families'
parts (:func:`evaluate_model`). docs/model.md describes the semantics; in short:

* A user's candidates are the catalog (the model's item ids), restricted by ``candidates`` and
  minus the user's ``exclude`` rows. Scores are computed in blocks of users sized from
  ``block_memory``; the score matrix is never materialised.
* Each block is read once by :func:`receval.kernels.model.scan_block`: for every truth item,
  the candidates scoring above it and tied with it, which give its exact position in the full
  ranking under every tie policy; and each user's top K, for the beyond-accuracy metrics.
* Ranking metrics and ``gauc`` follow exactly from those counts; rating metrics use the score
  of each truth pair; beyond-accuracy metrics read the top-K lists. Every number equals
  :func:`receval.evaluate` on the full ranked table (one row per user and candidate, in catalog
  order), which is never built.
"""

from __future__ import annotations

import ctypes
import enum
import sys
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numba
import numpy as np
import polars as pl

from receval._errors import (
    Choice,
    InputError,
    MetricError,
    caller_stacklevel,
    check_integer,
)
from receval.data.io import Inputs
from receval.data.layout import (
    INTERNAL,
    IdType,
    check_id_type,
    group_by_user,
    item_keys,
    show_rows,
    trec_tie_keys,
)
from receval.data.models import FactorModel, Model, ScoreModel, Similarity, is_model
from receval.data.tables import (
    match_users,
    raise_truth_repeats,
    read_train,
    read_truth,
    read_unified,
    unify_id_types,
    unify_items,
)
from receval.engines.inputs import with_family_tables
from receval.engines.scoring import DEFAULT_BLOCK_MEMORY, Scorer, parse_memory, progress_bar
from receval.families.contract import (
    ExactRanks,
    Options,
    Prepared,
    Ties,
    merge,
    no_evaluated_message,
)
from receval.families.providers import family_parts
from receval.families.ranking import match
from receval.kernels import grouping as G
from receval.kernels import model as MK
from receval.kernels.toolbox import frozen
from receval.metrics.result import Result
from receval.metrics.specs import Metric

__all__ = [
    "PAIR_KEY", "ExcludedTruth", "FactorModel", "Model", "ScoreModel", "Similarity",
    "catalog_tie_key", "evaluate_model", "is_model", "pair_offsets",
    "setup_model", "topk", "warn_model_facts",
]  # fmt: skip


class ExcludedTruth(Choice):
    """``excluded_truth=``, parsed where a model source's options are checked: truth rows
    that ``exclude`` lists for the same user are left out with a warning (``drop``) or
    raise (``raise``)."""

    DROP = enum.auto()
    RAISE = enum.auto()


_USERS_PER_CHUNK = 64


# ----------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class _Catalog:
    """The columns scored: catalog indices (None: every item) and each catalog item's column
    (-1: not scored)."""

    ids: pl.Series
    cols: np.ndarray | None
    col_of: np.ndarray

    @property
    def n_cols(self) -> int:
        return self.ids.len() if self.cols is None else int(self.cols.shape[0])


def _catalog(
    model: Model, candidates: Any, item_col: str, kinds: dict[str, IdType]
) -> tuple[_Catalog, pl.DataFrame | None]:
    """The scored columns and, for per-user candidates, their (user, item) rows unread."""
    ids = model.item_ids
    if kinds["item"] == "str" and ids.dtype != pl.String:
        ids = ids.cast(pl.String)
    n = ids.len()
    if candidates is None or _per_user(candidates):
        return _Catalog(ids, None, np.arange(n, dtype=np.int64)), None
    try:
        subset = pl.Series("candidates", candidates)
    except (TypeError, ValueError, OverflowError) as exc:
        msg = (
            "candidates must be item ids, a (user, item) table or a dict; could not read "
            f"them ({exc})."
        )
        raise InputError(msg) from None
    if subset.dtype.is_integer():
        subset = subset.cast(pl.Int64)
    elif subset.len() == 0:  # no candidates (of any dtype, [] is Null): nothing is scored
        subset = pl.Series("candidates", [], dtype=ids.dtype)
    subset, ids2 = unify_id_types(subset, ids, "item", "candidates")
    at = match_users(subset, ids2)
    missing = int((at < 0).sum())
    if missing:
        shown = subset.filter(pl.Series(at < 0)).head(5).to_list()
        msg = (
            f"candidates has {missing} item id(s) not in the model's item_ids, e.g. {shown}; "
            "expected catalog items."
        )
        raise InputError(msg)
    cols = np.unique(at)
    col_of = np.full(n, -1, dtype=np.int64)
    col_of[cols] = np.arange(cols.size, dtype=np.int64)
    return _Catalog(ids2, cols, col_of), None


def _is_table(value: object) -> bool:
    import os

    if isinstance(value, str | os.PathLike | pl.DataFrame | pl.LazyFrame):
        return True
    module = type(value).__module__.split(".")[0]
    return module in ("pandas", "pyarrow") and hasattr(value, "columns")


PAIR_KEY = np.int64(2**32)  # (user, column) pairs as one int64: user * PAIR_KEY + column


def pair_offsets(
    users: np.ndarray, cols: np.ndarray, n_users: int
) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and sorted, distinct columns per user of (user, column) pairs (both >= 0).

    Grouped by user in linear time (:func:`receval.kernels.grouping.radix_group`), then each
    user's columns sorted apart (2x10^6 pairs of 10^5 users: 0.05 s, where a sort of the pair
    keys took 0.13-0.19 s)."""
    users = np.ascontiguousarray(users, dtype=np.int64)
    if 0 < users.size < 1 << 32 and n_users <= 1 << G.RADIX_MAX_BITS:
        col64 = np.ascontiguousarray(cols, dtype=np.int64)
        offsets, _, (grouped,) = G.radix_group(users, 0, n_users, carry=[lambda: col64])
        return G.distinct_within(np.ascontiguousarray(offsets), grouped)
    key = np.sort(users * PAIR_KEY + cols)  # a sort, then drop repeats (np.unique hashes: slower)
    if key.size:
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]
    users, cols = key // PAIR_KEY, key % PAIR_KEY
    offsets = np.zeros(n_users + 1, dtype=np.int64)
    np.cumsum(np.bincount(users, minlength=n_users), out=offsets[1:])
    return offsets, np.ascontiguousarray(cols, dtype=np.int64)


# ---------------------------------------------------------------------------------- scan


@dataclass
class _Scan:
    """What the block scan found (per truth row, per truth user)."""

    t_score: np.ndarray
    above: np.ndarray
    tied: np.ndarray
    first_before: np.ndarray
    trec_before: np.ndarray
    n_cand: np.ndarray
    top_col: np.ndarray
    top_score: np.ndarray
    top_n: np.ndarray


def _scan(
    scorer: Scorer,
    model_row: np.ndarray,
    t_off: np.ndarray,
    t_col: np.ndarray,
    t_cand: np.ndarray,
    ex: tuple[np.ndarray, np.ndarray],
    pc: tuple[np.ndarray, np.ndarray] | None,
    tie_key: np.ndarray,
    want_first: bool,
    want_trec: bool,
    k_top: int,
    block_bytes: int,
    keys: pl.Series,
    progress: bool,
    sel_key: np.ndarray | None = None,
    held: int = 0,
) -> _Scan:
    """Score every user with a model row (``model_row >= 0``) in blocks and scan the blocks.

    ``sel_key``: per scored column, a distinct key that orders equal scores in the top K
    (None: catalog order). ``held``: bytes of the caller's that stay through the scan (truth
    grouped by user), taken from ``block_bytes`` with the scan's own arrays."""
    n_users = t_off.shape[0] - 1
    n_rows = t_col.shape[0]
    k_top = min(k_top, scorer.n_cols)  # no list is longer than the columns scored
    out = _Scan(
        t_score=np.full(n_rows, np.nan), above=np.zeros(n_rows, dtype=np.int64),
        tied=np.zeros(n_rows, dtype=np.int64), first_before=np.zeros(n_rows, dtype=np.int64),
        trec_before=np.zeros(n_rows, dtype=np.int64), n_cand=np.full(n_users, -1, dtype=np.int64),
        top_col=np.zeros((n_users, k_top), dtype=np.int64),
        top_score=np.zeros((n_users, k_top), dtype=np.float64),
        top_n=np.zeros(n_users, dtype=np.int64),
    )  # fmt: skip
    scored = np.flatnonzero(model_row >= 0)
    n_cols = scorer.n_cols
    if scored.size == 0 or n_cols == 0:  # nobody or nothing to score: every user has no list
        if n_cols == 0:
            out.n_cand[scored] = 0
        return out
    pc_off, pc_col = pc if pc is not None else (np.zeros(1, dtype=np.int64), np.zeros(0, np.int64))
    if sel_key is None:  # equal scores of the top K in catalog order
        sel_key = np.arange(n_cols, dtype=np.int64)
    key_col = np.ascontiguousarray(np.argsort(sel_key, kind="stable"), dtype=np.int64)
    layout: tuple[Any, ...] = (
        t_off, t_col, t_cand, ex[0], ex[1], pc_off, pc_col, pc is not None, tie_key,
        np.ascontiguousarray(sel_key, dtype=np.int64), key_col,
    )  # fmt: skip
    outputs = (out.t_score, out.above, out.tied, out.first_before, out.trec_before, out.n_cand,
               out.top_col, out.top_score, out.top_n)  # fmt: skip
    _trim_heap()
    # the blocks get what the scan's own arrays leave of the budget (at least a user each)
    held += sum(a.nbytes for a in (*layout, *outputs, scored) if isinstance(a, np.ndarray))
    block_bytes = max(0, block_bytes - held - model_row.nbytes)
    # torch keeps the scores, a masked copy or comparison masks and the top-K selection
    per_row = max(n_cols * scorer.itemsize * (3 if scorer.model.uses_torch else 1), 1)
    block = int(max(1, min(block_bytes // per_row, scored.size or 1)))
    with progress_bar(progress, int(scored.size), "scoring") as advance:
        if isinstance(scorer.model, FactorModel) and not scorer.model.uses_torch:
            _scan_factors(scorer, scored, model_row, layout, want_first, want_trec, k_top,
                          outputs, block_bytes, keys, advance)  # fmt: skip
            return out
        for start in range(0, scored.size, block):
            users = scored[start : start + block]
            scores = scorer.block(model_row[users], keys.gather(users))
            if scorer.model.uses_torch:
                from receval.kernels.model_torch import scan_block_torch

                scan_block_torch(scores, users, layout, want_first, want_trec, k_top, outputs)
            else:
                n_chunks = max(1, min(users.size // 8, numba.get_num_threads() * 4))
                MK.scan_block(
                    scores, users, layout, want_first, want_trec, k_top, outputs, n_chunks
                )
            del scores
            advance(int(users.size))
    return out


def _trim_heap() -> None:
    """Hand the C heap's free memory back to the system before the score blocks are made
    (glibc's ``malloc_trim``; elsewhere nothing). The reading of truth and exclude frees
    arrays of a few MiB that glibc keeps for reuse, and the blocks (fresh mappings) cannot
    reuse them: at 10^5 users x 10^5 items with 2x10^6 exclude rows, the peak over the data
    and the code was 328 MiB with a 256 MiB budget, 262-266 MiB after the trim (under 1 ms)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        trim = ctypes.CDLL(None).malloc_trim  # absent from musl's libc
    except (OSError, AttributeError):
        return
    trim(0)


_CACHE_BYTES = 128 << 20
"""Most bytes of a worker's block of scores (``block_memory`` shared by the workers decides
below it). Each block's product reads every item factor once, so small blocks re-read them:
at 10^5 users x 10^5 items on 2 threads, blocks of 32 MiB took 15.1-15.7 s, 64 MiB 12.2-12.7 s,
128 MiB 10.6-11.4 s and 256 MiB 10.2-11.5 s (the product alone: 9.5 s)."""


def _scan_factors(
    scorer: Scorer,
    scored: np.ndarray,
    model_row: np.ndarray,
    layout: tuple[Any, ...],
    want_first: bool,
    want_trec: bool,
    k_top: int,
    outputs: tuple[np.ndarray, ...],
    block_bytes: int,
    keys: pl.Series,
    advance: Callable[[int], None],
) -> None:
    """The scan of NumPy factors: each worker thread scores a small block of users with a
    single-threaded BLAS product into its own buffer and scans it at once, while it is still
    in cache (as many workers as Numba threads; a product and a scan both release the GIL)."""
    from threadpoolctl import threadpool_limits

    n_cols = scorer.n_cols
    workers = max(1, min(numba.get_num_threads(), scored.size))
    per_row = max(n_cols * scorer.itemsize, 1)
    rows = int(max(1, min(block_bytes // (workers * per_row), _CACHE_BYTES // per_row)))
    rows = min(rows, max(1, -(-scored.size // workers)))
    # as many blocks per worker, of one size: with 31 blocks on 2 workers (2x10^4 users x
    # 5x10^4 items), one worker scored the last block alone, about 65 ms of a 1.1 s call
    n_blocks = -(-scored.size // rows)
    n_blocks = -(-n_blocks // workers) * workers
    rows = max(1, -(-scored.size // n_blocks))
    starts = iter(range(0, scored.size, rows))
    lock = threading.Lock()
    failed: list[tuple[int, BaseException]] = []  # (block start, error)
    views = [frozen(a) if isinstance(a, np.ndarray) else a for a in layout]
    t_off, t_col, t_cand, ex_off, ex_col, pc_off, pc_col, per_user, tie_key, sel_key, key_col = (
        views
    )

    def work() -> None:
        buf = np.empty((rows, n_cols), dtype=scorer.items_t.dtype)
        while not failed:
            with lock:
                start = next(starts, None)
            if start is None:
                return
            users = scored[start : start + rows]
            block = buf[: users.shape[0]]
            try:
                scorer.block_into(block, model_row[users], partial(keys.gather, users))
                MK.scan_rows(
                    block, users, t_off, t_col, t_cand, ex_off, ex_col, pc_off, pc_col,
                    bool(per_user), tie_key, want_first, want_trec, k_top, sel_key, key_col,
                    outputs,
                )  # fmt: skip
            except BaseException as exc:
                failed.append((start, exc))
                return
            with lock:
                advance(int(users.shape[0]))

    with threadpool_limits(limits=1, user_api="blas"):
        if workers == 1:
            work()
        else:
            with ThreadPoolExecutor(workers - 1, thread_name_prefix="receval-score") as pool:
                futures = [pool.submit(work) for _ in range(workers - 1)]
                work()
                for f in futures:
                    f.result()
    if failed:  # blocks are handed out in order and a worker finishes the one it holds, so
        # every block before a failed one was scanned: the first failure is the same as a
        # one-thread run would raise, whichever thread saw it first
        raise min(failed, key=lambda f: f[0])[1]


# ---------------------------------------------------------------------------------- driver


@dataclass
class _Setup:
    """Truth grouped by user, and each truth user's and row's place in the model."""

    t_frame: pl.DataFrame
    t_grp: Any
    catalog: _Catalog
    model_row: np.ndarray
    t_col: np.ndarray
    t_cand: np.ndarray
    ex: tuple[np.ndarray, np.ndarray]
    pc: tuple[np.ndarray, np.ndarray] | None
    facts: dict[str, Any]


def _per_user(candidates: Any) -> bool:
    """Whether ``candidates`` gives per-user rows (a table, file or dict), not item ids."""
    return candidates is not None and (isinstance(candidates, dict) or _is_table(candidates))


_ROW = f"{INTERNAL}_row"  # a row index column


def _excluded_truth(
    t_frame: pl.DataFrame,
    t_grp: Any,
    cat_idx: np.ndarray,
    excluded: pl.DataFrame,
    ex_idx: np.ndarray,
    ex_lists: tuple[np.ndarray, np.ndarray],
    user_col: str,
    item_col: str,
) -> np.ndarray:
    """Per row of ``t_frame`` (its order), whether ``excluded`` lists its (user, item): from
    each user's sorted catalog indices (``ex_lists``) for catalog items, by id for the rest."""
    hit = np.zeros(t_frame.height, dtype=np.bool_)
    hit[t_grp.rows(np.flatnonzero(MK.listed_rows(t_grp.offsets, cat_idx, ex_lists)))] = True
    outside = ex_idx < 0
    off_catalog = np.flatnonzero(cat_idx < 0)
    if outside.any() and off_catalog.size:  # items the model does not know: matched by id
        rows = t_grp.rows(off_catalog)
        pick = np.zeros(t_frame.height, dtype=np.bool_)
        pick[rows] = True
        found = (
            t_frame.select(user_col, item_col)
            .with_row_index(_ROW)
            .filter(pl.Series(pick))
            .join(excluded.filter(pl.Series(outside)), on=[user_col, item_col], how="semi")
        )
        hit[found[_ROW].to_numpy()] = True
    return hit


def _drop_excluded(
    t_frame: pl.DataFrame, hit: np.ndarray, excluded_truth: ExcludedTruth, facts: dict[str, Any]
) -> pl.DataFrame:
    """Truth without the rows ``hit`` marks (rows that ``exclude`` lists for the same user; a
    warning), or an error with ``excluded_truth="raise"``; ``facts["truth_rows_excluded"]``
    counts them."""
    count = int(np.count_nonzero(hit))
    facts["truth_rows_excluded"] = count
    if not count:
        return t_frame
    mask = pl.Series(hit)
    shown = show_rows(t_frame, mask, t_frame.columns)
    if excluded_truth is ExcludedTruth.RAISE:
        msg = (
            f"truth has {count} (user, item) row(s) that exclude also lists for the same "
            "user (repeat consumption: such an item can never be recommended); "
            "excluded_truth='raise'. Use excluded_truth='drop' (CLI --excluded-truth drop) to "
            "leave them out of truth. "
            f"First offending rows:\n{shown}"
        )
        raise InputError(msg)
    warnings.warn(
        f"truth has {count} (user, item) row(s) that exclude also lists for the same user; "
        "they can never be recommended and are left out of truth (excluded_truth='drop'; "
        "counted in result.settings['model']['truth_rows_excluded']). First rows:\n" + shown,
        UserWarning,
        stacklevel=caller_stacklevel(),
    )
    return t_frame.filter(~mask)


def _to_columns(
    lists: tuple[np.ndarray, np.ndarray], catalog: _Catalog
) -> tuple[np.ndarray, np.ndarray]:
    """Per-user sorted catalog indices as sorted scored columns (items that are not scored,
    left out: ``col_of`` is increasing over the scored ones)."""
    if catalog.cols is None:
        return lists
    cols = catalog.col_of[lists[1]]
    return _kept((lists[0], cols), cols >= 0)


def _kept(lists: tuple[np.ndarray, np.ndarray], keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-user lists (offsets, values) with only the values ``keep`` marks, in order."""
    offsets, values = lists
    kept = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    return np.ascontiguousarray(kept[offsets]), np.ascontiguousarray(values[keep])


def _masks(
    keys: pl.Series,
    catalog: _Catalog,
    excluded: pl.DataFrame | None,
    per_user: pl.DataFrame | None,
    user_col: str,
    item_col: str,
    ex_lists: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray] | None]:
    """Per user (``keys``): the excluded columns and, with per-user candidates, the candidate
    columns minus the excluded ones (both as offsets and sorted columns). ``ex_lists``: the
    excluded catalog indices per user, when known already (:func:`_catalog_lists`)."""
    n_users = keys.len()
    ex = (np.zeros(n_users + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if ex_lists is None and excluded is not None:
        ex_lists = _catalog_lists(excluded, keys, catalog.ids, user_col, item_col)
    if ex_lists is not None:
        ex = _to_columns(ex_lists, catalog)
    if per_user is None:
        return ex, None
    pc = _to_columns(_catalog_lists(per_user, keys, catalog.ids, user_col, item_col), catalog)
    if ex[1].size:  # candidates minus the excluded items
        pu = np.repeat(np.arange(n_users), np.diff(pc[0]))
        ex_key = np.repeat(np.arange(n_users), np.diff(ex[0])) * PAIR_KEY + ex[1]
        pc = _kept(pc, ~np.isin(pu * PAIR_KEY + pc[1], ex_key))  # still sorted, distinct
    return ex, pc


def _catalog_lists(
    frame: pl.DataFrame,
    keys: pl.Series,
    ids: pl.Series,
    user_col: str,
    item_col: str,
    item_idx: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per user of ``keys``, the sorted distinct catalog indices (in ``ids``) of ``frame``'s
    (user, item) rows; rows of other users or items are left out. ``item_idx``: the rows'
    catalog indices, when known already."""
    users = match_users(frame[user_col], keys)
    idx = match_users(frame[item_col], ids) if item_idx is None else item_idx
    ok = (users >= 0) & (idx >= 0)
    return pair_offsets(users[ok], idx[ok], keys.len())


def setup_model(
    t_frame: pl.DataFrame,
    model: Model,
    *,
    inputs: Inputs,
    kinds: dict[str, IdType],
    exclude: Any,
    candidates: Any,
    excluded_truth: ExcludedTruth,
    user_col: str,
    item_col: str,
) -> _Setup:
    """Match truth, exclude and candidates to the model's users and catalog; truth's repeated
    (user, item) rows raise here (:func:`read_truth` with ``check_repeats=False``)."""
    catalog, _ = _catalog(model, candidates, item_col, kinds)
    items = catalog.ids
    t_items, items = unify_id_types(t_frame[item_col], items, "item", "truth")
    catalog = _Catalog(items, catalog.cols, catalog.col_of)
    t_frame = t_frame.with_columns(t_items.alias(item_col))
    model_users = model.user_ids
    if model_users is not None:
        if kinds["user"] == "str" and model_users.dtype != pl.String:
            model_users = model_users.cast(pl.String)
        t_users, model_users = unify_id_types(t_frame[user_col], model_users, "user", "truth")
        t_frame = t_frame.with_columns(t_users.alias(user_col))
    facts: dict[str, Any] = {"exclude_rows_not_in_catalog": 0, "truth_rows_excluded": 0}
    t_grp = group_by_user(t_frame, user_col)
    cat_idx = match_users(t_grp.column(item_col), items)
    _check_truth_repeats(t_frame, t_grp, cat_idx, items.len(), user_col, item_col)
    excluded = read_unified(exclude, "exclude", inputs, kinds, t_frame[user_col], items)
    ex_lists = None
    if excluded is not None:
        ex_idx = match_users(excluded[item_col], items)
        if (ex_idx < 0).any():
            outside = excluded.filter(pl.Series(ex_idx < 0))
            facts["exclude_rows_not_in_catalog"] = outside.unique().height  # distinct rows
        ex_lists = _catalog_lists(excluded, t_grp.keys, items, user_col, item_col, ex_idx)
        hit = _excluded_truth(
            t_frame, t_grp, cat_idx, excluded, ex_idx, ex_lists, user_col, item_col
        )  # fmt: skip
        if hit.any():  # rows left out: group the rest again (users may be gone)
            t_frame = _drop_excluded(t_frame, hit, excluded_truth, facts)
            t_grp = group_by_user(t_frame, user_col)
            cat_idx = match_users(t_grp.column(item_col), items)
            ex_lists = _catalog_lists(excluded, t_grp.keys, items, user_col, item_col, ex_idx)
    if t_frame.height == 0:
        msg = "truth has no row left once the excluded (user, item) rows are left out."
        raise InputError(msg)
    n_users = t_grp.n_users
    keys = t_grp.keys
    if model_users is not None:
        model_row = match_users(keys, model_users)
    else:
        model_row = np.arange(n_users, dtype=np.int64)
    t_col = np.where(cat_idx >= 0, catalog.col_of[np.maximum(cat_idx, 0)], -1)
    t_col = np.ascontiguousarray(t_col, dtype=np.int64)
    per_user = read_unified(
        candidates if _per_user(candidates) else None, "candidates", inputs, kinds, keys, items
    )
    ex, pc = _masks(keys, catalog, excluded, per_user, user_col, item_col, ex_lists)
    t_cand = t_col >= 0
    facts["candidates"] = "all" if catalog.cols is None else "global"
    if pc is not None:
        t_user = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(t_grp.offsets))
        in_pc_key = np.repeat(np.arange(n_users), np.diff(pc[0])) * PAIR_KEY + pc[1]
        t_cand = t_cand & np.isin(t_user * PAIR_KEY + np.maximum(t_col, 0), in_pc_key)
        facts["candidates"] = "per_user"
    facts["users_scored"] = int((model_row >= 0).sum())
    facts["truth_users_not_in_model"] = int((model_row < 0).sum())
    facts["truth_rows_not_in_catalog"] = int((cat_idx < 0).sum())
    return _Setup(
        t_frame=t_frame, t_grp=t_grp, catalog=catalog, model_row=model_row, t_col=t_col,
        t_cand=np.ascontiguousarray(t_cand), ex=ex, pc=pc, facts=facts,
    )  # fmt: skip


def catalog_tie_key(catalog: _Catalog) -> np.ndarray:
    """Per scored column, trec_eval's tiebreak key (higher first: ``ties="trec"``)."""
    ids = catalog.ids if catalog.cols is None else catalog.ids.gather(catalog.cols)
    keys = item_keys(ids) if ids.dtype != pl.String else np.arange(ids.len(), dtype=np.int64)
    return np.ascontiguousarray(trec_tie_keys(ids, keys), dtype=np.int64)


def _list_order(catalog: _Catalog, ties: Ties) -> np.ndarray | None:
    """The order of equal scores in the top-K lists of the beyond-accuracy metrics, as that
    family orders a list (docs/beyond.md): catalog order for ``first`` (None), item id
    descending as text for ``trec``, else item id ascending."""
    if ties is Ties.FIRST:
        return None
    ids = catalog.ids if catalog.cols is None else catalog.ids.gather(catalog.cols)
    key = pl.Series(-catalog_tie_key(catalog)) if ties is Ties.TREC else ids
    rank = key.rank("ordinal").cast(pl.Int64) - 1
    return np.ascontiguousarray(rank.to_numpy(), dtype=np.int64)


def _marker_rows(
    scan: _Scan, setup: _Setup, keys: pl.Series, user_col: str, item_col: str
) -> pl.DataFrame:
    """One (user, item, score 0) row per user with candidates, the item its first candidate:
    the recommendations table of the layout when no metric reads the lists (the ranking
    metrics and gauc come from the counts)."""
    users = np.flatnonzero(scan.n_cand > 0)
    n_users = keys.len()
    if setup.pc is not None:  # the first listed candidate
        col = setup.pc[1][setup.pc[0][users]]
    else:  # the first column not excluded: the excluded columns 0, 1, ... at the list's head
        off, cols = setup.ex
        owner = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(off))
        at_head = cols == np.arange(cols.size, dtype=np.int64) - off[owner]
        col = np.bincount(owner[at_head], minlength=n_users).astype(np.int64)[users]
    catalog = setup.catalog
    ids = catalog.ids if catalog.cols is None else catalog.ids.gather(catalog.cols)
    return pl.DataFrame(
        {user_col: keys.gather(users), item_col: ids.gather(col), "score": np.zeros(users.size)}
    )


def _top_table(
    scan: _Scan, keys: pl.Series, catalog: _Catalog, user_col: str, item_col: str
) -> pl.DataFrame:
    """The top-K lists as a (user, item, score, rank) table, best first."""
    n = scan.top_n
    k = scan.top_col.shape[1]
    mask = np.arange(k)[None, :] < n[:, None]
    users = np.repeat(np.arange(n.shape[0]), n)
    cols = scan.top_col[mask]
    ids = catalog.ids if catalog.cols is None else catalog.ids.gather(catalog.cols)
    return pl.DataFrame(
        {
            user_col: keys.gather(users),
            item_col: ids.gather(cols),
            "score": scan.top_score[mask],
            "rank": (np.nonzero(mask)[1] + 1).astype(np.int64),
        }
    )


def check_model_metrics(plan: tuple[Metric, ...], ties: Ties) -> int:
    """Refuse the metrics a model source cannot give; the largest beyond-accuracy K (0: none)."""
    refused = [m.canonical for m in plan if m.spec.family == "classification" and m.is_global()]
    if refused:
        msg = (
            f"{', '.join(refused)} cannot be computed from a model source: a global "
            "classification metric compares rows of different users over the whole catalog "
            "(users x items rows). Use gauc (each user's AUC over all candidates, exact), or "
            "receval.topk(model, k) to build a recommendations table and evaluate that."
        )
        raise MetricError(msg)
    k_top = 0
    for m in plan:
        if m.spec.family != "beyond":
            continue
        if m.k is None:
            msg = (
                f"{m.canonical} needs a cutoff from a model source (the list would be the whole "
                f"catalog): ask for {m.canonical}@K, for example {m.canonical}@10."
            )
            raise MetricError(msg)
        k_top = max(k_top, int(m.k))
    past = [m.canonical for m in plan if m.spec.ties_past_cutoff]
    if past and ties is Ties.EXPECTED:
        msg = (
            f"{', '.join(past)} with ties='expected' share the list's attention with the items "
            "tied with the K-th one past the cutoff, which a model's top-K lists do not hold. "
            "Use another ties policy (first, trec, optimistic, pessimistic) with a model "
            "source, or evaluate a recommendations table that keeps every tied item."
        )
        raise MetricError(msg)
    return k_top


def _check_truth_repeats(
    t_frame: pl.DataFrame,
    t_grp: Any,
    cat_idx: np.ndarray,
    n_items: int,
    user_col: str,
    item_col: str,
) -> None:
    """:func:`_raise_truth_repeats` from truth grouped by user: catalog items by their index
    (``cat_idx``, one linear pass: 0.08 s and 137 MiB of Polars' memory less than the query
    at 5x10^5 rows), the others (usually none) by id; the query only words the error."""
    if MK.repeated_item(t_grp.offsets, cat_idx, n_items) < 0:
        outside = np.zeros(t_frame.height, dtype=np.bool_)
        outside[t_grp.rows(np.flatnonzero(cat_idx < 0))] = True
        if np.count_nonzero(outside) < 2:
            return
        rest = t_frame.select(user_col, item_col).filter(pl.Series(outside))
        if not rest.select(pl.struct(user_col, item_col).is_duplicated()).to_series().any():
            return
    raise_truth_repeats(t_frame, user_col, item_col)


def evaluate_model(
    truth: Any,
    model: Model,
    plan: tuple[Metric, ...],
    options: Options,
    *,
    exclude: Any,
    candidates: Any,
    block_memory: object,
    excluded_truth: str,
    progress: bool,
) -> Result:
    """:func:`receval.evaluate` with a model in place of recs (options already checked)."""
    if options.rank_col is not None:
        msg = "rank_col names a column of a recs table; a model source has scores (drop rank_col)."
        raise InputError(msg)
    excluded = ExcludedTruth.parse(excluded_truth, "excluded_truth")
    block_bytes = parse_memory(block_memory)
    inputs, kinds, ties = options.inputs, options.kinds, options.ties
    k_beyond = check_model_metrics(plan, ties)
    user_col, item_col = options.user_col, options.item_col
    t_frame, rel_col, has_relevance = read_truth(
        truth, inputs, kinds, options.relevance_col, check_repeats=False
    )
    setup = setup_model(
        t_frame, model, inputs=inputs, kinds=kinds, exclude=exclude, candidates=candidates,
        excluded_truth=excluded, user_col=user_col, item_col=item_col,
    )  # fmt: skip
    t_grp = setup.t_grp
    ranking = tuple(m for m in plan if m.spec.family == "ranking")
    trec = ties is Ties.TREC
    scan = _scan(
        Scorer(model, setup.catalog.ids, setup.catalog.cols), setup.model_row, t_grp.offsets,
        setup.t_col, setup.t_cand, setup.ex, setup.pc,
        catalog_tie_key(setup.catalog) if trec else np.zeros(0, dtype=np.int64),
        want_first=ties is Ties.FIRST, want_trec=trec,
        k_top=k_beyond, block_bytes=block_bytes, keys=t_grp.keys, progress=progress,
        sel_key=_list_order(setup.catalog, ties) if k_beyond else None, held=t_grp.nbytes,
    )  # fmt: skip

    if k_beyond:
        lists = _top_table(scan, t_grp.keys, setup.catalog, user_col, item_col).drop("rank")
    else:  # no list is read: one row per user with candidates marks who has recommendations
        lists = _marker_rows(scan, setup, t_grp.keys, user_col, item_col)
    r_grp = group_by_user(lists, user_col)
    u2r = match_users(t_grp.keys, r_grp.keys)
    context = options.context(has_relevance=has_relevance)
    if options.items is None:  # the beyond metrics' catalog: the model's items
        catalog = setup.catalog.ids.alias(item_col).sort()
        context = replace(context, catalog=catalog, catalog_source="model")
    prep, _ = match(
        (), t_grp, r_grp, u2r, user_col=user_col, item_col=item_col, relevance_col=rel_col,
        order_col="score", by_rank=False, ties=ties, threshold=options.threshold,
        no_recs=options.no_recs, context=context,
    )  # fmt: skip
    if options.train is not None:
        prep = _train_candidates(prep, setup, options.train)
    n_chunks = max(1, min(t_grp.n_users // _USERS_PER_CHUNK, numba.get_num_threads() * 16))
    prep = replace(prep, exact=ExactRanks(
        t_col=setup.t_col, t_cand=setup.t_cand, t_score=scan.t_score, above=scan.above,
        tied=scan.tied, first_before=scan.first_before, trec_before=scan.trec_before,
        n_cand=scan.n_cand, n_chunks=n_chunks,
    ))  # fmt: skip
    beyond = tuple(m for m in plan if m.spec.family == "beyond")
    if beyond:
        prep = with_family_tables(beyond, prep)
    parts = family_parts(plan, prep)
    if not ranking and prep.counts.evaluated == 0:
        raise InputError(no_evaluated_message(prep.threshold))
    settings = {**options.settings(has_relevance), "model": dict(setup.facts)}
    warn_model_facts(setup.facts)
    return merge(plan, parts, prep, settings)


def _train_candidates(prep: Prepared, setup: _Setup, train: Any) -> Prepared:
    """``prep`` with train read once (for the beyond metrics) and ``counts.recs_in_train``:
    the train (user, item) pairs of truth users that are candidates (in the catalog, not
    excluded, and among the user's candidates), which the model may recommend; warns when
    there are any (usually ``exclude=train`` is missing)."""
    user_col, item_col = prep.user_col, prep.item_col
    items = setup.catalog.ids
    kind = pl.String if items.dtype == pl.String else pl.Int64
    id_type, inputs = prep.context.id_type, prep.context.inputs
    pairs = read_train(train, user_col, item_col, kind, id_type, inputs, unify=False)
    assert pairs is not None
    users_t, _ = unify_id_types(pairs[user_col], prep.t_grp.keys, "user", "train")
    items_t, _ = unify_id_types(pairs[item_col], items, "item", "train")
    known = pl.DataFrame({user_col: users_t, item_col: items_t})
    ex, _ = _masks(prep.t_grp.keys, setup.catalog, known, None, user_col, item_col)
    n_users = prep.t_grp.n_users
    owner = np.repeat(np.arange(n_users, dtype=np.int64), np.diff(ex[0]))
    key = owner * PAIR_KEY + ex[1]
    for mask in (setup.ex, setup.pc):  # not excluded, and a candidate where candidates say
        if mask is None:
            continue
        listed = np.repeat(np.arange(n_users), np.diff(mask[0])) * PAIR_KEY + mask[1]
        inside = np.isin(key, listed)
        key = key[~inside] if mask is setup.ex else key[inside]
    if setup.model_row.size:  # only users the model scores
        key = key[setup.model_row[key // PAIR_KEY] >= 0]
    rows, n_users_hit = int(key.size), int(np.unique(key // PAIR_KEY).size)
    if rows:
        warnings.warn(
            f"train has {rows} (user, item) pair(s) of {n_users_hit} truth user(s) that are "
            "candidates of the model: it may recommend items the user already has. Pass "
            "exclude=train (CLI --exclude) to leave them out, or keep them knowingly "
            "(result.counts.recs_in_train counts them).",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )
    context = prep.context
    with suppress(InputError):  # the beyond metrics reuse train typed as the catalog's ids
        context = replace(context, train_pairs=unify_items(pairs, "train", item_col, kind))
    return replace(prep, counts=replace(prep.counts, recs_in_train=rows), context=context)


def warn_model_facts(facts: dict[str, Any]) -> None:
    """A warning for truth that the model cannot rank (users or items it does not know)."""
    said = []
    if facts["truth_users_not_in_model"]:
        said.append(
            f"{facts['truth_users_not_in_model']} truth user(s) are not in the model's user_ids "
            "(they have no recommendations: no_recs applies)"
        )
    if facts["truth_rows_not_in_catalog"]:
        said.append(
            f"{facts['truth_rows_not_in_catalog']} truth row(s) hold items not in the model's "
            "item_ids (never recommended; they count in |R|)"
        )
    if said:
        warnings.warn(
            "; ".join(said) + ". Counted in result.settings['model'].",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )


# ------------------------------------------------------------------------------------ topk


def topk(
    model: Model,
    k: int,
    *,
    users: Any = None,
    exclude: Any = None,
    candidates: Any = None,
    block_memory: int | str = DEFAULT_BLOCK_MEMORY,
    user_col: str = "user",
    item_col: str = "item",
    id_type: Any = "auto",
    progress: bool = False,
) -> pl.DataFrame:
    """The top-``k`` table of a model: ``(user, item, score, rank)``, best first.

    Each user's ``k`` best candidates (the catalog, restricted by ``candidates``, minus the
    user's ``exclude`` rows) by descending score, equal scores in catalog order (the order of
    the model's item ids), ``rank`` 1 .. k; fewer rows for a user with fewer candidates.
    Scores are computed in blocks of users sized from ``block_memory``.

    Parameters
    ----------
    model:
        A :class:`FactorModel` or :class:`ScoreModel`.
    k:
        The list length, an integer >= 1.
    users:
        The user ids to list (default: a FactorModel's ``user_ids``; required for a
        ScoreModel). Ids the model does not know are an error.
    exclude, candidates, block_memory, id_type, progress:
        As for :func:`receval.evaluate` with a model.
    user_col, item_col:
        The names of the output's id columns (and of ``exclude``'s and ``candidates``').

    Examples
    --------
    >>> import numpy as np, receval
    >>> model = receval.FactorModel(np.array([[1.0], [2.0]]), np.array([[3.0], [1.0], [2.0]]))
    >>> receval.topk(model, 2, exclude={0: [0]})["item"].to_list()
    [2, 1, 0, 2]
    """
    if not is_model(model):
        msg = (
            "model must be a receval.FactorModel or receval.ScoreModel; got "
            f"{type(model).__name__}."
        )
        raise InputError(msg)
    check_integer("k", k, 1, kinds=(int, np.integer))
    kinds = check_id_type(id_type)
    block_bytes = parse_memory(block_memory)
    if users is None:
        if model.user_ids is None:
            msg = (
                "users must list the user ids to score: this ScoreModel was made without user_ids."
            )
            raise InputError(msg)
        user_ids = model.user_ids
    else:
        try:
            user_ids = pl.Series(user_col, users)
        except (TypeError, ValueError, OverflowError) as exc:
            msg = f"users must be a 1-D sequence of user ids; could not read it ({exc})."
            raise InputError(msg) from None
        if user_ids.dtype.is_integer():
            user_ids = user_ids.cast(pl.Int64)
        user_ids = user_ids.unique(maintain_order=True)
    if kinds["user"] == "str" and user_ids.dtype != pl.String:
        user_ids = user_ids.cast(pl.String)
    inputs = Inputs.of(None, None, user_col, item_col)
    catalog, _ = _catalog(model, candidates, item_col, kinds)
    items = catalog.ids
    model_users = model.user_ids
    keys = user_ids.alias(user_col)  # no truth rows: the scan only keeps each user's top k
    if model_users is not None:
        if kinds["user"] == "str" and model_users.dtype != pl.String:
            model_users = model_users.cast(pl.String)
        keys, model_users = unify_id_types(keys, model_users, "user", "users")
        model_row = match_users(keys, model_users)
        unknown = model_row < 0
        if unknown.any():
            shown = keys.filter(pl.Series(unknown)).head(5).to_list()
            msg = f"users has {int(unknown.sum())} id(s) not in the model's user_ids, e.g. {shown}."
            raise InputError(msg)
    else:
        model_row = np.arange(keys.len(), dtype=np.int64)
    n_users = keys.len()

    excluded = read_unified(exclude, "exclude", inputs, kinds, keys, items)
    per_user = read_unified(
        candidates if _per_user(candidates) else None, "candidates", inputs, kinds, keys, items
    )
    ex, pc = _masks(keys, catalog, excluded, per_user, user_col, item_col)
    del excluded, per_user  # read into ex and pc: not kept through the scan
    t_off = np.zeros(n_users + 1, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    scan = _scan(
        Scorer(model, catalog.ids, catalog.cols), model_row, t_off, none,
        np.zeros(0, dtype=np.bool_), ex, pc, none, want_first=False, want_trec=False,
        k_top=int(k), block_bytes=block_bytes, keys=keys, progress=progress,
    )  # fmt: skip
    return _top_table(scan, keys.alias(user_col), catalog, user_col, item_col)
