"""The pump loop: every PROOFLOOP_PUMP_INTERVAL_SECONDS, in every worker process."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from services.messaging import CHAIN_QUEUE
from services.pump import PumpSettings, pump_once
from settings import Settings

log = logging.getLogger("proofloop.pump")

# Messages waiting in the ready queue mean the workers are behind: overdue links are queued, not lost,
# and resending them would only add duplicates to the backlog (a lost one is resent once it drains).
READY_BACKLOG_LIMIT = 0


def _ready_links() -> int:
    broker = dramatiq.get_broker()
    if not isinstance(broker, RedisBroker):
        return 0
    waiting: int = broker.client.llen(f"{broker.namespace}:{CHAIN_QUEUE}")
    return waiting


def pump_settings(settings: Settings) -> PumpSettings:
    return PumpSettings(
        link_horizon_seconds=settings.link_horizon_seconds,
        link_overdue_seconds=settings.link_overdue_seconds,
        max_outstanding_links=settings.max_outstanding_links,
    )


async def run_pump(settings: Settings, stopping: asyncio.Event) -> None:
    config = pump_settings(settings)
    while not stopping.is_set():
        try:
            backlog = await asyncio.to_thread(_ready_links)
            tick = await pump_once(config, resend_overdue=backlog <= READY_BACKLOG_LIMIT)
            if tick.sent:
                log.info("pump sent %d links (%d were live)", tick.sent, tick.live_before)
        except Exception:
            # one bad tick never stops the pump: the next one retries
            log.exception("pump tick failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=settings.pump_interval_seconds)
