from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.enums import EventType
from schema.types.pagination import Connection, page_request
from schema.types.webhook import Webhook, WebhookDelivery, WebhookRegistration
from services.kit import keyset_page
from services.webhooks import webhooks


@strawberry.input
class RegisterWebhookInput:
    url: str = strawberry.field(description="https:// only, to a public address")
    secret: str | None = strawberry.field(
        default=None, description="16..200 characters; generated when left out"
    )
    event_types: list[EventType] | None = strawberry.field(
        default=None,
        description="the events it receives: yours, and those of the users you partner for that you could"
        " read through `events` (DUE_SOON is yours alone); left out or null: [DUE_SOON]",
    )


@strawberry.type
class WebhookQueries:
    @strawberry.field(permission_classes=[IsAuthenticated], description="your own webhooks")
    async def webhooks(self, info: Info) -> list[Webhook]:
        return [Webhook(row=row) for row in await webhooks.owned_webhooks(await info.context.viewer())]

    @strawberry.field(permission_classes=[IsAuthenticated], description="your own webhooks, oldest first")
    async def webhooks_connection(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Connection[Webhook]:
        order = webhooks.WEBHOOK_ORDER
        request = page_request(info, order, first=first, after=after, last=last, before=before, default=20)
        page = await keyset_page(webhooks.owned_webhooks_query(await info.context.viewer()), order, request)
        return Connection.of(page, order, lambda row: Webhook(row=row))


@strawberry.type
class WebhookMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def register_webhook(self, info: Info, input: RegisterWebhookInput) -> WebhookRegistration:
        settings = info.context.settings
        row, secret = await webhooks.register_webhook(
            await info.context.viewer(),
            input.url,
            input.secret,
            input.event_types,
            lookups=info.context.resources.name_lookups,
            allow_insecure=settings.webhook_allow_insecure,
            max_per_user=settings.webhooks_per_user,
            lookup_timeout=settings.webhook_timeout_seconds,
        )
        return WebhookRegistration(webhook=Webhook(row=row), secret=secret)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="POSTs a signed PING to one of your webhooks now, sent and retried like any delivery",
    )
    async def ping_webhook(self, info: Info, id: strawberry.ID) -> WebhookDelivery:
        tries = info.context.policies.webhook_tries
        return WebhookDelivery(
            row=await webhooks.ping_webhook(await info.context.viewer(), str(id), tries=tries)
        )

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="sends a finished delivery again with the same id and body; CONFLICT while it is owed",
    )
    async def redeliver_webhook_delivery(self, info: Info, id: strawberry.ID) -> WebhookDelivery:
        tries = info.context.policies.webhook_tries
        return WebhookDelivery(
            row=await webhooks.redeliver(await info.context.viewer(), str(id), tries=tries)
        )

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def delete_webhook(self, info: Info, id: strawberry.ID) -> bool:
        await webhooks.delete_webhook(await info.context.viewer(), str(id))
        return True
