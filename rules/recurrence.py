"""When a task's instances fall due: a start instant, an optional RFC 5545 RRULE and an IANA zone.

Supported RRULE subset (names and values case-insensitive, optional "RRULE:" prefix): FREQ
(SECONDLY..YEARLY), INTERVAL, BYDAY (ordinals such as 1MO or -1FR only with MONTHLY/YEARLY: at most 5
within a month, 53 within a year; a list may mix plain and ordinal days, and then means their union),
BYMONTHDAY (not with WEEKLY), BYMONTH, BYHOUR, BYMINUTE, BYSECOND, COUNT (at most 10000), UNTIL, WKST
(default MO). Any other part, an empty part or a non-ASCII character is refused.

Semantics (RFC 5545 3.3.10 and 3.8.5.3):
- startsAt is DTSTART and the first occurrence (it counts towards COUNT). The rule must produce it
  (RFC 5545 leaves the set undefined otherwise): a startsAt the rule does not produce is refused with the
  rule's first occurrence after it as a proposal. startsAt keeps its own instant, also when it is the
  second of two equal wall times; the instant a gap moved one of the rule's wall times to is the rule's own
  occurrence. Every proposal is accepted when resubmitted: an occurrence a gap moved off the grid it would
  anchor as startsAt (FREQ=HOURLY;INTERVAL=4;BYHOUR=3 when 03:45 moves to 04:45) is passed over for the
  next one.
- Every BY part is a wall-clock value in the task's zone. A rule with any BY part, and every DAILY or
  coarser rule, expands in local wall time; each wall time becomes an instant: one that does not exist
  (spring forward) moves forward by the gap, one that exists twice (fall back) is its first instant.
  Instants that coincide count once; an instant before startsAt is dropped.
- A SECONDLY, MINUTELY or HOURLY rule without BY parts steps in UTC from startsAt, so its instants stay
  evenly spaced through clock changes (no duplicate when clocks fall back, no hole when they spring forward).
- A day a month lacks is skipped, never moved (MONTHLY;BYMONTHDAY=31 occurs in 31-day months only).
- COUNT counts distinct instants from startsAt. UNTIL is inclusive: "...Z" is a UTC instant, a floating
  date-time a wall time in the zone (past the end of datetime's range in UTC: no end within reach), a bare
  date the whole local day. COUNT with UNTIL is refused.
- Results are aware UTC datetimes in whole seconds. A one-off schedule (rrule None) occurs once.

Cost: the walk starts next to the instant asked about (skip ahead), so the next occurrence costs the
calendar distance to it, never the age of the rule; COUNT's last occurrence is found once per rule. Every
call runs under a RecurrenceBudget and raises RecurrenceTooCostly past its steps, a verdict every machine
reaches alike; RecurrenceTimedOut past its clock, a backstop for a stalled host that decides nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import chain, islice, pairwise
from zoneinfo import ZoneInfo

from rules.quota import Period
from rules.recurrence_budget import (
    DEFAULT_BUDGET,
    RecurrenceBudget,
    check_density,
    check_sparsity,
)
from rules.rrule_expand import (
    LAST_YEAR,
    Budget,
    RecurrenceTimedOut,
    RecurrenceTooCostly,
    walls_from,
    walls_on_grid,
)
from rules.rrule_parse import Freq, Rule, ScheduleError, parse_rrule, rrule_error, zone_of

__all__ = [
    "DEFAULT_BUDGET",
    "RecurrenceBudget",
    "RecurrenceTimedOut",
    "RecurrenceTooCostly",
    "Schedule",
    "ScheduleError",
    "count_ends_at",
    "next_occurrence",
    "occurrences_after",
    "smallest_gap_seconds",
    "validate_schedule",
]

_MAX_SPAN_SECONDS = 366 * 86400
_YEARS = (1900, 9000)
_SAMPLE_SPAN = timedelta(days=731)  # two years: every clock change of the zone at least once
_SAMPLE_SIZE = 1000
_UNIT_SECONDS = {Freq.HOURLY: 3600, Freq.MINUTELY: 60, Freq.SECONDLY: 1}
# no wall time of the walk's last year maps later, in any zone (offsets stay within a day)
_BEYOND_REACH = datetime(LAST_YEAR + 1, 1, 2, tzinfo=UTC)


@dataclass(frozen=True)
class Schedule:
    starts_at: datetime
    rrule: str | None
    timezone: str
    window_seconds: int
    grace_seconds: int
    count_ends_at: datetime | None = None  # a COUNT rule's last occurrence, when already known
    # a quota goal's period (rules/quota.py): the rule gives the period ends, each instance is a period
    period: Period | None = None


def validate_schedule(
    schedule: Schedule, *, min_interval_seconds: int, budget: RecurrenceBudget = DEFAULT_BUDGET
) -> None:
    """Raise ScheduleError naming the first invalid field (RecurrenceTooCostly past the budget)."""
    starts_at = schedule.starts_at
    if starts_at.utcoffset() is None:
        raise ScheduleError("startsAt", "startsAt must include a UTC offset")
    if not _YEARS[0] <= starts_at.astimezone(UTC).year <= _YEARS[1]:
        raise ScheduleError("startsAt", f"startsAt must fall between the years {_YEARS[0]} and {_YEARS[1]}")
    zone = zone_of(schedule.timezone)
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
    check_density(rule, budget.max_per_period)
    endless = replace(rule, count=None, until=None)
    spent = budget.start()  # one budget for the whole validation
    first_two = list(islice(_instants(schedule, zone, endless, starts_at, spent), 2))
    if len(first_two) < 2:
        raise rrule_error(f"the rule never occurs after startsAt (searched up to the year {LAST_YEAR})")
    if not _produces_dtstart(rule, starts_at, zone, spent):
        refusal = "startsAt must be an occurrence of the rule (it is the first one)"
        proposal = _proposed_start(schedule, zone, rule, spent)
        if proposal is None:
            raise ScheduleError("startsAt", refusal)
        raise ScheduleError(
            "startsAt",
            f"{refusal}; the rule's first occurrence after it is {proposal.astimezone(zone).isoformat()}",
        )
    sample = _sample(schedule, zone, rule, spent)
    check_sparsity(rule, first_two + sample, budget.max_skipped_periods)
    gap = _smallest_gap(sample)
    _last_of_count(schedule.starts_at, schedule.rrule, schedule.timezone, budget)
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


def occurrences_after(
    schedule: Schedule, after: datetime, count: int, *, budget: RecurrenceBudget = DEFAULT_BUDGET
) -> list[datetime]:
    """The next `count` due times strictly after `after`, ascending, as aware UTC datetimes."""
    if count <= 0 or after >= _BEYOND_REACH:
        return []
    starts_at = schedule.starts_at.replace(microsecond=0)
    if schedule.rrule is None:
        return [starts_at.astimezone(UTC)] if starts_at > after else []
    zone = zone_of(schedule.timezone)
    rule = parse_rrule(schedule.rrule, zone)
    if rule.count is not None:
        last = schedule.count_ends_at or _last_of_count(
            schedule.starts_at, schedule.rrule, schedule.timezone, budget
        )
        rule = replace(rule, count=None, until=last)
    upcoming = (at for at in _instants(schedule, zone, rule, after, budget.start()) if at > after)
    return list(islice(upcoming, count))


def next_occurrence(
    schedule: Schedule, after: datetime, *, budget: RecurrenceBudget = DEFAULT_BUDGET
) -> datetime | None:
    """The first due time strictly after `after`, or None once the schedule is exhausted."""
    upcoming = occurrences_after(schedule, after, 1, budget=budget)
    return upcoming[0] if upcoming else None


def count_ends_at(schedule: Schedule, *, budget: RecurrenceBudget = DEFAULT_BUDGET) -> datetime | None:
    """A COUNT rule's last occurrence (to store with the schedule); None for every other schedule."""
    if schedule.rrule is None:
        return None
    return _last_of_count(schedule.starts_at, schedule.rrule, schedule.timezone, budget)


