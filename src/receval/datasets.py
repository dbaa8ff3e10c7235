"""``receval.datasets``: seeded generators of realistic evaluation data (public home of
:mod:`receval.data.datasets`, where they are defined)."""

from receval.data.datasets import Interactions, make_interactions, make_items, make_train

__all__ = ["Interactions", "make_interactions", "make_items", "make_train"]
