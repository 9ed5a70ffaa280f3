"""The dev clock: bring a task's next deadline to now, so a flow that takes days is tried in minutes.

Only under `proofloop dev` (PROOFLOOP_DEV_CLOCK, which a production process refuses to start with). The
task's open instance moves earlier, window, grace and reminders with it, to fall due `due_in_seconds`
from now. It keeps the occurrence it stands for (`TaskInstance.scheduled_due_at`), and the chain plans the
instance after it from that occurrence (chain.planned_after), so each advance brings the schedule's next
occurrence: a daily task's next week is seven advances, with a miss, a streak or an appeal between.
"""

from __future__ import annotations

from datetime import timedelta

from models import InstanceReminder, InstanceStatus, Task, TaskInstance, User
from services.chain import ChainTiming, move_fire_at
from services.kit import Conflict, db_now, write_transaction
from services.reminders import plan_reminders
from services.tasks.tasks import _owned_task_locked

MAX_DUE_IN_SECONDS = 86_400


async def advance_task(owner: User, task_id: str, due_in_seconds: int, *, timing: ChainTiming) -> Task:
    """The owner's task, its open instance now due in `due_in_seconds` (its window as long as before)."""
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id, timing)
        instance = (
            await TaskInstance.filter(task_id=task.id, status=InstanceStatus.PENDING)
            .select_for_update()
            .first()
        )
        if instance is None:
            raise Conflict(
                "the task has no open instance to bring forward (it is paused, ended, or waits for a review)",
                "NOTHING_OPEN",
            )
        now = await db_now()
        shift = instance.due_at - (now + timedelta(seconds=due_in_seconds))
        if shift <= timedelta(0):
            raise Conflict("its open instance is already due by then", "ALREADY_DUE")
        instance.scheduled_due_at = instance.scheduled_due_at or instance.due_at
        instance.opens_at, instance.due_at = instance.opens_at - shift, instance.due_at - shift
        instance.closes_at = instance.closes_at - shift
        await instance.save(update_fields=["scheduled_due_at", "opens_at", "due_at", "closes_at"])
        await move_fire_at(instance, instance.closes_at, now=now, timing=timing)
        # its reminders still to come move with it (those now past are not sent late)
        await InstanceReminder.filter(instance_id=instance.id, fired_at=None).delete()
        await plan_reminders(
            instance, task, now=now, link_horizon_seconds=timing.link_horizon_seconds, not_before=now
        )
    return task
