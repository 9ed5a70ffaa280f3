"""The worker's webhook sender: built on the event loop before the first message, its attempts stopped
before the database closes (added after WorkerDatabase)."""

from __future__ import annotations

from typing import Any

import dramatiq
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from policies.worker import WorkerPolicies
from services.webhooks import WebhookSender


class WebhookSending(Middleware):
    def __init__(self, policies: WorkerPolicies) -> None:
        self.policies = policies
        self.sender: WebhookSender | None = None

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        self.sender = WebhookSender(self.policies.webhook_limits, self.policies.webhook_timing)

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None and self.sender is not None:
            loop_thread.run_coroutine(self.sender.close())


def webhook_sender() -> WebhookSender:
    """This worker process's sender (its WebhookSending middleware's)."""
    for middleware in dramatiq.get_broker().middleware:
        if isinstance(middleware, WebhookSending) and middleware.sender is not None:
            return middleware.sender
    raise RuntimeError("the worker has no WebhookSending middleware")
