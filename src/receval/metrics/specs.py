"""The types of a metric and the registry that holds them.

A metric is a frozen :class:`MetricSpec` (name, typed :class:`Param` parameters with
defaults, bounds, direction, references and the facts the engines ask about); a request for
one is a :class:`Metric` (the spec, its parameter values, its cutoff ``k`` and, for a sampled
metric, its :class:`SampleTag`), whose canonical printed form is its identity. The registry
maps every name and alias to its spec: :func:`register` adds one, :func:`list_metrics` and
:func:`lookup` read it. The metrics themselves are declared in
:mod:`receval.metrics.catalogue` and the metric strings parsed in
:mod:`receval.metrics.grammar`; this module imports neither.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Literal

from receval._errors import MetricError

__all__ = [
    "DEFAULT_GAMMA",
    "ESTIMATORS",
    "Aggregation",
    "Family",
    "Metric",
    "MetricSpec",
    "OneItem",
    "Param",
    "ParamKind",
    "ParamValue",
    "SampleTag",
    "aliases",
    "list_metrics",
    "lookup",
    "register",
]

ParamValue = float | int | str | tuple[tuple[float, float], ...] | None
ParamKind = Literal[
    "threshold", "positive", "grade", "number", "fraction", "choice", "gain", "word"
]
"""How a parameter's value is checked: ``threshold`` and ``positive``, a finite number > 0;
``grade``, a finite number > 0 that bounds the relevance values (a truth relevance above it is
an input error, raised when the data is read); ``number``, any finite number; ``fraction``, a
number strictly between 0 and 1; ``choice``, one of ``choices``; ``gain``, one of ``choices``
or a map ``{relevance: gain}``; ``word``, a column name or a value (``by=genre``)."""
Family = Literal["ranking", "classification", "rating", "beyond"]
"""What a metric judges: ranked lists against truth (``ranking``), scored rows with 0/1
labels (``classification``), predicted ratings (``rating``), or the lists themselves
(``beyond``: coverage, diversity, novelty, popularity bias)."""
Aggregation = Literal["user", "weighted", "global"]
"""How a metric's value is made from the data: ``user``, the plain mean of per-user values;
``weighted``, a weighted mean of per-user values (``gauc`` weighted by impressions or clicks,
``recall(average=micro)``: hits summed over users over |R| summed over users); ``global``,
computed over every row or item at once, with no per-user values (``auc``, ``logloss``,
``coverage``, rating metrics over rows, ...)."""


OneItem = Literal["dcg", "hit", "precision", "reciprocal", "auc"]
"""A ranking metric's value for a query with exactly one relevant item at full rank ``r``
among ``n`` candidates (docs/sampled.md): ``dcg`` ``1 / log2(r + 1)`` (ndcg), ``hit``
``[r <= K]`` (recall, hit rate), ``precision`` ``[r <= K] / K``, ``reciprocal``
``[r <= K] / r`` (mrr, map, arhr), ``auc`` ``(n - r) / (n - 1)``. The sampled-metric
estimators correct the metrics that declare one."""

ESTIMATORS = ("sampled", "rescale", "minimal_bias", "bias_variance", "mle")
"""The names of a sampled metric's estimate: ``sampled`` (uncorrected), then the corrections."""
DEFAULT_GAMMA = 0.01


@dataclass(frozen=True)
class SampleTag:
    """How a sampled metric was estimated: the part after ``~`` in its name.

    ``estimator`` is ``sampled`` (the metric on the sampled ranks, uncorrected) or a
    correction (:data:`ESTIMATORS`); ``negatives`` the number m of sampled negatives per test
    item; ``replace`` whether they are drawn with replacement; ``distribution`` ``uniform``
    or ``popularity``; ``gamma`` the variance weight of ``bias_variance``. The canonical text
    spells the defaults out only when they differ: ``rescale(100)``,
    ``sampled(100, replace=true, distribution=popularity)``, ``bias_variance(100, gamma=0.1)``.
    """

    estimator: str
    negatives: int
    replace: bool = False
    distribution: str = "uniform"
    gamma: float = DEFAULT_GAMMA

    @property
    def text(self) -> str:
        """The canonical text, e.g. ``rescale(100)``."""
        parts = [str(self.negatives)]
        if self.replace:
            parts.append("replace=true")
        if self.distribution != "uniform":
            parts.append(f"distribution={self.distribution}")
        if self.estimator == "bias_variance" and self.gamma != DEFAULT_GAMMA:
            parts.append(f"gamma={self.gamma!r}")
        return f"{self.estimator}({', '.join(parts)})"

    @property
    def corrected(self) -> bool:
        """Whether the value estimates the full-catalog metric (not the raw sampled one)."""
        return self.estimator != "sampled"


