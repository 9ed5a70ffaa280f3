"""The bridge from a task row to the pure recurrence rules: the one place that computes due times.

Every expansion runs in a worker thread under the settings' RecurrenceBudget, never on the event loop.
The chain computes due times before it opens its transaction (prefetch_due_times) and only picks from
them under the row lock; it expands under the lock only when the prefetch no longer covers the moment.
Both calls are pure, so their results are remembered per process (RecurrenceMemo): a schedule many
tasks share ("daily at 07:00 from tomorrow", a batch of createTask aliases) is expanded once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from models import Task
from rules.quota import Period, period_start
from rules.recurrence import (
    RecurrenceBudget,
    RecurrenceTimedOut,
    RecurrenceTooCostly,
    Schedule,
    ScheduleError,
    count_ends_at,
    occurrences_after,
    validate_schedule,
)
from services.kit import BadInput, RateLimited

log = logging.getLogger("proofloop.schedules")

SCHEDULE_FIELD = "input.schedule"
_PREFETCH = 3  # due times computed ahead: the next one, and slack for a clock that moved meanwhile
_PREFETCH_SLACK = timedelta(seconds=30)  # the app's clock may run ahead of the database's
_BUSY_RETRY_SECONDS = 5


def out_of_time(exc: RecurrenceTimedOut, schedule: Schedule) -> RateLimited:
    """The clock backstop fired before the step budget: the host is stalled, so nothing is decided about
    the rule; the caller may try again (logged, as a host that slow is an operator's business)."""
    log.warning(
        "recurrence expansion ran out of time before its step budget",
        extra={"rrule": schedule.rrule, "steps": exc.steps},
    )
    return RateLimited(
        "the server is too busy to expand this schedule now; try again shortly", _BUSY_RETRY_SECONDS
    )


def schedule_of(task: Task) -> Schedule:
    return Schedule(
        starts_at=task.starts_at,
        rrule=task.rrule,
        timezone=task.timezone,
        window_seconds=task.window_seconds,
        grace_seconds=task.grace_seconds,
        count_ends_at=task.count_ends_at,
        period=Period(task.quota_period.value) if task.quota_period is not None else None,
    )


class RecurrenceMemo:
    """The last results of a pure recurrence call, by its arguments; a hit needs no worker thread.

    Validation keeps only successes (a refused rule is judged again, within its budget); an expansion is
    kept whatever it found (a stored rule over its budget is exhausted every time alike). Used from the
    event loop only, so it needs no lock. Equal aware datetimes are the same instant, which is all the
    rules read of them.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._results: OrderedDict[object, object] = OrderedDict()

    def get(self, key: object) -> object | None:
        if key in self._results:
            self._results.move_to_end(key)
        return self._results.get(key)

    def put(self, key: object, result: object) -> None:
        self._results[key] = result
        self._results.move_to_end(key)
        if len(self._results) > self.size:
            self._results.popitem(last=False)


_MEMO_SIZE = 4096  # results of a few hundred bytes each
_checked_memo = RecurrenceMemo(_MEMO_SIZE)
_expanded_memo = RecurrenceMemo(_MEMO_SIZE)


async def check_schedule(
    schedule: Schedule, *, min_interval_seconds: int, budget: RecurrenceBudget
) -> Schedule:
    """Validate off the event loop; call it before any transaction opens (it may spend the whole budget).

    Returns the schedule with its COUNT end found, to be stored with it."""
    known = known_schedule(schedule, min_interval_seconds=min_interval_seconds, budget=budget)
    if known is not None:
        return known
    try:
        checked = await asyncio.to_thread(_checked, schedule, min_interval_seconds, budget)
    except RecurrenceTimedOut as exc:
        raise out_of_time(exc, schedule) from None
    except ScheduleError as exc:
        field = f"{SCHEDULE_FIELD}.{exc.field}"
        message = exc.message.removeprefix(f"{exc.field}: ")
        raise BadInput(field, f"{field}: {message}") from None
    _checked_memo.put((schedule, min_interval_seconds, budget), checked)
    return replace(schedule, count_ends_at=checked.count_ends_at)


def known_schedule(
    schedule: Schedule, *, min_interval_seconds: int, budget: RecurrenceBudget
) -> Schedule | None:
    """check_schedule's answer when this process already validated the same schedule, else None (no work)."""
    known = _checked_memo.get((schedule, min_interval_seconds, budget))
    return replace(schedule, count_ends_at=known.count_ends_at) if isinstance(known, _Checked) else None


@dataclass(frozen=True)
class _Checked:
    count_ends_at: datetime | None


def _checked(schedule: Schedule, min_interval_seconds: int, budget: RecurrenceBudget) -> _Checked:
    validate_schedule(schedule, min_interval_seconds=min_interval_seconds, budget=budget)
    return _Checked(count_ends_at(schedule, budget=budget))


@dataclass(frozen=True)
class DueTimes:
    """The first due times of `schedule` after `after`, computed ahead of a transaction."""

    schedule: Schedule
    after: datetime
    times: tuple[datetime, ...]
    exhausted: bool  # the schedule has no due time beyond the last of `times`

    def first_after(self, moment: datetime, schedule: Schedule) -> tuple[bool, datetime | None]:
        """(known, due): known is False when these times cannot answer for `moment` and `schedule`."""
        if schedule != self.schedule or moment < self.after:
            return False, None
        later = [at for at in self.times if at > moment]
        if later:
            return True, later[0]
        return self.exhausted, None


async def due_times_after(
    schedule: Schedule, after: datetime, count: int, budget: RecurrenceBudget
) -> DueTimes:
    """Expand in a worker thread. A stored rule past the step budget counts as exhausted (logged); past
    the clock backstop, RATE_LIMITED (a chain fire fails and the pump sends it again)."""
    key = (schedule, after, count, budget)
    known = _expanded_memo.get(key)
    if isinstance(known, DueTimes):
        return known
    found = await asyncio.to_thread(_expand, schedule, after, count, budget)
    _expanded_memo.put(key, found)
    return found


async def prefetch_due_times(schedule: Schedule, after: datetime, budget: RecurrenceBudget) -> DueTimes:
    """Due times for planning the next instance after max(after, the database's now), before any lock."""
    moment = max(after, datetime.now(UTC) - _PREFETCH_SLACK)
    return await due_times_after(schedule, moment, _PREFETCH, budget)


async def prefetch_many(
    wanted: list[tuple[Schedule, datetime]], budget: RecurrenceBudget
) -> dict[tuple[Schedule, datetime], DueTimes]:
    """prefetch_due_times for many (schedule, after) pairs in one worker thread: a batch of settlements
    expands each distinct pair once, before any lock, each expansion under its own budget."""
    moment_floor = datetime.now(UTC) - _PREFETCH_SLACK
    distinct = list(dict.fromkeys(wanted))
    found = await asyncio.to_thread(_expand_many, distinct, moment_floor, budget)
    return dict(zip(distinct, found, strict=True))


def _expand_many(
    wanted: list[tuple[Schedule, datetime]], moment_floor: datetime, budget: RecurrenceBudget
) -> list[DueTimes]:
    return [_expand(schedule, max(after, moment_floor), _PREFETCH, budget) for schedule, after in wanted]


def _expand(schedule: Schedule, after: datetime, count: int, budget: RecurrenceBudget) -> DueTimes:
    try:
        times = occurrences_after(schedule, after, count, budget=budget)
    except RecurrenceTimedOut as exc:  # not an answer: neither remembered nor taken as exhausted
        raise out_of_time(exc, schedule) from None
    except RecurrenceTooCostly:
        log.error(
            "schedule over the recurrence budget; treated as exhausted", extra={"rrule": schedule.rrule}
        )
        times = []
    except ScheduleError:  # a rule stored before today's parser: it has no occurrence we can trust
        log.error("stored schedule no longer parses; treated as exhausted", extra={"rrule": schedule.rrule})
        times = []
    return DueTimes(schedule, after, tuple(times), exhausted=len(times) < count)


async def next_due_after(
    task: Task, after: datetime, budget: RecurrenceBudget, prefetched: DueTimes | None = None
) -> datetime | None:
    """The task's first due time after `after`: from `prefetched` when it can answer, else expanded now."""
    schedule = schedule_of(task)
    if prefetched is not None:
        known, due = prefetched.first_after(after, schedule)
        if known:
            return due
    found = await due_times_after(schedule, after, 1, budget)
    return found.times[0] if found.times else None


async def upcoming(task: Task, after: datetime, count: int, budget: RecurrenceBudget) -> list[datetime]:
    return list((await due_times_after(schedule_of(task), after, count, budget)).times)


def window_of(task: Task, due_at: datetime) -> tuple[datetime, datetime]:
    """(opensAt, closesAt) of the instance due at `due_at`."""
    return window_for(schedule_of(task), due_at)


def window_for(schedule: Schedule, due_at: datetime) -> tuple[datetime, datetime]:
    """(opensAt, closesAt) of the schedule's instance due at `due_at`: a quota goal's is its period."""
    if schedule.period is not None:
        return period_start(due_at, schedule.period, ZoneInfo(schedule.timezone)), due_at
    return window_around(due_at, schedule.window_seconds, schedule.grace_seconds)


def window_around(due_at: datetime, window_seconds: int, grace_seconds: int) -> tuple[datetime, datetime]:
    return due_at - timedelta(seconds=window_seconds), due_at + timedelta(seconds=grace_seconds)
