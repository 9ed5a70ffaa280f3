"""Mail links work without an app (PROOFLOOP_PUBLIC_URL unset): they lead to the API's own pages, where a
GET only shows a form and the POST with the mailed token confirms the address or sets the password. The
attacks a form invites are sent too: a wrong or reused token, a huge or non-UTF-8 body, NUL in a password,
markup in the token."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from harness.mailbox import text_of
from harness.proofloop import GraphQLFailure, done, local_http
from tests.support.backends import Backend, Deployment, deployed

ME = "{ me { emailVerified } }"


@pytest.fixture(scope="module")
def without_app(backend: Backend, request: pytest.FixtureRequest) -> Iterator[Deployment]:
    with deployed(request, backend, {"PROOFLOOP_PUBLIC_URL": ""}) as deployment:
        yield deployment


async def mailed_link(running: Deployment, email: str, subject: str) -> str:
    mail = await running.mailbox.wait_for(email, subject)
    [link] = [word for word in text_of(mail).split() if "token=" in word]
    return link


async def post_form(running: Deployment, path: str, body: bytes | dict[str, str]) -> httpx.Response:
    async with local_http(base_url=running.url) as http:
        if isinstance(body, dict):
            return await http.post(path, data=body)
        return await http.post(
            path, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )


@pytest.mark.both_backends
async def test_the_verification_link_leads_to_the_apis_page_and_only_its_post_confirms(
    without_app: Deployment,
) -> None:
    api = without_app.client()
    token, user = await api.register()
    link = await mailed_link(without_app, user["email"], "Confirm your email")
    assert link.startswith(f"{without_app.url}/verify-email?token=")
    async with local_http(base_url=without_app.url) as http:
        shown = await http.get(urlsplit(link).path + "?" + urlsplit(link).query)
    assert shown.status_code == 200 and '<form method="post" action="/verify-email">' in shown.text
    assert (
        shown.headers["referrer-policy"] == "no-referrer"
        and "frame-ancestors 'none'" in shown.headers["content-security-policy"]
    )
    assert (await api.execute(ME, token=token))["me"]["emailVerified"] is False  # a GET changes nothing
    mailed = link.split("token=", 1)[1]
    confirmed = await post_form(without_app, "/verify-email", {"token": mailed})
    assert confirmed.status_code == 200 and "is confirmed" in confirmed.text
    assert (await api.execute(ME, token=token))["me"]["emailVerified"] is True
    again = await post_form(without_app, "/verify-email", {"token": mailed})
    assert again.status_code == 400 and "unknown, used or expired" in again.text


async def test_the_reset_link_sets_a_new_password_and_signs_every_device_out(without_app: Deployment) -> None:
    api = without_app.client()
    token, user = await api.register()
    await api.execute(
        "mutation($e: String!) { passwordResetRequest(input: {email: $e}) { requested } }",
        {"e": user["email"]},
    )
    link = await mailed_link(without_app, user["email"], "password")
    assert link.startswith(f"{without_app.url}/reset-password?token=")
    mailed = link.split("token=", 1)[1]
    short = await post_form(without_app, "/reset-password", {"token": mailed, "newPassword": "short"})
    assert short.status_code == 400 and "newPassword" in short.text  # the policy, and the token still works
    changed = await post_form(
        without_app, "/reset-password", {"token": mailed, "newPassword": "a new long password"}
    )
    assert changed.status_code == 200 and "Password changed" in changed.text
    with pytest.raises(GraphQLFailure) as signed_out:
        await api.execute(ME, token=token)
    assert signed_out.value.code == "UNAUTHENTICATED"
    sign_in = """mutation($e: String!, $p: String!) {
      sessionCreate(input: {email: $e, password: $p}) { token userErrors { field code message } }
    }"""
    assert done(
        await api.execute(sign_in, {"e": user["email"], "p": "a new long password"}), "sessionCreate"
    )["token"]


async def test_hostile_forms_are_refused_before_anything_changes(without_app: Deployment) -> None:
    api = without_app.client()
    token, user = await api.register()
    mailed = (await mailed_link(without_app, user["email"], "Confirm your email")).split("token=", 1)[1]
    huge = await post_form(without_app, "/verify-email", b"token=" + b"a" * 10_000)
    assert huge.status_code == 413
    garbled = await post_form(without_app, "/verify-email", b"token=\xff\xfe" + mailed.encode())
    assert garbled.status_code == 400
    nul = await post_form(
        without_app, "/reset-password", {"token": mailed, "newPassword": "long enough\x00x"}
    )
    assert nul.status_code == 400 and "NUL" in nul.text
    wrong = await post_form(without_app, "/verify-email", {"token": "not-a-token"})
    assert wrong.status_code == 400
    assert (await api.execute(ME, token=token))["me"]["emailVerified"] is False
    async with local_http(base_url=without_app.url) as http:
        marked = await http.get("/verify-email", params={"token": '"><script>alert(1)</script>'})
    assert marked.status_code == 200 and "<script>" not in marked.text and "&lt;script&gt;" in marked.text
    landing = await post_form(without_app, "/verify-email", {"token": mailed})  # the real one still works
    assert landing.status_code == 200
