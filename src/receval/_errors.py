"""Library errors. Every error raised on bad input subclasses :class:`RecevalError`."""

from __future__ import annotations

__all__ = ["EngineError", "InputError", "MetricError", "RecevalError", "UndefinedMetricWarning"]


class RecevalError(ValueError):
    """Base class of every error receval raises on bad input or bad options."""


class MetricError(RecevalError):
    """An unknown metric name, or a metric parameter out of its domain."""


class InputError(RecevalError):
    """Truth, recommendations or an option do not have the expected shape or values."""


class EngineError(RecevalError):
    """An engine cannot run: pyspark is not installed (``receval[spark]``), or the Spark
    executors cannot import receval."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined on the data given (a 0/0 ratio, constant truth for R²): its
    value is NaN, never a silent 0."""