def smallest_gap_seconds(schedule: Schedule, *, budget: RecurrenceBudget = DEFAULT_BUDGET) -> float | None:
    """Smallest gap between consecutive occurrences over a bounded sample; None for fewer than two."""
    if schedule.rrule is None:
        return None
    zone = zone_of(schedule.timezone)
    return _smallest_gap(_sample(schedule, zone, parse_rrule(schedule.rrule, zone), budget.start()))


def _last_of_count(
    starts_at: datetime, rrule: str, timezone: str, budget: RecurrenceBudget
) -> datetime | None:
    """A COUNT rule's last occurrence, found once per rule and process; None for other rules."""
    # cached by the UTC instant: aware datetimes of one zone compare and hash by wall time, ignoring `fold`,
    # so the two instants of a repeated wall time would share one entry
    return _last_counted(starts_at.astimezone(UTC), rrule, timezone, budget)


@lru_cache(maxsize=4096)
def _last_counted(
    starts_at: datetime, rrule: str, timezone: str, budget: RecurrenceBudget
) -> datetime | None:
    zone = zone_of(timezone)
    rule = parse_rrule(rrule, zone)
    if rule.count is None:
        return None
    schedule = Schedule(starts_at, rrule, timezone, 0, 0)
    counted = islice(
        _instants(schedule, zone, replace(rule, count=None), starts_at, budget.start()), rule.count
    )
    last = None
    for last in counted:  # noqa: B007 - the loop walks to the COUNT-th instant
        pass
    return last


def _instants(
    schedule: Schedule, zone: ZoneInfo, rule: Rule, near: datetime, budget: Budget
) -> Iterator[datetime]:
    """Ascending distinct instants (startsAt first), complete from `near` on; COUNT ignored."""
    starts_at = schedule.starts_at.replace(microsecond=0).astimezone(UTC)
    stream = (
        _utc_steps(rule, starts_at, near)
        if _steps_in_utc(rule)
        else _wall_instants(rule, starts_at, zone, near, budget)
    )
    for instant in stream:
        if rule.until is not None and instant > rule.until:
            return
        yield instant


