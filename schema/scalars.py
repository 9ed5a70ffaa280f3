"""Scalars of the contract. DateTime values always carry an offset.

Types annotate plain `datetime`; the schema maps it to this definition with `scalar_overrides`.
"""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.types.scalar import ScalarDefinition


class InvalidDateTime(ValueError):
    """A DateTime input that is not ISO 8601; reported as BAD_USER_INPUT."""


def parse_datetime(value: object) -> datetime:
    if not isinstance(value, str):
        raise InvalidDateTime("DateTime must be an ISO 8601 string with an offset")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise InvalidDateTime(f"DateTime {value!r} is not ISO 8601") from None


def serialize_datetime(value: datetime) -> str:
    return value.isoformat()


# Naive values parse here and are refused by resolvers, which know the field's path for the message.
DATETIME: ScalarDefinition = strawberry.scalar(
    name="DateTime",
    description="ISO 8601 with an offset; an input without one is BAD_USER_INPUT",
    serialize=serialize_datetime,
    parse_value=parse_datetime,
)

SCALAR_OVERRIDES: dict[object, ScalarDefinition] = {datetime: DATETIME}
