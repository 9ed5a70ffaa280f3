"""The pump's place in the worker: started once the database is open, stopped before it closes."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from actors.pump import run_pump
from policies.worker import WorkerPolicies


class PumpLoop(Middleware):
    """Runs `run_pump` on the event-loop thread for the worker's life (added after WorkerDatabase)."""

    def __init__(self, policies: WorkerPolicies) -> None:
        self.policies = policies
        self.pump: concurrent.futures.Future[None] | None = None
        self.stopping: asyncio.Event | None = None

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        assert loop_thread is not None, "the AsyncIO middleware comes first"
        self.stopping = asyncio.Event()  # bound to the loop that first waits on it
        self.pump = asyncio.run_coroutine_threadsafe(run_pump(self.policies, self.stopping), loop_thread.loop)

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None and self.pump is not None:
            loop_thread.run_coroutine(self._stop())

    async def _stop(self) -> None:
        assert self.stopping is not None
        assert self.pump is not None
        self.stopping.set()
        await asyncio.wrap_future(self.pump)
