"""Users' webhooks: registered with a checked address, an HMAC secret and the event types they receive;
each reminder becomes one delivery per DUE_SOON webhook of its owner, an outbox row written with the
reminder (services/webhooks/outbox.py); every other event is fanned out to its readers' webhooks
(services/webhooks/fanout.py); the workers POST them signed (services/webhooks/sender.py)."""

from __future__ import annotations

import json
import logging
import secrets
import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from tortoise.queryset import QuerySet

from models import (
    PUSH_TRANSPORTS,
    DeliveryStatus,
    EventType,
    Task,
    TaskInstance,
    Transport,
    User,
    Webhook,
    WebhookDelivery,
)
from services.kit import (
    AttemptWindow,
    BadInput,
    Conflict,
    Keyset,
    NameLookups,
    NotFound,
    SortKey,
    db_now,
    format_instant,
    global_id,
    parse_id,
    parse_instant,
    parse_uuid,
    send_after_commit,
    write_transaction,
)
from services.webhooks.addresses import RefusedAddress, Target, parse_target, resolve_checked
from services.webhooks.native_push import NativePush, checked_device_token
from services.webhooks.outbox import NewDelivery, delivery_message, queue_deliveries
from services.webhooks.quiet import quiet_ends
from services.webhooks.subscriptions import stored_types, subscribed_types
from services.webhooks.web_push import BrowserKeys

log = logging.getLogger("proofloop.webhooks")

SIGNATURE_HEADER = "X-Proofloop-Signature"
TIMESTAMP_HEADER = "X-Proofloop-Timestamp"
DELIVERY_HEADER = "X-Proofloop-Delivery"
SECRET_LENGTHS = (16, 200)


async def register_webhook(
    owner: User,
    url: str,
    secret: str | None,
    event_types: Iterable[EventType] | None = None,
    *,
    lookups: NameLookups,
    allow_insecure: bool,
    max_per_user: int,
    lookup_timeout: float,
) -> tuple[Webhook, str]:
    """A new webhook, stored with its normalized URL, and its secret (generated unless given); the caller
    shows the secret once."""
    try:
        target = parse_target(url, allow_insecure=allow_insecure)
    except RefusedAddress as exc:
        raise BadInput("input.url", str(exc)) from None
    if secret is None:
        secret = secrets.token_urlsafe(32)
    elif not SECRET_LENGTHS[0] <= len(secret) <= SECRET_LENGTHS[1]:
        raise BadInput("input.secret", f"must be {SECRET_LENGTHS[0]} to {SECRET_LENGTHS[1]} characters")
    types = stored_types(event_types, "input.eventTypes")
    hook = await _subscribe(
        owner,
        Subscriber(Transport.WEBHOOK, target, secret, types),
        lookups=lookups,
        allow_insecure=allow_insecure,
        max_per_user=max_per_user,
        lookup_timeout=lookup_timeout,
    )
    return hook, secret


async def register_push_subscription(
    owner: User,
    endpoint: str,
    keys: BrowserKeys,
    device_name: str | None,
    event_types: Iterable[EventType] | None = None,
    *,
    lookups: NameLookups,
    allow_insecure: bool,
    max_per_user: int,
    lookup_timeout: float,
) -> Webhook:
    """A browser's Web Push subscription: the same events, access rules, quiet hours and outbox as a
    webhook, each delivery encrypted for the browser's keys (services/webhooks/web_push.py)."""
    try:
        target = parse_target(endpoint, allow_insecure=allow_insecure)
    except RefusedAddress as exc:
        raise BadInput("input.endpoint", str(exc)) from None
    _check_device_name(device_name)
    types = stored_types(event_types, "input.eventTypes")
    subscriber = Subscriber(Transport.WEB_PUSH, target, keys.stored(), types, device_name)
    return await _subscribe(
        owner,
        subscriber,
        lookups=lookups,
        allow_insecure=allow_insecure,
        max_per_user=max_per_user,
        lookup_timeout=lookup_timeout,
    )


