"""The mail outbox: a message written in the transaction that causes it, delivered after commit."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model


class OutgoingMail(Model):
    id = fields.UUIDField(primary_key=True)
    recipient = fields.CharField(max_length=254)
    subject = fields.CharField(max_length=200)
    # bodies may carry a single-use link: they are blanked once the message has left
    text_body = fields.TextField()
    html_body = fields.TextField()
    created_at = fields.DatetimeField(auto_now_add=True)
    sent_at = fields.DatetimeField(null=True)
    attempts = fields.IntField(default=0)

    class Meta:
        table = "outgoing_mail"
