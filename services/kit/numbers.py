"""Numbers written by strangers: a header, a query parameter, a signed timestamp.

`str.isdigit` is true for characters `int` refuses ("²", "¹²³") and for digits of other scripts; every
place that reads a count or a time from text reads it here, so no such character reaches `int` (an
INTERNAL_SERVER_ERROR) and none is believed.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII only; 18 digits stay within a signed 64-bit integer


def whole_number(text: str | None) -> int | None:
    """`text` as a non-negative integer when it is one to 18 ASCII digits; None otherwise."""
    if text is None or not _DIGITS.fullmatch(text):
        return None
    return int(text)
