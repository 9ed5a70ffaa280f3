"""Quota goals: "N proofs per period" (a day, a week, a month), periods bounded in the task's zone.

Each period is one instance of the task's chain: it opens at the period's local midnight start and is due
at the next period's start. The periods are a recurrence like any other, so the chain, the commitment
horizon and the recurrence budget treat them alike: `boundary_rule` is the RRULE of the period ends and
`first_period_end` its DTSTART. A local midnight that does not exist (a clock change at midnight) moves
forward by the gap, as every wall time of a schedule does (RFC 5545 3.3.5).

Counting: a proof counts if it is accepted and comes at least `min_gap_seconds` after the last counted
one, so three photos in five minutes are not three gym visits. A goal made without a gap gets
`default_min_gap_seconds`: ten minutes, or less where `count` proofs need it to fit in the period.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from rules.errors import InvalidInput


class Period(StrEnum):
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"


WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")  # RFC 5545's codes, Monday first as date.weekday()
MAX_COUNT = 100  # proofs per period; more says nothing a partner could check
MAX_MIN_GAP_SECONDS = 7 * 86400
DEFAULT_MIN_GAP_SECONDS = 600
# the shortest each period can be (a day with a clock change, February): the gaps between counted proofs
# must fit in it, or the goal could never be met
SHORTEST_SECONDS = {Period.DAY: 23 * 3600, Period.WEEK: 7 * 86400 - 3600, Period.MONTH: 28 * 86400 - 3600}


@dataclass(frozen=True)
class Quota:
    count: int
    period: Period
    week_start: str = "MO"  # WEEK: the day each week starts on
    min_gap_seconds: int = 0


def default_min_gap_seconds(count: int, period: Period) -> int:
    """The gap of a goal made without one: DEFAULT_MIN_GAP_SECONDS, or half of an even share of the
    shortest period when `count` proofs that far apart would not fit (100 a day: 414 s)."""
    return min(DEFAULT_MIN_GAP_SECONDS, SHORTEST_SECONDS[period] // (2 * max(count, 1)))


def check_quota(quota: Quota, field: str) -> Quota:
    """The quota as given, or InvalidInput naming the field it breaks."""
    if not 1 <= quota.count <= MAX_COUNT:
        raise InvalidInput(f"{field}.count", f"must be between 1 and {MAX_COUNT}")
    if not 0 <= quota.min_gap_seconds <= MAX_MIN_GAP_SECONDS:
        raise InvalidInput(f"{field}.minGapSeconds", f"must be between 0 and {MAX_MIN_GAP_SECONDS}")
    if quota.week_start not in WEEKDAYS:
        raise InvalidInput(f"{field}.weekStartsOn", f"must be one of {', '.join(WEEKDAYS)}")
    if quota.min_gap_seconds * (quota.count - 1) >= SHORTEST_SECONDS[quota.period]:
        raise InvalidInput(
            f"{field}.minGapSeconds",
            f"{quota.count} proofs {quota.min_gap_seconds} seconds apart do not fit in one"
            f" {quota.period.lower()}",
        )
    return quota


def boundary_rule(quota: Quota) -> str:
    """The RRULE of the period ends (each at local midnight, DTSTART's wall time)."""
    # BY parts pin the wall time, so a midnight a clock change skipped moves forward and the next is 00:00
    midnight = "BYHOUR=0;BYMINUTE=0;BYSECOND=0"
    if quota.period is Period.DAY:
        return f"FREQ=DAILY;{midnight}"
    if quota.period is Period.WEEK:
        return f"FREQ=WEEKLY;BYDAY={quota.week_start};WKST={quota.week_start};{midnight}"
    return f"FREQ=MONTHLY;BYMONTHDAY=1;{midnight}"


def first_period_end(starts_at: datetime, quota: Quota, zone: ZoneInfo) -> datetime:
    """The end of the period `starts_at` falls in: the rule's DTSTART (its first due time)."""
    day = starts_at.astimezone(zone).date()
    return local_midnight(_next_start(_period_start_day(day, quota), quota.period), zone)


def period_start(due_at: datetime, period: Period, zone: ZoneInfo) -> datetime:
    """When the period due at `due_at` (a period end) began: one period earlier, at local midnight."""
    end = due_at.astimezone(zone).date()
    if period is Period.DAY:
        return local_midnight(end - timedelta(days=1), zone)
    if period is Period.WEEK:
        return local_midnight(end - timedelta(days=7), zone)
    year, month = (end.year, end.month - 1) if end.month > 1 else (end.year - 1, 12)
    return local_midnight(date(year, month, 1), zone)


def local_midnight(day: date, zone: ZoneInfo) -> datetime:
    """The instant the local day starts (a midnight inside a clock change's gap moves forward by it)."""
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def counts_after_gap(last_counted_at: datetime | None, at: datetime, min_gap_seconds: int) -> bool:
    """Whether a proof at `at` is far enough from the last counted one to count too."""
    return last_counted_at is None or (at - last_counted_at).total_seconds() >= min_gap_seconds


def _period_start_day(day: date, quota: Quota) -> date:
    if quota.period is Period.DAY:
        return day
    if quota.period is Period.WEEK:
        return day - timedelta(days=(day.weekday() - WEEKDAYS.index(quota.week_start)) % 7)
    return day.replace(day=1)


def _next_start(start: date, period: Period) -> date:
    if period is Period.DAY:
        return start + timedelta(days=1)
    if period is Period.WEEK:
        return start + timedelta(days=7)
    return date(start.year + start.month // 12, start.month % 12 + 1, 1)
