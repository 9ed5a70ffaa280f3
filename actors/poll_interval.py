"""How often an idle worker polls its queues: the precision of every delayed chain link
(PROOFLOOP_WORKER_POLL_MILLISECONDS; Dramatiq's own default, 1000 ms, costs ~0.6 s of lateness p50)."""

from __future__ import annotations

from typing import Any

from dramatiq.middleware import Middleware
from dramatiq.worker import Worker


class PollInterval(Middleware):
    """Sets the worker's idle poll interval before its consumer and worker threads start (the `dramatiq`
    command builds the Worker without one, and would otherwise read an environment variable)."""

    def __init__(self, milliseconds: int) -> None:
        self.milliseconds = milliseconds

    def before_worker_boot(self, broker: Any, worker: Worker) -> None:
        worker.worker_timeout = self.milliseconds
