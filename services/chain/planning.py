"""What comes after an instance: the one planning rule, which the row path (chain.plan_next_instances) and
the set path (batch._plan_next) only write down, as rows or as set statements.

Given a task's schedule and the occurrence its last instance stood for (`after`):
- the next instance is due at the first occurrence after max(after, now) that no planned break covers; none
  left (an exhausted COUNT or UNTIL): the task ENDs;
- when a settlement plans it (`excuse`) and comes late, the occurrences due in (after, now] had no instance:
  they are `passed_over`, recorded EXCUSED (services/chain/catch_up.py keeps the break days out); an edit, a
  pause or a break re-plans past occurrences on purpose and passes over nothing.

No database: the due times come from what was expanded before the transaction (`DueTimes`), or are
expanded here in a worker thread when the clock moved past them (rare).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from rules.breaks import BreakSpan, covering
from rules.quota import SHORTEST_SECONDS
from rules.recurrence import Schedule
from rules.recurrence_budget import RecurrenceBudget
from services.schedules import DueTimes, due_times_after

# A task has at most a handful of breaks (services/tasks/breaks.py caps them); each skip is one expansion.
_MAX_SKIPS = 32
# Occurrences expanded per step while looking for the end of an outage: most outages pass over one or two.
_FIRST_STEP = 8


@dataclass(frozen=True)
class Ask:
    """One task to plan for: its schedule, the occurrence its last instance stood for, its due times
    expanded ahead (or None), whether a settlement plans it, and its planned breaks still ahead."""

    task_id: str
    schedule: Schedule
    after: datetime
    due: DueTimes | None = None
    excuse: bool = False
    breaks: Sequence[BreakSpan] = ()


@dataclass(frozen=True)
class Step:
    """The answer: the occurrences a late settlement passed over (earliest first, at most the limit), and
    the next due time (None: the rule is exhausted, the task ENDs)."""

    passed_over: tuple[datetime, ...]
    next_due: datetime | None
    more_passed_over: bool = False  # past the limit: the rest are not recorded


async def next_steps(
    asks: Sequence[Ask], now: datetime, budget: RecurrenceBudget, limit: int
) -> dict[str, Step]:
    """Each ask's Step, by task id."""
    steps: dict[str, Step] = {}
    for ask in asks:
        first = await _first_after(ask, max(ask.after, now), budget)
        next_due = await outside_breaks(ask.schedule, first, ask.breaks, budget)
        passed_over = await _passed_over(ask, now, budget, limit)
        steps[ask.task_id] = Step(passed_over[:limit], next_due, len(passed_over) > limit)
    return steps


async def _first_after(ask: Ask, moment: datetime, budget: RecurrenceBudget) -> datetime | None:
    """The schedule's first due time after `moment`, from what was expanded ahead when it can answer."""
    if ask.due is not None:
        known, due_at = ask.due.first_after(moment, ask.schedule)
        if known:
            return due_at
    found = await due_times_after(ask.schedule, moment, 1, budget)
    return found.times[0] if found.times else None


async def outside_breaks(
    schedule: Schedule, due_at: datetime | None, spans: Sequence[BreakSpan], budget: RecurrenceBudget
) -> datetime | None:
    """`due_at`, or when a break covers it the first due time after that break (and any it runs into);
    None when the rule ends first."""
    for _ in range(_MAX_SKIPS):
        span = covering(spans, due_at) if due_at is not None else None
        if span is None:
            return due_at
        found = await due_times_after(schedule, span.ends_at - timedelta(microseconds=1), 1, budget)
        due_at = found.times[0] if found.times else None
    return due_at


def _nearest_next(ask: Ask) -> timedelta:
    """How soon after `after` the next occurrence can be due at the earliest: a window and grace never
    overlap the next occurrence (rules/recurrence.validate_schedule), and a quota goal's next period is at
    least its shortest one."""
    if ask.schedule.period is not None:
        return timedelta(seconds=SHORTEST_SECONDS[ask.schedule.period])
    return timedelta(seconds=ask.schedule.window_seconds + ask.schedule.grace_seconds)


async def _passed_over(ask: Ask, now: datetime, budget: RecurrenceBudget, limit: int) -> tuple[datetime, ...]:
    """The due times in (after, now] of a late settlement, earliest first, at most `limit` and one more
    when there are more; none at all (and no expansion) when the first due time after `after` is still
    ahead, as for a chain on time."""
    if not ask.excuse or now < ask.after + _nearest_next(ask):
        return ()  # settled before the next occurrence could be due: a chain on time costs no lookup
    first = await _first_after(ask, ask.after, budget)
    if first is None or first > now:
        return ()
    count = _FIRST_STEP
    while True:
        found = await due_times_after(ask.schedule, ask.after, min(count, limit + 1), budget)
        times = [at for at in found.times if at <= now]
        if len(times) < len(found.times) or found.exhausted or len(found.times) > limit:
            return tuple(times[: limit + 1])
        count *= 8
