"""A reminder owed for one instance: its own durable timer (fire_at), claimed and linked like the chain's."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import ReminderAnchor
from models.instance import TaskInstance


class InstanceReminder(Model):
    id = fields.UUIDField(primary_key=True)
    instance: fields.ForeignKeyRelation[TaskInstance] = fields.ForeignKeyField(
        "models.TaskInstance", related_name="reminders", on_delete=fields.CASCADE
    )
    anchor = fields.CharEnumField(ReminderAnchor, max_length=8)
    offset_seconds = fields.IntField()
    remind_at = fields.DatetimeField()
    fired_at = fields.DatetimeField(null=True)

    # The durable timer, as on task_instances: NULL once fired or dropped (its instance left PENDING).
    fire_at = fields.DatetimeField(null=True)
    link_no = fields.IntField(default=0)
    link_for = fields.DatetimeField(null=True)
    linked_at = fields.DatetimeField(null=True)

    instance_id: str

    class Meta:
        table = "instance_reminders"
