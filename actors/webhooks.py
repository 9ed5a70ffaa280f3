"""webhooks.deliver: wake this process's sender for one delivery row. The attempt runs as a task of its
own on the event loop, so this actor returns at once and no Dramatiq thread waits on a receiver; the row
is the retry (services/webhooks/outbox.py), so Dramatiq retries none."""

from __future__ import annotations

import dramatiq

from actors.webhook_sending import webhook_sender
from services.webhooks import DELIVER_ACTOR, WEBHOOK_QUEUE

# behind the chain's messages (priority 0) when both wait for a Dramatiq thread, as after a reminder herd
DELIVERY_PRIORITY = 100


@dramatiq.actor(actor_name=DELIVER_ACTOR, queue_name=WEBHOOK_QUEUE, max_retries=0, priority=DELIVERY_PRIORITY)
async def deliver(delivery_id: str, link_no: int) -> None:
    await webhook_sender().admit(str(delivery_id), int(link_no))
