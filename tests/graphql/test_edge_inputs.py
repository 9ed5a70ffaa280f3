"""Inputs that once answered INTERNAL_SERVER_ERROR, sent through the real API: dates at the calendar's
edges, digits `int` refuses ("²") in a timestamp or a link, a lone surrogate or a year-0 instant in a
signed integration event; and text that reorders what others see, in a display name or a title."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from harness.media_factory import photo
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    local_http,
    open_schedule,
)
from tests.support.backends import Deployment
from tests.support.integrations import activity, code_of, connected_task
from tests.support.proofs_media import submit_photo

BREAK = """mutation($input: TaskBreakScheduleInput!) {
  taskBreakSchedule(input: $input) { breaks { startsOn } userErrors { field code message } }
}"""
RTL_OVERRIDE = "\u202e"


async def bad_input_field(
    api: ApiClient, document: str, variables: dict[str, object], token: str
) -> str | None:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    assert failure.value.code == "BAD_USER_INPUT", failure.value.errors
    return failure.value.field


@pytest.mark.both_backends
async def test_dates_at_the_calendars_edges_are_bad_input(api_deployment: Deployment) -> None:
    api = api_deployment.client()
    token, _ = await api.register(timezone="Pacific/Pago_Pago")
    for starts, ends in (
        ("9999-12-30", "9999-12-31"),
        ("0001-01-01", "0001-01-02"),
        ("9999-12-31", "9999-12-31"),
    ):
        field = await bad_input_field(api, BREAK, {"input": {"startsOn": starts, "endsOn": ends}}, token)
        assert field in ("input.startsOn", "input.endsOn")
    literal = 'mutation { taskBreakSchedule(input: {startsOn: "0001-01-01", endsOn: "0001-01-03"}) { breaks { startsOn } } }'
    assert await bad_input_field(api, literal, {}, token) == "input.startsOn"
    calendar = 'query { progress { calendar(from: "0001-01-01", to: "0001-01-05") { date } } }'
    assert await bad_input_field(api, calendar, {}, token) == "from"
    inside = await api.execute(
        BREAK, {"input": {"startsOn": "9999-12-29", "endsOn": "9999-12-30"}}, token=token
    )
    assert inside["taskBreakSchedule"]["userErrors"] == []  # the last day it takes still works


async def test_a_signed_event_with_odd_digits_or_text_is_refused_not_a_fault(
    api: ApiClient, server: ServerProcess
) -> None:
    token, _ = await api.register()
    _, _, sender = await connected_task(api, server, token)
    body = json.dumps(activity()).encode()
    for odd in ("²", "¹²³", "³"):  # isdigit() says yes to each; int() says no
        # signed with that very timestamp, as a connector would sign what it sends; header bytes are read
        # as Latin-1 (b"\xb2" arrives as "²"), and the server signs the text it read as UTF-8
        digest = hmac.new(sender.secret.encode(), odd.encode() + b"." + body, hashlib.sha256).hexdigest()
        headers = {
            b"Content-Type": b"application/json",
            b"X-Forwarded-For": sender.address.encode(),
            b"X-Proofloop-Timestamp": odd.encode("latin-1"),
            b"X-Proofloop-Signature": f"sha256={digest}".encode(),
        }
        answer = await sender.post(body, headers=headers)
        assert (answer.status_code, code_of(answer)) == (401, "UNAUTHENTICATED"), answer.text
    surrogate = (
        b'{"id": "a\\ud800b", "occurredAt": "' + activity()["occurredAt"].encode() + b'", "type": "run"}'
    )
    answer = await sender.post(surrogate)
    assert (answer.status_code, code_of(answer)) == (400, "BAD_USER_INPUT"), answer.text
    assert "body.id" in answer.text
    year_zero = await sender.send(activity(occurredAt="0001-01-01T00:00:00+14:00"))
    assert (year_zero.status_code, code_of(year_zero)) == (400, "BAD_USER_INPUT"), year_zero.text


async def test_a_link_with_odd_digits_is_not_found(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    proof = await submit_photo(api, token, instance_id, photo(97))
    link = urlsplit(proof["mediaUrl"])
    query = {name: values[0] for name, values in parse_qs(link.query).items()}
    async with local_http(base_url=api.url) as http:
        assert (await http.get(f"{link.path}?{urlencode(query)}")).status_code == 200
        odd = f"{link.path}?{urlencode({**query, 'exp': '²'})}"
        assert (await http.get(odd)).status_code == 404
        export = "/exports/00000000-0000-0000-0000-000000000000"
        signed = {"viewer": query["viewer"], "session": query["session"], "exp": "¹²³", "sig": "0" * 64}
        assert (await http.get(f"{export}?{urlencode(signed)}")).status_code == 404


async def test_text_that_reorders_what_others_see_is_refused(api: ApiClient) -> None:
    register = """mutation($n: String!) {
      accountRegister(input: {email: "rtl-%s@example.com", password: "a long password", displayName: $n}) {
        token userErrors { field code message }
      }
    }"""
    answer = (await api.execute(register % uuid.uuid4().hex[:8], {"n": f"Ann{RTL_OVERRIDE}gnp.exe"}))[
        "accountRegister"
    ]
    assert [(e["field"], e["code"]) for e in answer["userErrors"]] == [
        (["input", "displayName"], "BAD_USER_INPUT")
    ]
    assert "U+202E" in answer["userErrors"][0]["message"]
    token, _ = await api.register()
    create = """mutation($input: TaskCreateInput!) { taskCreate(input: $input) { task { id } userErrors { field code } } }"""
    titled = {"title": f"Run{RTL_OVERRIDE}", "method": "PHOTO", "schedule": open_schedule(3600)}
    refused = (await api.execute(create, {"input": titled}, token=token))["taskCreate"]
    assert refused["userErrors"] == [{"field": ["input", "title"], "code": "BAD_USER_INPUT"}]
    arabic = {**titled, "title": "جري الصباح"}  # a right-to-left script is fine: its letters order it
    assert (await api.execute(create, {"input": arabic}, token=token))["taskCreate"]["userErrors"] == []
