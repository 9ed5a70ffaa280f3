"""reminders.fire: deliver one reminder link, exactly once per reminder (compare-and-set on its row).

The fire and its DUE_SOON event commit together; a duplicate or stale link finds fire_at cleared or
moved and does nothing. A reminder whose instance left PENDING (proved, paused, rescheduled, deleted)
is dropped, never sent: a VERIFIED instance needs no "due soon".
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from functools import cache
from uuid import UUID

from tortoise.expressions import F

from models import EventType, InstanceReminder, InstanceStatus, TaskInstance, TaskState
from observability.metrics import count_links_sent, count_reminder
from services.feed import record_event
from services.kit import connection, db_now, is_sqlite, send_after_commit, write_transaction
from services.reminders.reminders import reminder_message
from services.webhooks import queue_reminder_webhooks


class ReminderOutcome(StrEnum):
    FIRED = "fired"
    DROPPED = "dropped"
    EARLY = "early"
    NOTHING_OWED = "nothing_owed"


# The reminder's instance still owes its occurrence: PENDING, its task ACTIVE, not deleted, same chain.
INSTANCE_OPEN = (
    "EXISTS (SELECT 1 FROM task_instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.id = instance_reminders.instance_id"
    f" AND i.status = '{InstanceStatus.PENDING.value}' AND t.state = '{TaskState.ACTIVE.value}'"
    " AND t.deleted_at IS NULL AND t.chain_version = i.chain_version)"
)


@cache
def _fire_sql(sqlite: bool) -> str:
    now, key = ("?1", "?2") if sqlite else ("$1", "$2")
    return (
        f"UPDATE instance_reminders SET fire_at = NULL, link_for = NULL, fired_at = {now}"
        f" WHERE id = {key} AND fire_at IS NOT NULL AND fire_at <= {now} AND {INSTANCE_OPEN}"
        " RETURNING instance_id"
    )


async def fire_reminder(reminder_id: str, link_no: int) -> ReminderOutcome:
    try:
        key = str(UUID(reminder_id))
    except ValueError:
        return ReminderOutcome.NOTHING_OWED  # a malformed link names nothing
    async with write_transaction():
        now = await db_now()
        rows = await connection().execute_query_dict(_fire_sql(is_sqlite()), [now, key])
        if rows:
            instance = await TaskInstance.filter(id=rows[0]["instance_id"]).select_related("task").get()
            await record_event(EventType.DUE_SOON, instance.task, instance, now)
            await queue_reminder_webhooks(instance.task, instance, key, now)
            count_reminder("fired")
            return ReminderOutcome.FIRED
        return await _not_fired(key, link_no, now)


async def _not_fired(reminder_id: str, link_no: int, now: datetime) -> ReminderOutcome:
    """Why the compare-and-set found nothing: already fired, early, or its instance is no longer open."""
    reminder = await InstanceReminder.filter(id=reminder_id).select_related("instance__task").first()
    if reminder is None or reminder.fire_at is None:
        return ReminderOutcome.NOTHING_OWED
    instance, fire_at = reminder.instance, reminder.fire_at
    task = instance.task
    if (
        instance.status is not InstanceStatus.PENDING
        or task.state is not TaskState.ACTIVE
        or task.deleted_at is not None
        or task.chain_version != instance.chain_version
    ):
        await InstanceReminder.filter(id=reminder_id, fire_at=fire_at).update(fire_at=None, link_for=None)
        count_reminder("dropped")
        return ReminderOutcome.DROPPED
    if fire_at <= now:
        return ReminderOutcome.NOTHING_OWED  # fired meanwhile by another transaction
    # early: only the current link may send the one for the remainder, so duplicates die out
    claimed = await InstanceReminder.filter(id=reminder_id, link_no=link_no, fire_at=fire_at).update(
        link_no=F("link_no") + 1, link_for=fire_at, linked_at=now
    )
    if claimed:
        send_after_commit(reminder_message(reminder_id, link_no + 1, fire_at))
        count_links_sent("reminder")
    return ReminderOutcome.EARLY
