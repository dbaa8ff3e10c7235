"""Library errors. Every error raised on bad input subclasses :class:`RecevalError`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "EngineError",
    "InputError",
    "MetricError",
    "OutputError",
    "RecevalError",
    "UndefinedMetricWarning",
    "about",
]


class RecevalError(ValueError):
    """Base class of every error receval raises on bad input or bad options."""


class MetricError(RecevalError):
    """An unknown metric name, or a metric parameter out of its domain."""


class InputError(RecevalError):
    """Truth, recommendations or an option do not have the expected shape or values."""


class OutputError(InputError):
    """An output path cannot be written: its folder is missing or not writable, the disk is
    full, or it names one of the inputs. Nothing is half-written and an old file is kept.
    (An :class:`InputError`, since the path is an option the caller gave.)"""


class EngineError(RecevalError):
    """An engine cannot run: pyspark is not installed (``receval[spark]``), the Spark
    executors cannot import receval, or this process was forked after receval's thread pools
    had started (use the ``"spawn"`` or ``"forkserver"`` start method)."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined on the data given (a 0/0 ratio, constant truth for R²): its
    value is NaN, never a silent 0."""


@contextmanager
def about(subject: str) -> Iterator[None]:
    """Prefix the message of a receval error raised in the block with ``subject`` (for
    example ``run 'knn'``), so that an error in one of several inputs says which one."""
    try:
        yield
    except RecevalError as exc:
        raise type(exc)(f"{subject}: {exc}") from exc
