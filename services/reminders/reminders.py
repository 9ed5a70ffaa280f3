"""Reminders: a task's offsets ("at open", "30 min before due"), checked, and planned per instance.

Each planned instance gets one instance_reminders row per offset, a durable timer of its own (fire_at)
that rides the chain's mechanism: linked at once inside the horizon, else handed over by the pump
(services/reminders/links.py), fired by `reminders.fire` (services/reminders/fire.py).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from models import InstanceReminder, InstanceStatus, ReminderAnchor, Task, TaskInstance
from observability.metrics import count_links_sent
from rules.recurrence import (
    RecurrenceBudget,
    RecurrenceTimedOut,
    Schedule,
    ScheduleError,
    smallest_gap_seconds,
)
from services.kit import BadInput, Outgoing, send_after_commit
from services.schedules import out_of_time
from services.timers import Link, batched_messages

FIRE_ACTOR = "reminders.fire"
FIRE_BATCH_ACTOR = "reminders.fire_batch"  # reminders due at the same instant, one message
MAX_REMINDERS_PER_TASK = 5
# a one-off task has no next occurrence to bound its offsets: a week before is as early as they go
MAX_OFFSET_SECONDS = 7 * 24 * 3600
# a reminder whose time passed more than this before its instance was planned is skipped, not sent late
LATE_TOLERANCE = timedelta(seconds=60)
FIELD = "input.reminders"


@dataclass(frozen=True, order=True)
class ReminderOffset:
    """A reminder `offset_seconds` before the instance's window opens (OPENS) or before it is due (DUE)."""

    anchor: ReminderAnchor
    offset_seconds: int

    def remind_at(self, occurrence: Occurrence) -> datetime:
        anchor = occurrence.opens_at if self.anchor is ReminderAnchor.OPENS else occurrence.due_at
        return anchor - timedelta(seconds=self.offset_seconds)


@dataclass(frozen=True)
class Occurrence:
    """A planned instance as its reminders see it (the set-based settlement plans rows, not models)."""

    instance_id: str
    opens_at: datetime
    due_at: datetime


def occurrence_of(instance: TaskInstance) -> Occurrence:
    return Occurrence(str(instance.id), instance.opens_at, instance.due_at)


def offsets_of(task: Task) -> list[ReminderOffset]:
    return offsets_from(task.reminders)


def offsets_from(stored_value: object) -> list[ReminderOffset]:
    """The offsets of a task's stored `reminders` column (JSON text when read by hand-written SQL)."""
    pairs = json.loads(stored_value) if isinstance(stored_value, str) else stored_value
    if not isinstance(pairs, list):
        return []
    return [ReminderOffset(ReminderAnchor(str(a)), int(str(s))) for a, s in pairs]


def stored(offsets: tuple[ReminderOffset, ...]) -> list[list[object]]:
    return [[o.anchor.value, o.offset_seconds] for o in offsets]  # as the owner listed them


async def check_reminders(
    offsets: tuple[ReminderOffset, ...], schedule: Schedule, budget: RecurrenceBudget, field: str = FIELD
) -> None:
    """Bounded in count, no duplicates, and each one after the previous occurrence has closed (so every
    instance gets all of its reminders); BAD_USER_INPUT naming the offending entry otherwise."""
    if len(offsets) > MAX_REMINDERS_PER_TASK:
        raise BadInput(field, f"at most {MAX_REMINDERS_PER_TASK} reminders per task")
    if len(set(offsets)) != len(offsets):
        raise BadInput(field, "lists the same reminder twice")
    for n, offset in enumerate(offsets):
        if not 0 <= offset.offset_seconds <= MAX_OFFSET_SECONDS:
            raise BadInput(f"{field}.{n}.offsetSeconds", f"must be between 0 and {MAX_OFFSET_SECONDS}")
    if not offsets or schedule.rrule is None:
        return
    try:
        gap = await asyncio.to_thread(smallest_gap_seconds, schedule, budget=budget)
    except RecurrenceTimedOut as exc:
        raise out_of_time(exc, schedule) from None
    except ScheduleError:
        return  # the schedule's own check reports it
    if gap is None:
        return
    for n, offset in enumerate(offsets):
        # how long before the due time it fires, and how long before that the previous one closes
        lead = offset.offset_seconds + (
            schedule.window_seconds if offset.anchor is ReminderAnchor.OPENS else 0
        )
        if lead + schedule.grace_seconds > gap:
            raise BadInput(
                f"{field}.{n}.offsetSeconds",
                f"must fire after the previous occurrence closes: at most"
                f" {max(0, int(gap) - schedule.grace_seconds - (lead - offset.offset_seconds))}",
            )


