"""Mutations in one shape, through the real API: `input:` and a payload with the result and userErrors.

An expected refusal is a user error naming the input field, and nothing is stored; what a client cannot fix
by changing its input (no token) stays an error with its code; deletes answer the deleted id; a document of
several taskCreate fields goes on past a refused one, as one set; uploads ride inside the input; and the
first shape of every mutation still answers, deprecated with its replacement named.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import GraphQLNonNull, GraphQLObjectType, build_schema, get_named_type

from harness.media_factory import photo
from harness.proofloop import ROOT, GraphQLFailure, create_open_task, file_var, open_schedule, upload
from schema.deprecations import REMOVED_AFTER
from tests.support.backends import Deployment

USER_ERRORS = "userErrors { field code message }"
TASK_CREATE = f"""mutation($input: TaskCreateInput!) {{
  taskCreate(input: $input) {{ task {{ id title }} {USER_ERRORS} clientMutationId }}
}}"""
TASK_COUNT = "{ tasks(first: 100) { totalCount } }"


def task_input(title: str = "Run", **more: Any) -> dict[str, Any]:
    return {"title": title, "method": "PHOTO", "schedule": open_schedule(starts_in_seconds=3600), **more}


async def task_count(running: Deployment, token: str) -> int:
    count: int = (await running.client().execute(TASK_COUNT, token=token))["tasks"]["totalCount"]
    return count


@pytest.mark.unit
def test_every_mutation_has_the_payload_shape_or_is_deprecated_naming_one_that_has() -> None:
    schema = build_schema((ROOT / "schema.graphql").read_text())
    mutation = schema.mutation_type
    assert mutation is not None
    current = {
        name
        for name, field in mutation.fields.items()
        if field.deprecation_reason is None
        and list(field.args) == ["input"]
        and isinstance(payload := get_named_type(field.type), GraphQLObjectType)
        and payload.name.endswith("Payload")
        and isinstance(field.type, GraphQLNonNull)
        and "userErrors" in payload.fields
        and "clientMutationId" in payload.fields
    }
    first_shape = {name: field for name, field in mutation.fields.items() if name not in current}
    assert len(current) >= 35  # logout and revokeSession are both sessionRevoke
    for name, field in first_shape.items():
        reason = field.deprecation_reason or ""
        assert reason.startswith("use "), f"{name}: neither the payload shape nor deprecated"
        assert reason.split()[1] in current, f"{name}: its replacement {reason.split()[1]} is not one"
        assert REMOVED_AFTER in reason, name


@pytest.mark.both_backends
async def test_a_created_task_comes_with_no_user_errors_and_its_client_mutation_id(
    api_deployment: Deployment,
) -> None:
    token, _ = await api_deployment.client().register()
    data = await api_deployment.client().execute(
        TASK_CREATE, {"input": {**task_input("Swim"), "clientMutationId": "form-1"}}, token=token
    )
    created = data["taskCreate"]
    assert created["task"]["title"] == "Swim"
    assert (created["userErrors"], created["clientMutationId"]) == ([], "form-1")


@pytest.mark.both_backends
async def test_a_refused_input_is_a_user_error_naming_its_field_and_stores_nothing(
    api_deployment: Deployment,
) -> None:
    token, _ = await api_deployment.client().register()
    bad = task_input()
    bad["schedule"] = {**bad["schedule"], "rrule": "FREQ=SOMETIMES"}
    data = await api_deployment.client().execute(TASK_CREATE, {"input": bad}, token=token)
    refused = data["taskCreate"]
    assert refused["task"] is None
    [error] = refused["userErrors"]
    assert (error["field"][:3], error["code"]) == (["input", "schedule", "rrule"], "BAD_USER_INPUT"), error
    assert "rrule" in error["message"]
    assert await task_count(api_deployment, token) == 0


async def test_a_too_long_client_mutation_id_is_a_user_error(api_deployment: Deployment) -> None:
    token, _ = await api_deployment.client().register()
    data = await api_deployment.client().execute(
        TASK_CREATE, {"input": {**task_input(), "clientMutationId": "x" * 101}}, token=token
    )
    [error] = data["taskCreate"]["userErrors"]
    assert error["field"] == ["input", "clientMutationId"], error
    assert await task_count(api_deployment, token) == 0


async def test_no_token_is_an_error_not_a_user_error(api_deployment: Deployment) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await api_deployment.client().execute(TASK_CREATE, {"input": task_input()})
    assert failure.value.code == "UNAUTHENTICATED"


async def test_another_users_task_is_not_found_as_a_user_error(api_deployment: Deployment) -> None:
    owner, _ = await api_deployment.client().register()
    stranger, _ = await api_deployment.client().register()
    created = await api_deployment.client().execute(TASK_CREATE, {"input": task_input()}, token=owner)
    task_id = created["taskCreate"]["task"]["id"]
    pause = f"mutation($id: ID!) {{ taskPause(input: {{id: $id}}) {{ task {{ id state }} {USER_ERRORS} }} }}"
    data = await api_deployment.client().execute(pause, {"id": task_id}, token=stranger)
    assert data["taskPause"]["task"] is None
    assert [e["code"] for e in data["taskPause"]["userErrors"]] == ["NOT_FOUND"]
    mine = await api_deployment.client().execute(pause, {"id": task_id}, token=owner)
    assert (mine["taskPause"]["task"]["state"], mine["taskPause"]["userErrors"]) == ("PAUSED", [])


@pytest.mark.both_backends
async def test_a_document_of_task_creates_goes_on_past_a_refused_one(api_deployment: Deployment) -> None:
    token, _ = await api_deployment.client().register()
    document = f"""mutation($a: TaskCreateInput!, $b: TaskCreateInput!, $c: TaskCreateInput!) {{
      a: taskCreate(input: $a) {{ task {{ title }} {USER_ERRORS} clientMutationId }}
      b: taskCreate(input: $b) {{ task {{ title }} {USER_ERRORS} clientMutationId }}
      c: taskCreate(input: $c) {{ task {{ title }} {USER_ERRORS} clientMutationId }}
    }}"""
    refused = task_input("B", clientMutationId="b")
    refused["title"] = " "
    variables = {"a": task_input("A", clientMutationId="a"), "b": refused, "c": task_input("C")}
    data = await api_deployment.client().execute(document, variables, token=token)
    assert data["a"] == {"task": {"title": "A"}, "userErrors": [], "clientMutationId": "a"}
    assert data["b"]["task"] is None and data["b"]["clientMutationId"] == "b"
    assert [(e["field"], e["code"]) for e in data["b"]["userErrors"]] == [
        (["input", "title"], "BAD_USER_INPUT")
    ]
    assert data["c"] == {"task": {"title": "C"}, "userErrors": [], "clientMutationId": None}
    assert await task_count(api_deployment, token) == 2


@pytest.mark.both_backends
async def test_deletes_answer_the_deleted_id(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register()
    created = await api.execute(TASK_CREATE, {"input": task_input()}, token=token)
    task_id = created["taskCreate"]["task"]["id"]
    delete = f"mutation($id: ID!) {{ taskDelete(input: {{id: $id}}) {{ deletedTaskId task {{ id }} {USER_ERRORS} }} }}"
    data = await api.execute(delete, {"id": task_id}, token=token)
    assert data["taskDelete"] == {"deletedTaskId": task_id, "task": None, "userErrors": []}
    assert (await api.execute("query($id: ID!) { task(id: $id) { id } }", {"id": task_id}, token=token)) == {
        "task": None
    }
    again = await api.execute(delete, {"id": task_id}, token=token)
    assert again["taskDelete"]["deletedTaskId"] is None
    assert [e["code"] for e in again["taskDelete"]["userErrors"]] == ["NOT_FOUND"]


async def test_a_deletion_under_a_horizon_answers_the_task_that_waits(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register()
    horizon = f"mutation {{ commitmentHorizonUpdate(input: {{days: 3}}) {{ user {{ id }} {USER_ERRORS} }} }}"
    assert (await api.execute(horizon, token=token))["commitmentHorizonUpdate"]["userErrors"] == []
    created = await api.execute(TASK_CREATE, {"input": task_input()}, token=token)
    task_id = created["taskCreate"]["task"]["id"]
    delete = """mutation($id: ID!) {
      taskDelete(input: {id: $id}) { deletedTaskId task { id pendingChange { delete } } userErrors { code } }
    }"""
    data = (await api.execute(delete, {"id": task_id}, token=token))["taskDelete"]
    assert data == {
        "deletedTaskId": None,
        "task": {"id": task_id, "pendingChange": {"delete": True}},
        "userErrors": [],
    }


async def test_a_wrong_password_at_sign_in_is_a_user_error(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    _, user = await api.register()
    sign_in = f"""mutation($e: String!, $p: String!) {{
      sessionCreate(input: {{email: $e, password: $p}}) {{ token user {{ id }} {USER_ERRORS} }}
    }}"""
    wrong = (await api.execute(sign_in, {"e": user["email"], "p": "not the password"}))["sessionCreate"]
    assert (wrong["token"], wrong["user"]) == (None, None)
    assert [e["code"] for e in wrong["userErrors"]] == ["UNAUTHENTICATED"]
    right = (await api.execute(sign_in, {"e": user["email"], "p": "correct horse battery"}))["sessionCreate"]
    assert right["token"] and right["user"]["id"] == user["id"] and right["userErrors"] == []


async def test_signing_out_answers_the_revoked_session(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register()
    sessions = await api.execute("{ sessions { id current } }", token=token)
    [current] = [s["id"] for s in sessions["sessions"] if s["current"]]
    data = await api.execute(
        f"mutation {{ sessionRevoke {{ revokedSessionId {USER_ERRORS} }} }}", token=token
    )
    assert data["sessionRevoke"] == {"revokedSessionId": current, "userErrors": []}
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute("{ me { id } }", token=token)
    assert failure.value.code == "UNAUTHENTICATED"


@pytest.mark.both_backends
async def test_a_photo_rides_inside_the_input(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    document = """mutation($input: ProofPhotoSubmitInput!) {
      proofPhotoSubmit(input: $input) { verification { status } userErrors { code } }
    }"""
    variables = {"input": {"instanceId": instance_id, "photo": file_var(photo(1))}}
    data = await upload(api, document, variables, token=token)
    assert data["proofPhotoSubmit"] == {"verification": {"status": "ACCEPTED"}, "userErrors": []}


async def test_two_uploads_inside_inputs_are_refused_before_any_is_read(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register()
    document = """mutation($a: ProofPhotoSubmitInput!, $b: ReviewRequestInput!) {
      a: proofPhotoSubmit(input: $a) { userErrors { code } }
      b: reviewRequest(input: $b) { userErrors { code } }
    }"""
    variables = {"a": {"instanceId": "x", "photo": file_var(photo(1))}, "b": {"instanceId": "y"}}
    with pytest.raises(GraphQLFailure) as failure:
        await upload(api, document, variables, token=token)
    assert failure.value.code == "GRAPHQL_VALIDATION_FAILED"
    assert "at most 1" in failure.value.message


@pytest.mark.both_backends
async def test_the_first_shape_still_answers_as_before(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register()
    old = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
    task_id = (await api.execute(old, {"input": task_input()}, token=token))["createTask"]["id"]
    bad = task_input()
    bad["title"] = " "
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(old, {"input": bad}, token=token)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "input.title")
    gone = await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)
    assert gone == {"deleteTask": True}
    assert await task_count(api_deployment, token) == 0
