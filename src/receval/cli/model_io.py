"""A factor model from the command line's settings (``receval evaluate`` and ``receval topk``
with ``--user-factors`` / ``--item-factors``): the :class:`receval.FactorModel` and the
keywords of a model source (``exclude``, ``candidates``, ``block_memory``). The files are read
by the input layer, :mod:`receval.data.model_files`, whose docstring lists their formats.
"""

from __future__ import annotations

from typing import Any

from receval._errors import InputError
from receval.data.layout import check_id_type
from receval.data.model_files import existing_file, load_candidates, load_factors, load_ids
from receval.data.models import FactorModel

__all__ = ["factor_model", "model_options"]


def factor_model(settings: dict[str, Any]) -> Any:
    """The :class:`receval.FactorModel` of the command line's settings (config keys), whose
    model keys (``user_factors``, ``item_factors``, ``user_ids``, ``item_ids``,
    ``similarity``, ``device``) it pops; ``user_col``, ``item_col`` and ``id_type`` it reads."""
    kinds = check_id_type(settings.get("id_type", "auto"))
    matrices, id_arrays = [], []
    for role in ("user", "item"):
        id_col = settings.get(f"{role}_col", role)
        path = settings.pop(f"{role}_factors")
        factors, ids = load_factors(path, role, id_col=id_col, kind=kinds[role])
        ids_path = settings.pop(f"{role}_ids", None)
        if ids_path is not None:  # the option wins over ids held in the factor file
            ids = load_ids(ids_path, f"--{role}-ids", id_col=id_col, kind=kinds[role])
            if len(ids) != factors.shape[0]:
                msg = (
                    f"--{role}-ids file {str(ids_path)!r} holds {len(ids)} ids for the "
                    f"{factors.shape[0]} rows of --{role}-factors {str(path)!r}; expected one "
                    "id per row, in row order."
                )
                raise InputError(msg)
        matrices.append(factors)
        id_arrays.append(ids)
    similarity = settings.pop("similarity", "dot")
    if similarity not in ("dot", "cosine"):
        msg = f"similarity must be dot or cosine; got {similarity!r}."
        raise InputError(msg)
    return FactorModel(
        matrices[0], matrices[1], user_ids=id_arrays[0], item_ids=id_arrays[1],
        similarity=similarity, device=settings.pop("device", None),
    )  # fmt: skip


def model_options(settings: dict[str, Any]) -> dict[str, Any]:
    """The keywords of :func:`receval.evaluate` / :func:`receval.topk` for a model source
    read from files: ``exclude`` (the path, checked), ``candidates`` (read here:
    :func:`load_candidates`) and ``block_memory`` (digits as a number of bytes), popped from
    ``settings``."""
    out: dict[str, Any] = {}
    exclude = settings.pop("exclude", None)
    if exclude is not None:
        out["exclude"] = existing_file(exclude, "--exclude")
    candidates = settings.pop("candidates", None)
    if candidates is not None:
        out["candidates"] = load_candidates(
            candidates, user_col=settings.get("user_col", "user"),
            item_col=settings.get("item_col", "item"),
            kinds=check_id_type(settings.get("id_type", "auto")),
        )  # fmt: skip
    block = settings.pop("block_memory", None)
    if block is not None:
        out["block_memory"] = int(block) if isinstance(block, str) and block.isdigit() else block
    return out
