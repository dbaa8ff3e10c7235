"""Mergeable states of the metrics that are not a plain mean of per-user values.

A state is built from one block of rows (whole users), merges exactly with the state of any
other block (the order of blocks and how the rows were cut never changes a bit), and
finishes into what the metric's value needs. The streaming evaluator
(:mod:`receval.engines.stream`) keeps one of each while blocks arrive; memory is the state,
not the rows:

* :class:`ScoreHistogram`: ``auc`` and ``average_precision`` over rows. Each distinct score
  with its positives and negatives at every relevance threshold: the exact pair counts of the
  AUC and the exact terms of AP's sum follow from it, equal to those of the sorted rows.
* :class:`ExposureCounts`: ``coverage``, ``gini``, ``entropy`` (and the items absent from
  train of ``novelty``, ``arp``, ``long_tail``): per item id, in how many top-K lists it is.
* :class:`RatingHistogram`: the distinct true ratings and their counts (SS_tot of ``r2`` over
  rows is taken around the mean of every row).

Means of per-user values, and sums over rows (``logloss``, rating sums), merge as exact
float expansions (:mod:`receval.kernels.exact`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from receval.arrays import classification as C
from receval.kernels.exact import parts

__all__ = ["ExposureCounts", "RatingHistogram", "ScoreHistogram"]

_COMPACT = 8  # pending pieces merged into the main state when this many have arrived


def _split_sum(values: np.ndarray) -> int:
    """The exact sum of non-negative int64 ``values`` as a Python int (no int64 overflow:
    high and low 32-bit halves summed apart)."""
    v = np.asarray(values, dtype=np.int64)
    return int((v >> 32).sum()) * (1 << 32) + int((v & 0xFFFFFFFF).sum())


@dataclass
class ScoreHistogram:
    """Distinct scores (ascending) and, per relevance threshold ``j``, the positives
    ``pos[j]`` and negatives ``neg[j]`` that have each score."""

    n_thresholds: int
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    neg: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    _pending: list[ScoreHistogram] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.pos.shape[0] != self.n_thresholds:
            self.pos = np.zeros((self.n_thresholds, self.scores.size), dtype=np.int64)
            self.neg = np.zeros((self.n_thresholds, self.scores.size), dtype=np.int64)

    @classmethod
    def of_rows(cls, scores: np.ndarray, bits: np.ndarray, n_thresholds: int) -> ScoreHistogram:
        """The state of scored rows: ``bits`` holds each row's label at threshold ``j`` in
        bit ``j``."""
        distinct, pos, neg = C.bit_histogram(  # -0.0 and 0.0 are one score
            np.asarray(scores, dtype=np.float64), np.asarray(bits, dtype=np.int64), n_thresholds
        )
        return cls(n_thresholds, distinct, pos, neg)

    def merge(self, other: ScoreHistogram) -> ScoreHistogram:
        """Add ``other``'s rows (in place; returns self). Merging is deferred and done in
        batches, so that many small blocks do not re-sort a large state each time."""
        if other.n_thresholds != self.n_thresholds:
            msg = "score histograms with different thresholds cannot merge"
            raise ValueError(msg)
        self._pending.extend([other, *other._pending])
        other._pending = []
        if len(self._pending) >= _COMPACT:
            self.compact()
        return self

    def compact(self) -> None:
        """Fold the pending states into the main arrays."""
        if not self._pending:
            return
        pieces = [self, *self._pending]
        self._pending = []
        scores = np.concatenate([p.scores for p in pieces])
        distinct, inverse = np.unique(scores, return_inverse=True)
        inverse = inverse.ravel()
        pos = np.zeros((self.n_thresholds, distinct.size), dtype=np.int64)
        neg = np.zeros((self.n_thresholds, distinct.size), dtype=np.int64)
        for j in range(self.n_thresholds):
            np.add.at(pos[j], inverse, np.concatenate([p.pos[j] for p in pieces]))
            np.add.at(neg[j], inverse, np.concatenate([p.neg[j] for p in pieces]))
        self.scores, self.pos, self.neg = distinct, pos, neg

    @property
    def nbytes(self) -> int:
        self.compact()
        return int(self.scores.nbytes + self.pos.nbytes + self.neg.nbytes)

    def finish(self) -> tuple[list[tuple[int, int, int]], list[np.ndarray]]:
        """Per threshold: (twice the (positive, negative) pairs won, a tie counting one;
        positives; negatives), and the expansion of average precision's sum: the values
        that sorting every row would give."""
        self.compact()
        scored: list[tuple[int, int, int]] = []
        ap: list[np.ndarray] = []
        for j in range(self.n_thresholds):
            pos, neg = self.pos[j], self.neg[j]
            neg_below = np.cumsum(neg) - neg  # negatives of lower scores
            twice = _split_sum(pos * (2 * neg_below + neg))
            scored.append((twice, int(pos.sum()), int(neg.sum())))
            tps = np.cumsum(pos[::-1])  # rows scoring >= each distinct score, highest first
            fps = np.cumsum(neg[::-1])
            ap.append(C.ap_terms(tps, fps, 0, 0) if tps.size else np.zeros(0))
        return scored, ap


@dataclass
class ExposureCounts:
    """Per item id: the top-K lists that hold it, and whether it is absent from train."""

    item_col: str
    frame: pl.DataFrame | None = None  # columns item_col, "n" (Int64), "absent" (Int64 0/1)
    _pending: list[pl.DataFrame] = field(default_factory=list, repr=False)

    def add(self, items: pl.Series, counts: np.ndarray, absent: np.ndarray) -> None:
        """Add the exposure of ``items`` (ids) and their absent-from-train flags."""
        piece = pl.DataFrame(
            {
                self.item_col: items,
                "n": np.asarray(counts, dtype=np.int64),
                "absent": np.asarray(absent, dtype=np.int64),
            }
        )
        self._pending.append(piece)
        if len(self._pending) >= _COMPACT:
            self.compact()

    def merge(self, other: ExposureCounts) -> ExposureCounts:
        """Add ``other``'s exposure (in place; returns self)."""
        if other.frame is not None:
            self._pending.append(other.frame)
        self._pending.extend(other._pending)
        if len(self._pending) >= _COMPACT:
            self.compact()
        return self

    def compact(self) -> None:
        if not self._pending:
            return
        pieces = ([self.frame] if self.frame is not None else []) + self._pending
        self._pending = []
        self.frame = (
            pl.concat(pieces, how="vertical_relaxed")
            .group_by(self.item_col)
            .agg(pl.col("n").sum(), pl.col("absent").max())
        )

    def finish(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(distinct positive exposures ascending, how many items have each, items exposed
        but absent from train)."""
        self.compact()
        if self.frame is None or self.frame.height == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, 0
        exposed = self.frame.filter(pl.col("n") > 0)
        hist = exposed.group_by("n").agg(pl.len().alias("items")).sort("n")
        return (
            hist["n"].to_numpy().astype(np.int64),
            hist["items"].to_numpy().astype(np.int64),
            int(exposed["absent"].sum()),
        )


@dataclass
class RatingHistogram:
    """The distinct true ratings of every rated row and their counts."""

    ys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def merge_counts(self, ys: np.ndarray, ns: np.ndarray) -> None:
        both_y = np.concatenate([self.ys, np.asarray(ys, dtype=np.float64)])
        both_n = np.concatenate([self.ns, np.asarray(ns, dtype=np.int64)])
        distinct, inverse = np.unique(both_y, return_inverse=True)
        counts = np.zeros(distinct.size, dtype=np.int64)
        np.add.at(counts, inverse.ravel(), both_n)
        self.ys, self.ns = distinct, counts

    def merge(self, other: RatingHistogram) -> RatingHistogram:
        self.merge_counts(other.ys, other.ns)
        return self


def compact_expansions(expansions: list[np.ndarray]) -> list[np.ndarray]:
    """One expansion for several (their exact sum): keeps a running sum's memory constant."""
    if len(expansions) <= 1:
        return expansions
    return [parts(np.concatenate(expansions))]
