"""Scoring a model in blocks of users: the block budget, the scorer of a block, the progress.

:func:`parse_memory` reads ``block_memory`` (bytes, or a size such as ``"256MiB"``), the budget
that sizes the blocks of the model engines (:mod:`receval.engines.model`,
:mod:`receval.engines.sampled`) and of ``engine="stream"``. :class:`Scorer` gives a block's
scores for a model source (:mod:`receval.data.models`): a BLAS product of NumPy factors into
the caller's buffer, a product on the factors' torch device, or the call of a ScoreModel's
function, whose output is checked (its shape, real numbers that float64 holds exactly); no
score past it is NaN or infinite (factors whose products cannot overflow are not checked).
:func:`progress_bar` shows the users scored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import polars as pl

from receval._errors import InputError
from receval.arrays import classification as C
from receval.data.models import FactorModel, Model, is_torch

__all__ = ["DEFAULT_BLOCK_MEMORY", "Scorer", "parse_memory", "progress_bar"]

DEFAULT_BLOCK_MEMORY = "256MiB"
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def parse_memory(value: object) -> int:
    """``block_memory`` in bytes: a positive integer or a text such as ``"256MiB"``, ``"2GB"``."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str):
        found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", value)
        if found and found.group(2).lower() in _UNITS:
            size = float(found.group(1)) * _UNITS[found.group(2).lower()]
            if size >= 1:
                return int(size)
    msg = (
        "block_memory must be a positive number of bytes or a size such as '256MiB' or '2GB'; "
        f"got {value!r}."
    )
    raise InputError(msg)


@contextmanager
def progress_bar(enabled: bool, total: int, label: str) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` of a Rich progress bar on stderr (a no-op when disabled)."""
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), TextColumn("{task.completed}/{task.total} users"),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


class Scorer:
    """A model's scores over the scored columns (the catalog, or its global candidates), and
    what their scan needs to know: the item side, the score size, whether to check for
    overflow.

    ``ids`` are the catalog's item ids (typed as the evaluation reads them), ``cols`` the
    catalog indices scored, ascending (None: every item). A block of users is scored by
    :meth:`block` (a ScoreModel, or factors on a torch device) or :meth:`block_into` (NumPy
    factors: a BLAS product into the caller's buffer)."""

    def __init__(self, model: Model, ids: pl.Series, cols: np.ndarray | None) -> None:
        self.model = model
        self.cols = cols
        self.n_cols = ids.len() if cols is None else int(cols.shape[0])
        self.check_finite = True
        self.col_ids = ids if cols is None else ids.gather(cols)
        if isinstance(model, FactorModel):
            items = model.item_factors
            if cols is not None:
                items = (
                    items[cols] if not model.uses_torch else items[_torch_index(cols, items.device)]
                )
            self.items_t = items.T if not model.uses_torch else items.T.contiguous()
            self.itemsize = 4 if str(items.dtype) in ("float32", "torch.float32") else 8
            # |u . i| <= |u| |i|: no overflow possible below the float's range, no check then
            if model.uses_torch:
                import torch

                u_norm = torch.linalg.vector_norm(model.user_factors, dim=1)
                i_norm = torch.linalg.vector_norm(items, dim=1)
                fmax = float(torch.finfo(items.dtype).max)
            else:
                with np.errstate(over="ignore"):  # an infinite bound: scores are checked
                    u_norm = np.linalg.norm(model.user_factors, axis=1)
                    i_norm = np.linalg.norm(items, axis=1)
                fmax = float(np.finfo(items.dtype).max)
            bound = 0.0
            if u_norm.shape[0] and i_norm.shape[0]:
                bound = float(u_norm.max()) * float(i_norm.max())
            self.check_finite = not bound < fmax / 2
        else:
            self.itemsize = 8

    def block(self, rows: np.ndarray, users: pl.Series) -> Any:
        """Scores of the users at model ``rows`` (a FactorModel on a torch device: a tensor
        there) or with ids ``users`` (a ScoreModel: a NumPy array). NumPy factors are scored
        by :meth:`block_into`."""
        model = self.model
        if isinstance(model, FactorModel):  # stays on the device: kernels.model_torch scans it
            import torch

            with torch.no_grad():
                idx = _torch_index(rows, model.user_factors.device)
                scores_t = model.user_factors[idx] @ self.items_t
                if self.check_finite and not bool(torch.isfinite(scores_t).all()):
                    bad = scores_t.cpu().numpy()
                    _check_scores(bad, users, "the factors' products", self.col_ids)
            return scores_t
        batch = users.to_numpy()
        if batch.dtype == np.object_ or users.dtype == pl.String:
            batch = np.array(users.to_list(), dtype=object)
        out = model.fn(batch)
        if is_torch(out):
            out = out.detach().cpu().numpy()
        try:
            scores = np.asarray(out)
        except (TypeError, ValueError) as exc:
            msg = (
                "the score function must return a 2-D array of floats; could not read its "
                f"output ({exc})."
            )
            raise InputError(msg) from None
        n_items = model.item_ids.len()
        if scores.shape != (batch.shape[0], n_items):
            msg = (
                f"the score function returned shape {scores.shape} for {batch.shape[0]} user(s); "
                f"expected ({batch.shape[0]}, {n_items}): one row per user, one column per item "
                "of item_ids."
            )
            raise InputError(msg)
        if (
            scores.dtype == np.bool_
            or not np.issubdtype(scores.dtype, np.number)
            or np.issubdtype(scores.dtype, np.complexfloating)
        ):
            msg = f"the score function must return real numbers; got dtype {scores.dtype}."
            raise InputError(msg)
        C.check_exact_scores(scores, "the score function's output")
        if scores.dtype not in (np.float32, np.float64):
            scores = scores.astype(np.float64)
        _check_scores(scores, users, "the score function", model.item_ids)  # before the subset
        if self.cols is not None:
            scores = scores[:, self.cols]
        return np.ascontiguousarray(scores)

    def block_into(self, out: np.ndarray, rows: np.ndarray, users: Callable[[], pl.Series]) -> None:
        """Scores of the users at model ``rows`` of NumPy factors into ``out`` (``len(rows) x
        n_cols``, of the items' dtype): one BLAS product (the scan's workers each run one, BLAS
        limited to a thread). ``users()`` gives their ids, asked for only to word an error."""
        model = self.model
        assert isinstance(model, FactorModel)
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            np.matmul(model.user_factors[rows], self.items_t, out=out)
        if self.check_finite and not np.isfinite(out).all():
            _check_scores(out, users(), "the factors' products", self.col_ids)


def _torch_index(rows: np.ndarray, device: Any) -> Any:
    import torch

    return torch.as_tensor(rows, dtype=torch.int64, device=device)


def _check_scores(
    scores: np.ndarray, users: pl.Series, source: str, items: pl.Series | None
) -> None:
    """Refuse NaN and infinite scores, naming users (and items)."""
    finite = np.isfinite(scores)
    if finite.all():
        return
    bad_rows, bad_cols = np.nonzero(~finite)
    shown = []
    for r, c in zip(bad_rows[:5].tolist(), bad_cols[:5].tolist(), strict=True):
        item = items[c] if items is not None else f"column {c}"
        shown.append(f"user {users[r]!r}, item {item!r}: {scores[r, c]}")
    msg = (
        f"{source} gave {bad_rows.size} NaN or infinite score(s); expected finite numbers "
        f"(leave items out with exclude= or candidates=). First: {'; '.join(shown)}."
    )
    raise InputError(msg)
