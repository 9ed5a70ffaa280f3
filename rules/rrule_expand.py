"""Expand a Rule into naive wall times by walking the calendar month by month from any starting point.

Interval alignment is modular arithmetic relative to DTSTART, so the walk can start next to any instant
("skip ahead"): its cost is the calendar distance to the next occurrence, never the age of the rule.
Every candidate the walk examines (a month, a day, an hour, a minute, a second) is charged to a Budget as
one step, so a step is a small bounded piece of work and the steps, not the clock, end a long walk: the
budget stops it with RecurrenceTooCostly, a verdict every machine reaches alike. Its clock only catches a
stalled host, with RecurrenceTimedOut, which says nothing about the rule.
"""

from __future__ import annotations

import time as clock
from bisect import bisect_left
from calendar import monthrange
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time

from rules.rrule_parse import Freq, Rule, ScheduleError

LAST_YEAR = 9998  # keeps every UTC conversion of a wall time inside datetime's range
_MONTH_STEPS = 3  # visiting a month costs about as much as building and testing three of its days
_UNIT_SECONDS = {Freq.HOURLY: 3600, Freq.MINUTELY: 60, Freq.SECONDLY: 1}


class RecurrenceTooCostly(ScheduleError):
    """Expanding the rule ran past its budget of steps or seconds."""

    def __init__(self, message: str) -> None:
        super().__init__("rrule", f"rrule: {message}")


class RecurrenceTimedOut(RuntimeError):
    """The host gave one call less time than its steps need: a stalled machine, not a verdict on the rule."""

    def __init__(self, steps: int, max_seconds: float) -> None:
        super().__init__(f"recurrence expansion ran out of time ({max_seconds} s) after {steps} steps")
        self.steps = steps


class Budget:
    """A hard limit on one call's work: calendar steps (the verdict) and wall-clock seconds (a backstop)."""

    def __init__(self, max_steps: int, max_seconds: float) -> None:
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.steps = 0
        self._deadline = clock.monotonic() + max_seconds

    def spend(self, steps: int = 1) -> None:
        self.steps += steps
        if self.steps > self.max_steps:
            raise RecurrenceTooCostly(
                "the schedule is too costly to expand (too sparse or too dense for the recurrence budget)"
            )
        if clock.monotonic() > self._deadline:
            raise RecurrenceTimedOut(self.steps, self.max_seconds)


@dataclass(frozen=True)
class _Pattern:
    """The rule with what it leaves out taken from DTSTART (RFC 5545 3.3.10), ready to test days."""

    rule: Rule
    dtstart: datetime
    months: frozenset[int] | None
    monthdays: tuple[int, ...] | None
    weekdays: frozenset[int]
    ordinals: frozenset[tuple[int, int]]
    ordinals_in_year: bool
    times: tuple[time, ...]  # DAILY and coarser: the wall times of every matching day

    @property
    def filters_days(self) -> bool:
        return bool(self.weekdays or self.ordinals)


def _pattern(rule: Rule, dtstart: datetime) -> _Pattern:
    months = frozenset(rule.bymonth) if rule.bymonth else None
    monthdays = rule.bymonthday
    byday = rule.byday or ()
    if rule.freq == Freq.WEEKLY and not byday:
        byday = ((None, dtstart.weekday()),)
    if rule.freq == Freq.MONTHLY and not byday and not monthdays:
        monthdays = (dtstart.day,)
    if rule.freq == Freq.YEARLY and not byday and not monthdays:
        months = months or frozenset({dtstart.month})
        monthdays = (dtstart.day,)
    hours = rule.byhour or (dtstart.hour,)
    minutes = rule.byminute or (dtstart.minute,)
    seconds = rule.bysecond or (dtstart.second,)
    return _Pattern(
        rule=rule,
        dtstart=dtstart,
        months=months,
        monthdays=monthdays,
        weekdays=frozenset(day for n, day in byday if n is None),
        ordinals=frozenset((n, day) for n, day in byday if n is not None),
        ordinals_in_year=rule.freq == Freq.YEARLY and months is None,
        times=tuple(time(h, m, s) for h in hours for m in minutes for s in seconds),
    )


