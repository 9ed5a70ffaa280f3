"""Public ids are UUIDs; a malformed one names nothing (NOT_FOUND), never a database error."""

from __future__ import annotations

from uuid import UUID

from services.errors import NotFound


def parse_id(value: object, what: str) -> str:
    try:
        return str(UUID(str(value)))
    except ValueError:
        raise NotFound(f"no such {what}") from None


def is_uuid(value: object) -> bool:
    try:
        UUID(str(value))
    except ValueError:
        return False
    return True
