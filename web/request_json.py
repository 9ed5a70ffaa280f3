"""Request JSON the GraphQL view refuses before parsing it for real.

A body is UTF-8 (RFC 8259) holding one JSON object (this API serves no batches): anything else is refused
with the field `body` before Strawberry, which calls `.get()` on whatever a body decoded to (HTTP 500).
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
# unrolled (normal* (special normal*)*): an alternation per character took 160 ms on 1 MiB, this 4 ms
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENERS = (ord("["), ord("{"))
_JSON_WHITESPACE = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"
# a JSON text's first character names its kind (RFC 8259 grammar): no decode needed to refuse a non-object
_KINDS = {ord("{"): "an object", ord("["): "an array", ord('"'): "a string", ord("t"): "true"}
_KINDS |= {ord("f"): "false", ord("n"): "null", ord("-"): "a number"}
_KINDS |= {ord(digit): "a number" for digit in "0123456789"}


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


def body_kind(body: bytes) -> str:
    """What a JSON body holds ("an object", "a number"…), read from its first character alone."""
    start = body.removeprefix(_UTF8_BOM).lstrip(_JSON_WHITESPACE)
    return _KINDS.get(start[0], "not JSON") if start else "empty"


def refuse_non_object(kind: str, field: str) -> None:
    if kind != "an object":
        raise RefusedJSON(field, f"{field}: must be a JSON object (a GraphQL request); it is {kind}", "")


def json_kind(value: object) -> str:
    """The kind of an already decoded JSON value, named as body_kind names it."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    kinds = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}
    return kinds.get(type(value), "not JSON")


def _utf8_text(body: bytes) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RefusedJSON("body", f"body: not UTF-8 (byte {exc.start})", "") from None


def decode_request_json(data: str | bytes) -> object:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    text = data if isinstance(data, str) else _utf8_text(data)
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

    decoded = json.loads(text, parse_constant=non_finite, parse_float=number, parse_int=integer)
    if seen_non_finite:
        path = _path_of_non_finite(decoded, "") or "variables"
        field = path.removeprefix("variables.")
        raise RefusedJSON(
            field,
            f"{field}: must be a finite number (not NaN, Infinity or a {MAX_INT_DIGITS}+ digit literal)",
            text,
        )
    return decoded
