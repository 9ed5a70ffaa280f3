"""A schedule edit, checked, split by the commitment horizon and expanded before the task's row lock."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from models import InstanceStatus, Task, TaskInstance, TaskState, User
from rules.horizon_span import occurrences_easier
from rules.recurrence import (
    RecurrenceBudget,
    RecurrenceTimedOut,
    RecurrenceTooCostly,
    Schedule,
    ScheduleError,
)
from services.accounts import horizon_of
from services.chain import ChainTiming
from services.kit import BadInput, parse_id
from services.schedules import (
    DueTimes,
    check_schedule,
    out_of_time,
    prefetch_due_times,
    schedule_of,
)
from services.tasks.drafts import SchedulePatch
from services.tasks.edits import before, whole_seconds
from services.tasks.pending_change import PendingChange
from services.tasks.pending_changes import merged_schedule_patch, split_schedule

log = logging.getLogger("proofloop.schedule_edits")

DAY = timedelta(days=1)


@dataclass(frozen=True)
class SchedulePlan:
    horizon: timedelta = timedelta(0)
    waits: bool = False  # easier parts wait: a horizon is set and the task is ACTIVE
    basis: Schedule | None = None  # the task's schedule it was judged against (no COUNT end)
    basis_pending: PendingChange = field(default_factory=PendingChange)
    now: Schedule | None = None  # applied at once, checked
    due: DueTimes | None = None
    later: SchedulePatch | None = None  # the part that waits
    eventual: Schedule | None = None  # the schedule once the pending change applies, checked

    def fits(self, task: Task, *, has_schedule: bool) -> bool:
        """Whether the locked task is still the one this plan judged."""
        if self.waits != _waits(self.horizon, task):
            return False
        if not has_schedule:
            return True
        return self.basis == _basis(task) and self.basis_pending == PendingChange.read(task.pending_change)


def _waits(horizon: timedelta, task: Task) -> bool:
    return horizon > timedelta(0) and task.state is TaskState.ACTIVE


def _basis(task: Task) -> Schedule:
    return replace(schedule_of(task), count_ends_at=None)


def patched_schedule(task: Task, patch: SchedulePatch) -> Schedule:
    return whole_seconds(
        Schedule(
            starts_at=patch.starts_at if patch.starts_at is not None else task.starts_at,
            rrule=patch.rrule if patch.rrule_set else task.rrule,
            timezone=patch.timezone if patch.timezone is not None else task.timezone,
            window_seconds=patch.window_seconds if patch.window_seconds is not None else task.window_seconds,
            grace_seconds=patch.grace_seconds if patch.grace_seconds is not None else task.grace_seconds,
        )
    )


async def plan_schedule_edit(
    owner: User,
    task_id: str,
    patch: SchedulePatch | None,
    *,
    min_interval_seconds: int,
    timing: ChainTiming,
    day: timedelta,
) -> SchedulePlan:
    now = datetime.now(UTC)
    horizon = horizon_of(owner, now, day)
    current = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    if current is None or str(current.owner_id) != str(owner.id):
        return SchedulePlan(horizon)  # the locked read answers NOT_FOUND or FORBIDDEN without judging input
    waits = _waits(horizon, current)
    if patch is None:
        return SchedulePlan(horizon, waits)
    if current.quota_period is not None:
        raise BadInput("input.schedule", "a quota goal's schedule is its periods: create another task")

    async def checked(schedule: Schedule) -> Schedule:
        return await check_schedule(
            schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence
        )

    pending = PendingChange.read(current.pending_change)
    now_part: SchedulePatch | None = patch
    later: SchedulePatch | None = None
    if waits and await _instance_owed_now(current, now):
        # re-planning would cancel an instance already due (in its grace) instead of letting it settle
        await checked(patched_schedule(current, patch))
        now_part, later = None, patch
    elif waits:
        target = await checked(patched_schedule(current, patch))
        occurrences_wait = await _occurrences_easier(current, target, now, horizon, timing.recurrence)
        now_part, later = split_schedule(
            _basis(current), patch, occurrences_wait=occurrences_wait, avoid=current.gps_avoid
        )
    now_schedule = due = eventual = None
    if now_part is not None:
        now_schedule = await checked(patched_schedule(current, now_part))
        due = await prefetch_due_times(now_schedule, before(now_schedule.starts_at), timing.recurrence)
    if later is not None or pending.touches_schedule:
        # where the task ends up must be a valid schedule too: checked now, applied later as is
        eventual = await checked(patched_schedule(current, merged_schedule_patch(pending, patch)))
    return SchedulePlan(horizon, waits, _basis(current), pending, now_schedule, due, later, eventual)


async def _instance_owed_now(task: Task, now: datetime) -> bool:
    """Whether the task's PENDING instance is past its due time: its promise is being kept or missed now."""
    return await TaskInstance.filter(task_id=task.id, status=InstanceStatus.PENDING, due_at__lte=now).exists()


async def _occurrences_easier(
    current: Task, target: Schedule, now: datetime, horizon: timedelta, budget: RecurrenceBudget
) -> bool:
    """Whether the new rule leaves out any due time the current one promises within the horizon, or ends
    sooner; False when only the window or grace changes. Expanded in a worker thread, before any lock."""
    old = schedule_of(current)
    if (old.starts_at.replace(microsecond=0), old.rrule, old.timezone) == (
        target.starts_at,
        target.rrule,
        target.timezone,
    ):
        return False
    try:
        return await asyncio.to_thread(occurrences_easier, old, target, now, now + horizon, budget)
    except RecurrenceTimedOut as exc:  # a stalled host decides nothing: the caller may try again
        raise out_of_time(exc, target) from None
    except (RecurrenceTooCostly, ScheduleError):
        # too costly to compare exactly: the edit is not known to be harder, so it waits
        log.info("schedule edit too costly to compare; it waits", extra={"task_id": str(current.id)})
        return True
