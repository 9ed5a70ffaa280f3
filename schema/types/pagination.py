"""Relay-style pagination: opaque, stable cursors and the contract's page cap."""

from __future__ import annotations

import base64

import strawberry

from services.errors import BadInput

MAX_PAGE = 100


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


def check_first(first: int, field: str = "first") -> int:
    if not 0 <= first <= MAX_PAGE:
        raise BadInput(field, f"must be between 0 and {MAX_PAGE}")
    return first


def encode_cursor(*parts: object) -> str:
    return base64.urlsafe_b64encode("|".join(str(p) for p in parts).encode()).decode()


def decode_cursor(cursor: str, parts: int, field: str = "after") -> list[str]:
    try:
        values = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
    except (ValueError, UnicodeDecodeError):
        raise BadInput(field, "is not a cursor this API issued") from None
    if len(values) != parts:
        raise BadInput(field, "is not a cursor this API issued")
    return values