MAX_DEVICE_NAME = 100


async def register_push_device(
    owner: User,
    transport: Transport,
    token: str,
    device_name: str | None,
    event_types: Iterable[EventType] | None,
    *,
    native: NativePush,
    max_per_user: int,
) -> Webhook:
    """An iOS (APNS) or Android (FCM) device: the same events and rules as a browser's subscription, sent
    through its platform's API (services/webhooks/native_push.py), which the operator must have set up."""
    if not native.sends(transport):
        setting = "PROOFLOOP_APNS_KEY" if transport is Transport.APNS else "PROOFLOOP_FCM_SERVICE_ACCOUNT"
        raise BadInput("input.platform", f"this server does not send to {transport.value} ({setting} unset)")
    device = checked_device_token(transport, token)
    _check_device_name(device_name)
    types = stored_types(event_types, "input.eventTypes")
    subscriber = Subscriber(transport, None, "", types, device_name, address=device)
    return await _subscribe(
        owner, subscriber, lookups=None, allow_insecure=False, max_per_user=max_per_user, lookup_timeout=0
    )


def _check_device_name(device_name: str | None) -> None:
    if device_name is not None and not 0 < len(device_name.strip()) <= MAX_DEVICE_NAME:
        raise BadInput("input.deviceName", f"must be 1 to {MAX_DEVICE_NAME} characters")


WEBHOOKS = frozenset({Transport.WEBHOOK})


def kinds_of(transport: Transport) -> frozenset[Transport]:
    """The group a subscription counts in (its quota, the list it shows in): webhooks, or push."""
    return WEBHOOKS if transport is Transport.WEBHOOK else PUSH_TRANSPORTS


@dataclass(frozen=True)
class Subscriber:
    transport: Transport
    target: Target | None  # a webhook's URL or a browser's endpoint; None for a device
    secret: str
    event_types: str
    device_name: str | None = None
    address: str = ""  # a device's token


async def _subscribe(
    owner: User,
    subscriber: Subscriber,
    *,
    lookups: NameLookups | None,
    allow_insecure: bool,
    max_per_user: int,
    lookup_timeout: float,
) -> Webhook:
    """Store a webhook or a push subscription once its address checks out, within the owner's quota."""
    field = "input.url" if subscriber.transport is Transport.WEBHOOK else "input.endpoint"
    group = kinds_of(subscriber.transport)
    # before the lookup: a full quota costs no resolver time
    await _refuse_past_quota(owner, group, max_per_user)
    if subscriber.target is not None and lookups is not None:  # a device token names no address
        try:
            await resolve_checked(
                subscriber.target, lookups, allow_insecure=allow_insecure, within_seconds=lookup_timeout
            )
        except RefusedAddress as exc:
            raise BadInput(field, str(exc)) from None
    async with write_transaction():
        # serializes this owner's registrations, so two at once cannot both pass the quota
        await User.filter(id=owner.id).select_for_update().first()
        # a statement after the lock: it sees their commits
        await _refuse_past_quota(owner, group, max_per_user)
        return await Webhook.create(
            owner_id=owner.id,
            transport=subscriber.transport,
            url=subscriber.target.url if subscriber.target is not None else subscriber.address,
            secret=subscriber.secret,
            event_types=subscriber.event_types,
            device_name=subscriber.device_name,
        )


async def _refuse_past_quota(owner: User, kinds: frozenset[Transport], max_per_user: int) -> None:
    if await Webhook.filter(owner_id=owner.id, transport__in=list(kinds)).count() >= max_per_user:
        what = "webhooks" if kinds is WEBHOOKS else "browsers and devices subscribed for push"
        raise Conflict(f"you have {max_per_user} {what}, the most allowed: delete one to add another")


