"""Outages: which errors say a dependency did not answer (raised by the real clients against a closed port
and a slow statement), and how an outage reads in the log: a start, a count, an end, no tracebacks."""

from __future__ import annotations

import logging

import asyncpg
import pytest
import redis.asyncio as aioredis

from harness.proofloop import free_port
from observability.outages import (
    REPORT_SECONDS,
    CountedAsOutage,
    Outage,
    SlowStatements,
    cancelled_at_timeout,
    report_failure,
    unreachable,
)

PG_URL = "postgres://postgres@127.0.0.1:5432/postgres"


async def _database_error(coro_factory: object) -> BaseException:
    try:
        await coro_factory()  # type: ignore[operator]
    except Exception as exc:
        return exc
    raise AssertionError("the call did not fail")


async def test_refused_and_timed_out_database_calls_are_the_database() -> None:
    """(not a unit test: a slow statement needs the machine's PostgreSQL)"""
    refused = await _database_error(lambda: asyncpg.connect(f"postgres://postgres@127.0.0.1:{free_port()}/x"))
    assert unreachable(refused) == "database"
    connection = await asyncpg.connect(PG_URL)
    try:
        slow = await _database_error(lambda: connection.execute("SELECT pg_sleep(2)", timeout=0.1))
    finally:
        await connection.close()
    assert isinstance(slow, TimeoutError)
    assert unreachable(slow) == "database"
    closed = await _database_error(lambda: connection.fetchval("SELECT 1"))
    assert unreachable(closed) == "database"
    # the server's statement timeout, as every statement queued behind a paused PostgreSQL meets it: slow,
    # not down (declaring an outage would refuse every request while the database is healthy)
    connection = await asyncpg.connect(PG_URL, server_settings={"statement_timeout": "100"})
    try:
        canceled = await _database_error(lambda: connection.execute("SELECT pg_sleep(2)"))
    finally:
        await connection.close()
    assert isinstance(canceled, asyncpg.QueryCanceledError)
    assert unreachable(canceled) is None and cancelled_at_timeout(canceled)


@pytest.mark.unit
async def test_redis_errors_are_redis_and_our_own_are_nobodys() -> None:
    client = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=1)
    try:
        down = await _database_error(client.ping)
    finally:
        await client.aclose()
    assert unreachable(down) == "redis"
    assert unreachable(TimeoutError("our own budget")) is None
    assert unreachable(ValueError("a bug")) is None
    try:
        raise RuntimeError("wrapped") from down
    except RuntimeError as wrapped:
        assert unreachable(wrapped) == "redis"


@pytest.mark.unit
async def test_an_outage_is_a_start_a_count_and_an_end(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    db = Outage("database", clock=lambda: now[0])
    error = await _database_error(lambda: asyncpg.connect(f"postgres://postgres@127.0.0.1:{free_port()}/x"))
    logger = logging.getLogger("proofloop.test")
    with caplog.at_level(logging.INFO):
        for step in range(300):  # 300 failures over 30 s
            now[0] = 100.0 + step * 0.1
            db.failed("chain fire" if step % 3 else "pump tick", error)
        assert db.down
        db.answered()
        db.answered()  # nothing more to say
        report_failure(logger, "bug", ValueError("not an outage"), "a bug")
    outage_lines = [r for r in caplog.records if r.name == "proofloop.outage"]
    messages = [r.getMessage() for r in outage_lines]
    assert messages[0].startswith("database unreachable (ConnectionRefusedError")
    counts = [m for m in messages if "still unreachable" in m]
    assert len(counts) == int(29.9 // REPORT_SECONDS)
    assert "still unreachable after 10.0 s; 100 operations failed in the last 10 s (101 in all)" in counts[0]
    assert (
        messages[-1]
        == "database answers again after 29.9 s; 300 operations failed (chain fire 200, pump tick 100)"
    )
    assert len(messages) == 2 + len(counts)
    assert all(r.exc_info is None for r in outage_lines)
    assert not db.down
    bug = [r for r in caplog.records if r.name == "proofloop.test"]
    assert len(bug) == 1 and bug[0].exc_info is not None  # anything else keeps its traceback


@pytest.mark.unit
def test_statements_cancelled_at_the_timeout_are_a_count_per_window_and_declare_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    slow = SlowStatements(clock=lambda: now[0])
    with caplog.at_level(logging.INFO):
        for step in range(250):  # 250 over 25 s
            now[0] = 100.0 + step * 0.1
            slow.cancelled("chain.fire" if step % 5 else "pump tick")
    lines = [r.getMessage() for r in caplog.records if r.name == "proofloop.outage"]
    assert (
        lines[0]
        == "1 statements cancelled at the statement timeout (pump tick 1); the operations are retried"
    )
    assert lines[1].startswith(
        "100 statements cancelled at the statement timeout (chain.fire 80, pump tick 20)"
    )
    assert len(lines) == 3 and all(r.exc_info is None for r in caplog.records)


@pytest.mark.unit
async def test_the_log_handler_counts_a_librarys_traceback_instead_of_writing_it() -> None:
    error = await _database_error(lambda: asyncpg.connect(f"postgres://postgres@127.0.0.1:{free_port()}/x"))
    counted = CountedAsOutage()
    record = logging.LogRecord("dramatiq.worker.WorkerThread", logging.ERROR, "", 0, "failed", (), None)
    record.exc_info = (type(error), error, error.__traceback__)
    assert counted.filter(record) is False
    retries = logging.LogRecord(
        "dramatiq.middleware.retries.Retries", logging.WARNING, "", 0, "Retries exceeded", (), None
    )
    assert counted.filter(retries) is False  # the outage started above is still on
    from observability.outages import outage

    outage("database").answered()
    assert counted.filter(retries) is True
    plain = logging.LogRecord("proofloop.chain", logging.ERROR, "", 0, "bug", (), None)
    plain.exc_info = (ValueError, ValueError("bug"), None)
    assert counted.filter(plain) is True
