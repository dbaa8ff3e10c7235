"""The mergeable-state protocol of the metrics that are not a mean of per-user values.

A metric such as ``auc`` over rows, ``coverage`` or ``r2`` over rows has no per-user value to
average: its provider returns a :class:`GlobalState` in :attr:`Part.states
<receval.families.contract.Part>`, and every engine moves, merges and finishes it through the
methods below, never by the metric it serves:

* the local engine finishes it in one process (:func:`receval.families.contract.merge`);
* the streaming evaluator (:mod:`receval.engines.stream`) merges one state per block of
  users: memory is the state, not the rows;
* the sharded scheme (:mod:`receval.engines.shard`) and the Spark engine
  (:mod:`receval.engines.spark`) ship each shard's detached state to the driver, move its rows
  with their own shuffle (:attr:`GlobalState.spread`) and reduce them part by part, so that no
  machine holds every row (``auc`` over 10^9 rows never brings its distinct scores to the
  driver).

The states themselves live with their family's provider: in
:mod:`receval.families.pointwise`, ``ScoreHistogram`` (``auc`` and ``average_precision`` over
rows), ``ConfusionCounts`` (thresholded rates) and ``RatingRows`` (rating metrics over rows);
in :mod:`receval.families.exposure` (the beyond-accuracy family's), ``ExposureCounts``
(``coverage``, ``gini``, ``entropy``, and the items absent from train of ``novelty``, ``arp``,
``long_tail``) and ``GroupExposure`` (the exposure of item groups over every list). Sums over
rows that are a plain mean (``logloss``) merge as exact float expansions (``Part.sums``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, Self

import numpy as np
import polars as pl

from receval.kernels.exact import parts
from receval.metrics.specs import Metric

__all__ = [
    "GlobalState",
    "compact_expansions",
    "counts_column",
    "counts_matrix",
    "cut_rows",
    "finish_states",
    "state_rows",
    "sum_by_key",
]

COMPACT = 8  # buffered merges folded into a state when this many have arrived


class GlobalState(ABC):
    """The mergeable state of metrics that are not a mean of per-user values.

    A provider builds one from its block of rows (whole users) and puts it in
    :attr:`Part.states <receval.families.contract.Part>`; engines use only this protocol:

    * :meth:`merge` adds another block's state exactly (the order of blocks and how the rows
      were cut never change a bit);
    * :meth:`rows` is the part of the state that grows with the data, as rows ``key`` (a
      float, integer or text key) and ``counts`` (``List(Int64)``, as many values in every
      row); :meth:`detach` is the rest (small and picklable). A distributed engine ships the
      detached states to its driver and moves the rows with its own shuffle, cut as
      :attr:`spread` says (``"range"``: disjoint intervals of ``key``; ``"hash"``: equal
      keys together), so that no machine holds every row;
    * the rows are reduced in :meth:`passes` passes: :meth:`reduce_part` on each part of the
      rows (on an executor; ``self`` is then the merged detached state), :meth:`absorb` of
      every part's piece on the driver; :meth:`reduce_whole` does the same in one part;
    * :meth:`finish` gives a metric's value (or completes its details) once reduced.

    ``metrics`` holds the canonical names of the metrics the state finishes.
    """

    metrics: tuple[str, ...]
    spread: ClassVar[Literal["range", "hash"]] = "hash"

    @abstractmethod
    def merge(self, other: Self) -> Self:
        """Add ``other``'s blocks (in place; returns self)."""

    def compact(self) -> None:  # noqa: B027 - optional: only states that buffer merges fold
        """Fold the merges buffered so far into the state (memory then stays bounded)."""

    @property
    def nbytes(self) -> int:
        """About how many bytes the state holds."""
        rows = self.rows()
        return 0 if rows is None else int(rows.estimated_size())

    def rows(self) -> pl.DataFrame | None:
        """The state's rows (columns ``key`` and ``counts``), or None for a state without."""
        return None

    def detach(self) -> Self:
        """The state without its rows: what a distributed engine ships to its driver."""
        return self

    def passes(self) -> int:
        """How many passes over the rows :meth:`finish` needs (0: none)."""
        return 0

    def reduce_part(self, step: int, rows: pl.DataFrame) -> Any:
        """Pass ``step`` over one part of the rows (every row of each key it holds; the part
        may hold several rows of a key, from several blocks): a small, picklable piece."""
        msg = f"{type(self).__name__} has no rows to reduce"
        raise NotImplementedError(msg)

    def absorb(self, step: int, pieces: list[Any]) -> None:  # noqa: B027 - see passes
        """Take the pieces of pass ``step`` from every part of the rows (none when there
        was no row)."""

    def reduce_whole(self) -> None:
        """Every pass over all the rows, in this process."""
        for step in range(self.passes()):
            rows = self.rows()
            assert rows is not None
            self.absorb(step, [self.reduce_part(step, rows)] if rows.height else [])

    @abstractmethod
    def finish(self, metric: Metric, info: dict[str, Any]) -> float | None:
        """The value of ``metric`` once the rows are reduced (None: the metric's mean comes
        from its per-user values; the state only completes its details ``info``)."""


