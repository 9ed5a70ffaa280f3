"""The contract's page cap: a list's `first`/`last` is at most MAX_PAGE (and query cost counts it so)."""

from __future__ import annotations

from services.errors import BadInput

MAX_PAGE = 100


def check_page_size(size: int, field: str = "first") -> int:
    """BAD_USER_INPUT (on `field`) for a page size outside 0..MAX_PAGE."""
    if not 0 <= size <= MAX_PAGE:
        raise BadInput(field, f"must be between 0 and {MAX_PAGE}")
    return size
