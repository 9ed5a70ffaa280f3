from __future__ import annotations

from datetime import datetime

import strawberry

from models import Webhook as WebhookRow
from schema.types.node import Node
from services.kit import global_id


@strawberry.type(description="where your reminders are POSTed, signed with its secret")
class Webhook(Node):
    row: strawberry.Private[WebhookRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("Webhook", self.row.id))

    @strawberry.field
    def url(self) -> str:
        return self.row.url

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at


@strawberry.type
class WebhookRegistration:
    webhook: Webhook
    secret: str = strawberry.field(
        description="shown only now: verify X-Proofloop-Signature = sha256=HMAC-SHA256(secret,"
        " X-Proofloop-Timestamp + '.' + body) in hex"
    )
