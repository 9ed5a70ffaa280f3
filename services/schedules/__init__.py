"""Due times: the bridge from a task's schedule to the pure recurrence rules, computed off the event loop."""

from __future__ import annotations

from services.schedules.due_times import (
    DueTimes,
    check_schedule,
    due_times_after,
    known_schedule,
    next_due_after,
    out_of_time,
    prefetch_due_times,
    prefetch_many,
    schedule_of,
    upcoming,
    window_for,
    window_of,
)

__all__ = [
    "DueTimes",
    "check_schedule",
    "due_times_after",
    "known_schedule",
    "next_due_after",
    "out_of_time",
    "prefetch_due_times",
    "prefetch_many",
    "schedule_of",
    "upcoming",
    "window_for",
    "window_of",
]
