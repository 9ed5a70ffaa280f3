"""exports.build: one data export's archive, built and mailed; Dramatiq retries a failed build."""

from __future__ import annotations

import dramatiq

from actors.worker_policies import worker_policies
from services.exports import BUILD_ACTOR, build_export
from services.kit import MAIL_QUEUE

# a build that fails (the database away, a full disk) is tried again: 10 s, 20 s, … capped at 10 minutes
MAX_RETRIES = 20
MIN_BACKOFF_MS = 10_000
MAX_BACKOFF_MS = 600_000


@dramatiq.actor(
    actor_name=BUILD_ACTOR,
    queue_name=MAIL_QUEUE,
    max_retries=MAX_RETRIES,
    min_backoff=MIN_BACKOFF_MS,
    max_backoff=MAX_BACKOFF_MS,
)
async def build(export_id: str) -> None:
    policies = worker_policies()
    await build_export(export_id, policies.exports, policies.media_store, policies.archives)
