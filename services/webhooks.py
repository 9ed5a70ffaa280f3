"""Owners' webhooks: registered with a checked address and an HMAC secret; each reminder is POSTed,
signed, to every webhook of its owner by `webhooks.deliver`, retried with exponential backoff, then
given up (and counted so)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http.client
import json
import logging
import secrets
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from models import Task, TaskInstance, User, Webhook
from observability.metrics import count_webhook_delivery
from services.db import write_transaction
from services.errors import BadInput, Conflict, NotFound
from services.ids import global_id, parse_id
from services.messaging import Outgoing, send, send_after_commit
from services.name_lookups import NameLookups
from services.webhook_addresses import RefusedAddress, checked_address, parse_target, post, resolve_checked

log = logging.getLogger("proofloop.webhooks")

DELIVER_ACTOR = "webhooks.deliver"
WEBHOOK_QUEUE = "webhooks"  # its own queue: a slow receiver never delays a chain link or a mail
SIGNATURE_HEADER = "X-Proofloop-Signature"
TIMESTAMP_HEADER = "X-Proofloop-Timestamp"
DELIVERY_HEADER = "X-Proofloop-Delivery"
SECRET_LENGTHS = (16, 200)


@dataclass(frozen=True)
class WebhookPolicy:
    allow_insecure: bool
    max_attempts: int
    backoff_seconds: float
    timeout_seconds: float


class DeliveryOutcome(StrEnum):
    DELIVERED = "delivered"
    FAILED = "failed"
    GIVEN_UP = "given_up"
    REFUSED = "refused"
    GONE = "gone"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=<hex>` of HMAC-SHA256(secret, "<timestamp>." + body): what a receiver recomputes."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


async def register_webhook(
    owner: User,
    url: str,
    secret: str | None,
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
    await _refuse_past_quota(owner, max_per_user)  # before the lookup: a full quota costs no resolver time
    try:
        await resolve_checked(target, lookups, allow_insecure=allow_insecure, within_seconds=lookup_timeout)
    except RefusedAddress as exc:
        raise BadInput("input.url", str(exc)) from None
    async with write_transaction():
        # serializes this owner's registrations, so two at once cannot both pass the quota
        await User.filter(id=owner.id).select_for_update().first()
        await _refuse_past_quota(owner, max_per_user)  # a statement after the lock: it sees their commits
        hook = await Webhook.create(owner_id=owner.id, url=target.url, secret=secret)
    return hook, secret


async def _refuse_past_quota(owner: User, max_per_user: int) -> None:
    if await Webhook.filter(owner_id=owner.id).count() >= max_per_user:
        raise Conflict(f"you have {max_per_user} webhooks, the most allowed: delete one to add another")


async def owned_webhooks(owner: User) -> list[Webhook]:
    return await Webhook.filter(owner_id=owner.id).order_by("created_at", "id")


async def owned_webhooks_among(owner: User, ids: Collection[str]) -> list[Webhook]:
    return await Webhook.filter(owner_id=owner.id, id__in=list(ids))


async def delete_webhook(owner: User, webhook_id: str) -> None:
    deleted = await Webhook.filter(id=parse_id(webhook_id, "webhook"), owner_id=owner.id).delete()
    if not deleted:
        raise NotFound("no such webhook")


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


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


async def queue_reminder_webhooks(
    task: Task, instance: TaskInstance, reminder_id: str, now: datetime
) -> None:
    """Inside the reminder's transaction: one delivery per webhook of the owner, sent after commit."""
    fired = FiredReminder(
        reminder_id=reminder_id,
        owner_id=str(task.owner_id),
        task_id=str(task.id),
        title=task.title,
        instance_id=str(instance.id),
        opens_at=instance.opens_at,
        due_at=instance.due_at,
        closes_at=instance.closes_at,
    )
    await queue_webhooks_of([fired], now)


