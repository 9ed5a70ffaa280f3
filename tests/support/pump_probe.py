"""Runs the pump's claim twice on a private database and prints what each claim took, as JSON.

A subprocess of its own: the test process's ORM stays on the run's shared database, where the run's
workers would race this probe for overdue rows.
Usage: python -m tests.support.pump_probe DATABASE_URL REDIS_URL
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from datetime import timedelta

from actors.broker import configure_broker
from harness.chain_support import photo_draft
from models import TaskInstance, User
from runtime import close_database, open_database
from services.chain.chain import ChainTiming
from services.kit.db import db_now
from services.tasks.pump import claim_due_links
from services.tasks.tasks import create_task_planned
from services.timers.claims import PumpSettings
from settings import Settings

PUMP = PumpSettings(link_horizon_seconds=300, link_overdue_seconds=2, max_outstanding_links=100)


async def _instance(owner: User) -> TaskInstance:
    draft = photo_draft(title="Probe", rrule=None, window_seconds=60)
    task = (
        await create_task_planned(owner, draft, min_interval_seconds=60, timing=ChainTiming(0), max_tasks=10)
    ).task
    return await TaskInstance.get(task_id=task.id)


async def probe(database_url: str, redis_url: str) -> dict[str, object]:
    await open_database(Settings(database_url=database_url, redis_url=redis_url))
    configure_broker(redis_url)
    try:
        owner = await User.create(
            email=f"{uuid.uuid4().hex}@example.com", display_name="p", password_hash="x"
        )
        fresh, lost = await _instance(owner), await _instance(owner)
        now = await db_now()
        # fresh: inside the horizon, never linked; lost: linked long ago, its link overdue
        await TaskInstance.filter(id=fresh.id).update(fire_at=now + timedelta(seconds=60))
        past = now - timedelta(seconds=60)
        await TaskInstance.filter(id=lost.id).update(
            fire_at=past, link_no=1, link_for=past, linked_at=past - timedelta(seconds=60)
        )
        behind = await claim_due_links(PUMP, resend_overdue=False)
        after_behind = {str(i.id): i.link_no for i in await TaskInstance.all()}
        caught_up = await claim_due_links(PUMP, resend_overdue=True)
        after_caught_up = {str(i.id): i.link_no for i in await TaskInstance.all()}
        return {
            "fresh": str(fresh.id),
            "lost": str(lost.id),
            "behind_sent": behind.sent,
            "after_behind": after_behind,
            "caught_up_sent": caught_up.sent,
            "after_caught_up": after_caught_up,
        }
    finally:
        await close_database()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(sys.argv[1], sys.argv[2]))))
