"""A quota goal's period end, lived through for real: every process of the service (the database, the API,
the worker; on PostgreSQL and on the embedded default, SQLite and its embedded Redis) runs on a clock moved
to the last minute of the week in which Berlin's clocks sprang forward (Sunday 2027-03-28, 02:00 CET ->
03:00 CEST), so the chain settles at Monday's local midnight as it would in production.

A reminder seconds before that midnight reaches a 3-per-week goal with two counted check-ins ("2 of 3
done"); at the midnight it is MISSED and the next week planned from Monday 00:00 CEST; the 23-hour Sunday
of a daily goal ends too; a goal in New York, whose week ends four hours later, is still open; and a
PARTNER goal's review still waiting is decided by its onTimeout and counted, so the week is VERIFIED.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import asyncpg
import pytest

from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.ports import free_port
from harness.private_services import PrivatePostgres
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, migrated_sqlite, partner_pair, run_cli
from harness.shifted_clock import LIBRARY, ShiftedClock
from tests.support.backends import Backend, both_backends, embedded_env
from tests.support.quota_goals import CHECK_IN, CREATE, INSTANCE, TASK, quota_task

pytestmark = pytest.mark.skipif(
    LIBRARY is None, reason="needs Debian's libfaketime (apt-get install faketime; CI does)"
)
T = TypeVar("T")

WEEK_END = datetime(2027, 3, 28, 22, 0, tzinfo=UTC)  # Monday 2027-03-29 00:00 CEST


WEEK_START = datetime(2027, 3, 21, 23, 0, tzinfo=UTC)  # Monday 2027-03-22 00:00 CET


NEXT_WEEK_END = datetime(2027, 4, 4, 22, 0, tzinfo=UTC)


SUNDAY_START = datetime(2027, 3, 27, 23, 0, tzinfo=UTC)  # Sunday 00:00 CET: a 23-hour day


NEW_YORK_WEEK_END = datetime(2027, 3, 29, 4, 0, tzinfo=UTC)  # Monday 00:00 EDT


# the processes start (and the tasks are made) inside this last stretch before the week's end
# (the processes answer within 3 s on a quiet machine, so 30 s leaves the 20 s needed, waiting out little)
LEAD = timedelta(seconds=30)
MAX_LEAD = timedelta(seconds=120)
# what must be left of it once every process answers: the test's own set-up, then a reminder 8 s ahead
MIN_LEFT_SECONDS = 20.0
# a test living through the week's end may start its processes three times and wait out the longest lead
WEEK_END_TIMEOUT_SECONDS = 480


REMINDER_LEAD_S = 8  # "due soon" this long before the week ends


REMINDERS = (
    """query($t: ID) { events(taskId: $t) { type instance { proofsCounted proofsRequired dueAt } } }"""
)


@contextmanager
def started_before_the_week_ends(
    start: Callable[[ShiftedClock], AbstractContextManager[T]],
) -> Iterator[tuple[T, ShiftedClock]]:
    """Start the processes (`start`) on a clock LEAD before the week's end. A loaded machine may start them
    so slowly that too little of the lead is left: then they are stopped and started again with twice the
    lead, up to MAX_LEAD, so how fast the machine is changes how long the test takes, not its outcome."""
    lead = LEAD
    while True:
        clock = ShiftedClock(WEEK_END - lead)
        with start(clock) as started:
            if clock.seconds_until(WEEK_END) >= MIN_LEFT_SECONDS or lead >= MAX_LEAD:
                yield started, clock
                return
        lead *= 2


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
def shifted_service(
    backend: Backend,
    service_env: dict[str, str],
    spare_redis_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, ShiftedClock]]:
    """An API and a worker on the moved clock, on a private PostgreSQL (also moved) or on the embedded
    default: (API URL, the clock). Migrated on the real clock: only what runs after is moved."""
    data_dir = tmp_path_factory.mktemp("shifted")
    with ExitStack() as stack:
        if backend is Backend.POSTGRESQL:
            pg = stack.enter_context(PrivatePostgres())
            asyncio.run(_create_database(pg.admin_url))
            env = {
                **service_env,
                "PROOFLOOP_DATABASE_URL": pg.url("shifted"),
                "PROOFLOOP_REDIS_URL": spare_redis_url,  # no worker of the run consumes these links
                "PROOFLOOP_DATA_DIR": str(data_dir),
            }
            run_cli(["migrate"], env)
        else:
            env = embedded_env(service_env, data_dir, {})
            migrated_sqlite(data_dir)
        env["PROOFLOOP_WORKER_METRICS_PORT"] = str(free_port())

        @contextmanager
        def start(clock: ShiftedClock) -> Iterator[str]:
            if backend is Backend.POSTGRESQL:
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
    shifted_service: tuple[str, ShiftedClock], mailbox: Mailbox
) -> AsyncIterator[tuple[ApiClient, ShiftedClock]]:
    url, clock = shifted_service
    async with ApiClient(url, mailbox) as client:
        yield client, clock


@both_backends
@pytest.mark.timeout(WEEK_END_TIMEOUT_SECONDS)
async def test_the_week_ends_at_local_midnight(shifted_api: tuple[ApiClient, ShiftedClock]) -> None:
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
    monkeypatch.setattr(
        sys.modules[__name__], "MIN_LEFT_SECONDS", 10_000.0
    )  # as if every start were too slow
    leads: list[float] = []

    @contextmanager
    def start(clock: ShiftedClock) -> Iterator[None]:
        leads.append(round(clock.seconds_until(WEEK_END)))
        yield

    with started_before_the_week_ends(start) as (_, clock):
        assert round(clock.seconds_until(WEEK_END)) == 120
    assert leads == [30, 60, 120]
