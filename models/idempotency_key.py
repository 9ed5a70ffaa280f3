"""A client's Idempotency-Key for a mutation: the request it was first used with and the answer it got."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.user import User


class IdempotencyKey(Model):
    """One key of one user: running (its lease held by the request executing it) or answered."""

    id = fields.BigIntField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="idempotency_keys", on_delete=fields.CASCADE
    )
    key = fields.CharField(max_length=255)
    # sha256 of the request (document, operation name, variables, extensions, uploaded files)
    fingerprint = fields.CharField(max_length=64)
    created_at = fields.DatetimeField()
    expires_at = fields.DatetimeField(db_index=True)
    # while running: until when the request executing it holds it; NULL once answered
    lease_until = fields.DatetimeField(null=True)
    answered = fields.BooleanField(default=False)
    status_code = fields.IntField(null=True)
    media_type = fields.CharField(max_length=100, null=True)
    retry_after = fields.CharField(max_length=16, null=True)
    # the answer's body; NULL for an answer larger than PROOFLOOP_IDEMPOTENCY_MAX_ANSWER_BYTES
    body = fields.BinaryField(null=True)

    user_id: str

    class Meta:
        table = "idempotency_keys"
        unique_together = (("user", "key"),)
