"""Webhook deliveries as durable timers (docs/architecture.md, "The per-task chain and the durable
timer", applied to an outbox).

A delivery row is written in the transaction of its event and owes an attempt at fire_at; the message
`webhooks.deliver(delivery_id, link_no)` only wakes a worker for it. Every write moves link_no, so only
the message (or the pump's resend) holding the current number may act: duplicates die out. An attempt
takes the row for its deadline (status SENDING, fire_at = the deadline): a worker killed meanwhile leaves
it owed, and the pump resends it once that deadline is overdue (services/webhooks/pump.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from models import DeliveryStatus, WebhookDelivery
from services.kit import Outgoing, db_now, send, send_after_commit

DELIVER_ACTOR = "webhooks.deliver"
WEBHOOK_QUEUE = "webhooks"  # its own queue: a slow receiver never delays a chain link or a mail
OWED = (DeliveryStatus.PENDING, DeliveryStatus.SENDING)
# a message may arrive this much before its fire_at by the database's clock (the eta is the sender's)
EARLY_TOLERANCE = timedelta(milliseconds=500)
# an attempt's hold on its row outlasts its deadline by this, so a slow last step is not taken for a loss
HOLD_MARGIN = timedelta(seconds=1)


@dataclass(frozen=True)
class DeliveryTiming:
    attempt_seconds: float  # the deadline of one attempt
    max_attempts: int
    backoff_seconds: float
    backoff_max_seconds: float
    link_horizon_seconds: float  # a retry further away is the pump's to hand over

    def backoff(self, attempts: int) -> timedelta:
        return timedelta(seconds=min(self.backoff_seconds * 2 ** (attempts - 1), self.backoff_max_seconds))


@dataclass(frozen=True)
class NewDelivery:
    delivery_id: str
    webhook_id: str
    body: str
    kind: str = "DUE_SOON"  # the event's type, or PING
    fire_at: datetime | None = (
        None  # when its first attempt is owed (the recipient's quiet hours' end); None: now
    )


def delivery_message(delivery_id: str, link_no: int, eta: datetime | None = None) -> Outgoing:
    return Outgoing(DELIVER_ACTOR, (delivery_id, link_no), eta=eta, queue_name=WEBHOOK_QUEUE)


async def queue_deliveries(deliveries: list[NewDelivery], now: datetime) -> None:
    """Inside the event's transaction: a row per delivery, each due now sent after commit (a rollback drops
    both); one put off to a later first attempt waits unlinked, for the pump to hand over as it comes near."""
    if not deliveries:
        return
    rows = []
    for d in deliveries:
        later = d.fire_at is not None and d.fire_at > now
        rows.append(
            WebhookDelivery(
                id=UUID(d.delivery_id),
                webhook_id=d.webhook_id,
                body=d.body,
                kind=d.kind,
                fire_at=d.fire_at if later else now,
                link_no=0 if later else 1,
                link_for=None if later else now,
                linked_at=None if later else now,
            )
        )
    await WebhookDelivery.bulk_create(rows)
    for row in rows:
        if row.link_no:
            send_after_commit(delivery_message(str(row.id), 1))


async def owed_delivery(delivery_id: str, link_no: int) -> WebhookDelivery | None:
    """The delivery with its webhook, if it owes an attempt to this link (no lock: decides what to try)."""
    try:
        key = UUID(delivery_id)
    except ValueError:
        return None  # a malformed message names nothing
    found = await WebhookDelivery.filter(id=key, link_no=link_no, status__in=OWED).select_related("webhook")
    return found[0] if found else None


async def take_for_attempt(delivery: WebhookDelivery, timing: DeliveryTiming) -> bool:
    """Compare-and-set: the row is this attempt's until its deadline (plus a margin); False if another
    link took it, or it is not due yet."""
    now = await db_now()
    hold = now + timedelta(seconds=timing.attempt_seconds) + HOLD_MARGIN
    taken = await WebhookDelivery.filter(
        id=delivery.id, link_no=delivery.link_no, status__in=OWED, fire_at__lte=now + EARLY_TOLERANCE
    ).update(
        status=DeliveryStatus.SENDING,
        attempts=delivery.attempts + 1,
        link_no=delivery.link_no + 1,
        fire_at=hold,
        link_for=hold,
        linked_at=now,
    )
    if taken:
        delivery.attempts += 1
        delivery.link_no += 1
    return bool(taken)


async def put_off(delivery_id: str, link_no: int, first_wait: float, longest_wait: float) -> bool:
    """A due delivery this process has no slot for: owed again later, with a new link. The wait doubles
    with each put-off (with jitter): a long backlog costs a few writes a minute per row, not one a second."""
    row = await WebhookDelivery.filter(id=delivery_id, link_no=link_no).only("id", "put_offs").first()
    if row is None:
        return False
    now = await db_now()
    wait = min(first_wait * 2**row.put_offs, longest_wait) * random.uniform(1.0, 1.25)
    at = now + timedelta(seconds=wait)
    moved = await WebhookDelivery.filter(
        id=delivery_id, link_no=link_no, status__in=OWED, fire_at__lte=now + EARLY_TOLERANCE
    ).update(
        status=DeliveryStatus.PENDING,
        fire_at=at,
        link_no=link_no + 1,
        link_for=at,
        linked_at=now,
        put_offs=row.put_offs + 1,
    )
    if moved:
        await send([delivery_message(delivery_id, link_no + 1, at)])
    return bool(moved)


async def finish(delivery: WebhookDelivery, status: DeliveryStatus, error: str | None) -> None:
    """The attempt's last word (delivered, given up, refused), if the row is still this attempt's."""
    now = await db_now()
    await WebhookDelivery.filter(
        id=delivery.id, link_no=delivery.link_no, status=DeliveryStatus.SENDING
    ).update(status=status, last_error=error, finished_at=now, fire_at=None, link_for=None)


async def retry_later(delivery: WebhookDelivery, timing: DeliveryTiming, error: str) -> timedelta:
    """A failed attempt: owed again after the backoff, linked now when that is inside the horizon (else
    the pump hands it over as it comes near)."""
    now = await db_now()
    wait = timing.backoff(delivery.attempts)
    at = now + wait
    linked = wait.total_seconds() <= timing.link_horizon_seconds
    moved = await WebhookDelivery.filter(
        id=delivery.id, link_no=delivery.link_no, status=DeliveryStatus.SENDING
    ).update(
        status=DeliveryStatus.PENDING,
        last_error=error,
        fire_at=at,
        link_no=delivery.link_no + 1,
        link_for=at if linked else None,
        linked_at=now if linked else None,
    )
    if moved and linked:
        await send([delivery_message(str(delivery.id), delivery.link_no + 1, at)])
    return wait
