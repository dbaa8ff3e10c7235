"""Each metric family's provider: the function that computes its metrics on the shared
layout (:class:`~receval.families.contract.Prepared`) and returns its
:class:`~receval.families.contract.Part`, and :func:`family_parts`, the one dispatch every
engine calls.

Recommendation lists have the providers of :data:`PARTS` (the ranking family reads the
kernel output that :func:`receval.families.ranking.prepare` computes with the layout); a
model source's exact ranks (:attr:`Prepared.exact`) have those of :data:`EXACT_PARTS`
(:mod:`receval.families.exact`). The beyond-accuracy metrics read recommendation lists
either way: a model source's are its top-K lists.
"""

from __future__ import annotations

from collections.abc import Callable

from receval.families.beyond import beyond_part
from receval.families.contract import Part, Prepared
from receval.families.exact import exact_gauc_part, exact_ranking_part, exact_rating_part
from receval.families.pointwise import classification_part, rating_part
from receval.families.ranking import KernelOutput, ranking_part
from receval.metrics.specs import Family, Metric

__all__ = ["EXACT_PARTS", "FAMILIES", "PARTS", "Provider", "family_parts"]

Provider = Callable[[tuple[Metric, ...], Prepared], Part]

FAMILIES: tuple[Family, ...] = ("ranking", "classification", "rating", "beyond")
"""The families in the order their parts are computed (and their errors raised)."""

PARTS: dict[Family, Provider] = {
    "classification": classification_part,
    "rating": rating_part,
    "beyond": beyond_part,
}

EXACT_PARTS: dict[Family, Provider] = {
    "ranking": exact_ranking_part,
    "classification": exact_gauc_part,
    "rating": exact_rating_part,
    "beyond": beyond_part,
}


def family_parts(
    plan: tuple[Metric, ...], prep: Prepared, kernel: KernelOutput | None = None
) -> list[Part]:
    """Each family's part of ``plan`` on ``prep``, in :data:`FAMILIES` order; a family
    without metrics in ``plan`` has none. ``kernel``: the ranking kernel's output on lists
    (from :func:`~receval.families.ranking.prepare`); unused on exact ranks. The beyond
    metrics read ``prep``'s family tables (items, train), which the engine reads first
    (:func:`receval.engines.inputs.with_family_tables`)."""
    parts: list[Part] = []
    for family in FAMILIES:
        chosen = tuple(m for m in plan if m.spec.family == family)
        if not chosen:
            continue
        if prep.exact is not None:
            parts.append(EXACT_PARTS[family](chosen, prep))
        elif family == "ranking":
            assert kernel is not None, "the ranking metrics of lists need the kernel's output"
            parts.append(ranking_part(chosen, prep, kernel))
        else:
            parts.append(PARTS[family](chosen, prep))
    return parts
