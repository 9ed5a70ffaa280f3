"""Parse the supported RFC 5545 RRULE subset (see rules.recurrence) into a Rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time
from enum import IntEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rules.timezones import is_zone_name


class Freq(IntEnum):
    SECONDLY = 0
    MINUTELY = 1
    HOURLY = 2
    DAILY = 3
    WEEKLY = 4
    MONTHLY = 5
    YEARLY = 6


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
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
# [0-9], not \d: \d also matches digits of other scripts (fullwidth three), which int() accepts
_INT = re.compile(r"[+-]?[0-9]{1,9}")
_BYDAY = re.compile(r"([+-]?[0-9]{1,2})?(MO|TU|WE|TH|FR|SA|SU)")
_UNTIL = re.compile(r"([0-9]{8})(?:T([0-9]{6})(Z?))?")
_MAX_INTERVAL = 1_000_000
MAX_COUNT = 10_000  # the walk to the last occurrence stays well inside the budget
MAX_RRULE_LENGTH = 500  # the column's width


class ScheduleError(ValueError):
    """A schedule field is invalid; `field` names it as the API spells it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Rule:
    """A parsed RRULE; BY parts are None when absent. byday holds (ordinal or None, weekday 0=MO)."""

    freq: Freq
    interval: int = 1
    count: int | None = None
    until: datetime | None = None  # aware UTC, inclusive
    wkst: int = 0
    bymonth: tuple[int, ...] | None = None
    bymonthday: tuple[int, ...] | None = None
    byday: tuple[tuple[int | None, int], ...] | None = None
    byhour: tuple[int, ...] | None = None
    byminute: tuple[int, ...] | None = None
    bysecond: tuple[int, ...] | None = None

    @property
    def has_by_parts(self) -> bool:
        by = (self.bymonth, self.bymonthday, self.byday, self.byhour, self.byminute, self.bysecond)
        return any(part is not None for part in by)


