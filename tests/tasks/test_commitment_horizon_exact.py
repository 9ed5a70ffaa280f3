"""The commitment horizon compares every due time it promises, through the real API: a schedule edit that
keeps the first few due times but ends inside the horizon (or sooner than the current rule) waits, with
the task unchanged; one that keeps every due time and ends no sooner applies at once. Days are real days
here (30 of them), so nothing comes due during a test."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.proofloop import ApiClient
from tests.support.commitment_horizon import set_horizon, update

TASK = """mutation($input: CreateTaskInput!) {
  createTask(input: $input) { id schedule { startsAt rrule } currentInstance { id dueAt } }
}"""


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


async def create_task(
    api: ApiClient, token: str, starts_at: datetime, rrule: str, window_seconds: int, grace_seconds: int = 0
) -> dict[str, Any]:
    schedule = {
        "startsAt": starts_at.isoformat(),
        "rrule": rrule,
        "timezone": "UTC",
        "windowSeconds": window_seconds,
        "graceSeconds": grace_seconds,
    }
    task_input = {"title": "Gym", "method": "PHOTO", "schedule": schedule}
    task: dict[str, Any] = (await api.execute(TASK, {"input": task_input}, token=token))["createTask"]
    return task


def tomorrow_at(hour: int) -> datetime:
    today = datetime.now(UTC).replace(hour=hour, minute=0, second=0, microsecond=0)
    return today + timedelta(days=1)


async def test_an_until_inside_the_horizon_waits_though_the_next_due_times_stay(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    twice_daily = "FREQ=DAILY;BYHOUR=7,19;BYMINUTE=0;BYSECOND=0"
    task = await create_task(api, token, tomorrow_at(7), twice_daily, 3600)
    ends_soon = f"{twice_daily};UNTIL={utc_text(datetime.now(UTC) + timedelta(days=17))}"
    edited = await update(api, token, task["id"], schedule={"rrule": ends_soon})
    assert edited["schedule"]["rrule"] == twice_daily
    assert edited["pendingChange"]["schedule"]["rrule"] == ends_soon


async def test_minutely_then_an_early_until_waits(api: ApiClient) -> None:
    """DAILY -> MINUTELY keeps every due time (at once); an UNTIL 40 minutes after the start does not."""
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    starts_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=2)
    task = await create_task(api, token, starts_at, "FREQ=DAILY", 60)
    denser = await update(api, token, task["id"], schedule={"rrule": "FREQ=MINUTELY"})
    assert (denser["schedule"]["rrule"], denser["pendingChange"]) == ("FREQ=MINUTELY", None)
    forty_minutes = f"FREQ=MINUTELY;UNTIL={utc_text(starts_at + timedelta(minutes=40))}"
    edited = await update(api, token, task["id"], schedule={"rrule": forty_minutes})
    assert edited["schedule"]["rrule"] == "FREQ=MINUTELY"
    assert edited["pendingChange"]["schedule"]["rrule"] == forty_minutes


async def test_an_end_past_the_horizon_waits_only_when_it_comes_sooner(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    now = datetime.now(UTC)
    until_60 = f"FREQ=DAILY;UNTIL={utc_text(now + timedelta(days=60))}"
    task = await create_task(api, token, tomorrow_at(7), until_60, 3600)
    later = f"FREQ=DAILY;UNTIL={utc_text(now + timedelta(days=90))}"
    extended = await update(api, token, task["id"], schedule={"rrule": later})
    assert (extended["schedule"]["rrule"], extended["pendingChange"]) == (later, None)
    sooner = f"FREQ=DAILY;UNTIL={utc_text(now + timedelta(days=45))}"  # every due time of the horizon stays
    edited = await update(api, token, task["id"], schedule={"rrule": sooner})
    assert edited["schedule"]["rrule"] == later
    assert edited["pendingChange"]["schedule"]["rrule"] == sooner
    endless = await update(api, token, task["id"], schedule={"rrule": "FREQ=DAILY"})
    assert (endless["schedule"]["rrule"], endless["pendingChange"]) == ("FREQ=DAILY", None)


async def test_a_count_that_ends_sooner_waits(api: ApiClient) -> None:
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    task = await create_task(api, token, tomorrow_at(7), "FREQ=DAILY;COUNT=60", 3600)
    edited = await update(api, token, task["id"], schedule={"rrule": "FREQ=DAILY;COUNT=45"})
    assert edited["schedule"]["rrule"] == "FREQ=DAILY;COUNT=60"
    assert edited["pendingChange"]["schedule"]["rrule"] == "FREQ=DAILY;COUNT=45"
    raised = await update(api, token, task["id"], schedule={"rrule": "FREQ=DAILY;COUNT=61"})
    assert (raised["schedule"]["rrule"], raised["pendingChange"]) == ("FREQ=DAILY;COUNT=61", None)


async def test_an_edit_that_would_cancel_an_instance_in_its_grace_waits(api: ApiClient) -> None:
    """Even a harder schedule edit re-plans, which would cancel an instance already due (not MISSED)."""
    token, _ = await api.register()
    await set_horizon(api, token, 30)
    starts_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    task = await create_task(api, token, starts_at, "FREQ=DAILY", 600, grace_seconds=3600)
    await asyncio.sleep(max(0.0, (starts_at - datetime.now(UTC)).total_seconds()) + 0.5)
    denser = f"FREQ=DAILY;BYHOUR={starts_at.hour},{(starts_at.hour + 12) % 24}"
    edited = await update(api, token, task["id"], schedule={"rrule": denser, "windowSeconds": 300})
    assert edited["schedule"]["rrule"] == "FREQ=DAILY"
    assert (edited["currentInstance"]["id"], edited["currentInstance"]["status"]) == (
        task["currentInstance"]["id"],
        "PENDING",
    )
    assert edited["pendingChange"]["schedule"]["rrule"] == denser
