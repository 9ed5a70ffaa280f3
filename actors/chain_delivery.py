"""Delivering chain links across domains: the chain settles, the tasks apply a pending change that came
due first. Kept apart from the actor declarations so it can be called without registering actors."""

from __future__ import annotations

from services.chain import ChainTiming, settle_links
from services.tasks import apply_changes_before_links
from services.timers import LinkArgs


async def deliver(links: list[LinkArgs], timing: ChainTiming) -> None:
    """Settle what the links owe. A link whose task's pending change came due first (a longer grace, a
    pause) is left by the chain; its change applies here, through the tasks' edit path, and the link is
    delivered again under the new rules. A change that fails to apply leaves its row owed: the pump's
    backstop applies it and resends the link."""
    waiting = await settle_links(links, timing)
    if waiting:
        await apply_changes_before_links([instance_id for instance_id, _ in waiting], timing)
        await settle_links(waiting, timing)
