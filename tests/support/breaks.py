"""Breaks: scheduling a break, the task view and due times read through the API (shared with the embedded
default)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from harness.proofloop import (
    ApiClient,
)

BREAK = "id startsOn endsOn appliesFrom endsAt endedEarly task { id }"


SCHEDULE = f"mutation($in: ScheduleBreakInput!) {{ scheduleBreak(input: $in) {{ {BREAK} }} }}"


TASK = f"""query($id: ID!) {{ task(id: $id) {{ streak upcoming(first: 3) breaks {{ {BREAK} }}
  currentInstance {{ id status dueAt }} progress {{ completion(days: 7) {{ verified settled }} }}
  instances(first: 10) {{ edges {{ node {{ id status dueAt }} }} }} }} }}"""


async def task_view(api: ApiClient, token: str, task_id: str) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    return task


def due_of(instance: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(instance["dueAt"])


def day_in(at: datetime, zone: str = "UTC") -> date:
    return at.astimezone(ZoneInfo(zone)).date()


async def schedule(api: ApiClient, token: str, starts: date, ends: date, task_id: str | None) -> list[Any]:
    variables = {"in": {"taskId": task_id, "startsOn": starts.isoformat(), "endsOn": ends.isoformat()}}
    breaks: list[Any] = (await api.execute(SCHEDULE, variables, token=token))["scheduleBreak"]
    return breaks
