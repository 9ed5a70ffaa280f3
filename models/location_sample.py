"""What an avoid-a-place instance keeps of the owner's location samples until it settles: when each was
recorded and whether it was inside the place. Never a position; deleted once the instance is judged."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.instance import TaskInstance


class LocationSample(Model):
    id = fields.UUIDField(primary_key=True)
    instance: fields.ForeignKeyRelation[TaskInstance] = fields.ForeignKeyField(
        "models.TaskInstance", related_name="location_samples", on_delete=fields.CASCADE
    )
    recorded_at = fields.DatetimeField()
    inside = fields.BooleanField()

    instance_id: str

    class Meta:
        table = "location_samples"
        indexes = (("instance_id", "recorded_at"),)
