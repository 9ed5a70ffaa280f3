"""Schedule budgets: a costly monthly rule, task inputs and the refusal they get."""

from __future__ import annotations

from typing import Any

import pytest

from harness.proofloop import ApiClient, GraphQLFailure

CREATE = """mutation($input: CreateTaskInput!) { createTask(input: $input) {
  id upcoming(first: 10) currentInstance { dueAt } } }"""


EVERY = ",".join


MONTHLY_EVERY_MINUTE = (
    f"FREQ=MONTHLY;BYMONTHDAY={EVERY(map(str, range(1, 32)))};BYHOUR={EVERY(map(str, range(24)))}"
    f";BYMINUTE={EVERY(map(str, range(60)))}"
)


def task_input(rrule: str, starts_at: str, timezone: str = "UTC") -> dict[str, Any]:
    schedule = {"startsAt": starts_at, "rrule": rrule, "timezone": timezone, "windowSeconds": 0}
    return {"title": "Hostile", "method": "PHOTO", "schedule": schedule}


# A refusal decided by counted steps comes after however long those steps take on this machine: the
# client waits for it (seconds on a quiet machine, more beside other work), never judging by time.
REFUSAL_TIMEOUT_S = 120


async def refusal(api: ApiClient, token: str, rrule: str, starts_at: str) -> GraphQLFailure:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(
            CREATE, {"input": task_input(rrule, starts_at)}, token=token, timeout=REFUSAL_TIMEOUT_S
        )
    return failure.value