def walls_from(rule: Rule, dtstart: datetime, start: datetime, budget: Budget) -> Iterator[datetime]:
    """The rule's wall times at or after max(dtstart, start), ascending (DTSTART itself not added)."""
    return walls_on_grid(rule, dtstart, max(start, dtstart), budget)


def walls_on_grid(
    rule: Rule, dtstart: datetime, start: datetime, budget: Budget, through: date | None = None
) -> Iterator[datetime]:
    """The wall times of the rule's pattern (aligned on DTSTART) at or after `start`, even before DTSTART:
    a wall time in a spring-forward gap just before DTSTART may move onto DTSTART's own instant. With
    `through`, none on a later day: the walk ends there even where the pattern holds nothing."""
    pattern = _pattern(rule, dtstart)
    year, month = start.year, start.month
    last = (LAST_YEAR, 12) if through is None else (through.year, through.month)
    while (year, month) <= last:
        budget.spend(_MONTH_STEPS)
        jump = _misaligned_month(pattern, year, month)
        if jump is not None:
            year, month = jump
            continue
        first_day = start.date() if (year, month) == (start.year, start.month) else date(year, month, 1)
        for day in _days_of_month(pattern, year, month, budget):
            if through is not None and day > through:
                return
            if day < first_day or not _day_aligned(pattern, day):
                continue
            budget.spend()
            # on the first day, skip the hours before `start` rather than build and drop them
            for wall in _walls_of_day(pattern, day, budget, start.hour if day == start.date() else 0):
                if wall >= start:
                    yield wall
        year, month = (year, month + 1) if month < 12 else (year + 1, 1)


def _misaligned_month(pattern: _Pattern, year: int, month: int) -> tuple[int, int] | None:
    """The next month worth looking at when this one cannot hold an occurrence, else None."""
    rule, dtstart = pattern.rule, pattern.dtstart
    if rule.freq == Freq.YEARLY and (year - dtstart.year) % rule.interval:
        return year + rule.interval - (year - dtstart.year) % rule.interval, 1
    if rule.freq == Freq.MONTHLY:
        index = (year - dtstart.year) * 12 + month - dtstart.month
        if index % rule.interval:
            target = year * 12 + month - 1 + rule.interval - index % rule.interval
            return target // 12, target % 12 + 1
    if pattern.months is not None and month not in pattern.months:
        later = [m for m in sorted(pattern.months) if m > month]
        return (year, later[0]) if later else (year + 1, min(pattern.months))
    if rule.freq in (Freq.DAILY, Freq.WEEKLY) and rule.interval > 27:
        aligned = _next_aligned_day(pattern, date(year, month, 1))
        if (aligned.year, aligned.month) != (year, month):
            return aligned.year, aligned.month
    return None


def _next_aligned_day(pattern: _Pattern, day: date) -> date:
    """DAILY: the next day on the interval grid; WEEKLY: the first day of the next week on it."""
    rule, origin = pattern.rule, pattern.dtstart.date().toordinal()
    ordinal = day.toordinal()
    if rule.freq == Freq.WEEKLY:
        step, ordinal, origin = (
            7 * rule.interval,
            _week_start(ordinal, rule.wkst),
            _week_start(origin, rule.wkst),
        )
    else:
        step = rule.interval
    offset = (ordinal - origin) % step
    return date.fromordinal(min(ordinal + (step - offset) % step, date(LAST_YEAR, 12, 31).toordinal()))


def _week_start(ordinal: int, wkst: int) -> int:
    return ordinal - (date.fromordinal(ordinal).weekday() - wkst) % 7