# a user's webhooks, oldest first
WEBHOOK_ORDER = Keyset("webhook", (SortKey("created_at", parse_instant), SortKey("id", parse_uuid)))


def owned_webhooks_query(owner: User, kinds: frozenset[Transport] = WEBHOOKS) -> QuerySet[Webhook]:
    return Webhook.filter(owner_id=owner.id, transport__in=list(kinds))


async def owned_webhooks(owner: User) -> list[Webhook]:
    return await owned_webhooks_query(owner).order_by(*WEBHOOK_ORDER.order())


async def owned_webhooks_among(owner: User, ids: Collection[str]) -> list[Webhook]:
    return await Webhook.filter(owner_id=owner.id, id__in=list(ids), transport=Transport.WEBHOOK)


async def delete_webhook(owner: User, webhook_id: str, kinds: frozenset[Transport] = WEBHOOKS) -> None:
    what = "webhook" if kinds is WEBHOOKS else "push subscription"
    key = parse_id(webhook_id, what)
    deleted = await Webhook.filter(id=key, owner_id=owner.id, transport__in=list(kinds)).delete()
    if not deleted:
        raise NotFound(f"no such {what}")


@dataclass(frozen=True)
class FiredReminder:
    """A reminder that fired, as its webhook payload tells it."""

    reminder_id: str
    owner_id: str
    task_id: str
    title: str
    instance_id: str
    opens_at: datetime
    due_at: datetime
    closes_at: datetime
    # a quota goal's period: proofs counted so far, of how many ("2 of 3 done, 1 day left")
    proofs_counted: int = 0
    proofs_required: int | None = None


async def queue_reminder_webhooks(
    task: Task, instance: TaskInstance, reminder_id: str, now: datetime
) -> None:
    """Inside the reminder's transaction: one delivery row per webhook of the owner, sent after commit."""
    fired = FiredReminder(
        reminder_id=reminder_id,
        owner_id=str(task.owner_id),
        task_id=str(task.id),
        title=task.title,
        instance_id=str(instance.id),
        opens_at=instance.opens_at,
        due_at=instance.due_at,
        closes_at=instance.closes_at,
        proofs_counted=instance.proofs_counted,
        proofs_required=task.quota_count,
    )
    await queue_webhooks_of([fired], now)


async def queue_webhooks_of(fired: list[FiredReminder], now: datetime) -> None:
    """queue_reminder_webhooks for many fired reminders: one read of their owners' webhooks."""
    owners = {f.owner_id for f in fired}
    if not owners:
        return
    hooks: dict[str, list[str]] = {}
    rows = await Webhook.filter(owner_id__in=owners).values_list("owner_id", "id", "event_types")
    for owner_id, hook_id, types in rows:
        if EventType.DUE_SOON in subscribed_types(types):
            hooks.setdefault(str(owner_id), []).append(str(hook_id))
    deliveries = []
    quiet = await quiet_ends(set(hooks), now)
    for reminder in fired:
        for hook_id in hooks.get(reminder.owner_id, []):
            delivery_id = str(uuid.uuid4())  # in the payload too, so it is signed with it
            body = _reminder_body(reminder, now, delivery_id)
            deliveries.append(NewDelivery(delivery_id, hook_id, body, fire_at=quiet.get(reminder.owner_id)))
    await queue_deliveries(deliveries, now)


def _reminder_body(reminder: FiredReminder, now: datetime, delivery_id: str) -> str:
    instance: dict[str, object] = {
        "id": global_id("TaskInstance", reminder.instance_id),
        "opensAt": format_instant(reminder.opens_at),
        "dueAt": format_instant(reminder.due_at),
        "closesAt": format_instant(reminder.closes_at),
    }
    if reminder.proofs_required is not None:  # a quota goal: what its period still needs
        instance.update(proofsCounted=reminder.proofs_counted, proofsRequired=reminder.proofs_required)
    payload = {
        "type": "DUE_SOON",
        "deliveryId": delivery_id,
        "occurredAt": format_instant(now),
        # who this delivery is for: a push gateway serving many users routes on it
        "recipient": {"id": global_id("User", reminder.owner_id), "role": "OWNER"},
        # the ids the API shows, so a receiver can match them with what it read there
        "task": {"id": global_id("Task", reminder.task_id), "title": reminder.title},
        "instance": instance,
    }
    return json.dumps(payload, separators=(",", ":"))


