"""When a task's instances fall due: a start instant, an optional RFC 5545 RRULE and an IANA zone.

Supported RRULE subset (names and values case-insensitive, optional "RRULE:" prefix): FREQ
(SECONDLY..YEARLY), INTERVAL, BYDAY (ordinals such as 1MO or -1FR only with MONTHLY/YEARLY), BYMONTHDAY
(not with WEEKLY), BYMONTH, BYHOUR, BYMINUTE, BYSECOND, COUNT (at most 100000), UNTIL, WKST (default MO).
Any other part is rejected.

Semantics:
- DAILY, WEEKLY, MONTHLY and YEARLY keep local wall time: the rule expands from startsAt's wall time in the
  zone and each wall time maps to an instant with fold=0. A wall time that does not exist (spring forward)
  moves forward by the gap (02:30 Europe/Berlin on 2026-03-29 -> 03:30 CEST); one that exists twice (fall
  back) takes the first, summer-time instant. Two wall times that land on the same instant count once.
- SECONDLY, MINUTELY and HOURLY step in UTC from startsAt, so instants stay evenly spaced through clock
  changes (no duplicate when clocks fall back, no hole when they spring forward). Their BYHOUR/BYMINUTE/
  BYSECOND and BYDAY/BYMONTHDAY/BYMONTH therefore refer to the UTC clock and calendar.
- A day a month lacks is skipped, never moved (RFC 5545): MONTHLY;BYMONTHDAY=31 and a MONTHLY rule starting
  on the 31st occur only in months with 31 days; a YEARLY rule from 29 February occurs only in leap years.
- COUNT counts from startsAt. UNTIL is inclusive: "...Z" is a UTC instant, a floating date-time is a wall
  time in the zone, a bare date includes that whole local day. COUNT with UNTIL is rejected.
- Results are aware UTC datetimes in whole seconds (startsAt's microseconds are dropped, as dateutil does).
- A one-off schedule (rrule None) occurs once, at startsAt.

Validation searches a bounded horizon: a rule with no occurrence within 10 years of startsAt counts as
never occurring, and the smallest gap is measured over the first 1000 occurrences or 2 years, whichever
ends first.
"""

from __future__ import annotations

from calendar import isleap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import MAXYEAR, UTC, date, datetime, timedelta, tzinfo
from itertools import groupby, islice, pairwise, takewhile
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.rrule import DAILY, HOURLY, MINUTELY, SECONDLY, WEEKLY, rrule

from verification.rrule_parse import Rule, ScheduleError, parse_rrule, rrule_error

__all__ = [
    "Schedule",
    "ScheduleError",
    "next_occurrence",
    "occurrences_after",
    "smallest_gap_seconds",
    "validate_schedule",
]

_SUBDAILY = frozenset({HOURLY, MINUTELY, SECONDLY})
_FIXED_PERIODS = {
    WEEKLY: timedelta(weeks=1),
    DAILY: timedelta(days=1),
    HOURLY: timedelta(hours=1),
    MINUTELY: timedelta(minutes=1),
    SECONDLY: timedelta(seconds=1),
}
_MAX_SPAN_SECONDS = 366 * 86400
_YEARS = (1900, 9000)  # keeps every UTC conversion far from datetime's limits
_HORIZON_YEARS = 10
_HORIZON = timedelta(days=3653)
_SAMPLE_SPAN = timedelta(days=731)
_SAMPLE_SIZE = 1000
_TWIN_LATEST = MAXYEAR - 15  # leaves the horizon plus the sample span before the probe stops at MAXYEAR


@dataclass(frozen=True)
class Schedule:
    starts_at: datetime
    rrule: str | None
    timezone: str
    window_seconds: int
    grace_seconds: int


def validate_schedule(schedule: Schedule, *, min_interval_seconds: int) -> None:
    """Raise ScheduleError naming the first invalid field."""
    starts_at = schedule.starts_at
    if starts_at.utcoffset() is None:
        raise ScheduleError("startsAt", "startsAt must include a UTC offset")
    if not _YEARS[0] <= starts_at.astimezone(UTC).year <= _YEARS[1]:
        raise ScheduleError("startsAt", f"startsAt must fall between the years {_YEARS[0]} and {_YEARS[1]}")
    zone = _zone(schedule.timezone)
    for field, value in (
        ("windowSeconds", schedule.window_seconds),
        ("graceSeconds", schedule.grace_seconds),
    ):
        if not 0 <= value <= _MAX_SPAN_SECONDS:
            raise ScheduleError(field, f"{field} must be between 0 and {_MAX_SPAN_SECONDS} (366 days)")
    if schedule.rrule is None:
        return
    rule = parse_rrule(schedule.rrule, zone)
    if rule.until is not None and rule.until < starts_at.replace(microsecond=0):
        raise rrule_error("UNTIL is before startsAt")
    sample = _sample(schedule, zone, rule)
    if not sample:
        raise rrule_error(f"the rule never occurs (no occurrence within {_HORIZON_YEARS} years of startsAt)")
    gap = _smallest_gap(sample)
    if gap is None:
        return
    if gap < min_interval_seconds:
        raise rrule_error(
            f"occurrences must be at least {min_interval_seconds} seconds apart "
            f"(this rule repeats every {int(gap)} seconds)"
        )
    span = schedule.window_seconds + schedule.grace_seconds
    if span > gap:
        raise ScheduleError(
            "windowSeconds",
            f"windowSeconds + graceSeconds ({span} s) must not exceed "
            f"the smallest gap between occurrences ({int(gap)} s)",
        )


