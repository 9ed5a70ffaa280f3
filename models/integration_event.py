"""An integration's event once recorded: its external id makes a resent event a duplicate, not a proof."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.task import Task
from models.verification import Verification


class IntegrationEvent(Model):
    id = fields.UUIDField(primary_key=True)
    task: fields.ForeignKeyRelation[Task] = fields.ForeignKeyField(
        "models.Task", related_name="integration_events", on_delete=fields.CASCADE
    )
    external_id = fields.CharField(max_length=200)  # the id the sender gave its event
    received_at = fields.DatetimeField()  # the request's arrival, on the database clock
    verification: fields.ForeignKeyRelation[Verification] = fields.ForeignKeyField(
        "models.Verification", related_name="integration_events", on_delete=fields.CASCADE
    )

    task_id: str
    verification_id: str

    class Meta:
        table = "integration_events"
        unique_together = (("task_id", "external_id"),)
        # the per-day budget counts a task's recent events
        indexes = (("task_id", "received_at"),)
