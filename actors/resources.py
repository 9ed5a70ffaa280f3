"""Worker-process resources opened on Dramatiq's event-loop thread, and the pump that runs beside them."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware.asyncio import AsyncIO

from actors.pump import run_pump
from realtime import notices
from realtime.redis_options import RedisTimeouts
from runtime import close_database, open_database
from services.events import announce_in_background
from settings import Settings

log = logging.getLogger("proofloop.worker")


class WorkerResources(AsyncIO):
    """Opens the database and Redis on the loop thread before the first message, closes them after."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.pump: concurrent.futures.Future[None] | None = None
        self.stopping: asyncio.Event | None = None

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        super().before_worker_boot(broker, worker)  # type: ignore[no-untyped-call]
        loop_thread = get_event_loop_thread()
        assert loop_thread is not None
        loop_thread.run_coroutine(self._open())
        self.pump = asyncio.run_coroutine_threadsafe(self._pump(), loop_thread.loop)

    async def _open(self) -> None:
        await open_database(self.settings)
        announce_in_background()
        notices.configure(self.settings.resolved_redis_url, RedisTimeouts.of(self.settings))
        self.stopping = asyncio.Event()

    async def _pump(self) -> None:
        assert self.stopping is not None
        await run_pump(self.settings, self.stopping)

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(self._close())
        super().after_worker_shutdown(broker, worker)  # type: ignore[no-untyped-call]

    async def _close(self) -> None:
        if self.stopping is not None:
            self.stopping.set()
        if self.pump is not None:
            await asyncio.wrap_future(self.pump)
        await notices.close()
        await close_database()
