"""A user's webhook, where the events it subscribes to are POSTed signed with its HMAC secret, or a
browser's push subscription, which gets the same events encrypted for it (Transport); and their
deliveries: one outbox row per event and subscription, a durable timer (fire_at/link_no) like the chain's."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import DeliveryStatus, Transport
from models.user import User


class Webhook(Model):
    id = fields.UUIDField(primary_key=True)
    owner: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="webhooks", on_delete=fields.CASCADE
    )
    transport = fields.CharEnumField(
        Transport, max_length=16, default=Transport.WEBHOOK, db_default="WEBHOOK"
    )
    # WEB_PUSH: the push service's endpoint for the browser; APNS, FCM: the device token
    url = fields.CharField(max_length=2000)
    # WEBHOOK: the receiver verifies signatures with it, so it is kept as given (shown to the owner only
    # once); WEB_PUSH: the browser's public key and auth secret the message is encrypted for (JSON)
    secret = fields.CharField(max_length=200)
    device_name = fields.CharField(max_length=100, null=True)  # WEB_PUSH: how the owner named the browser
    # the EventType names it receives, comma-separated (webhooks from before types were chosen: reminders)
    event_types = fields.CharField(max_length=300, default="DUE_SOON", db_default="DUE_SOON")
    created_at = fields.DatetimeField(auto_now_add=True)

    owner_id: str

    class Meta:
        table = "webhooks"


class WebhookDelivery(Model):
    """One event for one webhook: its id is the delivery id every attempt carries."""

    id = fields.UUIDField(primary_key=True)
    webhook: fields.ForeignKeyRelation[Webhook] = fields.ForeignKeyField(
        "models.Webhook", related_name="deliveries", on_delete=fields.CASCADE
    )
    body = fields.TextField()  # the JSON payload as signed, fixed when the event happened
    # its EventType, or PING for a test delivery
    kind = fields.CharField(max_length=32, default="DUE_SOON", db_default="DUE_SOON")
    status = fields.CharEnumField(DeliveryStatus, max_length=16, default=DeliveryStatus.PENDING)
    attempts = fields.IntField(default=0)
    put_offs = fields.IntField(default=0)  # times it found its owner's or host's attempts all in use
    last_error = fields.CharField(max_length=200, null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    finished_at = fields.DatetimeField(null=True)

    # The durable timer, as on task_instances: the next attempt (or an attempt's deadline), NULL once done.
    fire_at = fields.DatetimeField(null=True)
    link_no = fields.IntField(default=0)
    link_for = fields.DatetimeField(null=True)
    linked_at = fields.DatetimeField(null=True)

    webhook_id: str

    class Meta:
        table = "webhook_deliveries"


class WebhookFanout(Model):
    """One row: the position up to which committed events have been turned into deliveries."""

    id = fields.IntField(primary_key=True)
    position = fields.BigIntField(default=0)

    class Meta:
        table = "webhook_fanout"