@dataclass(frozen=True)
class Param:
    """A declared metric parameter: its name, default, domain and meaning."""

    name: str
    default: ParamValue
    kind: ParamKind
    doc: str
    choices: tuple[str, ...] = ()

    def validate(self, metric: str, value: object) -> ParamValue:
        """Return ``value`` in canonical form, or raise :class:`MetricError`."""
        where = f"parameter `{self.name}` of {metric}"
        if self.kind in ("threshold", "positive", "grade"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                msg = f"{where} must be a number > 0; got {value!r}."
                raise MetricError(msg)
            if not math.isfinite(value) or value <= 0:
                msg = f"{where} must be a finite number > 0; got {value!r}."
                raise MetricError(msg)
            return _as_number(value)
        if self.kind in ("number", "fraction"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                msg = f"{where} must be a number; got {value!r}."
                raise MetricError(msg)
            if not math.isfinite(value):
                msg = f"{where} must be a finite number; got {value!r}."
                raise MetricError(msg)
            if self.kind == "fraction" and not 0 < value < 1:
                msg = f"{where} must be a number strictly between 0 and 1; got {value!r}."
                raise MetricError(msg)
            return _as_number(value)
        if self.kind == "word":  # a column name or a value of one, kept as given
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str) or not value:
                msg = (
                    f"{where} must be a word or a quoted text, e.g. genre or 'a b'; got {value!r}."
                )
                raise MetricError(msg)
            return value
        if self.kind == "choice":
            if not isinstance(value, str) or value.lower() not in self.choices:
                msg = f"{where} must be one of {', '.join(self.choices)}; got {value!r}."
                raise MetricError(msg)
            return value.lower()
        # gain: a named gain or a map {relevance: gain}
        if isinstance(value, str) and value.lower() in self.choices:
            return value.lower()
        if isinstance(value, Mapping) and value:
            pairs = []
            for key, val in value.items():
                ok = (
                    all(
                        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                        for x in (key, val)
                    )
                    and val >= 0
                )
                if not ok:
                    msg = (
                        f"{where} maps relevance to gain with finite numbers, gains >= 0; "
                        f"got {key!r}: {val!r}."
                    )
                    raise MetricError(msg)
                pairs.append((_as_number(key), _as_number(val)))
            return tuple(sorted(pairs))
        msg = (
            f"{where} must be one of {', '.join(self.choices)} or a map "
            f"{{relevance: gain}}; got {value!r}."
        )
        raise MetricError(msg)


@dataclass(frozen=True)
class MetricSpec:
    """The declaration of a metric: everything but its arithmetic, which lives in a kernel."""

    name: str
    description: str
    formula: str
    params: tuple[Param, ...] = ()
    aliases: tuple[str, ...] = ()
    cutoff: bool = True
    higher_is_better: bool = True
    bounds: tuple[float, float] = (0.0, 1.0)
    family: Family = "ranking"
    references: tuple[str, ...] = ()
    variants: str = ""
    properties: frozenset[str] = field(default_factory=frozenset)
    aggregation: Aggregation = "user"
    """How the value is made (:data:`Aggregation`), at the default parameters."""
    aggregation_by: tuple[str, tuple[tuple[str, Aggregation], ...]] | None = None
    """When a choice parameter decides the aggregation: its name and the aggregation of each
    choice, e.g. ``("average", (("rows", "global"), ("user", "user")))``
    (:meth:`Metric.aggregation` reads it)."""
    needs_train: bool = False
    """Reads item popularity from training interactions (``train=``)."""
    needs_item_features: bool = False
    """Reads item similarity (``item_features=``, and ``items=`` unless it is a function)."""
    thresholded: bool = False
    """Predicts a row positive when its score >= the parameter ``threshold`` (confusion
    counts)."""
    ranks_rows: bool = False
    """Ranks every scored row by score, across users (one global sort; a distributed engine
    merges the rows in ranges of scores)."""
    uses_rating_range: bool = False
    """Reads the width of the rating scale (evaluate's ``rating_range``, else truth's)."""
    one_item: OneItem | None = None
    """The metric's value with one relevant item per query (:data:`OneItem`): the metrics
    that declare one can be sampled and corrected (docs/sampled.md)."""
    needs_history: bool = False
    """Reads each user's own training items (``train=``): a distributed engine gives every
    shard the train rows of its users, not only item popularity."""
    needs_items: bool = False
    """Reads item categories or groups from a column of the item table (``items=``): the
    metric's ``by``, else the categorical columns of ``item_features``."""
    ties_past_cutoff: bool = False
    """Under ``ties="expected"``, items tied with the K-th item past the cutoff share the
    attention of the list's positions: the metric reads recommendations beyond K (a model
    source's top-K lists do not hold them)."""
    uses_catalog_size: bool = False
    """Each user's value depends on the catalog's size (the item table's, else the distinct
    items of truth, recs and train): an engine that sees the users a block at a time needs
    the whole catalog before the first block."""

    def __post_init__(self) -> None:
        if self.aggregation_by is None:
            return
        name, table = self.aggregation_by
        param = self.param(name)
        if param.kind != "choice" or sorted(c for c, _ in table) != sorted(param.choices):
            msg = f"{self.name}: aggregation_by must give an aggregation to each choice of {name}"
            raise ValueError(msg)
        if dict(table)[str(param.default)] != self.aggregation:
            msg = f"{self.name}: aggregation must be the aggregation of {name}={param.default}"
            raise ValueError(msg)

    def param(self, name: str) -> Param:
        """The declared parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        msg = f"{self.name} has no parameter {name!r}"
        raise KeyError(msg)


@dataclass(frozen=True)
class Metric:
    """A metric request: a spec, the values of its parameters and its cutoff ``k``."""

    spec: MetricSpec
    values: tuple[tuple[str, ParamValue], ...]
    k: int | None
    sampling: SampleTag | None = None
    """For a sampled metric, how it was estimated (the ``~`` part of its name); None for a
    metric computed on the full lists."""

    @property
    def name(self) -> str:
        """The spec's canonical name, e.g. ``"ndcg"``."""
        return self.spec.name

    def get(self, name: str) -> ParamValue:
        """The value of parameter ``name`` (its default when not given)."""
        for key, value in self.values:
            if key == name:
                return value
        return self.spec.param(name).default

    def float_param(self, name: str) -> float:
        """The value of the number parameter ``name`` as a float."""
        value = self.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            msg = f"parameter {name!r} of {self.canonical} is not a number: {value!r}"
            raise TypeError(msg)
        return float(value)

    def int_param(self, name: str) -> int:
        """The value of the parameter ``name``, an integer."""
        value = self.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"parameter {name!r} of {self.canonical} is not an integer: {value!r}"
            raise TypeError(msg)
        return value

    def str_param(self, name: str) -> str:
        """The value of the choice parameter ``name``."""
        value = self.get(name)
        if not isinstance(value, str):
            msg = f"parameter {name!r} of {self.canonical} is not a word: {value!r}"
            raise TypeError(msg)
        return value

    def threshold(self, default: float) -> float:
        """The relevance threshold of this metric: its ``rel=``, else ``default`` (evaluate's
        ``relevance_threshold``; also for a metric without the parameter ``rel``)."""
        if not any(p.name == "rel" for p in self.spec.params):
            return default
        rel = self.get("rel")
        return default if rel is None else self.float_param("rel")

    def aggregation(self) -> Aggregation:
        """How this metric's value is made (:data:`Aggregation`) at its parameters (a sampled
        metric: the mean of per-user values)."""
        if self.sampling is not None:
            return "user"
        if self.spec.aggregation_by is None:
            return self.spec.aggregation
        name, table = self.spec.aggregation_by
        return dict(table)[self.str_param(name)]

    def has_per_user(self) -> bool:
        """Whether the metric has per-user values (a column of ``Result.per_user``)."""
        return self.aggregation() != "global"

    def is_global(self) -> bool:
        """Whether the metric is computed over every row or item at once (no per-user
        values)."""
        return self.aggregation() == "global"

    def is_weighted(self) -> bool:
        """Whether the metric's mean weighs its per-user values (not their plain mean)."""
        return self.aggregation() == "weighted"

    @cached_property  # computed once: a request of N metrics looks each name up many times
    def canonical(self) -> str:
        """The canonical printed form, which is also the metric's identity."""
        given = dict(self.values)
        parts = [
            f"{p.name}={_format(given[p.name])}"
            for p in self.spec.params
            if p.name in given and given[p.name] != p.default
        ]
        text = self.spec.name + (f"({', '.join(parts)})" if parts else "")
        text += f"@{self.k}" if self.k is not None else ""
        return text + (f"~{self.sampling.text}" if self.sampling is not None else "")

    def __str__(self) -> str:
        return self.canonical


_REGISTRY: dict[str, MetricSpec] = {}
_ALIASES: dict[str, str] = {}  # every name and alias -> the canonical name
_ALIAS_VIEW = MappingProxyType(_ALIASES)


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` (and its aliases) to the registry; names must be new."""
    for key in (spec.name, *spec.aliases):
        if key in _ALIASES:
            msg = f"metric name {key!r} is already registered (by {_ALIASES[key]!r})"
            raise ValueError(msg)
    _REGISTRY[spec.name] = spec
    for key in (spec.name, *spec.aliases):
        _ALIASES[key] = spec.name
    return spec


def list_metrics() -> tuple[MetricSpec, ...]:
    """Every registered metric, in registration order."""
    return tuple(_REGISTRY.values())


def aliases() -> Mapping[str, str]:
    """Every registered name and alias, each mapped to its metric's canonical name, in
    registration order (a read-only view)."""
    return _ALIAS_VIEW


def lookup(name: str) -> MetricSpec:
    """The spec registered under ``name`` (its canonical name or an alias); KeyError if
    none is."""
    return _REGISTRY[_ALIASES[name]]


def _as_number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)


def _format(value: ParamValue) -> str:
    if isinstance(value, tuple):
        return "{" + ", ".join(f"{_format(k)}: {_format(v)}" for k, v in value) + "}"
    if isinstance(value, str):
        return value if value.isidentifier() else repr(value)
    return repr(value)
