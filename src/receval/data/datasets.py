"""Seeded generator of realistic recommender interaction data, for tests and benchmarks.

:func:`make_interactions` returns a truth frame and a recommendations frame with the
traits that real evaluation data has and that toy data lacks: power-law item popularity,
heavy-tailed user activity, graded relevance skewed to low grades, score ties, users
without recommendations, short lists, recommendation users unknown to truth and users
with no relevant item. It scales to 10^8 recommendation rows on a laptop.

How the data is made
--------------------
Item popularity follows a continuous Zipf law of exponent 1: the popularity rank of a draw
is ``floor((n_items + 1) ** u) - 1`` with ``u ~ U[0, 1)``, so rank ``r`` (0-based) has
probability ``log((r + 2) / (r + 1)) / log(n_items + 1)``, close to ``1 / ((r + 1) H)``.
Ranks map to item ids through a seeded random permutation, so popular items are not the
small ids.

Truth: user ``u`` has ``max(1, rint(X_u))`` distinct items (at most ``n_items``) with
``X_u`` lognormal of mean ``mean_relevant`` and ``sigma = 1``, drawn by popularity without
replacement. Each item gets a latent grade ``g`` in 1..5 with probabilities
``0.40, 0.25, 0.15, 0.12, 0.08``; ``relevance = g`` (``graded=True``) or ``1``. One percent
of the truth users (rounded) have relevance 0 on every row.

Recommendations: a "model" puts each truth item of the user in the list with probability
``1 - exp(-signal * g / 3)`` and fills the rest of the list with other items drawn by
popularity. Scores are ``signal * g / 2 + N(0, 1)`` for the truth items it chose and
``N(0, 1)`` for the fill items, rounded to ``score_decimals`` (ties occur at 2 decimals).
The latent grades do not depend on ``graded``, so ``graded=False`` changes only the
``relevance`` column. Rows are grouped by user (ascending user id) and shuffled within
each user, so they are not sorted by score.

Each chunk of users draws from its own random stream, seeded from ``(seed, chunk)``, so the
output depends only on the arguments, never on the number of threads. The chunks run on Python
threads (as many as :func:`numba.get_num_threads`; :func:`receval.kernels.pools.run_chunks`), each
calling a ``nogil`` kernel of :mod:`receval.kernels.synthetic` that writes only its chunk's rows:
a first run compiles these much faster than ``prange`` loops (benchmarks/README.md, "Cold
start").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl
from numpy.typing import NDArray

from receval._errors import InputError, check_choice, check_integer, check_seed
from receval.kernels.synthetic import CHUNK, outputs, recs_rows, truth_rows

__all__ = ["Interactions", "make_interactions", "make_items", "make_train"]

_GRADE_CDF = np.array([0.40, 0.65, 0.80, 0.92, 1.00])
"""Cumulative probabilities of latent grades 1..5."""

_ZERO_RELEVANCE_FRACTION = 0.01
_ACTIVITY_SIGMA = 1.0
_TRUTH_STREAM = 1
_RECS_STREAM = 2


@dataclass(frozen=True)
class Interactions:
    """Truth and recommendations made by :func:`make_interactions`.

    Attributes
    ----------
    truth : polars.DataFrame
        Columns ``user``, ``item`` (Int64, or String with ``ids="str"``) and ``relevance``
        (Float64). No duplicate ``(user, item)`` pairs.
    recs : polars.DataFrame
        Columns ``user``, ``item`` and ``score`` (Float64), grouped by user and in no
        particular order within a user. No duplicate ``(user, item)`` pairs.
    """

    truth: pl.DataFrame
    recs: pl.DataFrame


def make_interactions(
    n_users: int = 1000,
    *,
    n_items: int | None = None,
    n_recs: int = 100,
    mean_relevant: float = 10.0,
    graded: bool = True,
    score_decimals: int | None = 2,
    short_list_fraction: float = 0.05,
    missing_recs_fraction: float = 0.02,
    extra_recs_users_fraction: float = 0.01,
    signal: float = 1.0,
    ids: Literal["int", "str"] = "int",
    seed: int = 0,
) -> Interactions:
    """Make seeded, realistic truth and recommendation frames.

    See the module docstring for the model behind the data.

    Parameters
    ----------
    n_users : int, default 1000
        Number of users in truth, ids ``0 .. n_users - 1``.
    n_items : int or None, default None
        Catalogue size; default ``max(1000, 10 * n_recs, n_users // 2)``.
    n_recs : int, default 100
        Length of a full recommendation list (at most ``n_items`` items).
    mean_relevant : float, default 10.0
        Mean of the lognormal number of truth items per user (each user has at least 1).
    graded : bool, default True
        Relevance grades 1..5 skewed to low grades; ``False`` gives relevance 1 everywhere
        (except the users with relevance 0).
    score_decimals : int or None, default 2
        Decimals the scores are rounded to, so that ties occur; ``None`` keeps full
        precision (ties then practically never occur).
    short_list_fraction : float, default 0.05
        Fraction of truth users whose list has ``1 .. n_recs - 1`` items (uniform; none
        when ``n_recs`` is 1). About the same fraction of the extra users get short lists.
    missing_recs_fraction : float, default 0.02
        Fraction of truth users with no recommendations at all.
    extra_recs_users_fraction : float, default 0.01
        Number of recommendation users absent from truth, as a fraction of ``n_users``;
        their ids follow the truth users' ids.
    signal : float, default 1.0
        Strength of the model: 0 recommends by popularity alone; larger values put more
        truth items, and more of the highly graded ones, at higher scores.
    ids : {"int", "str"}, default "int"
        Int64 ids, or String ids ``"u<n>"`` for users and ``"i<n>"`` for items.
    seed : int, default 0
        Seed (an integer from 0 to 2^64 - 1); the same arguments always give the same
        frames, whatever the number of threads.

    Returns
    -------
    Interactions
        ``truth`` (user, item, relevance) and ``recs`` (user, item, score).

    Raises
    ------
    receval.InputError
        If an argument is out of its domain, e.g. ``n_users < 1`` or a fraction outside
        ``[0, 1]``.

    Examples
    --------
    >>> from receval.datasets import make_interactions
    >>> data = make_interactions(200, n_recs=20, seed=1)
    >>> data.truth.columns, data.recs.columns
    (['user', 'item', 'relevance'], ['user', 'item', 'score'])
    >>> data.truth.dtypes
    [Int64, Int64, Float64]
    >>> data.recs.height <= (200 + 2) * 20
    True
    >>> data.recs.n_unique(["user", "item"]) == data.recs.height
    True

    The same seed gives the same data; string ids change only the id columns:

    >>> data.recs.equals(make_interactions(200, n_recs=20, seed=1).recs)
    True
    >>> make_interactions(3, n_recs=2, ids="str", seed=1).recs["user"].unique().sort().to_list()
    ['u0', 'u1', 'u2']
    """
    _check_int("n_users", n_users, 1)
    _check_int("n_recs", n_recs, 1)
    if n_items is None:
        n_items = max(1000, 10 * n_recs, n_users // 2)
    _check_int("n_items", n_items, 1, or_none=True)
    seed = check_seed(seed)
    if not (math.isfinite(mean_relevant) and mean_relevant >= 1):
        msg = f"mean_relevant must be a finite number >= 1; got {mean_relevant!r}."
        raise InputError(msg)
    if score_decimals is not None:
        _check_int("score_decimals", score_decimals, 0, or_none=True)
    fractions = {
        "short_list_fraction": short_list_fraction,
        "missing_recs_fraction": missing_recs_fraction,
        "extra_recs_users_fraction": extra_recs_users_fraction,
    }
    for name, value in fractions.items():
        if not 0 <= value <= 1:
            msg = f"{name} must be in [0, 1]; got {value!r}."
            raise InputError(msg)
    if short_list_fraction + missing_recs_fraction > 1:
        msg = (
            "short_list_fraction + missing_recs_fraction must be <= 1; got "
            f"{short_list_fraction!r} + {missing_recs_fraction!r}."
        )
        raise InputError(msg)
    if not (math.isfinite(signal) and signal >= 0):
        msg = f"signal must be a finite number >= 0; got {signal!r}."
        raise InputError(msg)
    check_choice("ids", ids, ("int", "str"), listed="'int', 'str'")

    rng = np.random.default_rng(seed)
    item_of_rank = rng.permutation(n_items).astype(np.int64)

    # Truth users: heavy-tailed activity, a few users with relevance 0 everywhere.
    mu = math.log(mean_relevant) - _ACTIVITY_SIGMA**2 / 2
    activity = np.rint(rng.lognormal(mu, _ACTIVITY_SIGMA, n_users))
    n_truth = np.clip(activity, 1, n_items).astype(np.int64)
    zero_user = np.zeros(n_users, dtype=np.bool_)
    zero_user[rng.permutation(n_users)[: round(_ZERO_RELEVANCE_FRACTION * n_users)]] = True

    # Recommendation users: truth users (some absent, some short) then users absent from truth.
    n_missing = round(missing_recs_fraction * n_users)
    n_short = round(short_list_fraction * n_users)
    n_extra = round(extra_recs_users_fraction * n_users)
    full = min(n_recs, n_items)
    list_len = np.full(n_users + n_extra, full, dtype=np.int64)
    order = rng.permutation(n_users)
    list_len[order[:n_missing]] = 0
    short = order[n_missing : n_missing + n_short]
    extra_short = n_users + np.flatnonzero(rng.random(n_extra) < short_list_fraction)
    short = np.concatenate([short, extra_short])
    if n_recs > 1:
        list_len[short] = np.minimum(rng.integers(1, n_recs, short.size), n_items)

    truth_offsets = _offsets(n_truth)
    has_recs = np.flatnonzero(list_len > 0)
    recs_offsets = _offsets(list_len[has_recs])
    truth_user, truth_item, truth_grade, recs_user, recs_item, recs_score = outputs(
        truth_offsets[-1], recs_offsets[-1]
    )
    truth_seeds = _stream_seeds(seed, _TRUTH_STREAM, n_users)
    truth_rows(
        truth_offsets, item_of_rank, _GRADE_CDF, truth_seeds, truth_user, truth_item, truth_grade
    )
    relevance = truth_grade.astype(np.float64) if graded else np.ones(truth_grade.size)
    relevance[np.repeat(zero_user, n_truth)] = 0.0

    recs_seeds = _stream_seeds(seed, _RECS_STREAM, has_recs.size)
    recs_rows(
        has_recs.astype(np.int64), recs_offsets, truth_offsets, truth_item, truth_grade,
        item_of_rank, float(signal), -1 if score_decimals is None else score_decimals,
        recs_seeds, recs_user, recs_item, recs_score,
    )  # fmt: skip

    truth_cols: dict[str, Any] = {"user": truth_user, "item": truth_item}
    recs_cols: dict[str, Any] = {"user": recs_user, "item": recs_item}
    if ids == "str":
        # Format each id once, then gather: much faster than formatting 10^8 rows.
        names = {
            "user": "u" + pl.Series(np.arange(n_users + n_extra)).cast(pl.String),
            "item": "i" + pl.Series(np.arange(n_items)).cast(pl.String),
        }
        for cols in (truth_cols, recs_cols):
            for column, values in cols.items():
                cols[column] = names[column].gather(values)
    truth = pl.DataFrame({**truth_cols, "relevance": relevance})
    recs = pl.DataFrame({**recs_cols, "score": recs_score})
    return Interactions(truth=truth, recs=recs)


def _check_int(name: str, value: object, minimum: int, *, or_none: bool = False) -> None:
    check_integer(name, value, minimum, more=" or None" if or_none else "")


def _offsets(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """Start offsets of consecutive segments, with the total length appended."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _stream_seeds(seed: int, stream: int, n_users: int) -> NDArray[np.uint32]:
    """One 32-bit seed per chunk of ``CHUNK`` users, derived from ``(seed, stream)``."""
    n_chunks = -(-n_users // CHUNK)
    sequence = np.random.SeedSequence([seed, stream])
    return sequence.generate_state(max(n_chunks, 1), dtype=np.uint32).astype(np.uint32, copy=False)


# ------------------------------------------------------------ inputs of the beyond metrics


def make_train(
    n_users: int = 1000,
    *,
    n_items: int = 1000,
    mean_items: float = 20.0,
    ids: Literal["int", "str"] = "int",
    seed: int = 0,
) -> pl.DataFrame:
    """Make seeded training interactions with a long-tailed item popularity.

    Each user ``u`` (ids ``0 .. n_users - 1``) draws ``max(1, rint(X_u))`` items, ``X_u``
    lognormal of mean ``mean_items`` and ``sigma = 1``, by the Zipf law of the module
    docstring (rank ``floor((n_items + 1) ** U) - 1`` mapped to item ids through a seeded
    permutation); repeated draws of one item by one user are dropped, so every
    ``(user, item)`` pair is distinct. Popularity (distinct users per item) is therefore
    long-tailed: a few items are in most users' histories, many in almost none.

    Parameters
    ----------
    n_users : int, default 1000
        Number of users.
    n_items : int, default 1000
        Item ids ``0 .. n_items - 1``.
    mean_items : float, default 20.0
        Mean of the lognormal number of draws per user.
    ids : {"int", "str"}, default "int"
        Int64 ids, or String ids ``"u<n>"`` / ``"i<n>"`` as :func:`make_interactions`.
    seed : int, default 0
        Seed (an integer from 0 to 2^64 - 1).

    Returns
    -------
    polars.DataFrame
        Columns ``user`` and ``item``, sorted by user then item.

    Examples
    --------
    >>> from receval.datasets import make_train
    >>> train = make_train(200, n_items=1000, seed=1)
    >>> train.columns, train.n_unique(["user", "item"]) == train.height
    (['user', 'item'], True)
    >>> counts = train["item"].value_counts()["count"]
    >>> bool(counts.max() > 10 * counts.median())  # a long tail
    True
    """
    _check_int("n_users", n_users, 1)
    _check_int("n_items", n_items, 1)
    seed = check_seed(seed)
    if not (isinstance(mean_items, int | float) and math.isfinite(mean_items) and mean_items > 0):
        msg = f"mean_items must be a finite number > 0; got {mean_items!r}."
        raise InputError(msg)
    if ids not in ("int", "str"):
        msg = f"ids must be 'int' or 'str'; got {ids!r}."
        raise InputError(msg)
    rng = np.random.default_rng([seed, 11])
    mu = math.log(mean_items) - 0.5 * _ACTIVITY_SIGMA**2
    lengths = np.maximum(1, np.rint(rng.lognormal(mu, _ACTIVITY_SIGMA, n_users))).astype(np.int64)
    users = np.repeat(np.arange(n_users, dtype=np.int64), lengths)
    ranks = np.floor((n_items + 1.0) ** rng.random(users.size)).astype(np.int64) - 1
    item_of_rank = rng.permutation(n_items).astype(np.int64)
    frame = pl.DataFrame({"user": users, "item": item_of_rank[np.clip(ranks, 0, n_items - 1)]})
    frame = frame.unique().sort("user", "item")
    if ids == "str":
        frame = frame.select(
            ("u" + pl.col("user").cast(pl.String)).alias("user"),
            ("i" + pl.col("item").cast(pl.String)).alias("item"),
        )
    return frame


def make_items(
    n_items: int = 1000,
    *,
    dim: int = 64,
    n_genres: int = 18,
    ids: Literal["int", "str"] = "int",
    seed: int = 0,
) -> pl.DataFrame:
    """Make a seeded item table: the catalog and item features for ``ils`` / ``diversity``.

    Every item has a main ``genre`` (``"g<k>"``, genre ``k`` with probability proportional
    to ``1 / (k + 1)``), a set ``genres`` of 1 to 3 genres that starts with the main one, a
    ``year`` in 1950..2024 and an ``embedding``: the main genre's random centroid plus
    Gaussian noise of the same scale, so that items of one genre have similar vectors
    (cosine about 0.5) and items of different genres nearly orthogonal ones.

    Parameters
    ----------
    n_items : int, default 1000
        Item ids ``0 .. n_items - 1`` (``"i<n>"`` with ``ids="str"``).
    dim : int, default 64
        Length of the embedding vectors (Float32).
    n_genres : int, default 18
        Number of genres.
    ids : {"int", "str"}, default "int"
        Int64 or String item ids.
    seed : int, default 0
        Seed (an integer from 0 to 2^64 - 1).

    Returns
    -------
    polars.DataFrame
        Columns ``item``, ``embedding`` (Array(Float32, dim)), ``genre`` (String),
        ``genres`` (List(String)) and ``year`` (Int64), sorted by item.

    Examples
    --------
    >>> from receval.datasets import make_items
    >>> items = make_items(100, dim=8, seed=3)
    >>> items.columns
    ['item', 'embedding', 'genre', 'genres', 'year']
    >>> items["embedding"].dtype
    Array(Float32, shape=(8,))
    """
    _check_int("n_items", n_items, 1)
    _check_int("dim", dim, 1)
    _check_int("n_genres", n_genres, 1)
    seed = check_seed(seed)
    if ids not in ("int", "str"):
        msg = f"ids must be 'int' or 'str'; got {ids!r}."
        raise InputError(msg)
    rng = np.random.default_rng([seed, 12])
    weights = 1.0 / np.arange(1, n_genres + 1)
    genre = rng.choice(n_genres, size=n_items, p=weights / weights.sum())
    centroids = rng.standard_normal((n_genres, dim))
    embedding = (centroids[genre] + rng.standard_normal((n_items, dim))).astype(np.float32)
    extra = rng.choice(n_genres, size=(n_items, 2), p=weights / weights.sum())
    n_extra = rng.integers(0, 3, n_items)
    names = np.array([f"g{k}" for k in range(n_genres)], dtype=object)
    genres = pl.DataFrame(
        {
            "item": np.repeat(np.arange(n_items, dtype=np.int64), 1 + n_extra),
            "g": np.concatenate([genre[:, None], extra], axis=1)[
                np.arange(3)[None, :] <= n_extra[:, None]
            ],
        }
    )
    genres = genres.group_by("item").agg(pl.col("g").unique(maintain_order=True)).sort("item")
    item_ids = pl.Series("item", np.arange(n_items, dtype=np.int64))
    if ids == "str":
        item_ids = "i" + item_ids.cast(pl.String)
    return pl.DataFrame(
        {
            "item": item_ids,
            "embedding": pl.Series(embedding, dtype=pl.Array(pl.Float32, dim)),
            "genre": pl.Series(names[genre], dtype=pl.String),
            "genres": genres["g"].list.eval(pl.lit("g") + pl.element().cast(pl.String)),
            "year": rng.integers(1950, 2025, n_items),
        }
    )
