"""reminders.fire: one reminder link; reminders.fire_batch: links due at the same instant. Both fire
through the set path, which also takes the reminders due in the same seconds (services/reminders/sets.py).
No Dramatiq retries: the pump is the retry, as for the chain."""

from __future__ import annotations

import dramatiq

from services.kit import CHAIN_QUEUE
from services.reminders import FIRE_ACTOR, FIRE_BATCH_ACTOR, fire_reminder_links


@dramatiq.actor(actor_name=FIRE_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_reminder_link(reminder_id: str, link_no: int) -> None:
    await fire_reminder_links([(reminder_id, link_no)])


@dramatiq.actor(actor_name=FIRE_BATCH_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_reminder_batch(links: list[list[object]]) -> None:
    await fire_reminder_links([(str(reminder_id), int(str(link_no))) for reminder_id, link_no in links])
