"""chain.fire: one link of a task's chain (chain.fire_batch: links due at the same instant);
chain.apply_pending_changes: tasks' waiting changes, delivered at their effectiveAt.

Both settle through the set path, which also takes the rows due in the same seconds.
No Dramatiq retries: the pump is the retry."""

from __future__ import annotations

import logging

import dramatiq

from actors.chain_delivery import deliver
from actors.worker_policies import worker_policies
from services.chain import FIRE_ACTOR, FIRE_BATCH_ACTOR, ChainTiming
from services.kit import CHAIN_QUEUE
from services.tasks import APPLY_ACTOR, apply_changes_of

log = logging.getLogger("proofloop.chain")


def _timing() -> ChainTiming:
    return worker_policies().chain


@dramatiq.actor(actor_name=FIRE_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_link(instance_id: str, link_no: int) -> None:
    await deliver([(instance_id, link_no)], _timing())
    log.debug("fired %s link %d", instance_id, link_no, extra={"instance_id": instance_id})


@dramatiq.actor(actor_name=FIRE_BATCH_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def fire_links(links: list[list[object]]) -> None:
    await deliver([(str(instance_id), int(str(link_no))) for instance_id, link_no in links], _timing())


@dramatiq.actor(actor_name=APPLY_ACTOR, queue_name=CHAIN_QUEUE, max_retries=0)
async def apply_pending_changes(task_ids: list[str]) -> None:
    await apply_changes_of([str(task_id) for task_id in task_ids], _timing())