def _day_aligned(pattern: _Pattern, day: date) -> bool:
    rule, origin = pattern.rule, pattern.dtstart.date().toordinal()
    if rule.freq == Freq.DAILY:
        return (day.toordinal() - origin) % rule.interval == 0
    if rule.freq == Freq.WEEKLY:
        weeks = (_week_start(day.toordinal(), rule.wkst) - _week_start(origin, rule.wkst)) // 7
        return weeks % rule.interval == 0
    return True  # MONTHLY/YEARLY align by month; finer frequencies align by their own unit


def _days_of_month(pattern: _Pattern, year: int, month: int, budget: Budget) -> list[date]:
    length = monthrange(year, month)[1]
    if pattern.monthdays is None:
        numbers: list[int] = list(range(1, length + 1))
    else:
        numbers = sorted(
            {day for n in pattern.monthdays if 1 <= (day := n if n > 0 else length + n + 1) <= length}
        )
    days = [date(year, month, n) for n in numbers]
    budget.spend(len(days))  # each day is built and tested
    if not pattern.filters_days:
        return days
    return [day for day in days if _weekday_matches(pattern, day, length)]


def _weekday_matches(pattern: _Pattern, day: date, month_length: int) -> bool:
    weekday = day.weekday()
    if weekday in pattern.weekdays:
        return True
    if not pattern.ordinals:
        return False
    if pattern.ordinals_in_year:
        position = day.timetuple().tm_yday
        length = 366 if monthrange(day.year, 2)[1] == 29 else 365
    else:
        position, length = day.day, month_length
    first, last = (position - 1) // 7 + 1, -((length - position) // 7 + 1)
    return (first, weekday) in pattern.ordinals or (last, weekday) in pattern.ordinals


def _walls_of_day(pattern: _Pattern, day: date, budget: Budget, from_hour: int) -> Iterator[datetime]:
    rule = pattern.rule
    if rule.freq >= Freq.DAILY:
        for wall_time in pattern.times[bisect_left(pattern.times, time(from_hour)) :]:
            yield datetime.combine(day, wall_time)
        return
    # finer than daily: the periods of the day on the interval grid, each expanded by its finer BY parts
    dtstart, unit = pattern.dtstart, _UNIT_SECONDS[rule.freq]
    stride = unit * rule.interval
    origin = (
        dtstart.toordinal() * 86400
        + (dtstart.hour * 3600 + dtstart.minute * 60 + dtstart.second) // unit * unit
    )
    hours = [hour for hour in rule.byhour or range(24) if hour >= from_hour]
    minutes = rule.byminute or (range(60) if rule.freq <= Freq.MINUTELY else (dtstart.minute,))
    seconds = rule.bysecond or (range(60) if rule.freq == Freq.SECONDLY else (dtstart.second,))
    base = day.toordinal() * 86400
    budget.spend(len(hours))
    for hour in hours:
        start = base + hour * 3600
        if rule.freq == Freq.HOURLY:
            if (start - origin) % stride == 0:
                yield from (datetime.combine(day, time(hour, m, s)) for m in minutes for s in seconds)
            continue
        if rule.freq == Freq.MINUTELY:
            aligned = _aligned(minutes, (origin - start) // 60 % rule.interval, rule.interval, 60, budget)
            for minute in aligned:
                yield from (datetime.combine(day, time(hour, minute, s)) for s in seconds)
            continue
        budget.spend(len(minutes))
        for minute in minutes:
            offset = (origin - start - minute * 60) % stride
            for second in _aligned(seconds, offset, stride, 60, budget):
                yield datetime.combine(day, time(hour, minute, second))


def _aligned(values: Sequence[int], offset: int, stride: int, limit: int, budget: Budget) -> list[int]:
    """The sorted `values` below `limit` that lie on the grid offset + k * stride, examining the shorter
    of the two lists (each examined value is a step)."""
    grid = range(offset, limit, stride)
    if len(grid) <= len(values):
        budget.spend(len(grid))
        chosen = set(values)
        return [value for value in grid if value in chosen]
    budget.spend(len(values))
    return [value for value in values if value >= offset and (value - offset) % stride == 0]
