"""Scalars of the contract. DateTime inputs take any offset; outputs are UTC with a `Z`
(services/kit/instants.py).

Types annotate plain `datetime`; the schema maps it to this definition with `scalar_overrides`.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import NewType

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


MAX_SAFE_INTEGER = 2**53 - 1  # what a JSON number holds exactly in every client (JavaScript's Number)


def _safe_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_SAFE_INTEGER:
        raise ValueError(f"SafeInt cannot represent {value!r}: an integer within ±(2^53 - 1) is")
    return value


# sizes and counts beyond GraphQL's 32-bit Int (an archive may pass 2 GiB), still exact as a JSON number
SafeInt = NewType("SafeInt", int)
SAFE_INT: ScalarDefinition = strawberry.scalar(
    name="SafeInt",
    description="an integer within ±(2^53 - 1), exact as a JSON number in every client",
    serialize=_safe_int,
    parse_value=_safe_int,
)

# A Date input names a day in some zone: its start may be a day earlier in UTC and its end a day later, so
# the first and last days of the calendar have no instants to stand for (a break on 9999-12-31 would end in
# the year 10000)
FIRST_DATE, LAST_DATE = date(1, 1, 2), date(9999, 12, 30)


def parse_date(value: object) -> date:
    if not isinstance(value, str):
        raise InvalidDateTime("Date must be an ISO 8601 calendar date string, YYYY-MM-DD")
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        raise InvalidDateTime(f"Date {value!r} is not an ISO 8601 calendar date (YYYY-MM-DD)") from None
    if not FIRST_DATE <= parsed <= LAST_DATE:
        raise InvalidDateTime(f"Date {value!r} is outside {FIRST_DATE.isoformat()}..{LAST_DATE.isoformat()}")
    return parsed


DATE: ScalarDefinition = strawberry.scalar(
    name="Date",
    description=f"an ISO 8601 calendar date, YYYY-MM-DD, from {FIRST_DATE} to {LAST_DATE}",
    serialize=date.isoformat,
    parse_value=parse_date,
)

SCALAR_OVERRIDES: dict[object, ScalarDefinition] = {datetime: DATETIME, date: DATE, SafeInt: SAFE_INT}
