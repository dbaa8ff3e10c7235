"""Each metric family's provider: the function that computes its metrics on the shared
layout (:class:`~receval.families.contract.Prepared`) and returns its
:class:`~receval.families.contract.Part`. The ranking family is computed with the layout
itself (:func:`receval.families.ranking.prepare`), then read by
:func:`~receval.families.ranking.ranking_part`; the other families are looked up here."""

from __future__ import annotations

from collections.abc import Callable

from receval.families.beyond import beyond_part
from receval.families.contract import Part, Prepared
from receval.families.pointwise import classification_part, rating_part
from receval.metrics.specs import Family, Metric

__all__ = ["PARTS", "Provider"]

Provider = Callable[[tuple[Metric, ...], Prepared], Part]

PARTS: dict[Family, Provider] = {
    "classification": classification_part,
    "rating": rating_part,
    "beyond": beyond_part,
}