# how many occurrences after a refused startsAt are tried as the proposal: only those a spring-forward gap
# moved are passed over, and a gap of an hour holds at most 60 of a rule's occurrences a minute apart
_PROPOSAL_TRIES = 64


def _proposed_start(schedule: Schedule, zone: ZoneInfo, rule: Rule, budget: Budget) -> datetime | None:
    """The first occurrence after startsAt that the rule also produces as startsAt, so that resubmitting it
    is accepted; None if none of the next _PROPOSAL_TRIES is."""
    endless = replace(rule, count=None, until=None)
    after = islice(_instants(schedule, zone, endless, schedule.starts_at, budget), 1, 1 + _PROPOSAL_TRIES)
    return next((instant for instant in after if _produces_dtstart(rule, instant, zone, budget)), None)


def _produces_dtstart(rule: Rule, starts_at: datetime, zone: ZoneInfo, budget: Budget) -> bool:
    """Whether the rule itself yields DTSTART (RFC 5545 leaves the set undefined when it does not): its wall
    time, or the instant a wall time inside a spring-forward gap moves to (the rule's listed occurrence)."""
    if _steps_in_utc(rule):
        return True
    dtstart = starts_at.astimezone(zone).replace(tzinfo=None, microsecond=0)
    earliest = _first_wall_needed(zone, starts_at - timedelta(seconds=1))
    for wall in walls_on_grid(rule, dtstart, min(earliest, dtstart), budget, through=dtstart.date()):
        if wall >= dtstart:
            return wall == dtstart
        if wall.replace(tzinfo=zone).astimezone(UTC) == starts_at:
            return True
    return False


def _steps_in_utc(rule: Rule) -> bool:
    return rule.freq < Freq.DAILY and not rule.has_by_parts


def _utc_steps(rule: Rule, starts_at: datetime, near: datetime) -> Iterator[datetime]:
    stride = timedelta(seconds=_UNIT_SECONDS[rule.freq] * rule.interval)
    step = max(0, (near - starts_at) // stride)
    instant = starts_at + stride * step
    last = datetime(LAST_YEAR, 12, 31, tzinfo=UTC)
    while instant <= last:
        yield instant
        instant += stride


def _wall_instants(
    rule: Rule, starts_at: datetime, zone: ZoneInfo, near: datetime, budget: Budget
) -> Iterator[datetime]:
    """Wall times mapped to ascending distinct instants.

    Existing wall times (first instant of a fold) map in order; only a wall time inside a gap moves
    forward past later ones, so those wait in a heap until the walk reaches the wall time they moved to:
    every later wall time maps to a later instant (a rule whose every wall time falls in a gap, such as
    02:30 on the last Sunday of March in Europe/Berlin, yields each one as the next year's comes).
    """
    dtstart = starts_at.astimezone(zone).replace(tzinfo=None)
    begin = max(dtstart, _first_wall_needed(zone, near))
    walls = chain([dtstart] if begin <= dtstart else [], walls_from(rule, dtstart, begin, budget))
    moved: list[datetime] = []
    last: datetime | None = None
    for wall in walls:
        while moved and moved[0].astimezone(zone).replace(tzinfo=None) <= wall:
            earlier = heapq.heappop(moved)
            if earlier >= starts_at and (last is None or earlier > last):
                last = earlier
                yield earlier
        instant = starts_at if wall == dtstart else wall.replace(tzinfo=zone).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) != wall and wall != dtstart:
            heapq.heappush(moved, instant)
            continue
        while moved and moved[0] < instant:
            earlier = heapq.heappop(moved)
            if earlier >= starts_at and (last is None or earlier > last):
                last = earlier
                yield earlier
        if instant >= starts_at and (last is None or instant > last):
            last = instant
            yield instant
    for instant in sorted(moved):
        if instant >= starts_at and (last is None or instant > last):
            last = instant
            yield instant


def _first_wall_needed(zone: ZoneInfo, near: datetime) -> datetime:
    """The earliest wall time whose instant can come after `near`: near's own, less any clock change nearby.

    A recent gap moved earlier wall times forward past near; a coming fold repeats wall times (DTSTART may
    be the second of two) that are earlier than near's own wall time in its first pass.
    """
    offsets = [
        (near + timedelta(days=days)).astimezone(zone).utcoffset() or timedelta(0) for days in (-2, -1, 0, 1)
    ]
    return near.astimezone(zone).replace(tzinfo=None) - (max(offsets) - min(offsets)) - timedelta(seconds=1)


def _sample(schedule: Schedule, zone: ZoneInfo, rule: Rule, budget: Budget) -> list[datetime]:
    """The first occurrences (at most 1000, over at most 2 years), COUNT applied."""
    stream = _instants(schedule, zone, replace(rule, count=None), schedule.starts_at, budget)
    sample: list[datetime] = []
    for instant in islice(stream, min(rule.count or _SAMPLE_SIZE, _SAMPLE_SIZE)):
        if sample and instant > sample[0] + _SAMPLE_SPAN:
            break
        sample.append(instant)
    return sample


def _smallest_gap(sample: list[datetime]) -> float | None:
    return min(((later - earlier).total_seconds() for earlier, later in pairwise(sample)), default=None)
