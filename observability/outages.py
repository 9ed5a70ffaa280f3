"""What a process knows about an outage of its database, Redis or media store, and how its log tells it.

Every place that catches a failure hands it to `report_failure`: an error that says the database, Redis or
the media store (an S3 bucket: storage.StoreUnavailable) did not answer counts against that dependency's
`Outage`, which logs one line when the outage starts, a count every `REPORT_SECONDS` while it lasts and one
line when it ends (when something next answers); anything else is logged by the caller's logger with its
traceback, as a bug. The API refuses GraphQL at once while its database's outage is on
(web/graphql_view.py, ws_protocols.py, uploads.py) and its probe ends it (web/health.py); a worker's
watchdog pass ends it there (actors/watchdog.py). The media store's ends with its next answer
(policies.blob_store): nothing is refused while it lasts, and each call is bounded.

Process-wide like a logger: the catch sites live in services, realtime and actors, none of which holds
the process's resources.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Literal

import asyncpg
import redis
from dramatiq.errors import BrokerConnectionError
from tortoise.exceptions import DBConnectionError

from storage import StoreUnavailable

log = logging.getLogger("proofloop.outage")

Dependency = Literal["database", "redis", "media store"]
DEPENDENCIES: tuple[Dependency, ...] = ("database", "redis", "media store")
REPORT_SECONDS = 10.0
# clients whose code raises bare timeouts and socket errors (redis-py and Dramatiq raise their own types)
_DATABASE_CLIENTS = frozenset({"asyncpg", "tortoise"})
# the standard library's plumbing between a client and the error it raises
_PLUMBING = frozenset(
    {"asyncio", "uvloop", "concurrent", "socket", "ssl", "selectors", "contextlib", "functools"}
)


def _raised_in_database_client(error: BaseException) -> bool:
    """Whether the innermost frame below the standard library's plumbing is a database client's."""
    packages: list[str] = []
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        packages.append(str(tb.tb_frame.f_globals.get("__name__", "")).split(".", 1)[0])
        tb = tb.tb_next
    innermost = next((p for p in reversed(packages) if p not in _PLUMBING), None)
    return innermost in _DATABASE_CLIENTS


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _one_unreachable(error: BaseException) -> Dependency | None:
    if isinstance(error, asyncpg.PostgresConnectionError | asyncpg.CannotConnectNowError | DBConnectionError):
        return "database"
    if isinstance(error, asyncpg.AdminShutdownError | asyncpg.CrashShutdownError):
        return "database"
    if isinstance(error, asyncpg.InterfaceError) and "closed" in str(error):
        return "database"
    if isinstance(error, redis.ConnectionError | redis.TimeoutError | BrokerConnectionError):
        return "redis"
    if isinstance(error, StoreUnavailable):  # the S3 backend's bound passed, or its connection failed
        return "media store"
    if isinstance(error, OSError):  # TimeoutError and ConnectionError among them
        # a client-side bound (asyncpg's command_timeout, a pool's connect) or a refused socket
        return "database" if _raised_in_database_client(error) else None
    return None


def unreachable(error: BaseException) -> Dependency | None:
    """The dependency `error` says did not answer (a refused or dropped connection, a timeout); None when
    it says something else (a bug, a constraint, a client's mistake)."""
    for link in _chain(error):
        if (dependency := _one_unreachable(link)) is not None:
            return dependency
    return None


class Outage:
    """One dependency's outage as this process sees it. Thread-safe: a worker reports from its event loop,
    its Dramatiq threads and its watchdog."""

    def __init__(self, dependency: Dependency, clock: Callable[[], float] = time.monotonic) -> None:
        self.dependency = dependency
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._reported_at = 0.0
        self._reported = 0  # failures counted by the last line
        self._failed: Counter[str] = Counter()  # by operation, since the outage started
        self.retry_after_seconds = 1

    @property
    def down(self) -> bool:
        return self._since is not None

    def failed(self, operation: str, error: BaseException) -> None:
        """An operation failed because the dependency did not answer."""
        with self._lock:
            now = self._clock()
            self._failed[operation] += 1
            if self._since is None:
                self._since, self._reported_at, self._reported = now, now, 1
                log.error(
                    "%s unreachable (%s): operations fail until it answers; counts every %.0f s",
                    self.dependency,
                    f"{type(error).__name__}: {error}"[:200] if str(error) else type(error).__name__,
                    REPORT_SECONDS,
                    extra={"dependency": self.dependency, "operation": operation},
                )
            elif now - self._reported_at >= REPORT_SECONDS:
                total = self._failed.total()
                log.error(
                    "%s still unreachable after %.1f s; %d operations failed in the last %.0f s (%d in all)",
                    self.dependency,
                    now - self._since,
                    total - self._reported,
                    now - self._reported_at,
                    total,
                    extra={"dependency": self.dependency},
                )
                self._reported_at, self._reported = now, total

    def answered(self) -> None:
        """The dependency answered: an outage, if one was on, has ended."""
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            by_operation = ", ".join(f"{name} {n}" for name, n in self._failed.most_common())
            log.warning(
                "%s answers again after %.1f s; %d operations failed (%s)",
                self.dependency,
                self._clock() - self._since,
                self._failed.total(),
                by_operation,
                extra={"dependency": self.dependency},
            )
            self._since = None
            self._failed.clear()


_OUTAGES: dict[Dependency, Outage] = {dependency: Outage(dependency) for dependency in DEPENDENCIES}


def cancelled_at_timeout(error: BaseException) -> bool:
    """Whether `error` is a statement the server cancelled at its statement timeout: slowness (a loaded
    machine, the statements queued behind a paused PostgreSQL), never an outage by itself, since declaring
    one refuses every request while the database may be healthy."""
    return any(isinstance(link, asyncpg.QueryCanceledError) for link in _chain(error))


class SlowStatements:
    """Statements cancelled at the statement timeout, as the log tells them: a line when the first comes,
    then at most one every REPORT_SECONDS with the count since the last, never a traceback each."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since_line: Counter[str] = Counter()
        self._line_at: float | None = None

    def cancelled(self, operation: str) -> None:
        with self._lock:
            now = self._clock()
            self._since_line[operation] += 1
            if self._line_at is not None and now - self._line_at < REPORT_SECONDS:
                return
            log.warning(
                "%d statements cancelled at the statement timeout (%s); the operations are retried",
                self._since_line.total(),
                ", ".join(f"{name} {n}" for name, n in self._since_line.most_common()),
            )
            self._line_at = now
            self._since_line.clear()


_SLOW = SlowStatements()


def outage(dependency: Dependency) -> Outage:
    return _OUTAGES[dependency]


def set_retry_after(seconds: float) -> None:
    """How long a client refused during an outage should wait: the probe's interval, whole seconds."""
    for each in _OUTAGES.values():
        each.retry_after_seconds = max(1, math.ceil(seconds))


# Dramatiq's own lines that repeat per message or per consumer while Redis or the database is down
_CONSUMER = "dramatiq.worker.ConsumerThread"
_REPEATED_DURING_OUTAGES = {
    "dramatiq.middleware.retries": ("Retries exceeded", "Retrying message"),
    _CONSUMER: ("Restarting consumer",),
}


class CountedAsOutage(logging.Filter):
    """On the log's handler: a record whose error is an outage's (Dramatiq's "Failed to process message",
    its consumers' and acks' connection errors, a library's own traceback) is counted instead of written;
    Dramatiq's per-message "Retries exceeded"/"Retrying message" and per-consumer "Restarting consumer"
    lines are dropped while an outage is on, since each of those failures is already counted."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        error = record.exc_info[1] if record.exc_info else None
        if error is None and record.name.startswith("dramatiq."):
            # "Consumer encountered a connection error: %s", "Failed to post_process_message(%s) due to…"
            error = next((arg for arg in args if isinstance(arg, Exception)), None)
        if error is not None and (dependency := unreachable(error)) is not None:
            actor = getattr(args[0], "actor_name", None) if args else None
            outage(dependency).failed(str(actor or record.name), error)
            return False
        if error is not None and cancelled_at_timeout(error):
            actor = getattr(args[0], "actor_name", None) if args else None
            _SLOW.cancelled(str(actor or record.name))
            return False
        repeated = any(
            record.name.startswith(name) and str(record.msg).startswith(starts)
            for name, starts in _REPEATED_DURING_OUTAGES.items()
        )
        return not (repeated and any_down())


def any_down() -> bool:
    return any(each.down for each in _OUTAGES.values())


def report_failure(
    logger: logging.Logger,
    operation: str,
    error: BaseException,
    message: str,
    *args: object,
    level: int = logging.ERROR,
    extra: dict[str, object] | None = None,
) -> None:
    """At a catch site: an outage's failure is counted under `operation`; anything else is logged with
    its traceback."""
    dependency = unreachable(error)
    if dependency is not None:
        outage(dependency).failed(operation, error)
    elif cancelled_at_timeout(error):
        _SLOW.cancelled(operation)
    else:
        logger.log(level, message, *args, exc_info=error, extra=extra)
