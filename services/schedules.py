"""The bridge from a task row to the pure recurrence rules: the one place that computes due times."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from models import Task
from services.errors import BadInput
from verification.recurrence import Schedule, ScheduleError, occurrences_after, validate_schedule

SCHEDULE_FIELD = "input.schedule"


def schedule_of(task: Task) -> Schedule:
    return Schedule(
        starts_at=task.starts_at,
        rrule=task.rrule,
        timezone=task.timezone,
        window_seconds=task.window_seconds,
        grace_seconds=task.grace_seconds,
    )


async def check_schedule(schedule: Schedule, *, min_interval_seconds: int) -> None:
    """Validate off the event loop (the never-occurs search is bounded but not free)."""
    try:
        await asyncio.to_thread(validate_schedule, schedule, min_interval_seconds=min_interval_seconds)
    except ScheduleError as exc:
        field = f"{SCHEDULE_FIELD}.{exc.field}"
        message = exc.message.removeprefix(f"{exc.field}: ")
        raise BadInput(field, f"{field}: {message}") from None


def next_due_after(task: Task, after: datetime) -> datetime | None:
    due = occurrences_after(schedule_of(task), after, 1)
    return due[0] if due else None


def upcoming(task: Task, after: datetime, count: int) -> list[datetime]:
    return occurrences_after(schedule_of(task), after, count)


def window_of(task: Task, due_at: datetime) -> tuple[datetime, datetime]:
    """(opensAt, closesAt) of the instance due at `due_at`."""
    return due_at - timedelta(seconds=task.window_seconds), due_at + timedelta(seconds=task.grace_seconds)