def reminder_message(reminder_id: str, link_no: int, fire_at: datetime) -> Outgoing:
    return Outgoing(FIRE_ACTOR, (reminder_id, link_no), eta=fire_at)


def reminder_messages(links: list[Link]) -> list[Outgoing]:
    """The links' messages: those due at the same instant share reminders.fire_batch messages."""
    return batched_messages(links, one=FIRE_ACTOR, many=FIRE_BATCH_ACTOR)


async def plan_reminders(
    instance: TaskInstance,
    task: Task,
    *,
    now: datetime,
    link_horizon_seconds: float,
    not_before: datetime | None = None,
) -> None:
    """The new instance's reminders, in the caller's transaction (one insert; none when the task has no
    offsets); those inside the horizon are linked after commit, like the chain's own links."""
    await plan_reminders_of(
        [(occurrence_of(instance), offsets_of(task))],
        now=now,
        link_horizon_seconds=link_horizon_seconds,
        not_before=not_before,
    )


async def plan_reminders_of(
    planned: list[tuple[Occurrence, list[ReminderOffset]]],
    *,
    now: datetime,
    link_horizon_seconds: float,
    not_before: datetime | None = None,
) -> None:
    """plan_reminders for many planned instances at once: one insert for all of them."""
    earliest = now - LATE_TOLERANCE if not_before is None else not_before
    rows: list[InstanceReminder] = []
    for occurrence, offsets in planned:
        rows += _reminder_rows(occurrence, offsets, earliest, now, link_horizon_seconds)
    if not rows:
        return
    await InstanceReminder.bulk_create(rows)
    links = [(str(row.id), 1, row.remind_at) for row in rows if row.link_for is not None]
    for message in reminder_messages(links):
        send_after_commit(message)
    if links:
        count_links_sent("reminder", len(links))


def _reminder_rows(
    occurrence: Occurrence,
    offsets: list[ReminderOffset],
    earliest: datetime,
    now: datetime,
    link_horizon_seconds: float,
) -> list[InstanceReminder]:
    rows: list[InstanceReminder] = []
    for offset in offsets:
        remind_at = offset.remind_at(occurrence)
        if remind_at < earliest:
            continue
        linked = (remind_at - now).total_seconds() <= link_horizon_seconds
        rows.append(
            InstanceReminder(
                instance_id=occurrence.instance_id,
                anchor=offset.anchor,
                offset_seconds=offset.offset_seconds,
                remind_at=remind_at,
                fire_at=remind_at,
                link_no=1 if linked else 0,
                link_for=remind_at if linked else None,
                linked_at=now if linked else None,
            )
        )
    return rows


async def replan_open_reminders(task: Task, *, now: datetime, link_horizon_seconds: float) -> None:
    """The task's reminders changed (its schedule did not): the open instance's reminders still to come
    are replaced by the new ones; links already sent find their row gone and do nothing."""
    instance = await TaskInstance.filter(task_id=task.id, status=InstanceStatus.PENDING).first()
    if instance is None:
        return
    await InstanceReminder.filter(instance_id=instance.id, fired_at=None).delete()
    await plan_reminders(instance, task, now=now, link_horizon_seconds=link_horizon_seconds, not_before=now)