def rrule_error(message: str) -> ScheduleError:
    return ScheduleError("rrule", f"rrule: {message}")


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone called `name`, as rules/timezones.py admits them."""
    if not is_zone_name(name):
        raise ScheduleError("timezone", f"timezone {name[:80]!r} is not a known IANA time zone")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError("timezone", f"timezone {name[:80]!r} is not a known IANA time zone") from None


def parse_rrule(text: str, zone: ZoneInfo) -> Rule:
    """Parse an RRULE body, raising ScheduleError("rrule") naming the offending part."""
    if len(text) > MAX_RRULE_LENGTH:
        raise rrule_error(f"must be at most {MAX_RRULE_LENGTH} characters")
    if not text.isascii() or not text.isprintable():
        raise rrule_error("must be printable ASCII")
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:") :]
    parts = _split_parts(body) if body else {}
    if "FREQ" not in parts:
        raise rrule_error("FREQ is required")
    if parts["FREQ"] not in Freq.__members__:
        raise rrule_error(f"FREQ must be one of {', '.join(Freq.__members__)} (got {parts['FREQ']!r})")
    freq = Freq[parts["FREQ"]]
    if "COUNT" in parts and "UNTIL" in parts:
        raise rrule_error("COUNT and UNTIL cannot be used together")
    if freq == Freq.WEEKLY and "BYMONTHDAY" in parts:
        raise rrule_error("BYMONTHDAY cannot be used with FREQ=WEEKLY")

    def ints(name: str, low: int, high: int, *, zero: bool = True) -> tuple[int, ...] | None:
        if name not in parts:
            return None
        return tuple(sorted({_int(name, item, low, high, zero=zero) for item in parts[name].split(",")}))

    return Rule(
        freq=freq,
        interval=_int("INTERVAL", parts.get("INTERVAL", "1"), 1, _MAX_INTERVAL),
        count=_int("COUNT", parts["COUNT"], 1, MAX_COUNT) if "COUNT" in parts else None,
        until=_parse_until(parts["UNTIL"], zone) if "UNTIL" in parts else None,
        wkst=_weekday_index(parts.get("WKST", "MO")),
        bymonth=ints("BYMONTH", 1, 12),
        bymonthday=ints("BYMONTHDAY", -31, 31, zero=False),
        byday=_parse_byday(parts["BYDAY"], freq, "BYMONTH" in parts) if "BYDAY" in parts else None,
        byhour=ints("BYHOUR", 0, 23),
        byminute=ints("BYMINUTE", 0, 59),
        bysecond=ints("BYSECOND", 0, 59),
    )


def _split_parts(body: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for chunk in body.split(";"):
        name, sep, value = (piece.strip().upper() for piece in chunk.partition("="))
        if not sep or not name or not value:
            raise rrule_error(
                f"cannot parse rule part {chunk.strip()[:40]!r} (parts are NAME=VALUE, separated by ';')"
            )
        if name not in _PARTS:
            raise rrule_error(f"rule part {name[:40]} is not supported")
        if name in parts:
            raise rrule_error(f"{name} appears more than once")
        parts[name] = value
    return parts


def _int(name: str, text: str, low: int, high: int, *, zero: bool = True) -> int:
    value = int(text) if _INT.fullmatch(text) else None
    if value is None or not low <= value <= high or (value == 0 and not zero):
        other = "" if zero else " other than 0"
        raise rrule_error(f"{name} must be a whole number from {low} to {high}{other} (got {text[:20]!r})")
    return value


def _weekday_index(code: str) -> int:
    if code not in WEEKDAYS:
        raise rrule_error(f"WKST must be one of {', '.join(WEEKDAYS)} (got {code[:20]!r})")
    return WEEKDAYS.index(code)


def _parse_byday(value: str, freq: Freq, in_months: bool) -> tuple[tuple[int | None, int], ...]:
    days: set[tuple[int | None, int]] = set()
    for item in value.split(","):
        match = _BYDAY.fullmatch(item)
        if match is None:
            raise rrule_error(f"BYDAY must list days such as MO, 1MO or -1FR (got {item[:20]!r})")
        ordinal, code = match.groups()
        if ordinal is None:
            days.add((None, WEEKDAYS.index(code)))
            continue
        if freq not in (Freq.MONTHLY, Freq.YEARLY):
            raise rrule_error(f"BYDAY ordinals such as {item} need FREQ=MONTHLY or FREQ=YEARLY")
        # an ordinal counts within the month (MONTHLY, or YEARLY with BYMONTH), else within the year
        limit = 5 if freq == Freq.MONTHLY or in_months else 53
        days.add((_int("BYDAY", ordinal, -limit, limit, zero=False), WEEKDAYS.index(code)))
    return tuple(sorted(days, key=lambda day: (day[0] or 0, day[1])))


def _parse_until(value: str, zone: ZoneInfo) -> datetime:
    match = _UNTIL.fullmatch(value)
    try:
        if match is not None:
            day, clock, utc = match.groups()
            if clock is None:  # a bare date includes its whole local day
                wall = datetime.combine(datetime.strptime(day, "%Y%m%d").date(), time(23, 59, 59))
            else:
                wall = datetime.strptime(day + clock, "%Y%m%d%H%M%S")
            return _as_utc(wall.replace(tzinfo=UTC if utc else zone))
    except ValueError:
        pass
    raise rrule_error(
        f"UNTIL must look like 20261231T235959Z, 20261231T235959 or 20261231 (got {value[:20]!r})"
    )


def _as_utc(until: datetime) -> datetime:
    """The instant, or the end of datetime's range when a local UNTIL lies beyond it: such an UNTIL
    is later (or earlier) than any occurrence the walk can reach, which is all that matters of it."""
    try:
        return until.astimezone(UTC)
    except OverflowError:
        edge = datetime.max if until.year == datetime.max.year else datetime.min
        return edge.replace(tzinfo=UTC)
