"""The pump loop: every PROOFLOOP_PUMP_INTERVAL_SECONDS, in every worker process."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from services.pump import PumpSettings, pump_once
from settings import Settings

log = logging.getLogger("proofloop.pump")


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
            tick = await pump_once(config)
            if tick.sent:
                log.info("pump sent %d links (%d were live)", tick.sent, tick.live_before)
        except Exception:
            # one bad tick never stops the pump: the next one retries
            log.exception("pump tick failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=settings.pump_interval_seconds)