async def queue_webhooks_of(fired: list[FiredReminder], now: datetime) -> None:
    """queue_reminder_webhooks for many fired reminders: one read of their owners' webhooks."""
    owners = {f.owner_id for f in fired}
    if not owners:
        return
    hooks: dict[str, list[str]] = {}
    for owner_id, hook_id in await Webhook.filter(owner_id__in=owners).values_list("owner_id", "id"):
        hooks.setdefault(str(owner_id), []).append(str(hook_id))
    for reminder in fired:
        if reminder.owner_id not in hooks:
            continue
        body = _reminder_body(reminder, now)
        for hook_id in hooks[reminder.owner_id]:
            send_after_commit(delivery_message(hook_id, body, reminder.reminder_id, attempt=1))


def _reminder_body(reminder: FiredReminder, now: datetime) -> str:
    payload = {
        "type": "DUE_SOON",
        "deliveryId": reminder.reminder_id,
        "occurredAt": _iso(now),
        # the ids the API shows, so a receiver can match them with what it read there
        "task": {"id": global_id("Task", reminder.task_id), "title": reminder.title},
        "instance": {
            "id": global_id("TaskInstance", reminder.instance_id),
            "opensAt": _iso(reminder.opens_at),
            "dueAt": _iso(reminder.due_at),
            "closesAt": _iso(reminder.closes_at),
        },
    }
    return json.dumps(payload, separators=(",", ":"))


def delivery_message(
    hook_id: str, body: str, delivery_id: str, *, attempt: int, eta: datetime | None = None
) -> Outgoing:
    return Outgoing(DELIVER_ACTOR, (hook_id, body, delivery_id, attempt), eta=eta, queue_name=WEBHOOK_QUEUE)


async def deliver_webhook(
    hook_id: str, body: str, delivery_id: str, attempt: int, policy: WebhookPolicy
) -> DeliveryOutcome:
    """One attempt; a failure sends the next attempt with a doubled delay, until max_attempts."""
    hook = await Webhook.get_or_none(id=parse_id(hook_id, "webhook"))
    if hook is None:
        return DeliveryOutcome.GONE  # deleted since: nothing to deliver to
    try:
        # resolved and checked again now: the name may point elsewhere than at registration
        target = parse_target(hook.url, allow_insecure=policy.allow_insecure)
        address = await checked_address(
            target, allow_insecure=policy.allow_insecure, within_seconds=policy.timeout_seconds
        )
    except RefusedAddress as exc:
        count_webhook_delivery(DeliveryOutcome.REFUSED.value)
        log.warning("webhook refused: %s", exc, extra={"webhook_id": hook_id})
        return DeliveryOutcome.REFUSED
    timestamp = str(int(time.time()))
    data = body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Proofloop-Webhook/1",
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(hook.secret, timestamp, data),
        DELIVERY_HEADER: delivery_id,
    }
    try:
        status = await asyncio.to_thread(post, target, address, data, headers, policy.timeout_seconds)
    except (OSError, http.client.HTTPException) as exc:
        status, reason = 0, type(exc).__name__
    else:
        reason = f"HTTP {status}"
    if 200 <= status < 300:
        count_webhook_delivery(DeliveryOutcome.DELIVERED.value)
        return DeliveryOutcome.DELIVERED
    if attempt >= policy.max_attempts:
        count_webhook_delivery(DeliveryOutcome.GIVEN_UP.value)
        log.warning("webhook given up after %d attempts (%s)", attempt, reason, extra={"webhook_id": hook_id})
        return DeliveryOutcome.GIVEN_UP
    count_webhook_delivery(DeliveryOutcome.FAILED.value)
    delay = timedelta(seconds=policy.backoff_seconds * 2 ** (attempt - 1))
    eta = datetime.now(UTC) + delay
    await send([delivery_message(hook_id, body, delivery_id, attempt=attempt + 1, eta=eta)])
    log.info(
        "webhook attempt %d failed (%s); next in %s", attempt, reason, delay, extra={"webhook_id": hook_id}
    )
    return DeliveryOutcome.FAILED
