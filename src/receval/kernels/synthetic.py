"""Numba kernels of the seeded data generator (:mod:`receval.data.datasets`): the truth rows
and the recommendation lists of one chunk of users, each chunk on its own random stream."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from receval.kernels.pools import run_chunks
from receval.kernels.toolbox import frozen

__all__ = ["CHUNK", "outputs", "recs_rows", "truth_rows"]

CHUNK = 2048
"""Users per random stream. Fixed, so the output does not depend on the thread count."""


# Inside numba kernels only the legacy np.random API exists; its state is per thread, so
# each chunk of users seeds it before drawing (see receval.data.datasets' docstring).


@njit(cache=True)
def _seed(seed: int) -> None:
    np.random.seed(seed)  # noqa: NPY002


@njit(cache=True)
def _uniform() -> float:
    return np.random.random()  # noqa: NPY002


@njit(cache=True)
def _normal() -> float:
    return np.random.standard_normal()  # noqa: NPY002


@njit(cache=True)
def _draw_new(
    item_of_rank: NDArray[np.int64], stamp: NDArray[np.int32], token: int, size: int
) -> int:
    """An item not yet stamped with ``token``, drawn by popularity, then stamped.

    After many misses (a list of ``size`` items holding most of the catalogue) it draws
    uniformly, which keeps sampling fast.
    """
    n_items = item_of_rank.size
    log_n = math.log(n_items + 1.0)
    budget = 8 * size + 64
    attempt = 0
    while True:
        if attempt < budget:  # continuous Zipf of exponent 1: receval.data.datasets
            rank = min(int(math.exp(_uniform() * log_n)) - 1, n_items - 1)
        else:
            rank = min(int(_uniform() * n_items), n_items - 1)
        attempt += 1
        item = item_of_rank[rank]
        if stamp[item] != token:
            stamp[item] = token
            return int(item)


@njit(cache=True)
def _outputs(n_truth: int, n_recs: int) -> tuple[NDArray[Any], ...]:
    """The uninitialised output columns of the truth rows (user, item, grade) and of the recs
    rows (user, item, score).

    Allocated by Numba rather than NumPy: NumPy asks Linux for transparent huge pages for large
    arrays, and filling them made ``make_interactions(10**6)`` (10^8 rows) 1-2 s slower on the
    development machine (transparent huge pages on ``madvise``).
    """
    return (
        np.empty(n_truth, dtype=np.int64),
        np.empty(n_truth, dtype=np.int64),
        np.empty(n_truth, dtype=np.int8),
        np.empty(n_recs, dtype=np.int64),
        np.empty(n_recs, dtype=np.int64),
        np.empty(n_recs, dtype=np.float64),
    )


@njit(cache=True, nogil=True)
def _truth_chunk(
    chunk: int,
    offsets: NDArray[np.int64],
    item_of_rank: NDArray[np.int64],
    grade_cdf: NDArray[np.float64],
    seeds: NDArray[np.uint32],
    user_col: NDArray[np.int64],
    items: NDArray[np.int64],
    grades: NDArray[np.int8],
) -> None:
    """Users, distinct popular items and latent grades of one chunk's truth rows."""
    n_users = offsets.size - 1
    _seed(seeds[chunk])
    stamp = np.zeros(item_of_rank.size, dtype=np.int32)
    first = chunk * CHUNK
    for user in range(first, min(first + CHUNK, n_users)):
        token = user - first + 1
        start = offsets[user]
        stop = offsets[user + 1]
        for row in range(start, stop):
            user_col[row] = user
            items[row] = _draw_new(item_of_rank, stamp, token, stop - start)
            u = _uniform()
            grade = 1
            while grade < 5 and u >= grade_cdf[grade - 1]:
                grade += 1
            grades[row] = grade


