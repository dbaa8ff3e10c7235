"""Library errors. Every error raised on bad input subclasses :class:`RecevalError`; the checks
of option values that many modules share (:func:`check_choice`, :func:`check_integer`) raise
them with one wording; :class:`Choice` is the parsed form of an option that names one of a few
policies."""

from __future__ import annotations

import enum
import numbers
import sys
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self, cast

__all__ = [
    "Choice",
    "EngineError",
    "InputError",
    "LeakageWarning",
    "MetricError",
    "OutputError",
    "RecevalError",
    "UndefinedMetricWarning",
    "about",
    "caller_stacklevel",
    "check_choice",
    "check_integer",
    "check_seed",
    "first_line",
]

SEED_BOUND = 2**64
"""Seeds are integers in ``[0, SEED_BOUND)``: 64 bits, what the seeded hashes of the splits and
the sampled draws use exactly (NumPy's generators take them too). :func:`check_seed`."""


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


class LeakageWarning(UserWarning):
    """A train/test split lets information from the test part into training: test
    interactions earlier than training ones, timestamps tied across the split, test pairs
    also in train (:func:`receval.audit_split`, run by every :func:`receval.split`). The data
    is never changed; the audit's table counts each case."""


@contextmanager
def about(subject: str) -> Iterator[None]:
    """Prefix the message of a receval error raised in the block with ``subject`` (for
    example ``run 'knn'``), so that an error in one of several inputs says which one."""
    try:
        yield
    except RecevalError as exc:
        raise type(exc)(f"{subject}: {exc}") from exc


def check_choice(
    name: str, value: object, choices: Collection[object], *, listed: str = "", more: str = ""
) -> None:
    """:class:`InputError` unless ``value`` is one of ``choices``.

    The message is ``"{name} must be one of {listed}{more}; got {value!r}."``, ``listed``
    being the choices joined by commas unless given.

    >>> check_choice("ties", "random", ("first", "trec"))
    Traceback (most recent call last):
    ...
    receval._errors.InputError: ties must be one of first, trec; got 'random'.
    """
    if value not in choices:
        shown = listed or ", ".join(map(str, choices))
        msg = f"{name} must be one of {shown}{more}; got {value!r}."
        raise InputError(msg)


class Choice(enum.Enum):
    """The base of an option whose value names one of a few policies (``ties="first"``).

    The option is read once, where it is checked (:meth:`parse`), and travels down as a
    member, which the code below compares by identity (``ties is Ties.FIRST``), never as a
    string. Each member is named as the option's value in upper case, and ``str()`` gives the
    value back as the user wrote it (for settings and messages).
    """

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The option's values, in the order the members are declared."""
        return tuple(str(member) for member in cls)

    @classmethod
    def parse(cls, value: object, name: str) -> Self:
        """The member that ``value`` names; :class:`InputError` (:func:`check_choice`'s
        message, ``name`` the option) when it names none."""
        check_choice(name, value, cls.options())
        return cls[cast(str, value).upper()]

    def __str__(self) -> str:
        return self.name.lower()

    def __format__(self, format_spec: str) -> str:
        return format(str(self), format_spec)


def check_integer(
    name: str,
    value: object,
    minimum: int,
    *,
    kinds: type | tuple[type, ...] = int,
    more: str = "",
) -> int:
    """``value`` as an int, or :class:`InputError` unless it is an integer (an instance of
    ``kinds``, never a bool) >= ``minimum``: ``"{name} must be an integer >= {minimum}{more};
    got {value!r}."``.

    >>> check_integer("k", 0, 1)
    Traceback (most recent call last):
    ...
    receval._errors.InputError: k must be an integer >= 1; got 0.
    """
    integer = not isinstance(value, bool) and isinstance(value, kinds)
    if not integer or cast(int, value) < minimum:
        msg = f"{name} must be an integer >= {minimum}{more}; got {value!r}."
        raise InputError(msg)
    return int(cast(int, value))


def first_line(exc: BaseException) -> str:
    """The first line of another library's exception, for a receval error that wraps it (its
    type's name when it has no text)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def caller_stacklevel() -> int:
    """The ``stacklevel`` of a warning issued here that points at the first frame outside
    the receval package (the user's call), however deep inside receval it is raised: the
    engines reach the same warning through different depths."""
    package = Path(__file__).resolve().parent
    frame = sys._getframe(1)
    level = 1
    while frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(package):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as an int: the one rule of every public ``seed=`` (splits, sampled draws,
    the comparison's resamples, the data generators).

    A seed is a Python or NumPy integer from 0 to 2^64 - 1. A bool, a float (even ``3.0``),
    a negative number and 2^64 or more raise :class:`InputError` (a larger seed would be
    reduced modulo 2^64 by the hashes, so ``2**64`` would draw what ``0`` draws).

    >>> check_seed(2**64)
    Traceback (most recent call last):
    ...
    receval._errors.InputError: seed must be an integer from 0 to 2^64 - 1 (a Python or NumPy \
integer, not a bool or a float); got 18446744073709551616 (int).
    """
    integer = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if integer and 0 <= int(cast(int, value)) < SEED_BOUND:
        return int(cast(int, value))
    msg = (
        f"{name} must be an integer from 0 to 2^64 - 1 (a Python or NumPy integer, not a bool "
        f"or a float); got {_shown(value)}."
    )
    raise InputError(msg)


def _shown(value: object) -> str:
    """``value`` and its type for a message (a NumPy scalar by its Python value; an integer
    too long to print by its size)."""
    kind = type(value).__name__
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item):
        return f"{item()!r} ({kind})"
    return f"{value!r} ({kind})"
