"""The pump loop: every PROOFLOOP_PUMP_INTERVAL_SECONDS, in every worker process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from observability.outages import report_failure
from policies.worker import WorkerPolicies
from services.kit import CHAIN_QUEUE
from services.reminders import claim_due_reminders
from services.tasks import pump_once
from services.webhooks import claim_due_deliveries, fan_out_events

log = logging.getLogger("proofloop.pump")

# Chain messages waiting in the ready queue or already fetched by a live worker mean the workers are
# behind: overdue links are queued, not lost, and resending them would only add duplicates to the
# backlog (a lost one is resent once it drains).
QUEUED_BACKLOG_LIMIT = 0
# A worker whose Dramatiq heartbeat (every Redis command it sends; idle ones poll every 100 ms) is older
# than this is dead: what it had fetched is lost, not queued.
LIVE_HEARTBEAT_MS = 3000


def _queued_links() -> int:
    """Chain messages in the ready queue plus those fetched, not yet acked, by live worker processes."""
    broker = dramatiq.get_broker()
    if not isinstance(broker, RedisBroker):
        return 0
    client, ns = broker.client, broker.namespace
    since = int(time.time() * 1000) - LIVE_HEARTBEAT_MS
    live = [
        str(w.decode() if isinstance(w, bytes) else w)
        for w in client.zrangebyscore(f"{ns}:__heartbeats__", since, "+inf")
    ]
    pipe = client.pipeline(transaction=False)
    pipe.llen(f"{ns}:{CHAIN_QUEUE}")
    for worker_id in live:
        pipe.scard(f"{ns}:__acks__.{worker_id}.{CHAIN_QUEUE}")
    return sum(int(n) for n in pipe.execute())


class FanOut:
    """The webhook fan-out beside the pump: one pass at a time, started by a tick and never awaited by
    one, so a long pass (a herd's events for many webhooks) never holds back the pump's handover."""

    def __init__(self, policies: WorkerPolicies) -> None:
        self.ids = policies.event_ids
        self.running: asyncio.Task[int] | None = None

    def nudge(self) -> None:
        previous = self.running
        if previous is not None and not previous.done():
            return  # the pass under way reads up to the newest event before it ends
        failed = previous.exception() if previous is not None and not previous.cancelled() else None
        if failed is not None:
            report_failure(log, "webhook fan-out", failed, "webhook fan-out failed; the next tick retries")
        self.running = asyncio.create_task(fan_out_events(self.ids))

    async def stop(self) -> None:
        if self.running is not None:
            with contextlib.suppress(Exception):
                await self.running  # a pass is one transaction at a time: let the current one end


async def run_pump(policies: WorkerPolicies, stopping: asyncio.Event) -> None:
    config, timing = policies.pump, policies.chain
    fan_out = FanOut(policies)
    while not stopping.is_set():
        try:
            backlog = await asyncio.to_thread(_queued_links)
            # a task per tick: when a connection dies mid-transaction, Tortoise 1.1 can leave the dead
            # transaction in the task's context (its release fails before the context is reset), and
            # every later transaction of that task would nest into it
            resend = backlog <= QUEUED_BACKLOG_LIMIT
            tick = await asyncio.create_task(pump_once(config, timing, resend_overdue=resend))
            in_use = tick.live_before + tick.sent
            await asyncio.create_task(claim_due_reminders(config, links_in_use=in_use, resend_overdue=resend))
            await asyncio.create_task(claim_due_deliveries(config))
            # events positioned by now (this tick's backstop included) go to their readers' webhooks
            fan_out.nudge()
            if tick.sent:
                log.info("pump sent %d links (%d were live)", tick.sent, tick.live_before)
        except Exception as exc:
            # one bad tick never stops the pump: the next one retries
            report_failure(log, "pump tick", exc, "pump tick failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=config.interval_seconds)
    await fan_out.stop()
