from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.types.pagination import Connection, page_request
from schema.types.webhook import Webhook, WebhookRegistration
from services.kit import keyset_page
from services.webhooks import webhooks


@strawberry.input
class RegisterWebhookInput:
    url: str = strawberry.field(description="https:// only, to a public address")
    secret: str | None = strawberry.field(
        default=None, description="16..200 characters; generated when left out"
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
            lookups=info.context.resources.name_lookups,
            allow_insecure=settings.webhook_allow_insecure,
            max_per_user=settings.webhooks_per_user,
            lookup_timeout=settings.webhook_timeout_seconds,
        )
        return WebhookRegistration(webhook=Webhook(row=row), secret=secret)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def delete_webhook(self, info: Info, id: strawberry.ID) -> bool:
        await webhooks.delete_webhook(await info.context.viewer(), str(id))
        return True
