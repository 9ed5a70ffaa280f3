"""A proof submitted for an instance, and a partner's decision on it."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import (
    CaptureTimeSource,
    InstanceStatus,
    RejectionReason,
    VerificationMethod,
    VerificationStatus,
)
from models.instance import TaskInstance
from models.user import User


class Verification(Model):
    id = fields.UUIDField(primary_key=True)
    instance: fields.ForeignKeyRelation[TaskInstance] = fields.ForeignKeyField(
        "models.TaskInstance", related_name="verifications", on_delete=fields.CASCADE
    )
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="verifications", on_delete=fields.CASCADE
    )
    method = fields.CharEnumField(VerificationMethod, max_length=16)
    status = fields.CharEnumField(VerificationStatus, max_length=16)
    reason = fields.CharEnumField(RejectionReason, max_length=32, null=True)
    submitted_at = fields.DatetimeField()  # when the request arrived, on the database clock
    decided_at = fields.DatetimeField(null=True)

    latitude = fields.FloatField(null=True)
    longitude = fields.FloatField(null=True)
    accuracy_meters = fields.FloatField(null=True)
    recorded_at = fields.DatetimeField(null=True)
    distance_meters = fields.FloatField(null=True)
    retry_after_seconds = fields.IntField(null=True)  # a refusal that a later retry can pass: how much later

    media_digest = fields.CharField(max_length=64, null=True)  # the metadata-free copy in the blob store
    media_mime = fields.CharField(max_length=64, null=True)
    thumbnail_digest = fields.CharField(max_length=64, null=True)
    media_bytes = fields.BigIntField(null=True)  # what the blobs cost the owner's storage quota
    fingerprints: fields.JSONField[list[str] | None] = fields.JSONField(null=True)  # perceptual hashes (hex)
    # PHOTO/VIDEO: when the file says it was taken, and where that was read (ABSENT: it said nothing)
    captured_at = fields.DatetimeField(null=True)
    capture_source = fields.CharEnumField(CaptureTimeSource, max_length=16, null=True)

    # INTEGRATION: what the event reported (services/proofs/integration.py spells the keys)
    activity: dict[str, object] | None = fields.JSONField(null=True)

    note = fields.TextField(null=True)
    reviewer: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="reviews", null=True, on_delete=fields.SET_NULL
    )
    review_comment = fields.TextField(null=True)
    # set on the review an appeal opens: the status the instance returns to unless the appeal is upheld
    appeal_of = fields.CharEnumField(InstanceStatus, max_length=16, null=True)

    instance_id: str
    user_id: str
    reviewer_id: str | None

    class Meta:
        table = "verifications"
        indexes = (("user_id", "method", "submitted_at"),)
