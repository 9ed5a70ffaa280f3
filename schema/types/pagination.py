"""Relay-style pagination: opaque, stable cursors and the contract's page cap."""

from __future__ import annotations

import base64

import strawberry

from services.errors import BadInput
from services.paging import check_page_size


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None

    @staticmethod
    def of(cursors: list[str], *, has_next_page: bool, has_previous_page: bool) -> PageInfo:
        """A page's info from its edges' cursors, in order: the one builder of every connection."""
        return PageInfo(
            has_next_page=has_next_page,
            has_previous_page=has_previous_page,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        )


def check_first(first: int, field: str = "first") -> int:
    return check_page_size(first, field)


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
