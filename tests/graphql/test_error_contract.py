"""Every mistake a client can make comes back GraphQL-shaped with a contract code, through the real server.

With `Accept: application/json` (or none) a request error keeps HTTP 200 and `"data": null`; with
`Accept: application/graphql-response+json` it gets the GraphQL-over-HTTP status and no `data`. Errors a
client causes are logged at INFO without the document; none of them is INTERNAL_SERVER_ERROR.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from harness.proofloop import ApiClient, ServerProcess, create_open_task, local_http

JSON = "application/json"
GRAPHQL_RESPONSE = "application/graphql-response+json"
CREATE_TASK = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
TASK_INPUT = {
    "title": "t",
    "method": "PHOTO",
    "schedule": {"startsAt": "2030-01-01T07:00:00+00:00", "rrule": "FREQ=DAILY", "timezone": "UTC"},
}


def post(server: ServerProcess, body: Any, *, accept: str = JSON, **kwargs: Any) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": JSON, "accept": accept, **kwargs.pop("headers", {})}
    return httpx.post(f"{server.url}/graphql", content=content, headers=headers, timeout=10, **kwargs)


def only_error(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith(("application/json", GRAPHQL_RESPONSE)), response.text
    errors = response.json()["errors"]
    assert len(errors) == 1, errors
    error: dict[str, Any] = errors[0]
    return error


COERCION_CASES = [
    pytest.param({}, "input", id="missing required variable"),
    pytest.param({"input": "not an object"}, "input", id="wrong type"),
    pytest.param({"input": None}, "input", id="null for non-null"),
    pytest.param({"input": {**TASK_INPUT, "colour": "red"}}, "input", id="unknown input field"),
]


@pytest.mark.parametrize(("variables", "field"), COERCION_CASES)
async def test_variable_coercion_failures_are_bad_user_input(
    server: ServerProcess, api: ApiClient, variables: dict[str, Any], field: str
) -> None:
    token, _ = await api.register()
    auth = {"Authorization": f"Bearer {token}"}
    body = {"query": CREATE_TASK, "variables": variables}

    plain = post(server, body, headers=auth)
    assert plain.status_code == 200
    assert plain.json()["data"] is None
    assert only_error(plain)["extensions"] == {"code": "BAD_USER_INPUT", "field": field}

    spec = post(server, body, accept=GRAPHQL_RESPONSE, headers=auth)
    assert spec.status_code == 400
    assert spec.headers["content-type"].startswith(GRAPHQL_RESPONSE)
    assert "data" not in spec.json()
    assert only_error(spec)["extensions"] == {"code": "BAD_USER_INPUT", "field": field}


def test_document_errors_are_validation_failures(server: ServerProcess) -> None:
    for document in ("{ me { nope } }", "{", "query($unused: ID) { __typename }"):
        plain = post(server, {"query": document})
        assert plain.status_code == 200 and plain.json()["data"] is None
        assert only_error(plain)["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
        spec = post(server, {"query": document}, accept=GRAPHQL_RESPONSE)
        assert spec.status_code == 400 and "data" not in spec.json()


def test_field_errors_keep_200_and_data_with_either_media_type(server: ServerProcess) -> None:
    for accept in (JSON, GRAPHQL_RESPONSE):
        response = post(server, {"query": "{ me { id } }"}, accept=accept)
        assert response.status_code == 200
        assert response.json()["data"] is None
        assert only_error(response)["extensions"]["code"] == "UNAUTHENTICATED"


HTTP_CASES = [
    pytest.param(b"{not json", 400, "body", id="malformed JSON"),
    pytest.param([{"query": "{ __typename }"}], 400, "body", id="a batch"),
    pytest.param({"query": 42}, 400, "query", id="query not a string"),
    pytest.param({"query": "{ __typename }", "variables": [1]}, 400, "variables", id="variables not a map"),
    pytest.param({"variables": {}}, 400, "query", id="no query"),
]


# a Task and a TaskInstance of that task, whose own task's progress fails with a range too long: the
# error reaches the instance's task and cancels its other fields, which share their loads (the task's
# open instance, the database clock) with the first item
SIBLINGS_OF_A_FAILED_FIELD = """query($ids: [ID!]!) { nodes(ids: $ids) {
  ... on Task { currentInstance { id isOpen } }
  ... on TaskInstance { isOpen task { currentInstance { id isOpen }
    progress { calendar(from: "2000-01-01", to: "2001-01-01") { open } } } }
} }"""


@pytest.mark.parametrize("instance_first", [False, True])
async def test_a_failed_field_never_fails_the_loads_its_cancelled_siblings_share(
    server: ServerProcess, api: ApiClient, instance_first: bool
) -> None:
    token, _ = await api.register()
    task_id, instance_id = await create_open_task(api, token, "PHOTO")
    ids = [instance_id, task_id] if instance_first else [task_id, instance_id]
    response = post(
        server,
        {"query": SIBLINGS_OF_A_FAILED_FIELD, "variables": {"ids": ids}},
        headers={"authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    error = only_error(response)
    assert (error["extensions"]["code"], error["path"][-1]) == ("BAD_USER_INPUT", "calendar")
    task_item = response.json()["data"]["nodes"][ids.index(task_id)]
    assert task_item == {"currentInstance": {"id": instance_id, "isOpen": True}}
    assert response.json()["data"]["nodes"][ids.index(instance_id)] is None  # the error's nearest null


@pytest.mark.parametrize(("body", "status", "field"), HTTP_CASES)
def test_http_level_mistakes_are_json_with_a_code(
    server: ServerProcess, body: Any, status: int, field: str
) -> None:
    response = post(server, body)
    assert response.status_code == status
    assert only_error(response)["extensions"] == {"code": "BAD_USER_INPUT", "field": field}


def test_a_mutation_over_get_is_405_with_a_code(server: ServerProcess) -> None:
    response = httpx.get(
        f"{server.url}/graphql", params={"query": "mutation { logout }"}, headers={"accept": JSON}
    )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert only_error(response)["extensions"]["code"] == "BAD_USER_INPUT"


def test_a_subscription_over_plain_http_says_how_to_subscribe(server: ServerProcess) -> None:
    response = post(server, {"query": "subscription { verificationEvents { id } }"})
    assert response.status_code == 400
    error = only_error(response)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "accept"}
    assert "text/event-stream" in error["message"]


def test_an_unknown_persisted_document_is_persisted_query_not_found(server: ServerProcess) -> None:
    apollo = {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "ab" * 32}}}
    # an Apollo hash is answered as Apollo's clients expect it, HTTP 200 (they then send the query)
    for body, status in ((apollo, 200), ({"documentId": "sha256:" + "cd" * 32}, 404)):
        response = post(server, body)
        assert response.status_code == status
        assert only_error(response)["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


async def test_multipart_without_map_is_bad_user_input(server: ServerProcess, api: ApiClient) -> None:
    token, _ = await api.register()
    operations = {
        "query": "mutation($i: ID!, $p: Upload!) { submitPhoto(instanceId: $i, photo: $p) { id } }",
        "variables": {"i": "1", "p": None},
    }
    async with local_http(headers={"Authorization": f"Bearer {token}"}) as http:
        for fields in ({"operations": json.dumps(operations)}, {"map": json.dumps({"0": ["variables.p"]})}):
            response = await http.post(
                f"{server.url}/graphql", data=fields, files={"0": ("p.jpg", b"\xff\xd8", "image/jpeg")}
            )
            assert response.status_code == 400
            assert only_error(response)["extensions"] == {"code": "BAD_USER_INPUT", "field": "map"}
        bad_path = await http.post(
            f"{server.url}/graphql",
            data={"operations": json.dumps(operations), "map": json.dumps({"0": ["variables.nowhere.deep"]})},
            files={"0": ("p.jpg", b"\xff\xd8", "image/jpeg")},
        )
    assert bad_path.status_code == 400
    assert only_error(bad_path)["extensions"]["code"] == "BAD_USER_INPUT"


async def test_client_errors_are_logged_at_info_without_the_document(
    server: ServerProcess, api: ApiClient
) -> None:
    literal = f"secret-literal-{uuid.uuid4().hex}"
    token, _ = await api.register()
    auth = {"Authorization": f"Bearer {token}"}
    already_logged = len(server.log())  # the server is shared: only what these requests log counts
    # a failing mutation whose document holds a password literal, a validation error, a coercion error
    post(
        server,
        {"query": f'mutation {{ login(email: "nobody@example.com", password: "{literal}") {{ token }} }}'},
    )
    post(server, {"query": f'{{ me {{ nope(x: "{literal}") }} }}'})
    post(
        server,
        {"query": CREATE_TASK, "variables": {"input": {**TASK_INPUT, "title": 1, literal: 2}}},
        headers=auth,
    )
    post(server, {"query": "mutation { logout }", "variables": {"x": literal}}, headers=auth)
    log = server.log()[already_logged:]
    assert literal not in log
    assert "client error BAD_USER_INPUT" in log and "client error GRAPHQL_VALIDATION_FAILED" in log
    assert "INTERNAL_SERVER_ERROR" not in log and "Traceback" not in log
