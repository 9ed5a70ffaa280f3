"""mail.deliver: one outbox row over SMTP (or to an .eml file); Dramatiq retries with backoff."""

from __future__ import annotations

import dramatiq

from actors.worker_policies import worker_policies
from services.kit import MAIL_QUEUE
from services.mail import DELIVER_ACTOR, deliver

# about two days of retries: 10 s, 20 s, 40 s, … capped at an hour
MAX_RETRIES = 50
MIN_BACKOFF_MS = 10_000
MAX_BACKOFF_MS = 3_600_000


@dramatiq.actor(
    actor_name=DELIVER_ACTOR,
    queue_name=MAIL_QUEUE,
    max_retries=MAX_RETRIES,
    min_backoff=MIN_BACKOFF_MS,
    max_backoff=MAX_BACKOFF_MS,
)
async def deliver_mail(mail_id: str) -> None:
    await deliver(mail_id, worker_policies().mail)
