"""The one seam through which services send Dramatiq messages: by actor name, after commit.

Services never import actors/: they name the actor, and the message is built against whatever broker
the process configured (API or worker). Sends happen after the transaction commits, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

import dramatiq

from observability.outages import outage, report_failure
from services.kit.db import buffer_until_commit

log = logging.getLogger("proofloop.messaging")

CHAIN_QUEUE = "chain"
MAIL_QUEUE = "mail"  # its own queue: a slow SMTP server never delays a chain link


@dataclass(frozen=True)
class Outgoing:
    actor_name: str
    args: tuple[object, ...]
    eta: datetime | None = None  # delivered no earlier than this (sender's clock)
    queue_name: str = CHAIN_QUEUE


def _send_all(messages: list[Outgoing]) -> None:
    broker = dramatiq.get_broker()
    now = datetime.now(UTC)
    for out in messages:
        message: dramatiq.Message[object] = dramatiq.Message(
            queue_name=out.queue_name, actor_name=out.actor_name, args=out.args, kwargs={}, options={}
        )
        delay_ms = int((out.eta - now).total_seconds() * 1000) if out.eta else 0
        broker.enqueue(message, delay=delay_ms if delay_ms > 0 else None)


async def send(messages: list[Outgoing]) -> None:
    """Send now, in one hop off the event loop (redis-py's sends are blocking calls)."""
    if messages:
        await asyncio.to_thread(_send_all, messages)


async def _send_committed(messages: list[Outgoing]) -> None:
    if outage("redis").down:  # left to the pump and the mail sweep at once, not after Redis's timeouts
        return
    try:
        await send(messages)
    except Exception as exc:
        # the rows still record what is owed: the pump resends links, the mail sweep resends mail
        report_failure(
            log,
            "message send",
            exc,
            "sending %d messages after commit failed; they will be resent",
            len(messages),
        )


def send_after_commit(message: Outgoing) -> None:
    """Buffer a message until the current transaction commits, then send the transaction's messages in
    one hop; a rollback drops them (polar's worker/_enqueue.py)."""
    buffer_until_commit(_send_committed, message)
