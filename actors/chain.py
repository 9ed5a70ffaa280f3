"""chain.fire: one link of a task's chain. No Dramatiq retries: the pump is the retry."""

from __future__ import annotations

import logging

import dramatiq

from services.chain import FIRE_ACTOR, ChainTiming, fire
from services.messaging import CHAIN_QUEUE
from settings import get_settings

log = logging.getLogger("proofloop.chain")


@dramatiq.actor(actor_name=FIRE_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_link(instance_id: str, link_no: int) -> None:
    timing = ChainTiming(link_horizon_seconds=get_settings().link_horizon_seconds)
    outcome = await fire(instance_id, link_no, timing)
    log.debug("fired %s link %d: %s", instance_id, link_no, outcome.value, extra={"instance_id": instance_id})
