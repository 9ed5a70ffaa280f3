"""A quota's period end: a week ending soon in the task's zone, lived through and checked (shared with the
embedded default)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from harness.chain_support import eventually
from harness.proofloop import ApiClient
from harness.shifted_clock import ShiftedClock
from tests.support.quota_goals import CHECK_IN, CREATE, INSTANCE, TASK, quota_task

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

T = TypeVar("T")


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
