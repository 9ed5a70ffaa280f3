"""Malformed input: raw posts, task inputs and the BAD_USER_INPUT check (shared with the embedded-default
budgets)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    open_schedule,
)

REGISTER = """mutation($e: String!, $n: String!, $tz: String) {
  register(email: $e, password: "a long password", displayName: $n, timezone: $tz) { token }
}"""


CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"


async def expect_bad_input(
    api: ApiClient, document: str, variables: dict[str, Any], token: str | None
) -> str:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    assert failure.value.code == "BAD_USER_INPUT", failure.value.errors
    assert failure.value.field is not None
    return failure.value.field


def task_input(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"title": "Run", "method": "PHOTO", "schedule": open_schedule()}
    for key, item in changes.items():
        if key.startswith("schedule_"):
            value["schedule"] = {**value["schedule"], key.removeprefix("schedule_"): item}
        else:
            value[key] = item
    return value


async def post_raw(url: str, body: bytes, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/graphql", data=body, headers=headers) as r,
    ):
        return r.status, json.loads(await r.text())
