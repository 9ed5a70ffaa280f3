"""chain.fire: one link of a task's chain (chain.fire_batch: links due at the same instant);
chain.apply_pending_changes: tasks' waiting changes, delivered at their effectiveAt.

No Dramatiq retries: the pump is the retry."""

from __future__ import annotations

import logging

import dramatiq

from services.chain import FIRE_ACTOR, FIRE_BATCH_ACTOR, ChainTiming, fire, fire_batch
from services.messaging import CHAIN_QUEUE
from services.pending_timer import APPLY_ACTOR, apply_changes_of
from services.schedules import recurrence_budget
from settings import get_settings

log = logging.getLogger("proofloop.chain")


@dramatiq.actor(actor_name=FIRE_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_link(instance_id: str, link_no: int) -> None:
    settings = get_settings()
    timing = ChainTiming(settings.link_horizon_seconds, recurrence_budget(settings))
    outcome = await fire(instance_id, link_no, timing)
    log.debug("fired %s link %d: %s", instance_id, link_no, outcome.value, extra={"instance_id": instance_id})


@dramatiq.actor(actor_name=FIRE_BATCH_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_links(links: list[list[object]]) -> None:
    settings = get_settings()
    timing = ChainTiming(settings.link_horizon_seconds, recurrence_budget(settings))
    await fire_batch([(str(instance_id), int(str(link_no))) for instance_id, link_no in links], timing)


@dramatiq.actor(actor_name=APPLY_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def apply_pending_changes(task_ids: list[str]) -> None:
    settings = get_settings()
    timing = ChainTiming(settings.link_horizon_seconds, recurrence_budget(settings))
    await apply_changes_of([str(task_id) for task_id in task_ids], timing)
