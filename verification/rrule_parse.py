"""Parse the supported RFC 5545 RRULE subset (see verification.recurrence) into a Rule for dateutil."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Literal
from zoneinfo import ZoneInfo

from dateutil.rrule import DAILY, HOURLY, MINUTELY, MONTHLY, SECONDLY, WEEKLY, YEARLY, weekday

Freq = Literal[0, 1, 2, 3, 4, 5, 6]

_FREQS: dict[str, Freq] = {
    "SECONDLY": SECONDLY,
    "MINUTELY": MINUTELY,
    "HOURLY": HOURLY,
    "DAILY": DAILY,
    "WEEKLY": WEEKLY,
    "MONTHLY": MONTHLY,
    "YEARLY": YEARLY,
}
_PARTS = frozenset(
    {
        "FREQ",
        "INTERVAL",
        "COUNT",
        "UNTIL",
        "WKST",
        "BYDAY",
        "BYMONTHDAY",
        "BYMONTH",
        "BYHOUR",
        "BYMINUTE",
        "BYSECOND",
    }
)
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_INT = re.compile(r"[+-]?\d{1,9}")
_BYDAY = re.compile(r"([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)")
_UNTIL = re.compile(r"(\d{8})(?:T(\d{6})(Z?))?")
_MAX_INTERVAL = 1_000_000
_MAX_COUNT = 100_000


class ScheduleError(ValueError):
    """A schedule field is invalid; `field` names it as the API spells it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Rule:
    """A parsed RRULE in dateutil's terms."""

    freq: Freq
    interval: int = 1
    count: int | None = None
    until: datetime | None = None  # aware UTC, inclusive
    wkst: int = 0
    bymonth: tuple[int, ...] | None = None
    bymonthday: tuple[int, ...] | None = None
    byweekday: tuple[weekday, ...] | None = None
    byhour: tuple[int, ...] | None = None
    byminute: tuple[int, ...] | None = None
    bysecond: tuple[int, ...] | None = None

    @property
    def filtered(self) -> bool:
        by = (self.bymonth, self.bymonthday, self.byweekday, self.byhour, self.byminute, self.bysecond)
        return any(part is not None for part in by)


def rrule_error(message: str) -> ScheduleError:
    return ScheduleError("rrule", f"rrule: {message}")


def parse_rrule(text: str, zone: ZoneInfo) -> Rule:
    """Parse an RRULE body, raising ScheduleError("rrule") naming the offending part."""
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    parts: dict[str, str] = {}
    for chunk in filter(None, (piece.strip() for piece in body.split(";"))):
        name, sep, value = (piece.strip().upper() for piece in chunk.partition("="))
        if not sep or not name or not value:
            raise rrule_error(f"cannot parse rule part {chunk!r}")
        if name not in _PARTS:
            raise rrule_error(f"rule part {name} is not supported")
        if name in parts:
            raise rrule_error(f"{name} appears more than once")
        parts[name] = value
    if "FREQ" not in parts:
        raise rrule_error("FREQ is required")
    freq = _FREQS.get(parts["FREQ"])
    if freq is None:
        raise rrule_error(f"FREQ must be one of {', '.join(_FREQS)} (got {parts['FREQ']!r})")
    if "COUNT" in parts and "UNTIL" in parts:
        raise rrule_error("COUNT and UNTIL cannot be used together")
    if freq == WEEKLY and "BYMONTHDAY" in parts:
        raise rrule_error("BYMONTHDAY cannot be used with FREQ=WEEKLY")

    def ints(name: str, low: int, high: int, *, zero: bool = True) -> tuple[int, ...] | None:
        if name not in parts:
            return None
        return tuple(_int(name, item, low, high, zero=zero) for item in parts[name].split(","))

    return Rule(
        freq=freq,
        interval=_int("INTERVAL", parts.get("INTERVAL", "1"), 1, _MAX_INTERVAL),
        count=_int("COUNT", parts["COUNT"], 1, _MAX_COUNT) if "COUNT" in parts else None,
        until=_parse_until(parts["UNTIL"], zone) if "UNTIL" in parts else None,
        wkst=_weekday_index(parts.get("WKST", "MO")),
        bymonth=ints("BYMONTH", 1, 12),
        bymonthday=ints("BYMONTHDAY", -31, 31, zero=False),
        byweekday=_parse_byday(parts["BYDAY"], freq) if "BYDAY" in parts else None,
        byhour=ints("BYHOUR", 0, 23),
        byminute=ints("BYMINUTE", 0, 59),
        bysecond=ints("BYSECOND", 0, 59),
    )


def _int(name: str, text: str, low: int, high: int, *, zero: bool = True) -> int:
    value = int(text) if _INT.fullmatch(text) else None
    if value is None or not low <= value <= high or (value == 0 and not zero):
        other = "" if zero else " other than 0"
        raise rrule_error(f"{name} must be a whole number from {low} to {high}{other} (got {text!r})")
    return value


def _weekday_index(code: str) -> int:
    if code not in _WEEKDAYS:
        raise rrule_error(f"WKST must be one of {', '.join(_WEEKDAYS)} (got {code!r})")
    return _WEEKDAYS.index(code)


def _parse_byday(value: str, freq: Freq) -> tuple[weekday, ...]:
    days: list[weekday] = []
    for item in value.split(","):
        match = _BYDAY.fullmatch(item)
        if match is None:
            raise rrule_error(f"BYDAY must list days such as MO, 1MO or -1FR (got {item!r})")
        ordinal, code = match.groups()
        limit = {MONTHLY: 5, YEARLY: 53}.get(freq)
        if ordinal is not None and limit is None:
            raise rrule_error(f"BYDAY ordinals such as {item} need FREQ=MONTHLY or FREQ=YEARLY")
        n = None if ordinal is None or limit is None else _int("BYDAY", ordinal, -limit, limit, zero=False)
        days.append(weekday(_WEEKDAYS.index(code), n))
    return tuple(days)


def _parse_until(value: str, zone: ZoneInfo) -> datetime:
    match = _UNTIL.fullmatch(value)
    try:
        if match is not None:
            day, clock, utc = match.groups()
            if clock is None:  # a bare date includes its whole local day
                wall = datetime.combine(datetime.strptime(day, "%Y%m%d").date(), time(23, 59, 59))
            else:
                wall = datetime.strptime(day + clock, "%Y%m%d%H%M%S")
            return wall.replace(tzinfo=UTC if utc else zone).astimezone(UTC)
    except (ValueError, OverflowError):
        pass
    raise rrule_error(f"UNTIL must look like 20261231T235959Z, 20261231T235959 or 20261231 (got {value!r})")
