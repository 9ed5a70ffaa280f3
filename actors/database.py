"""The worker's database: opened on Dramatiq's event-loop thread before the first message, closed last."""

from __future__ import annotations

from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from runtime import close_database, open_database
from settings import Settings


class WorkerDatabase(Middleware):
    """Added after AsyncIO (whose loop it runs on) and before every middleware that reads the database."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        assert loop_thread is not None, "the AsyncIO middleware comes first"
        loop_thread.run_coroutine(open_database(self.settings))

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            loop_thread.run_coroutine(close_database())
