"""Scalars of the contract. DateTime inputs take any offset; outputs are UTC with a `Z`
(services/kit/instants.py).

Types annotate plain `datetime`; the schema maps it to this definition with `scalar_overrides`.
"""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry
from strawberry.types.scalar import ScalarDefinition

from services.kit import format_instant


class InvalidDateTime(ValueError):
    """A DateTime input not ISO 8601, or no instant of the years 1..9999; reported as BAD_USER_INPUT."""


def parse_datetime(value: object) -> datetime:
    if not isinstance(value, str):
        raise InvalidDateTime("DateTime must be an ISO 8601 string with an offset")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidDateTime(f"DateTime {value!r} is not ISO 8601") from None
    if parsed.utcoffset() is not None:
        try:
            parsed.astimezone(UTC)  # 0001-01-01T00:00+14:00 is in the year 0: no arithmetic may start there
        except OverflowError:
            raise InvalidDateTime(f"DateTime {value!r} is outside the years 1..9999 in UTC") from None
    return parsed


# Naive values parse here and are refused by resolvers, which know the field's path for the message.
DATETIME: ScalarDefinition = strawberry.scalar(
    name="DateTime",
    description="ISO 8601; returned in UTC with a Z, taken with any offset (none: BAD_USER_INPUT)",
    serialize=format_instant,
    parse_value=parse_datetime,
)

SCALAR_OVERRIDES: dict[object, ScalarDefinition] = {datetime: DATETIME}
