"""Malformed input through the real API: bodies that are not a JSON object, bodies that are not UTF-8,
and DateTime values whose offset carries them outside the years 1..9999. Each gets its contract code,
the keep-alive connection keeps serving, and nothing is stored; on PostgreSQL and on the embedded default.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    local_http,
    open_schedule,
)
from tests.support.backends import Deployment, both_backends

# The bodies a GraphQL request must never be: every JSON kind but an object, and bytes that are not UTF-8.
NON_OBJECT_BODIES = [b'"{ __typename }"', b"1", b"-1.5e3", b"null", b"true", b"false", b"[]", b"  \r\n", b""]
NOT_UTF8_BODIES = [
    b'{"query": "{ __typename }", "x": "\xff"}',
    b'{"query": "{ __typename \xc3}"}',
    b'{"query": "{ __typename }"}\xed\xa0\x80',  # an encoded surrogate
    b'\xfe\xff\x00{\x00"\x00q',  # UTF-16 is not JSON on the wire (RFC 8259 8.1)
]
# Instants outside the years 1..9999 once their offset is applied, and the edges just inside.
OUT_OF_RANGE = [
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T13:59:59+14:00",
    "0001-01-01T00:00:00+00:01",
    "0001-01-01T00:00:00.000001+23:59",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T10:00:00-14:00",
    "9999-12-31T23:59:59.999999-00:01",
    "9999-12-31T00:01:00-23:59",
]
IN_RANGE_BUT_NO_SCHEDULE = ["0001-01-01T00:00:00-14:00", "9999-12-31T23:59:59+14:00", "0001-01-01T00:00:00Z"]
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
UPDATE = "mutation($id: ID!, $p: SchedulePatchInput) { updateTask(id: $id, input: {schedule: $p}) { id } }"
TASK = "query($id: ID!) { task(id: $id) { schedule { startsAt rrule } currentInstance { id dueAt } } }"
TASK_COUNT = "{ tasks(first: 100) { edges { node { id } } } }"


@pytest.fixture
def target(api_deployment: Deployment) -> ServerProcess:
    return api_deployment.server


class KeptAliveConnection:
    """One TCP connection that sends HTTP/1.1 requests one after another, as a browser's keep-alive does."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def post(
        self, body: bytes, content_type: str = "application/json", token: str = ""
    ) -> tuple[int, Any]:
        auth = f"authorization: Bearer {token}\r\n" if token else ""
        head = (
            f"POST /graphql HTTP/1.1\r\nhost: api.test\r\ncontent-type: {content_type}\r\n{auth}"
            f"accept: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        response_head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 30)
        status = int(response_head.split(b" ", 2)[1])
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", response_head)
        assert length is not None, response_head
        assert b"connection: close" not in response_head.lower(), response_head
        assert b"content-type: application/json" in response_head.lower(), response_head
        return status, json.loads(await self.reader.readexactly(int(length.group(1))))


async def kept_alive(server: ServerProcess) -> KeptAliveConnection:
    return KeptAliveConnection(*await asyncio.open_connection("127.0.0.1", server.port))


async def assert_still_serving(connection: KeptAliveConnection) -> None:
    status, body = await connection.post(b'{"query": "{ __typename }"}')
    assert (status, body) == (200, {"data": {"__typename": "Query"}})


@both_backends
@pytest.mark.parametrize("body", NON_OBJECT_BODIES + NOT_UTF8_BODIES)
@both_backends
async def test_a_body_that_is_no_json_object_is_refused_and_the_connection_kept(
    target: ServerProcess, body: bytes
) -> None:
    connection = await kept_alive(target)
    status, answer = await connection.post(body)
    assert status == 400, answer
    [error] = answer["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "body"}
    assert error["message"].startswith("body: "), error
    await assert_still_serving(connection)
    connection.writer.close()


@both_backends
async def test_a_wrong_content_type_is_refused_and_the_connection_kept(target: ServerProcess) -> None:
    connection = await kept_alive(target)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/graphql"):
        status, answer = await connection.post(b'{"query": "{ __typename }"}', content_type)
        assert status == 400, answer
        assert answer["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "content-type"}
    await assert_still_serving(connection)
    connection.writer.close()


@both_backends
async def test_multipart_operations_that_are_no_object_are_refused(target: ServerProcess) -> None:
    api = ApiClient(target.url)
    token, _ = await api.register()
    async with local_http(base_url=target.url, headers={"authorization": f"Bearer {token}"}) as client:
        for operations in ("1", "null", "true", '"x"', "[]"):
            files = {"operations": (None, operations), "map": (None, "{}")}
            response = await client.post("/graphql", files=files)
            assert response.status_code == 400, response.text
            error = response.json()["errors"][0]
            assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "operations"}, error
        assert (await client.post("/graphql", json={"query": "{ __typename }"})).status_code == 200


async def tasks_of(api: ApiClient, token: str) -> list[str]:
    return [edge["node"]["id"] for edge in (await api.execute(TASK_COUNT, token=token))["tasks"]["edges"]]


@both_backends
@pytest.mark.parametrize("rrule", [None, "FREQ=DAILY", "FREQ=YEARLY"])
@both_backends
async def test_out_of_range_dates_are_bad_input_naming_the_field(
    target: ServerProcess, rrule: str | None
) -> None:
    api = ApiClient(target.url)
    token, _ = await api.register()
    task_id, _ = await create_open_task(api, token, "PHOTO")
    before = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    for starts_at in OUT_OF_RANGE + IN_RANGE_BUT_NO_SCHEDULE:
        schedule = {**open_schedule(), "startsAt": starts_at, "rrule": rrule}
        task = {"title": "t", "method": "PHOTO", "schedule": schedule}
        with pytest.raises(GraphQLFailure) as created:
            await api.execute(CREATE, {"input": task}, token=token)
        assert (created.value.code, created.value.field) == ("BAD_USER_INPUT", "input.schedule.startsAt"), (
            starts_at,
            created.value.errors,
        )
        with pytest.raises(GraphQLFailure) as updated:
            await api.execute(
                UPDATE, {"id": task_id, "p": {"startsAt": starts_at, "rrule": rrule}}, token=token
            )
        assert (updated.value.code, updated.value.field) in {
            ("BAD_USER_INPUT", "p.startsAt"),
            ("BAD_USER_INPUT", "input.schedule.startsAt"),
        }, (starts_at, updated.value.errors)
        # written in the document rather than as a variable
        literal = f'mutation {{ updateTask(id: "{task_id}", input: {{schedule: {{startsAt: "{starts_at}"}}}}) {{ id }} }}'
        with pytest.raises(GraphQLFailure) as inline:
            await api.execute(literal, token=token)
        assert (inline.value.code, inline.value.field) == ("BAD_USER_INPUT", "input.schedule.startsAt"), (
            starts_at,
            inline.value.errors,
        )
    assert await tasks_of(api, token) == [task_id]  # nothing created
    assert (await api.execute(TASK, {"id": task_id}, token=token))["task"] == before  # nothing changed


@both_backends
async def test_out_of_range_recorded_at_is_bad_input(target: ServerProcess) -> None:
    api = ApiClient(target.url)
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    check_in = """mutation($id: ID!, $at: DateTime) {
      checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 5, recordedAt: $at)
      { status }
    }"""
    for recorded_at in OUT_OF_RANGE:
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(check_in, {"id": instance_id, "at": recorded_at}, token=token)
        assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "at"), refused.value.errors
    proof = (await api.execute(check_in, {"id": instance_id, "at": None}, token=token))["checkIn"]
    assert proof["status"] == "ACCEPTED"  # no refused attempt was stored or counted against the instance
