"""Which rows a chunk gathers beyond its links: once another process settles the same seconds, it leaves
rows whose link is on its way to the process the message reaches; alone, it takes them too."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from harness.chain_support import photo_draft
from models import InstanceStatus, Task, TaskInstance, User
from services.chain.chain import ChainTiming
from services.chain.settle_reads import read_due_in_seconds
from services.tasks.tasks import create_task_planned

NO_LINKS = ChainTiming(link_horizon_seconds=0)


async def _pending_instances(count: int) -> list[TaskInstance]:
    user = await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")
    draft = photo_draft()
    tasks: list[Task] = [
        (
            await create_task_planned(user, draft, min_interval_seconds=60, timing=NO_LINKS, max_tasks=count)
        ).task
        for _ in range(count)
    ]
    return [await TaskInstance.get(task_id=t.id, status=InstanceStatus.PENDING) for t in tasks]


@pytest.mark.usefixtures("orm")
async def test_a_shared_burst_gathers_only_rows_no_live_link_will_bring() -> None:
    linked, unlinked, relinked = await _pending_instances(3)
    # a whole second far beyond the pump's horizon, so only this test touches these rows
    second = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    at = [second + timedelta(milliseconds=ms) for ms in (100, 200, 300)]
    await TaskInstance.filter(id=linked.id).update(fire_at=at[0], link_for=at[0], link_no=1)
    await TaskInstance.filter(id=unlinked.id).update(fire_at=at[1], link_for=None, link_no=0)
    # its link was for an earlier fire_at (a schedule that moved): none is on its way for this one
    await TaskInstance.filter(id=relinked.id).update(fire_at=at[2], link_for=second - timedelta(hours=1))
    mine = {str(i.id) for i in (linked, unlinked, relinked)}

    async def gathered(with_linked: bool) -> set[str]:
        rows = await read_due_in_seconds([second], at[2], 100, set(), with_linked=with_linked)
        return {r.instance_id for r in rows} & mine

    assert await gathered(with_linked=False) == {str(unlinked.id), str(relinked.id)}
    assert await gathered(with_linked=True) == mine
