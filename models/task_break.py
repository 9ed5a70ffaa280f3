"""A planned break of a task: the occurrences due inside it are not planned (services/chain/breaks.py)."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.task import Task


class TaskBreak(Model):
    id = fields.UUIDField(primary_key=True)
    task: fields.ForeignKeyRelation[Task] = fields.ForeignKeyField(
        "models.Task", related_name="breaks", on_delete=fields.CASCADE
    )
    starts_on = fields.DateField()  # the first day off, in the task's zone as it was when scheduled
    ends_on = fields.DateField()  # the last day off
    # the instants it covers: from the start of starts_on (or the end of the commitment horizon, when
    # that is later: the days inside the horizon were promised) to the end of ends_on, or to when it
    # was ended early
    applies_from = fields.DatetimeField()
    ends_at = fields.DatetimeField()
    ended_early_at = fields.DatetimeField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)

    task_id: str

    class Meta:
        table = "task_breaks"
        indexes = (("task_id", "ends_at"),)