def occurrences_after(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    """The next `count` due times strictly after `after`, ascending, as aware UTC datetimes."""
    if count <= 0:
        return []
    if schedule.rrule is None:
        return [schedule.starts_at.astimezone(UTC)] if schedule.starts_at > after else []
    zone = _zone(schedule.timezone)
    rule = parse_rrule(schedule.rrule, zone)
    frame, dtstart = _frame(schedule, zone, rule)
    rule, dtstart = _fast_forward(rule, dtstart, after.astimezone(frame).replace(tzinfo=None))
    upcoming = (at for at in _instants(_expand(rule, dtstart), frame, rule.until) if at > after)
    return list(islice(upcoming, count))


def next_occurrence(schedule: Schedule, after: datetime) -> datetime | None:
    """The first due time strictly after `after`, or None once the schedule is exhausted."""
    upcoming = occurrences_after(schedule, after, 1)
    return upcoming[0] if upcoming else None


def smallest_gap_seconds(schedule: Schedule) -> float | None:
    """Smallest gap between consecutive occurrences over a bounded sample; None for fewer than two."""
    if schedule.rrule is None:
        return None
    zone = _zone(schedule.timezone)
    return _smallest_gap(_sample(schedule, zone, parse_rrule(schedule.rrule, zone)))


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # ValueError/OSError: malformed keys, directories
        raise ScheduleError("timezone", f"timezone {name!r} is not a known IANA time zone") from None


def _frame(schedule: Schedule, zone: ZoneInfo, rule: Rule) -> tuple[tzinfo, datetime]:
    """The zone the rule expands in, and DTSTART as a naive wall time there."""
    frame: tzinfo = UTC if rule.freq in _SUBDAILY else zone
    return frame, schedule.starts_at.astimezone(frame).replace(tzinfo=None, microsecond=0)


def _expand(rule: Rule, dtstart: datetime) -> Iterator[datetime]:
    """Naive wall times of the rule from dtstart, ending before MAXYEAR so UTC conversion cannot overflow."""
    try:
        walls = rrule(
            rule.freq,
            dtstart=dtstart,
            interval=rule.interval,
            wkst=rule.wkst,
            count=rule.count,
            bymonth=rule.bymonth,
            bymonthday=rule.bymonthday,
            byweekday=rule.byweekday,
            byhour=rule.byhour,
            byminute=rule.byminute,
            bysecond=rule.bysecond,
        )
        yield from takewhile(lambda wall: wall.year < MAXYEAR, walls)
    except ValueError as exc:  # dateutil's check that BYHOUR/BYMINUTE/BYSECOND is reachable with INTERVAL
        raise rrule_error(
            "the rule never occurs (INTERVAL never reaches its BYHOUR/BYMINUTE/BYSECOND)"
        ) from exc


def _instants(walls: Iterable[datetime], frame: tzinfo, until: datetime | None) -> Iterator[datetime]:
    """Wall times in `frame` as ascending, distinct UTC instants, up to and including UNTIL."""
    stream = (wall.replace(tzinfo=UTC) for wall in walls) if frame is UTC else _localize(walls, frame)
    return takewhile(lambda instant: until is None or instant <= until, stream)


def _localize(walls: Iterable[datetime], zone: tzinfo) -> Iterator[datetime]:
    last: datetime | None = None
    # a nonexistent time moved forward by the gap can pass a later time of that day, so sort each day
    for _, day in groupby(walls, key=lambda wall: wall.date()):
        for instant in sorted(wall.replace(tzinfo=zone).astimezone(UTC) for wall in day):
            if last is None or instant > last:
                last = instant
                yield instant


def _fast_forward(rule: Rule, dtstart: datetime, after_wall: datetime) -> tuple[Rule, datetime]:
    """Move DTSTART by whole periods to just before `after`, so an old rule is not replayed from its start."""
    period = _FIXED_PERIODS.get(rule.freq)
    if period is None:  # months and years vary in length; replaying them is cheap
        return rule, dtstart
    periods = (after_wall - dtstart) // (period * rule.interval) - 2  # slack for UTC-offset changes
    if periods <= 0:
        return rule, dtstart
    if rule.count is not None:
        if rule.filtered:  # COUNT counts from the original DTSTART
            return rule, dtstart
        rule = replace(rule, count=max(rule.count - periods, 0))  # exactly one occurrence per period
    return rule, dtstart + period * rule.interval * periods


def _sample(schedule: Schedule, zone: ZoneInfo, rule: Rule) -> list[datetime]:
    """The first occurrences (at most 1000, over at most 2 years) found by a search of bounded length."""
    frame, dtstart = _frame(schedule, zone, rule)
    shift = _twin_year_shift(dtstart.year)
    walls = (wall - shift for wall in _expand(rule, dtstart + shift))
    deadline = schedule.starts_at + _HORIZON
    sample: list[datetime] = []
    for instant in _instants(walls, frame, rule.until):
        if len(sample) == _SAMPLE_SIZE or instant > (sample[0] + _SAMPLE_SPAN if sample else deadline):
            break
        sample.append(instant)
    return sample


def _twin_year_shift(year: int) -> timedelta:
    """Offset to a year near MAXYEAR with the same calendar (leap year, weekday of 1 January).

    dateutil stops a rule that never matches only at MAXYEAR, so probing there bounds the search. The
    calendars agree up to a skipped century leap day (2100), which the probe counts as a leap day.
    """
    start = date(year, 1, 1)
    for twin in range(_TWIN_LATEST, _TWIN_LATEST - 28, -1):  # in 99xx every calendar recurs within 28 years
        candidate = date(twin, 1, 1)
        if isleap(twin) == isleap(year) and candidate.weekday() == start.weekday():
            return candidate - start
    raise AssertionError("unreachable: every year has a twin within 28 years")


def _smallest_gap(sample: list[datetime]) -> float | None:
    return min(((later - earlier).total_seconds() for earlier, later in pairwise(sample)), default=None)
