"""Names, labels and paths as the reports and plots print them: on one line, whatever
characters they hold (the escaping of each format is in :mod:`receval.comparison.report` and
:mod:`receval.comparison.plots`)."""

from __future__ import annotations

import re

__all__ = ["plain"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def plain(text: str) -> str:
    """``text`` on one line: each control character (line breaks, tabs, escapes, NUL) as a
    space.

    >>> plain("two\\nlines\\x00")
    'two lines '
    """
    return _CONTROL.sub(" ", text)
