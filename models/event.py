"""The outbox of verification events: written with each state change, published after commit."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import EventType, InstanceStatus
from models.instance import TaskInstance
from models.task import Task
from models.user import User
from models.verification import Verification


class Event(Model):
    id = fields.BigIntField(primary_key=True)
    # The public id: given after commit in one serialized step, so it follows commit order.
    position = fields.BigIntField(null=True, unique=True)
    type = fields.CharEnumField(EventType, max_length=32)
    occurred_at = fields.DatetimeField()
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="events", on_delete=fields.CASCADE
    )
    task: fields.ForeignKeyRelation[Task] = fields.ForeignKeyField(
        "models.Task", related_name="events", on_delete=fields.CASCADE
    )
    instance: fields.ForeignKeyRelation[TaskInstance] = fields.ForeignKeyField(
        "models.TaskInstance", related_name="events", on_delete=fields.CASCADE
    )
    verification: fields.ForeignKeyNullableRelation[Verification] = fields.ForeignKeyField(
        "models.Verification", related_name="events", null=True, on_delete=fields.CASCADE
    )
    # Snapshots as they were at the time, so replayed history reads true after later edits.
    task_title = fields.CharField(max_length=200)
    instance_status = fields.CharEnumField(InstanceStatus, max_length=16)
    due_at = fields.DatetimeField()

    user_id: str
    task_id: str
    instance_id: str
    verification_id: str | None

    class Meta:
        table = "events"
        indexes = (("user_id", "position"),)


class EventPositionCounter(Model):
    """One row: the last position given to an event.

    Positions come from it, never from the events table's maximum, which falls when the newest events'
    account is deleted: the next events would then take positions that live cursors have passed (and ids
    that were handed out already)."""

    id = fields.IntField(primary_key=True)
    position = fields.BigIntField(default=0)

    class Meta:
        table = "event_position_counter"