def finish_states(
    plan: tuple[Metric, ...],
    states: dict[str, GlobalState],
    means: dict[str, float],
    details: dict[str, dict[str, Any]],
) -> None:
    """For each metric of ``plan`` that a state of ``states`` (reduced) finishes: its value
    into ``means`` (unless the state only completes its details), in ``plan``'s order."""
    owner = {name: state for state in states.values() for name in state.metrics}
    for m in plan:
        state = owner.get(m.canonical)
        if state is None:
            continue
        value = state.finish(m, details.setdefault(m.canonical, {}))
        if value is not None:
            means[m.canonical] = value


# -------------------------------------------------------------------------------- rows


def counts_column(counts: np.ndarray) -> pl.Series:
    """An int64 matrix (one row per state row) as the ``counts`` column of state rows."""
    matrix = np.asarray(counts, dtype=np.int64)
    if matrix.shape[0] == 0:
        return pl.Series("counts", [], dtype=pl.List(pl.Int64))
    return pl.Series("counts", matrix).cast(pl.List(pl.Int64))


def counts_matrix(rows: pl.DataFrame, width: int) -> np.ndarray:
    """The ``counts`` column of state rows as an int64 matrix of ``width`` columns."""
    if rows.height == 0:
        return np.zeros((0, width), dtype=np.int64)
    flat = rows["counts"].explode().to_numpy().astype(np.int64)
    return flat.reshape(rows.height, width)


def state_rows(keys: pl.Series | np.ndarray, counts: np.ndarray) -> pl.DataFrame:
    """State rows: ``keys`` (one per row) and their ``counts`` (an int64 matrix)."""
    key = keys.alias("key") if isinstance(keys, pl.Series) else pl.Series("key", keys)
    return pl.DataFrame([key, counts_column(counts)])


def sum_by_key(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` ascending and, for each, the sum of its rows of ``counts`` (an
    int64 matrix): equal keys from several blocks become one (a stable sort, then sums)."""
    counts = np.asarray(counts, dtype=np.int64)
    if keys.size == 0:
        return keys[:0], counts[:0]
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))
    return k[starts], np.add.reduceat(counts[order], starts, axis=0)


def cut_rows(rows: pl.DataFrame, spread: str, n_parts: int) -> list[pl.DataFrame]:
    """State rows cut into at most ``n_parts`` non-empty parts as a distributed engine cuts
    them: by quantiles of ``key`` (``spread="range"``: disjoint intervals, equal keys
    together) or by a hash of ``key`` (``"hash"``)."""
    if rows.height == 0:
        return []
    if spread == "range":
        keys = rows["key"].to_numpy()
        bounds = np.unique(np.quantile(keys, np.linspace(0, 1, n_parts + 1)[1:-1]))
        which = np.searchsorted(bounds, keys, side="left")
    else:
        which = (rows["key"].hash(seed=0) % n_parts).to_numpy()
    found = [rows.filter(pl.Series(which == j)) for j in range(n_parts)]
    return [f for f in found if f.height]


def compact_expansions(expansions: list[np.ndarray]) -> list[np.ndarray]:
    """One expansion for several (their exact sum): keeps a running sum's memory constant."""
    if len(expansions) <= 1:
        return expansions
    return [parts(np.concatenate(expansions))]