@njit(cache=True, nogil=True)
def _recs_chunk(
    chunk: int,
    users: NDArray[np.int64],
    offsets: NDArray[np.int64],
    truth_offsets: NDArray[np.int64],
    truth_item: NDArray[np.int64],
    truth_grade: NDArray[np.int8],
    item_of_rank: NDArray[np.int64],
    signal: float,
    decimals: int,
    seeds: NDArray[np.uint32],
    user_col: NDArray[np.int64],
    items: NDArray[np.int64],
    scores: NDArray[np.float64],
) -> None:
    """Users, items and scores of one chunk's shuffled lists of chosen truth items and
    popular items."""
    n_truth_users = truth_offsets.size - 1
    scale = 10.0**decimals if decimals >= 0 else 0.0
    _seed(seeds[chunk])
    stamp = np.zeros(item_of_rank.size, dtype=np.int32)
    first = chunk * CHUNK
    for k in range(first, min(first + CHUNK, users.size)):
        token = k - first + 1
        start = offsets[k]
        stop = offsets[k + 1]
        row = start
        user = users[k]
        for i in range(start, stop):
            user_col[i] = user
        if user < n_truth_users:
            for t in range(truth_offsets[user], truth_offsets[user + 1]):
                if row == stop:
                    break
                grade = truth_grade[t]
                if _uniform() < 1.0 - math.exp(-signal * grade / 3.0):
                    items[row] = truth_item[t]
                    stamp[truth_item[t]] = token
                    scores[row] = signal * grade / 2.0 + _normal()
                    row += 1
        while row < stop:
            items[row] = _draw_new(item_of_rank, stamp, token, stop - start)
            scores[row] = _normal()
            row += 1
        for i in range(stop - 1, start, -1):  # Fisher-Yates shuffle of the user's rows
            j = start + int(_uniform() * (i - start + 1))
            items[i], items[j] = items[j], items[i]
            scores[i], scores[j] = scores[j], scores[i]
        if decimals >= 0:
            for i in range(start, stop):
                scores[i] = np.rint(scores[i] * scale) / scale


def outputs(n_truth: int, n_recs: int) -> tuple[NDArray[Any], ...]:
    """The uninitialised columns truth user, item, grade and recs user, item, score."""
    kernel: Any = _outputs
    return kernel(n_truth, n_recs)  # type: ignore[no-any-return]


def truth_rows(
    offsets: NDArray[np.int64],
    item_of_rank: NDArray[np.int64],
    grade_cdf: NDArray[np.float64],
    seeds: NDArray[np.uint32],
    user_col: NDArray[np.int64],
    items: NDArray[np.int64],
    grades: NDArray[np.int8],
) -> None:
    """Fill the truth columns (``user_col``, ``items``, ``grades``), one chunk of
    :data:`CHUNK` users per seed."""
    inputs = (frozen(offsets), frozen(item_of_rank), frozen(grade_cdf), frozen(seeds))
    run_chunks(_truth_chunk, seeds.size, *inputs, user_col, items, grades)


def recs_rows(
    users: NDArray[np.int64],
    offsets: NDArray[np.int64],
    truth_offsets: NDArray[np.int64],
    truth_item: NDArray[np.int64],
    truth_grade: NDArray[np.int8],
    item_of_rank: NDArray[np.int64],
    signal: float,
    decimals: int,
    seeds: NDArray[np.uint32],
    user_col: NDArray[np.int64],
    items: NDArray[np.int64],
    scores: NDArray[np.float64],
) -> None:
    """Fill the recs columns (``user_col``, ``items``, ``scores``) of the lists of ``users``,
    one chunk of :data:`CHUNK` lists per seed (``decimals`` -1: scores not rounded)."""
    inputs = (frozen(users), frozen(offsets), frozen(truth_offsets), frozen(truth_item))
    run_chunks(
        _recs_chunk, seeds.size, *inputs, frozen(truth_grade), frozen(item_of_rank), signal,
        decimals, frozen(seeds), user_col, items, scores,
    )  # fmt: skip