# a webhook's deliveries, newest first
DELIVERY_ORDER = Keyset(
    "delivery",
    (SortKey("created_at", parse_instant, descending=True), SortKey("id", parse_uuid, descending=True)),
)
FINISHED = (DeliveryStatus.DELIVERED, DeliveryStatus.GIVEN_UP, DeliveryStatus.REFUSED)


async def _owned_webhook(owner: User, webhook_id: str, kinds: frozenset[Transport] = WEBHOOKS) -> Webhook:
    what = "webhook" if kinds is WEBHOOKS else "push subscription"
    key = parse_id(webhook_id, what)
    hook = await Webhook.get_or_none(id=key, owner_id=owner.id, transport__in=list(kinds))
    if hook is None:
        raise NotFound(f"no such {what}")
    return hook


async def deliveries_query(
    owner: User, webhook_id: str, kinds: frozenset[Transport] = WEBHOOKS
) -> QuerySet[WebhookDelivery]:
    """The delivery log of one of the owner's webhooks or push subscriptions (finished ones are kept for
    the retention)."""
    hook = await _owned_webhook(owner, webhook_id, kinds)
    return WebhookDelivery.filter(webhook_id=hook.id)


async def ping_webhook(
    owner: User, webhook_id: str, *, tries: AttemptWindow, kinds: frozenset[Transport] = WEBHOOKS
) -> WebhookDelivery:
    """A PING to one of the owner's webhooks (signed) or browsers (encrypted), sent and retried like any
    delivery."""
    hook = await _owned_webhook(owner, webhook_id, kinds)
    await tries.count(str(owner.id))
    async with write_transaction():
        now = await db_now()
        delivery_id = str(uuid.uuid4())
        payload = {
            "type": "PING",
            "deliveryId": delivery_id,
            "occurredAt": format_instant(now),
            "recipient": {"id": global_id("User", owner.id), "role": "OWNER"},
            **(
                {"webhook": {"id": global_id("Webhook", hook.id)}}
                if hook.transport is Transport.WEBHOOK
                else {"pushSubscription": {"id": global_id("PushSubscription", hook.id)}}
            ),
        }
        body = json.dumps(payload, separators=(",", ":"))
        await queue_deliveries([NewDelivery(delivery_id, str(hook.id), body, "PING")], now)
    return await WebhookDelivery.get(id=delivery_id)


async def redeliver(owner: User, delivery_id: str, *, tries: AttemptWindow) -> WebhookDelivery:
    """Send a finished delivery again, as it was signed the first time (same body, same delivery id, so
    a receiver that did take it deduplicates it); CONFLICT while it is still owed."""
    row = await WebhookDelivery.filter(
        id=parse_id(delivery_id, "delivery"), webhook__owner_id=owner.id
    ).first()
    if row is None:
        raise NotFound("no such delivery")
    await tries.count(str(owner.id))
    async with write_transaction():
        now = await db_now()
        moved = await WebhookDelivery.filter(id=row.id, status__in=FINISHED, link_no=row.link_no).update(
            status=DeliveryStatus.PENDING,
            attempts=0,
            put_offs=0,
            last_error=None,
            finished_at=None,
            fire_at=now,
            link_no=row.link_no + 1,
            link_for=now,
            linked_at=now,
        )
        if not moved:
            raise Conflict("this delivery is still being sent; redeliver it once it has finished")
        send_after_commit(delivery_message(str(row.id), row.link_no + 1))
    return await WebhookDelivery.get(id=row.id)
