"""A proof that arrived inside the window wins over the deadline, however long it takes to judge."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from actors.broker import configure_broker
from harness.chain_support import eventually
from harness.proofloop import WorkerProcess
from models import InstanceStatus, RejectionReason, TaskInstance, User, VerificationMethod, VerificationStatus
from rules.recurrence import Schedule
from services.chain.chain import ChainTiming
from services.kit.db import db_now
from services.proofs.pipeline import holding_deadline, new_verification, proof_target, record_outcome
from services.tasks.drafts import TaskDraft
from services.tasks.tasks import create_task_planned

TIMING = ChainTiming(link_horizon_seconds=300)


async def _instance_due_soon() -> tuple[User, TaskInstance]:
    user = await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")
    due = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    draft = TaskDraft(
        title="One-off",
        description=None,
        method=VerificationMethod.PHOTO,
        schedule=Schedule(starts_at=due, rrule=None, timezone="UTC", window_seconds=60, grace_seconds=0),
    )
    task = (await create_task_planned(user, draft, min_interval_seconds=1, timing=TIMING, max_tasks=10)).task
    return user, await TaskInstance.get(task_id=task.id)


@pytest.mark.usefixtures("orm")
@pytest.mark.parametrize("accepted", [True, False])
async def test_the_deadline_waits_for_a_proof_being_judged(
    worker: WorkerProcess, redis_url: str, accepted: bool
) -> None:
    configure_broker(redis_url)  # the chain sends the instance's own link, as the API would
    user, instance = await _instance_due_soon()
    target = await proof_target(user, str(instance.id), VerificationMethod.PHOTO, max_attempts=10)
    arrival = await db_now()
    async with holding_deadline(target, arrival, TIMING):
        await asyncio.sleep(
            (instance.closes_at - arrival).total_seconds() + 2
        )  # the worker's link came and went
        assert (await TaskInstance.get(id=instance.id)).status is InstanceStatus.PENDING
        reason = None if accepted else RejectionReason.CAPTURED_OUTSIDE_WINDOW
        proof = await record_outcome(target, new_verification(target, arrival), reason, arrival, TIMING)
    if accepted:
        assert proof.status is VerificationStatus.ACCEPTED
        assert (await TaskInstance.get(id=instance.id)).status is InstanceStatus.VERIFIED
    else:
        assert proof.status is VerificationStatus.REJECTED

        async def missed() -> bool:
            return (await TaskInstance.get(id=instance.id)).status is InstanceStatus.MISSED

        await eventually(missed, 10, "the deadline given back and the instance settled MISSED")
