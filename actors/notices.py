"""The worker's notices: its general Redis client, and how its commits announce their events."""

from __future__ import annotations

from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from realtime.redis_client import close_redis, open_redis
from realtime.redis_options import RedisTimeouts
from services.feed import commits_wait_for_positions
from settings import Settings


class WorkerNotices(Middleware):
    """Opens the process's Redis client (realtime/redis_client.py) on the event-loop thread; a worker's
    commits announce in the background, so its links return without waiting for the wake-up: cleared
    in the main thread (whose context the boot's coroutines, the pump loop's among them, copy) and in
    each worker thread (whose context each message's coroutine copies)."""

    def __init__(self, settings: Settings) -> None:
        self.redis_url = settings.resolved_redis_url
        self.timeouts = RedisTimeouts.of(settings)

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        commits_wait_for_positions.set(False)
        loop_thread = get_event_loop_thread()
        assert loop_thread is not None, "the AsyncIO middleware comes first"
        loop_thread.run_coroutine(self._open())

    async def _open(self) -> None:
        open_redis(self.redis_url, self.timeouts)  # on the loop: its connections belong to that loop

    def after_worker_thread_boot(self, broker: Any, thread: Any) -> None:
        commits_wait_for_positions.set(False)

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(close_redis())
