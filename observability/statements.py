"""SQL statements per HTTP request, in a response header: how tests pin reads to a constant count.

Off unless PROOFLOOP_COUNT_STATEMENTS is set (tests): it turns on Tortoise's DEBUG record per statement,
which a logger filter counts and drops, so no SQL text (with its parameters) ever reaches a log.
"""

from __future__ import annotations

import contextvars
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-proofloop-statements"

_counter: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "proofloop_statement_counter", default=None
)


class _CountAndDrop(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.DEBUG:
            return True
        # a DataLoader's batch runs in a task that inherited the request's context: same counter
        counter = _counter.get()
        if counter is not None:
            counter[0] += 1
        return False


def count_statements() -> None:
    """Have the database client emit one (dropped) record per statement, counted per request."""
    logger = logging.getLogger("tortoise.db_client")
    if not any(isinstance(f, _CountAndDrop) for f in logger.filters):
        logger.addFilter(_CountAndDrop())
    logger.setLevel(logging.DEBUG)


class StatementCount:
    """ASGI middleware: each HTTP response says how many SQL statements its request ran."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        counter = [0]
        token = _counter.set(counter)

        async def send_with_count(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (HEADER.encode(), str(counter[0]).encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_count)
        finally:
            _counter.reset(token)
