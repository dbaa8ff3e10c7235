"""The face of the metric registry: importing it registers every metric of the catalogue.

The types and the registry live in :mod:`receval.metrics.specs`, the metric-string grammar in
:mod:`receval.metrics.grammar`, the declarations in :mod:`receval.metrics.catalogue`. A module
that parses or lists metrics imports them from here, so that the catalogue is registered
before the first lookup; one that only names the types imports :mod:`~receval.metrics.specs`.
"""

from __future__ import annotations

from receval.metrics import catalogue  # noqa: F401  (imported for its registrations)
from receval.metrics.grammar import parse_metric, parse_metrics
from receval.metrics.specs import (
    DEFAULT_GAMMA,
    ESTIMATORS,
    Aggregation,
    Family,
    Metric,
    MetricSpec,
    OneItem,
    Param,
    ParamValue,
    SampleTag,
    list_metrics,
    register,
)

__all__ = [
    "DEFAULT_GAMMA",
    "ESTIMATORS",
    "Aggregation",
    "Family",
    "Metric",
    "MetricSpec",
    "OneItem",
    "Param",
    "ParamValue",
    "SampleTag",
    "list_metrics",
    "parse_metric",
    "parse_metrics",
    "register",
]
