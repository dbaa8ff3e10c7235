"""Model sources: the inputs that stand in for a recommendations table.

:class:`FactorModel` (user and item factors, dot product or cosine) and :class:`ScoreModel` (a
function scoring every catalog item for a batch of users) are read and checked here, as a recs
table is read by :mod:`receval.data.io`: the factor matrices (finite, real, float32 or float64,
or torch tensors on their device; cosine rows normalised), the user and item ids (integers or
strings, one per row, distinct, none null; the item ids are the catalog) and the torch device.
:func:`is_model` tells a model source from a table. The scan that evaluates a model over the
full catalog, :func:`receval.topk` and the scorer of a block of users live in
:mod:`receval.engines.model` and :mod:`receval.engines.scoring`; docs/model.md describes the
semantics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

import numpy as np
import polars as pl

from receval._errors import InputError, check_choice

__all__ = ["FactorModel", "Model", "ScoreModel", "Similarity", "is_model", "is_torch"]

Similarity = Literal["dot", "cosine"]


def is_torch(value: object) -> bool:
    """Whether ``value`` is a torch object (a tensor), without importing torch."""
    return type(value).__module__.split(".")[0] == "torch"


def _ids(values: Any, n: int, name: str, rows: str) -> pl.Series:
    """Model ids as a Polars Series (Int64 or String): ``0 .. n-1`` when None."""
    if values is None:
        return pl.Series(name, np.arange(n, dtype=np.int64))
    if is_torch(values):
        values = values.detach().cpu().numpy()
    try:
        series = pl.Series(name, values)
    except (TypeError, ValueError, OverflowError) as exc:
        msg = f"{name} must be a 1-D sequence of integer or string ids; could not read it ({exc})."
        raise InputError(msg) from None
    if series.dtype == pl.Null and series.len() == 0:  # [] or an empty array of objects
        series = series.cast(pl.Int64)
    dtype = series.dtype
    if isinstance(dtype, pl.Categorical | pl.Enum):
        series = series.cast(pl.String)
    elif dtype.is_integer():
        if dtype == pl.UInt64 and series.len() and (series.max() or 0) > 2**63 - 1:  # type: ignore[operator]
            series = series.cast(pl.String)
        else:
            series = series.cast(pl.Int64)
    elif dtype != pl.String:
        found = f"{series.len()} null(s)" if dtype == pl.Null else str(dtype)
        msg = f"{name} must hold integer or string ids; got {found}."
        raise InputError(msg)
    if series.len() != n:
        msg = f"{name} has {series.len()} ids; expected one per row of {rows} ({n})."
        raise InputError(msg)
    nulls = series.null_count()
    if nulls:
        msg = f"{name} has {nulls} null id(s); expected none."
        raise InputError(msg)
    dup = series.is_duplicated()
    if dup.any():
        shown = series.filter(dup).unique(maintain_order=True).head(5).to_list()
        msg = f"{name} has {int(dup.sum())} repeated id(s), e.g. {shown}; expected distinct ids."
        raise InputError(msg)
    return series


def _id_list(values: Any, name: str, what: str) -> pl.Series:
    """Ids given on their own (not one per row of a matrix): a 1-D sequence, checked by
    :func:`_ids`."""
    if values is None or isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        msg = f"{name} must be a 1-D sequence of ids ({what}); got {type(values).__name__}."
        raise InputError(msg)
    return _ids(values, len(values), name, name)


def _factor_matrix(values: Any, name: str) -> Any:
    """A checked 2-D float factor matrix: a NumPy array (float32 or float64) or a torch
    tensor (floating, on its device)."""
    if is_torch(values):
        import torch

        if values.ndim != 2:
            msg = f"{name} must be a 2-D matrix (rows x factors); got shape {tuple(values.shape)}."
            raise InputError(msg)
        if not torch.is_floating_point(values):
            values = values.to(torch.float64)
        elif values.dtype in (torch.float16, torch.bfloat16):  # widened exactly: the scan's
            values = values.to(torch.float32)  # kernels read float32 and float64
        bad = int((~torch.isfinite(values)).sum())
        if bad:
            rows = torch.nonzero(~torch.isfinite(values).all(dim=1)).flatten()[:5].tolist()
            msg = (
                f"{name} has {bad} NaN or infinite value(s) (rows {rows}); expected finite numbers."
            )
            raise InputError(msg)
        return values.detach()
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be a 2-D numeric matrix; could not read it ({exc})."
        raise InputError(msg) from None
    if array.ndim != 2:
        msg = f"{name} must be a 2-D matrix (rows x factors); got shape {array.shape}."
        raise InputError(msg)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.number):
        msg = f"{name} must be numeric; got dtype {array.dtype}."
        raise InputError(msg)
    if np.issubdtype(array.dtype, np.complexfloating):
        msg = f"{name} must be real numbers; got dtype {array.dtype}."
        raise InputError(msg)
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float64)
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        bad_rows = np.flatnonzero(~finite)
        msg = (
            f"{name} has NaN or infinite values in {bad_rows.size} row(s) (rows "
            f"{bad_rows[:5].tolist()}); expected finite numbers."
        )
        raise InputError(msg)
    return array


class FactorModel:
    """A model given by user and item factors: ``score(u, i) = user_factors[u] ·
    item_factors[i]`` (``similarity="cosine"``: divided by both norms).

    Parameters
    ----------
    user_factors, item_factors:
        ``(n_users x d)`` and ``(n_items x d)`` matrices: NumPy arrays (float32 is scored in
        float32, float64 in float64, integers and float16 as float64) or torch tensors (scored
        by torch on their device, for example a GPU; float16 and bfloat16 widened to float32,
        exactly). No users is allowed (every truth user is then unknown); no items is an
        error.
    user_ids, item_ids:
        The ids the rows stand for (arrays, lists, pandas or Polars Series; integers or
        strings, distinct); default ``0 .. n-1``. The item ids are the catalog.
    similarity:
        ``"dot"`` (default) or ``"cosine"``.
    device:
        The torch device to score on (``"cuda"``, ``"cuda:1"``, ``"cpu"``, ...): the factors
        are moved there and torch computes the products, the masks, the counts and the top K
        on it (``pip install "receval[torch]"``). Default: tensors on a GPU are scored on
        their device; NumPy arrays and tensors in CPU memory take the NumPy path (BLAS and
        Numba threads; a CPU tensor is read without a copy), the faster one on a CPU.

    Examples
    --------
    >>> import numpy as np, receval
    >>> model = receval.FactorModel(np.eye(2), np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]),
    ...                             user_ids=["ann", "bob"], item_ids=["a", "b", "c"])
    >>> receval.topk(model, 2)
    shape: (4, 4)
    ┌──────┬──────┬───────┬──────┐
    │ user ┆ item ┆ score ┆ rank │
    │ ---  ┆ ---  ┆ ---   ┆ ---  │
    │ str  ┆ str  ┆ f64   ┆ i64  │
    ╞══════╪══════╪═══════╪══════╡
    │ ann  ┆ a    ┆ 1.0   ┆ 1    │
    │ ann  ┆ b    ┆ 0.5   ┆ 2    │
    │ bob  ┆ c    ┆ 1.0   ┆ 1    │
    │ bob  ┆ b    ┆ 0.5   ┆ 2    │
    └──────┴──────┴───────┴──────┘
    """

    def __init__(
        self,
        user_factors: Any,
        item_factors: Any,
        *,
        user_ids: Any = None,
        item_ids: Any = None,
        similarity: Similarity = "dot",
        device: str | None = None,
    ) -> None:
        check_choice("similarity", similarity, get_args(Similarity))
        users = _on_device(_factor_matrix(user_factors, "user_factors"), device)
        items = _on_device(_factor_matrix(item_factors, "item_factors"), device)
        if is_torch(users) != is_torch(items):
            msg = (
                "user_factors and item_factors must both be NumPy arrays or both torch tensors; "
                f"got {type(user_factors).__name__} and {type(item_factors).__name__}."
            )
            raise InputError(msg)
        if users.shape[1] != items.shape[1]:
            msg = (
                f"user_factors and item_factors must have the same number of factors (columns); "
                f"got {users.shape[1]} and {items.shape[1]}."
            )
            raise InputError(msg)
        if is_torch(users):
            if users.device != items.device:
                msg = (
                    f"user_factors and item_factors must be on one device; got {users.device} "
                    f"and {items.device}."
                )
                raise InputError(msg)
            if users.dtype != items.dtype:
                users = users.to(items.dtype)
        elif users.dtype != items.dtype:  # float32 with float64: score in float64
            users = users.astype(np.float64)
            items = items.astype(np.float64)
        if items.shape[0] == 0:
            msg = (
                "item_factors has no rows; expected at least one catalog item (a model with "
                "no items can recommend nothing)."
            )
            raise InputError(msg)
        if similarity == "cosine":
            users = _normalised(users, "user_factors")
            items = _normalised(items, "item_factors")
        self.user_factors = users
        self.item_factors = items
        self.user_ids = _ids(user_ids, users.shape[0], "user_ids", "user_factors")
        self.item_ids = _ids(item_ids, items.shape[0], "item_ids", "item_factors")
        self.similarity = similarity

    @property
    def uses_torch(self) -> bool:
        """Whether the factors are torch tensors (scored by torch on their device)."""
        return is_torch(self.item_factors)

    def __repr__(self) -> str:
        u, i = self.user_factors.shape, self.item_factors.shape
        return (
            f"FactorModel(users={u[0]}, items={i[0]}, factors={u[1]}, "
            f"dtype={str(self.item_factors.dtype).replace('torch.', '')}, "
            f"similarity={self.similarity!r})"
        )


def _on_device(factors: Any, device: str | None) -> Any:
    """``factors`` where they are scored: a torch tensor on ``device``; without a device, a
    tensor in CPU memory as a NumPy array (no copy), anything else as it is."""
    if device is None:
        if is_torch(factors) and factors.device.type == "cpu":
            return factors.numpy()
        return factors
    if not isinstance(device, str):
        msg = f"device must be a torch device name such as 'cuda' or 'cpu'; got {device!r}."
        raise InputError(msg)
    try:
        import torch
    except ImportError:
        msg = (
            f"device={device!r} scores with torch, which is not installed: "
            'pip install "receval[torch]" (or leave device out: NumPy scores on the CPU).'
        )
        raise InputError(msg) from None
    try:
        tensor = factors if is_torch(factors) else torch.from_numpy(factors)
        return tensor.to(torch.device(device))
    except (RuntimeError, AssertionError) as exc:
        msg = f"device={device!r} is not a torch device that can be used here ({exc})."
        raise InputError(msg) from None


def _normalised(factors: Any, name: str) -> Any:
    """Rows divided by their Euclidean norms (a zero row is an error)."""
    if is_torch(factors):
        import torch

        norms = torch.linalg.vector_norm(factors, dim=1, keepdim=True)
        zero = torch.nonzero(norms.flatten() == 0).flatten()
        if zero.numel():
            msg = (
                f"{name} has {zero.numel()} zero row(s) (rows {zero[:5].tolist()}): cosine "
                "similarity is undefined for them."
            )
            raise InputError(msg)
        return factors / norms
    lengths = np.linalg.norm(factors, axis=1, keepdims=True)
    zeros = np.flatnonzero(lengths == 0)
    if zeros.size:
        msg = (
            f"{name} has {zeros.size} zero row(s) (rows {zeros[:5].tolist()}): cosine similarity "
            "is undefined for them."
        )
        raise InputError(msg)
    return factors / lengths


class ScoreModel:
    """A model given by a function that scores every catalog item for a batch of users.

    Parameters
    ----------
    fn:
        ``fn(user_ids) -> scores``: ``user_ids`` a NumPy array of user ids (int64, or an object
        array of strings, as truth's ids), ``scores`` a ``(len(user_ids) x len(item_ids))``
        array of floats (NumPy, or a torch tensor on any device), higher is better, columns in
        ``item_ids`` order. NaN or infinite scores are an error (use ``exclude`` or
        ``candidates`` to leave items out).
    item_ids:
        The catalog: the item id of each column.
    user_ids:
        The users ``fn`` knows (optional): truth users outside it are not scored and have no
        recommendations (``no_recs`` applies), as with a FactorModel. Default: every truth
        user is passed to ``fn``.

    Examples
    --------
    >>> import numpy as np, receval
    >>> popularity = np.array([3.0, 1.0, 2.0])
    >>> def scores(users):
    ...     return np.tile(popularity, (len(users), 1))
    >>> model = receval.ScoreModel(scores, ["a", "b", "c"])
    >>> receval.evaluate({"u": {"c": 1}}, model, ["mrr", "recall@1"], exclude={"u": ["a"]}).means
    {'mrr': 1.0, 'recall@1': 1.0}
    """

    def __init__(
        self, fn: Callable[[np.ndarray], Any], item_ids: Any, *, user_ids: Any = None
    ) -> None:
        if not callable(fn):
            msg = f"fn must be a function of a batch of user ids; got {type(fn).__name__}."
            raise InputError(msg)
        self.fn = fn
        self.item_ids = _id_list(item_ids, "item_ids", "the item id of each column fn returns")
        if self.item_ids.len() == 0:
            msg = (
                "item_ids is empty; expected at least one catalog item (the item id of each "
                "column fn returns)."
            )
            raise InputError(msg)
        self.user_ids: pl.Series | None = None
        if user_ids is not None:
            self.user_ids = _id_list(user_ids, "user_ids", "the user ids fn knows")

    @property
    def uses_torch(self) -> bool:
        """False: the function's output (NumPy or torch) is read on the CPU."""
        return False

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"ScoreModel({name}, items={self.item_ids.len()})"


Model = FactorModel | ScoreModel


def is_model(value: object) -> bool:
    """Whether ``value`` is a model source (:class:`FactorModel` or :class:`ScoreModel`)."""
    return isinstance(value, FactorModel | ScoreModel)
