"""Request JSON the GraphQL view refuses before parsing it for real.

Nesting: Python's decoder recurses, so 1,000 nested arrays in `variables` raised RecursionError (HTTP 500);
no variable of this schema nests deeper than a few levels. Non-numbers: the decoder accepts NaN,
Infinity and numbers too large for a float (which become infinity); none is a GraphQL Float.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_NESTING = 32
# Python refuses to convert integers over 4,300 digits (ValueError, not a decode error); no Int needs 32.
MAX_INT_DIGITS = 32
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPENERS = (ord("["), ord("{"))


class RefusedJSON(json.JSONDecodeError):
    """A JSON document the view will not run (a JSONDecodeError, so websocket handlers refuse it too)."""

    def __init__(self, field: str, message: str, document: str) -> None:
        super().__init__(message, document, 0)
        self.field = field
        self.reason = message


def nesting_depth(data: bytes) -> int:
    """How deep arrays and objects nest, strings' contents ignored; cheap for ordinary documents."""
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return 0  # too few brackets to nest deeper, whatever their order
    depth = deepest = 0
    for byte in _STRING.sub(b'""', data):
        if byte in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (ord("]"), ord("}")):
            depth -= 1
    return deepest


class _NonFinite:
    """Stands in for NaN/Infinity while decoding, so the value's path can be named afterwards."""


_NON_FINITE = _NonFinite()


def _number(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NON_FINITE


def _path_of_non_finite(value: Any, path: str) -> str | None:
    if value is _NON_FINITE:
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _path_of_non_finite(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def decode_request_json(data: str | bytes) -> object:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if nesting_depth(raw) > MAX_NESTING:
        raise RefusedJSON("variables", f"variables: nested deeper than {MAX_NESTING} levels", text)
    seen_non_finite = False

    def non_finite(_: str) -> _NonFinite:
        nonlocal seen_non_finite
        seen_non_finite = True
        return _NON_FINITE

    def number(literal: str) -> float | _NonFinite:
        nonlocal seen_non_finite
        value = _number(literal)
        seen_non_finite = seen_non_finite or value is _NON_FINITE
        return value

    def integer(literal: str) -> int | _NonFinite:
        return non_finite(literal) if len(literal) > MAX_INT_DIGITS else int(literal)

    decoded = json.loads(data, parse_constant=non_finite, parse_float=number, parse_int=integer)
    if seen_non_finite:
        path = _path_of_non_finite(decoded, "") or "variables"
        field = path.removeprefix("variables.")
        raise RefusedJSON(
            field,
            f"{field}: must be a finite number (not NaN, Infinity or a {MAX_INT_DIGITS}+ digit literal)",
            text,
        )
    return decoded
