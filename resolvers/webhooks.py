from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.deprecations import list_replaced_by, replaced_by
from schema.enums import EventType
from schema.types.pagination import Connection, page_request
from schema.types.payloads import MutationInput, MutationPayload, settle
from schema.types.webhook import Webhook, WebhookDelivery, WebhookRegistration
from services.kit import decode_id, global_id, keyset_page
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
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="your own webhooks",
        deprecation_reason=list_replaced_by("webhooksConnection"),
    )
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
        query = webhooks.owned_webhooks_query(await info.context.viewer())
        page = await keyset_page(query, order, request)
        return Connection.of(page, order, lambda row: Webhook(row=row), query.count)


@strawberry.input(description="a new webhook")
class WebhookRegisterInput(MutationInput, RegisterWebhookInput):
    pass


@strawberry.input
class WebhookInput(MutationInput):
    id: strawberry.ID


@strawberry.input
class WebhookDeliveryInput(MutationInput):
    id: strawberry.ID


@strawberry.type
class WebhookRegisterPayload(MutationPayload):
    webhook: Webhook | None = None
    secret: str | None = strawberry.field(
        default=None, description="signs each delivery; shown this once (given or generated)"
    )


@strawberry.type
class WebhookDeliveryPayload(MutationPayload):
    delivery: WebhookDelivery | None = None


@strawberry.type
class WebhookDeletePayload(MutationPayload):
    deleted_webhook_id: strawberry.ID | None = None


async def register_webhook(info: Info, input: RegisterWebhookInput) -> WebhookRegistration:
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


async def ping_webhook(info: Info, id: strawberry.ID) -> WebhookDelivery:
    tries = info.context.policies.webhook_tries
    return WebhookDelivery(row=await webhooks.ping_webhook(await info.context.viewer(), str(id), tries=tries))


async def redeliver(info: Info, id: strawberry.ID) -> WebhookDelivery:
    tries = info.context.policies.webhook_tries
    return WebhookDelivery(row=await webhooks.redeliver(await info.context.viewer(), str(id), tries=tries))


async def delete_webhook(info: Info, id: strawberry.ID) -> strawberry.ID:
    await webhooks.delete_webhook(await info.context.viewer(), str(id))
    return strawberry.ID(global_id("Webhook", decode_id(id, "Webhook")))


PING = "POSTs a signed PING to one of your webhooks now, sent and retried like any delivery"
REDELIVER = "sends a finished delivery again with the same id and body; CONFLICT while it is owed"


@strawberry.type
class WebhookMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def webhook_register(self, info: Info, input: WebhookRegisterInput) -> WebhookRegisterPayload:
        async def work() -> WebhookRegisterPayload:
            done = await register_webhook(info, input)
            return WebhookRegisterPayload(webhook=done.webhook, secret=done.secret)

        return await settle(WebhookRegisterPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=PING)
    async def webhook_ping(self, info: Info, input: WebhookInput) -> WebhookDeliveryPayload:
        async def work() -> WebhookDeliveryPayload:
            return WebhookDeliveryPayload(delivery=await ping_webhook(info, input.id))

        return await settle(WebhookDeliveryPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=REDELIVER)
    async def webhook_delivery_redeliver(
        self, info: Info, input: WebhookDeliveryInput
    ) -> WebhookDeliveryPayload:
        async def work() -> WebhookDeliveryPayload:
            return WebhookDeliveryPayload(delivery=await redeliver(info, input.id))

        return await settle(WebhookDeliveryPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def webhook_delete(self, info: Info, input: WebhookInput) -> WebhookDeletePayload:
        async def work() -> WebhookDeletePayload:
            return WebhookDeletePayload(deleted_webhook_id=await delete_webhook(info, input.id))

        return await settle(WebhookDeletePayload, input, work)


@strawberry.type
class FirstWebhookMutations:
    """The first shape, deprecated: plain arguments, the object as the result, refusals as errors."""

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("webhookRegister")
    )
    async def register_webhook(self, info: Info, input: RegisterWebhookInput) -> WebhookRegistration:
        return await register_webhook(info, input)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description=PING, deprecation_reason=replaced_by("webhookPing")
    )
    async def ping_webhook(self, info: Info, id: strawberry.ID) -> WebhookDelivery:
        return await ping_webhook(info, id)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=REDELIVER,
        deprecation_reason=replaced_by("webhookDeliveryRedeliver"),
    )
    async def redeliver_webhook_delivery(self, info: Info, id: strawberry.ID) -> WebhookDelivery:
        return await redeliver(info, id)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("webhookDelete")
    )
    async def delete_webhook(self, info: Info, id: strawberry.ID) -> bool:
        await delete_webhook(info, id)
        return True
