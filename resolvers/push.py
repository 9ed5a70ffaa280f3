"""Web Push: the key a browser subscribes with, its subscriptions, and subscribing, testing and ending one."""

from __future__ import annotations

from enum import Enum

import strawberry

from models import PUSH_TRANSPORTS, Transport
from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.enums import EventType
from schema.types.pagination import Connection, page_request
from schema.types.payloads import MutationInput, MutationPayload, settle
from schema.types.push import PushSubscription
from schema.types.webhook import WebhookDelivery
from services.kit import decode_id, global_id, keyset_page
from services.webhooks import BrowserKeys, webhooks


@strawberry.input(description="PushSubscription.getKey() of the browser's subscription, base64url")
class PushKeysInput:
    p256dh: str
    auth: str


@strawberry.input(description="what PushManager.subscribe() gave the browser (its toJSON())")
class PushSubscriptionRegisterInput(MutationInput):
    endpoint: str = strawberry.field(description="https:// only, at a public address")
    keys: PushKeysInput
    device_name: str | None = strawberry.field(
        default=None, description="how you name it (1..100 characters)"
    )
    event_types: list[EventType] | None = strawberry.field(
        default=None,
        description="the events it receives, as for a webhook; left out or null: [DUE_SOON]",
    )


@strawberry.enum(description="a phone's platform")
class DevicePlatform(Enum):
    APNS = "APNS"
    FCM = "FCM"


@strawberry.input(description="a phone's push token, as its platform gave it to the app")
class PushDeviceRegisterInput(MutationInput):
    platform: DevicePlatform
    token: str = strawberry.field(description="APNs: the device token in hex; FCM: the registration token")
    device_name: str | None = strawberry.field(
        default=None, description="how you name it (1..100 characters)"
    )
    event_types: list[EventType] | None = strawberry.field(
        default=None, description="the events it receives, as for a webhook; left out or null: [DUE_SOON]"
    )


@strawberry.input
class PushSubscriptionInput(MutationInput):
    id: strawberry.ID


@strawberry.type
class PushSubscriptionPayload(MutationPayload):
    push_subscription: PushSubscription | None = None


@strawberry.type
class PushSubscriptionDeletePayload(MutationPayload):
    deleted_push_subscription_id: strawberry.ID | None = None


@strawberry.type
class PushSubscriptionPingPayload(MutationPayload):
    delivery: WebhookDelivery | None = None


@strawberry.type
class PushQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="the applicationServerKey for PushManager.subscribe() (VAPID, base64url): a browser "
        "subscribed with it can be reached by this API",
    )
    def web_push_key(self, info: Info) -> str:
        return info.context.policies.web_push.public_key

    @strawberry.field(
        permission_classes=[IsAuthenticated], description="your browsers subscribed, oldest first"
    )
    async def push_subscriptions(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Connection[PushSubscription]:
        order = webhooks.WEBHOOK_ORDER
        request = page_request(info, order, first=first, after=after, last=last, before=before, default=20)
        query = webhooks.owned_webhooks_query(await info.context.viewer(), PUSH_TRANSPORTS)
        page = await keyset_page(query, order, request)
        return Connection.of(page, order, lambda row: PushSubscription(row=row), query.count)


@strawberry.type
class PushMutations:
    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="subscribes a browser for Web Push (at most PROOFLOOP_PUSH_SUBSCRIPTIONS_PER_USER)",
    )
    async def push_subscription_register(
        self, info: Info, input: PushSubscriptionRegisterInput
    ) -> PushSubscriptionPayload:
        async def work() -> PushSubscriptionPayload:
            settings = info.context.settings
            row = await webhooks.register_push_subscription(
                await info.context.viewer(),
                input.endpoint,
                BrowserKeys.given(input.keys.p256dh, input.keys.auth),
                input.device_name,
                input.event_types,
                lookups=info.context.resources.name_lookups,
                allow_insecure=settings.webhook_allow_insecure,
                max_per_user=settings.push_subscriptions_per_user,
                lookup_timeout=settings.webhook_timeout_seconds,
            )
            return PushSubscriptionPayload(push_subscription=PushSubscription(row=row))

        return await settle(PushSubscriptionPayload, input, work)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="registers a phone (APNs or FCM, where the server is set up for it; BAD_USER_INPUT on"
        " input.platform otherwise), counted with browsers in PROOFLOOP_PUSH_SUBSCRIPTIONS_PER_USER",
    )
    async def push_device_register(
        self, info: Info, input: PushDeviceRegisterInput
    ) -> PushSubscriptionPayload:
        async def work() -> PushSubscriptionPayload:
            row = await webhooks.register_push_device(
                await info.context.viewer(),
                Transport(input.platform.value),
                input.token,
                input.device_name,
                input.event_types,
                native=info.context.policies.native_push,
                max_per_user=info.context.settings.push_subscriptions_per_user,
            )
            return PushSubscriptionPayload(push_subscription=PushSubscription(row=row))

        return await settle(PushSubscriptionPayload, input, work)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="sends a test notification (a PING) to one of your browsers, like any delivery",
    )
    async def push_subscription_ping(
        self, info: Info, input: PushSubscriptionInput
    ) -> PushSubscriptionPingPayload:
        async def work() -> PushSubscriptionPingPayload:
            tries = info.context.policies.webhook_tries
            viewer = await info.context.viewer()
            row = await webhooks.ping_webhook(viewer, str(input.id), tries=tries, kinds=PUSH_TRANSPORTS)
            return PushSubscriptionPingPayload(delivery=WebhookDelivery(row=row))

        return await settle(PushSubscriptionPingPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description="ends a browser's subscription")
    async def push_subscription_delete(
        self, info: Info, input: PushSubscriptionInput
    ) -> PushSubscriptionDeletePayload:
        async def work() -> PushSubscriptionDeletePayload:
            await webhooks.delete_webhook(await info.context.viewer(), str(input.id), PUSH_TRANSPORTS)
            deleted = global_id("PushSubscription", decode_id(input.id, "PushSubscription"))
            return PushSubscriptionDeletePayload(deleted_push_subscription_id=strawberry.ID(deleted))

        return await settle(PushSubscriptionDeletePayload, input, work)
