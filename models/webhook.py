"""An owner's webhook: where their reminders are POSTed, signed with the webhook's HMAC secret."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.user import User


class Webhook(Model):
    id = fields.UUIDField(primary_key=True)
    owner: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="webhooks", on_delete=fields.CASCADE
    )
    url = fields.CharField(max_length=2000)
    # the receiver verifies signatures with it, so it is kept as given (shown to the owner only once)
    secret = fields.CharField(max_length=200)
    created_at = fields.DatetimeField(auto_now_add=True)

    owner_id: str

    class Meta:
        table = "webhooks"
