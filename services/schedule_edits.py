"""A schedule edit, checked, split by the commitment horizon and expanded before the task's row lock."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from models import Task, TaskState, User
from services.chain import ChainTiming
from services.commitment_horizon import horizon_of
from services.ids import parse_id
from services.pending_changes import SCHEDULE_KEYS, merged_schedule_patch, split_schedule
from services.schedules import DueTimes, check_schedule, due_times_after, prefetch_due_times, schedule_of
from services.task_drafts import SchedulePatch
from services.task_edits import before, whole_seconds
from verification.horizon import DueSample, RuleField, makes_easier
from verification.recurrence import Schedule

DAY = timedelta(days=1)
# due times compared when a rule's shape changes: enough to see a sparser rule, COUNT or UNTIL
OCCURRENCE_SAMPLE = 32


@dataclass(frozen=True)
class SchedulePlan:
    horizon: timedelta = timedelta(0)
    waits: bool = False  # easier parts wait: a horizon is set and the task is ACTIVE
    basis: Schedule | None = None  # the task's schedule it was judged against (no COUNT end)
    basis_pending: dict[str, Any] = field(default_factory=dict)
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
        return self.basis == _basis(task) and self.basis_pending == (task.pending_change or {})


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

    async def checked(schedule: Schedule) -> Schedule:
        return await check_schedule(
            schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence
        )

    pending = dict(current.pending_change or {})
    now_part: SchedulePatch | None = patch
    later: SchedulePatch | None = None
    if waits:
        target = await checked(patched_schedule(current, patch))
        occurrences_wait = await _occurrences_easier(current, target, now, timing)
        now_part, later = split_schedule(_basis(current), patch, occurrences_wait=occurrences_wait)
    now_schedule = due = eventual = None
    if now_part is not None:
        now_schedule = await checked(patched_schedule(current, now_part))
        due = await prefetch_due_times(now_schedule, before(now_schedule.starts_at), timing.recurrence)
    if later is not None or any(key in pending for key in SCHEDULE_KEYS):
        # where the task ends up must be a valid schedule too: checked now, applied later as is
        eventual = await checked(patched_schedule(current, merged_schedule_patch(pending, patch)))
    return SchedulePlan(horizon, waits, _basis(current), pending, now_schedule, due, later, eventual)


async def _occurrences_easier(current: Task, target: Schedule, now: datetime, timing: ChainTiming) -> bool:
    """Whether the new rule's due times leave out any of the current one's (a sparser or shorter rule,
    or moved times); False when only the window or grace changes."""
    old = schedule_of(current)
    if (old.starts_at.replace(microsecond=0), old.rrule, old.timezone) == (
        target.starts_at,
        target.rrule,
        target.timezone,
    ):
        return False
    old_due = await due_times_after(old, now, OCCURRENCE_SAMPLE, timing.recurrence)
    new_due = await due_times_after(target, now, 4 * OCCURRENCE_SAMPLE, timing.recurrence)
    return makes_easier(
        RuleField.OCCURRENCES,
        DueSample(old_due.times, old_due.exhausted),
        DueSample(new_due.times, new_due.exhausted),
    )
