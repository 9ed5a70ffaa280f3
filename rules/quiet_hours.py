"""Quiet hours: a daily span of the user's wall clock in which no notification is sent; what falls in it
waits for the span's end. The span may run past midnight (22:00 to 07:00)."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from rules.errors import InvalidInput

_CLOCK = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")


def minute_of(text: str, field: str) -> int:
    """Minutes after midnight of a wall-clock "HH:MM"."""
    found = _CLOCK.fullmatch(text)
    if found is None:
        raise InvalidInput(field, 'must be a time of day as "HH:MM", 00:00 to 23:59')
    return int(found.group(1)) * 60 + int(found.group(2))


def clock_of(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def check_span(start: int, end: int, field: str) -> None:
    if start == end:
        raise InvalidInput(field, "start and end must differ (an empty span is no quiet hours: clear them)")


def quiet_until(now: datetime, zone: ZoneInfo, start: int, end: int) -> datetime | None:
    """When the quiet span that `now` falls in ends (an aware instant), or None outside it."""
    local = now.astimezone(zone)
    minute = local.hour * 60 + local.minute
    inside = start <= minute < end if start < end else minute >= start or minute < end
    if not inside:
        return None
    day = local.date() if minute < end else local.date() + timedelta(days=1)
    ends = datetime.combine(day, time(end // 60, end % 60), zone)
    # a wall time a clock change skips is read as the offset before it, which is still ahead of now
    return max(ends, now)
