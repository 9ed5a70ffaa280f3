"""Planned breaks: the instants a break of whole days covers in a task's zone, and whether a due time
falls inside one. Pure: the chain (services/chain/breaks.py) plans around what these say."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MAX_BREAK_DAYS = 366


@dataclass(frozen=True)
class BreakSpan:
    """[applies_from, ends_at): a due time in it is not due."""

    applies_from: datetime
    ends_at: datetime

    def covers(self, at: datetime) -> bool:
        return self.applies_from <= at < self.ends_at


def day_start(day: date, zone: str) -> datetime:
    """The first instant of `day` in `zone` (a midnight a clock change skips is the first moment after)."""
    return datetime.combine(day, time(0), tzinfo=ZoneInfo(zone)).astimezone(UTC)


def break_span(starts_on: date, ends_on: date, zone: str, not_before: datetime) -> BreakSpan:
    """The days starts_on..ends_on (inclusive) in `zone`, from `not_before` at the earliest (the end of
    the owner's commitment horizon: the days inside it were promised and stay due)."""
    start = day_start(starts_on, zone)
    end = day_start(ends_on + timedelta(days=1), zone)
    return BreakSpan(max(start, not_before), end)


def covering(spans: Iterable[BreakSpan], at: datetime) -> BreakSpan | None:
    """The break `at` falls in (the one ending last, when they overlap), or None."""
    found = [span for span in spans if span.covers(at)]
    return max(found, key=lambda span: span.ends_at) if found else None
