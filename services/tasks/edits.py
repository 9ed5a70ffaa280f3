"""The edits that change a locked task and its chain: every edit path (a request, a pending change that
came due) goes through these, inside the caller's transaction with the task row locked."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from models import Task, TaskState
from rules.recurrence import Schedule
from services.chain import OPEN_STATUSES, ChainTiming, cancel_open_instance, plan_next_instance
from services.kit import db_now
from services.reminders import stored
from services.schedules import DueTimes, next_due_after
from services.tasks.drafts import TaskPatch


def whole_seconds(schedule: Schedule) -> Schedule:
    """Occurrences fall on whole seconds, so DTSTART does too (else the first one would be skipped)."""
    return replace(schedule, starts_at=schedule.starts_at.replace(microsecond=0))


def before(at: datetime) -> datetime:
    """Just before `at`, so an occurrence exactly at `at` still counts as upcoming."""
    return at - timedelta(microseconds=1)


def apply_fields(task: Task, title: str | None, description: str | None, patch: TaskPatch) -> None:
    if title is not None:
        task.title = title
    if patch.description_set:
        task.description = description
    if patch.gps is not None:
        task.gps_latitude, task.gps_longitude = patch.gps.latitude, patch.gps.longitude
        task.gps_radius_meters = patch.gps.radius_meters
        task.gps_max_accuracy_meters = patch.gps.max_accuracy_meters
    if patch.video_min_duration_seconds is not None:
        task.video_min_duration_seconds = patch.video_min_duration_seconds
    if patch.partner is not None:
        task.review_window_seconds = patch.partner.review_window_seconds
        task.review_on_timeout = patch.partner.on_timeout
    if patch.reminders is not None:
        task.reminders = stored(patch.reminders)


async def replan(task: Task, schedule: Schedule, timing: ChainTiming, due: DueTimes | None) -> None:
    """A schedule change cancels the PENDING instance and plans from the new rule (this task only)."""
    now = await db_now()
    task.starts_at, task.rrule, task.timezone = schedule.starts_at, schedule.rrule, schedule.timezone
    task.window_seconds, task.grace_seconds = schedule.window_seconds, schedule.grace_seconds
    task.count_ends_at = schedule.count_ends_at
    task.chain_version += 1
    await task.save()
    await cancel_open_instance(task, now)
    if task.state is TaskState.ENDED and await next_due_after(task, now, timing.recurrence, due) is not None:
        task.state = TaskState.ACTIVE  # a new schedule revives a task whose old rule ran out
        await task.save(update_fields=["state", "updated_at"])
    if task.state is TaskState.ACTIVE:
        await plan_next_instance(task, after=before(task.starts_at), now=now, timing=timing, due=due)


async def pause_locked(task: Task, now: datetime) -> None:
    task.state = TaskState.PAUSED
    task.chain_version += 1  # links already in flight become stale
    await task.save(update_fields=["state", "chain_version", "updated_at"])
    await cancel_open_instance(task, now)


async def delete_locked(task: Task, now: datetime) -> None:
    """Soft-delete: the task leaves listings; its history and events keep resolving it."""
    task.deleted_at = now
    task.chain_version += 1
    task.pending_change, task.pending_effective_at = None, None  # nothing is left to wait for
    await task.save(
        update_fields=["deleted_at", "chain_version", "pending_change", "pending_effective_at", "updated_at"]
    )
    await cancel_open_instance(task, now, statuses=OPEN_STATUSES)
