"""A document of many createTask fields is done as one set, with the results of one field after another.

Each field still gets its own task (or its own refusal, at its own path), in document order; a refusal
ends the document there, as serial execution does (createTask is non-null), and nothing after it is
stored. The set costs the statements of one create.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, WorkerProcess, free_port

QUOTA = 10
SELECTION = "id title state createdAt currentInstance { id status dueAt }"
LIST = "query { tasks(first: 50) { totalCount edges { node { id title } } } }"


def document(count: int) -> str:
    """`count` createTask fields t0..t{count-1}, each with its own input variable $i0.."""
    params = ", ".join(f"$i{n}: CreateTaskInput!" for n in range(count))
    fields = " ".join(f"t{n}: createTask(input: $i{n}) {{ {SELECTION} }}" for n in range(count))
    return f"mutation({params}) {{ {fields} }}"


def task_input(title: str, *, starts_in: timedelta = timedelta(days=1), **overrides: Any) -> dict[str, Any]:
    starts = (datetime.now(UTC) + starts_in).replace(microsecond=0)
    value: dict[str, Any] = {
        "title": title,
        "method": "PHOTO",
        "schedule": {"startsAt": starts.isoformat(), "rrule": "FREQ=DAILY", "timezone": "UTC"},
    }
    value.update(overrides)
    return value


def inputs(*values: dict[str, Any]) -> dict[str, Any]:
    return {f"i{n}": value for n, value in enumerate(values)}


@pytest.fixture(scope="module")
def set_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    env = {**service_env, "PROOFLOOP_MAX_TASKS_PER_USER": str(QUOTA), "PROOFLOOP_COUNT_STATEMENTS": "true"}
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def set_api(set_server: ServerProcess, worker: WorkerProcess) -> AsyncIterator[ApiClient]:
    async with ApiClient(set_server.url) as client:
        yield client


async def titles(api: ApiClient, token: str) -> list[str]:
    found = (await api.execute(LIST, token=token))["tasks"]
    assert found["totalCount"] == len(found["edges"])
    # newest first: the list reads back in reverse of the document's order
    return [edge["node"]["title"] for edge in reversed(found["edges"])]


async def statements(
    url: str, query: str, variables: dict[str, Any], token: str
) -> tuple[dict[str, Any], int]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{url}/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        ) as response,
    ):
        body: dict[str, Any] = await response.json()
        return body, int(response.headers["x-proofloop-statements"])


async def test_each_field_gets_its_own_task_in_document_order(set_api: ApiClient) -> None:
    token, _ = await set_api.register()
    created = await set_api.execute(
        document(3), inputs(*(task_input(f"T{n}") for n in range(3))), token=token
    )
    tasks = [created[f"t{n}"] for n in range(3)]
    assert [t["title"] for t in tasks] == ["T0", "T1", "T2"]
    assert len({t["id"] for t in tasks}) == 3
    assert all(t["state"] == "ACTIVE" and t["currentInstance"]["status"] == "PENDING" for t in tasks)
    assert await titles(set_api, token) == ["T0", "T1", "T2"]
    # each currentInstance is the task's stored first instance, read back by id
    for t in tasks:
        read = await set_api.execute(
            "query($id: ID!) { task(id: $id) { currentInstance { id dueAt } } }", {"id": t["id"]}, token=token
        )
        assert read["task"]["currentInstance"] == {
            "id": t["currentInstance"]["id"],
            "dueAt": t["currentInstance"]["dueAt"],
        }


async def test_a_refused_field_ends_the_document_there_and_nothing_after_it_is_stored(
    set_api: ApiClient,
) -> None:
    token, _ = await set_api.register()
    values = [task_input("A"), task_input("B"), task_input(""), task_input("D")]
    with pytest.raises(GraphQLFailure) as failure:
        await set_api.execute(document(4), inputs(*values), token=token)
    assert len(failure.value.errors) == 1
    assert failure.value.errors[0]["path"] == ["t2"]
    assert failure.value.code == "BAD_USER_INPUT"
    assert failure.value.field == "input.title"
    assert await titles(set_api, token) == ["A", "B"]


async def test_text_no_field_may_take_is_refused_at_its_own_field(set_api: ApiClient) -> None:
    token, _ = await set_api.register()
    with pytest.raises(GraphQLFailure) as failure:
        await set_api.execute(
            document(3), inputs(task_input("ok"), task_input("nul\x00"), task_input("x")), token=token
        )
    assert failure.value.errors[0]["path"] == ["t1"]
    assert failure.value.code == "BAD_USER_INPUT"
    assert await titles(set_api, token) == ["ok"]


async def test_the_quota_is_counted_in_document_order(set_api: ApiClient) -> None:
    token, _ = await set_api.register()
    await set_api.execute(document(2), inputs(task_input("old 0"), task_input("old 1")), token=token)
    values = [task_input(f"new {n}") for n in range(QUOTA)]
    with pytest.raises(GraphQLFailure) as failure:
        await set_api.execute(document(QUOTA), inputs(*values), token=token)
    assert failure.value.errors[0]["path"] == [f"t{QUOTA - 2}"]
    assert failure.value.code == "CONFLICT"
    assert await titles(set_api, token) == ["old 0", "old 1", *(f"new {n}" for n in range(QUOTA - 2))]


async def test_a_caller_without_a_token_is_refused_at_the_first_field(set_api: ApiClient) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await set_api.execute(document(2), inputs(task_input("a"), task_input("b")))
    assert failure.value.code == "UNAUTHENTICATED"
    assert failure.value.errors[0]["path"] == ["t0"]


async def test_a_set_costs_the_statements_of_one_create(
    set_server: ServerProcess, set_api: ApiClient
) -> None:
    # one schedule for every task here: a schedule this process has not checked yet costs the quota's
    # pre-check (one statement) the first time; each count is measured twice, the second time warm
    schedule = {"startsAt": "2030-01-01T07:00:00+00:00", "rrule": "FREQ=DAILY", "timezone": "UTC"}

    async def warm(count: int) -> int:
        """The statements a document of `count` fields costs, once this process knows its schedule."""
        token, _ = await set_api.register()
        costs = []
        for round_no in range(2):
            values = inputs(*(task_input(f"{round_no}.{n}", schedule=schedule) for n in range(count)))
            body, cost = await statements(set_server.url, document(count), values, token)
            assert "errors" not in body and len(body["data"]) == count
            costs.append(cost)
        return costs[-1]

    assert await warm(4) == await warm(1)


async def test_tasks_of_a_set_due_soon_are_settled_by_the_chain(set_api: ApiClient) -> None:
    """Links of a set's first instances leave after its commit: the worker settles each at its close."""
    token, _ = await set_api.register()
    one_off = {"rrule": None, "timezone": "UTC", "windowSeconds": 2, "graceSeconds": 0}
    values = [
        task_input(
            f"soon {n}",
            schedule={
                **one_off,
                "startsAt": (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0).isoformat(),
            },
        )
        for n in range(3)
    ]
    created = await set_api.execute(document(3), inputs(*values), token=token)
    ids = [created[f"t{n}"]["currentInstance"]["id"] for n in range(3)]
    deadline = time.monotonic() + 20
    statuses: list[str] = []
    while time.monotonic() < deadline:
        statuses = [
            (
                await set_api.execute(
                    "query($id: ID!) { instance(id: $id) { status } }", {"id": i}, token=token
                )
            )["instance"]["status"]
            for i in ids
        ]
        if statuses == ["MISSED"] * 3:
            break
        await asyncio.sleep(0.3)
    assert statuses == ["MISSED"] * 3
