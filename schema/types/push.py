"""A browser subscribed for Web Push: where the events you chose reach it, encrypted for it."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from urllib.parse import urlsplit

import strawberry

from models import EventType, Transport
from models import Webhook as WebhookRow
from schema.context import Info
from schema.types.node import Node
from schema.types.pagination import Connection
from schema.types.webhook import WebhookDelivery, delivery_log
from services.kit import global_id
from services.webhooks.subscriptions import subscribed_types


@strawberry.enum(description="how a push subscription is reached")
class PushPlatform(Enum):
    WEB_PUSH = "WEB_PUSH"  # a browser, through its push service
    APNS = "APNS"  # an iOS device, through Apple
    FCM = "FCM"  # an Android device, through Firebase Cloud Messaging


@strawberry.type(
    description="a browser subscribed for Web Push, or a phone for APNs or FCM: the events you chose, sent "
    "with the same rules as webhooks (who may read what, quiet hours, retries)"
)
class PushSubscription(Node):
    row: strawberry.Private[WebhookRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("PushSubscription", self.row.id))

    @strawberry.field(description="as you named it when subscribing")
    def device_name(self) -> str | None:
        return self.row.device_name

    @strawberry.field
    def platform(self) -> PushPlatform:
        return PushPlatform(self.row.transport.value)

    @strawberry.field(description="WEB_PUSH: the push service that reaches it (the endpoint's origin)")
    def push_service(self) -> str | None:
        if self.row.transport is not Transport.WEB_PUSH:
            return None
        parts = urlsplit(self.row.url)
        return f"{parts.scheme}://{parts.netloc}"

    @strawberry.field(description="the events it receives: yours, and those of users you partner for")
    def event_types(self) -> list[EventType]:
        return sorted(subscribed_types(self.row.event_types))

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="its delivery log, newest first (finished ones are kept 30 days)")
    async def deliveries(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Connection[WebhookDelivery]:
        return await delivery_log(info, self.row, first=first, after=after, last=last, before=before)
