"""reminders.fire: one reminder link (no Dramatiq retries: the pump is the retry, as for the chain)."""

from __future__ import annotations

import logging

import dramatiq

from services.messaging import CHAIN_QUEUE
from services.reminder_fire import fire_reminder
from services.reminders import FIRE_ACTOR

log = logging.getLogger("proofloop.reminders")


@dramatiq.actor(actor_name=FIRE_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_reminder_link(reminder_id: str, link_no: int) -> None:
    outcome = await fire_reminder(reminder_id, link_no)
    log.debug("reminder %s link %d: %s", reminder_id, link_no, outcome.value)
