from __future__ import annotations

from datetime import datetime

import strawberry

from models import DeliveryStatus, EventType
from models import Webhook as WebhookRow
from models import WebhookDelivery as WebhookDeliveryRow
from schema.context import Info
from schema.types.node import Node
from schema.types.pagination import Connection, page_request
from services.kit import global_id, keyset_page
from services.webhooks import webhooks
from services.webhooks.subscriptions import subscribed_types

strawberry.enum(DeliveryStatus, name="WebhookDeliveryStatus")


@strawberry.type(description="one event (or a test ping) for one webhook, and how its sending went")
class WebhookDelivery:
    row: strawberry.Private[WebhookDeliveryRow]

    @strawberry.field(description="the X-Proofloop-Delivery header and deliveryId of its body")
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("WebhookDelivery", self.row.id))

    @strawberry.field(description="the event's type (an EventType name), or PING")
    def kind(self) -> str:
        return self.row.kind

    @strawberry.field
    def status(self) -> DeliveryStatus:
        return self.row.status

    @strawberry.field(description="attempts made so far")
    def attempts(self) -> int:
        return self.row.attempts

    @strawberry.field(description="why the last attempt failed (status, timeout, refused address); no body")
    def last_error(self) -> str | None:
        return self.row.last_error

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field
    def finished_at(self) -> datetime | None:
        return self.row.finished_at


@strawberry.type(description="where the events you chose are POSTed, signed with its secret")
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

    @strawberry.field(description="the events it receives: yours, and those of users you partner for")
    def event_types(self) -> list[EventType]:
        return sorted(subscribed_types(self.row.event_types))

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


async def delivery_log(
    info: Info, row: WebhookRow, *, first: int | None, after: str | None, last: int | None, before: str | None
) -> Connection[WebhookDelivery]:
    """A webhook's or a push subscription's deliveries, newest first, as a connection."""
    order = webhooks.DELIVERY_ORDER
    request = page_request(info, order, first=first, after=after, last=last, before=before, default=20)
    kinds = webhooks.kinds_of(row.transport)
    query = await webhooks.deliveries_query(await info.context.viewer(), str(row.id), kinds)
    page = await keyset_page(query, order, request)
    return Connection.of(page, order, lambda r: WebhookDelivery(row=r), query.count)


@strawberry.type
class WebhookRegistration:
    webhook: Webhook
    secret: str = strawberry.field(
        description="shown only now: verify X-Proofloop-Signature = sha256=HMAC-SHA256(secret,"
        " X-Proofloop-Timestamp + '.' + body) in hex"
    )
