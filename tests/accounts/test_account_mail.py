"""Mail through a real SMTP server: verification, password reset and change, and the sessions they end."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from gql import GraphQLRequest
from gql.transport.exceptions import TransportConnectionFailed

from harness.mailbox import Mailbox, html_of, mailed_token, text_of
from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess
from tests.support.live import close_code, live_feed

ME = "query { me { id email emailVerified } }"
VERIFY = "mutation($t: String!) { verifyEmail(token: $t) { id email emailVerified } }"
RESEND = "mutation { requestEmailVerification }"
REQUEST_RESET = "mutation($e: String!) { requestPasswordReset(email: $e) }"
RESET = (
    "mutation($t: String!, $p: String!) { resetPassword(token: $t, newPassword: $p) { token user { id } } }"
)
CHANGE = """mutation($c: String!, $p: String!) {
  changePassword(currentPassword: $c, newPassword: $p) { token user { id emailVerified } } }"""
LOGIN = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"
PASSWORD = "correct horse battery"


async def failure_of(
    api: ApiClient, document: str, variables: dict[str, str], token: str | None = None
) -> GraphQLFailure:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    return failure.value


def box(api: ApiClient) -> Mailbox:
    assert api.mailbox is not None
    return api.mailbox


async def test_register_mails_a_link_that_verifies_once(api: ApiClient) -> None:
    token, user = await api.register()
    assert (await api.execute(ME, token=token))["me"]["emailVerified"] is False
    mail = await box(api).wait_for(user["email"], "Confirm your email")
    assert "http://app.test/verify-email?token=" in text_of(mail)
    assert 'href="http://app.test/verify-email?token=' in html_of(mail)
    link_token = mailed_token(mail)

    verified = (await api.execute(VERIFY, {"t": link_token}))["verifyEmail"]
    # anonymous: the mailed token shows the address verified, and nothing else of the account
    assert (verified["id"], verified["email"], verified["emailVerified"]) == (user["id"], None, True)
    assert (await api.execute(ME, token=token))["me"]["emailVerified"] is True
    again = await failure_of(api, VERIFY, {"t": link_token})
    assert (again.code, again.field) == ("BAD_USER_INPUT", "token")
    for bad in ("made-up", ""):
        assert (await failure_of(api, VERIFY, {"t": bad})).code == "BAD_USER_INPUT"
    assert (await failure_of(api, RESEND, {}, token)).code == "CONFLICT"


async def test_a_resent_link_replaces_the_first(api: ApiClient) -> None:
    token, user = await api.register()
    first = mailed_token(await box(api).wait_for(user["email"], "Confirm your email"))
    assert (await api.execute(RESEND, token=token))["requestEmailVerification"] is True
    second = mailed_token(await box(api).wait_for(user["email"], "Confirm your email", count=2))
    assert first != second
    assert (await failure_of(api, VERIFY, {"t": first})).code == "BAD_USER_INPUT"
    assert (await api.execute(VERIFY, {"t": second}, token=token))["verifyEmail"]["emailVerified"] is True


@pytest.mark.parametrize(
    "password", [" " * 12, "1234567890", "Password123", "qwertyuiop", "ninechars", "x" * 1025]
)
async def test_weak_passwords_are_refused(api: ApiClient, password: str) -> None:
    failure = await failure_of(
        api,
        'mutation($e: String!, $p: String!) { register(email: $e, password: $p, displayName: "W") { token } }',
        {"e": f"weak-{uuid.uuid4().hex[:8]}@example.com", "p": password},
    )
    assert (failure.code, failure.field) == ("BAD_USER_INPUT", "password")


async def test_long_passphrases_are_welcome(api: ApiClient) -> None:
    await api.execute(
        'mutation($e: String!, $p: String!) { register(email: $e, password: $p, displayName: "L") { token } }',
        {"e": f"long-{uuid.uuid4().hex[:8]}@example.com", "p": "a fairly long passphrase " * 10},
    )


async def test_password_reset_ends_every_session_and_socket(api: ApiClient, server: ServerProcess) -> None:
    token, user = await api.register()
    email = user["email"]
    unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
    for address in (email, unknown):  # the same answer either way
        assert (await api.execute(REQUEST_RESET, {"e": address}))["requestPasswordReset"] is True
    assert "no account" in text_of(await box(api).wait_for(unknown, "Reset your password"))
    reset_token = mailed_token(await box(api).wait_for(email, "Reset your password"))

    weak = await failure_of(api, RESET, {"t": reset_token, "p": "1234567890"})
    assert (weak.code, weak.field) == ("BAD_USER_INPUT", "newPassword")
    async with live_feed(server, token) as feed:
        await asyncio.sleep(0.3)
        reset = (await api.execute(RESET, {"t": reset_token, "p": "a new long passphrase"}))["resetPassword"]
        await feed.ending(within=5)
        await asyncio.sleep(0.5)  # the socket closes just after its subscriptions are told why
        with pytest.raises(TransportConnectionFailed) as closed:
            await feed.session.execute(GraphQLRequest("query { me { id } }"))
        assert close_code(closed.value) == 4401
    assert reset["user"]["id"] == user["id"]
    assert (await failure_of(api, ME, {}, token)).code == "UNAUTHENTICATED"
    me = (await api.execute(ME, token=reset["token"]))["me"]
    assert me["emailVerified"] is True  # the mailed token proved the address
    assert (
        await failure_of(api, RESET, {"t": reset_token, "p": "yet another passphrase"})
    ).code == "BAD_USER_INPUT"
    assert (await failure_of(api, LOGIN, {"e": email, "p": PASSWORD})).code == "UNAUTHENTICATED"
    assert (await api.execute(LOGIN, {"e": email, "p": "a new long passphrase"}))["login"]["token"]


async def test_change_password_keeps_only_the_new_token(api: ApiClient, server: ServerProcess) -> None:
    token, user = await api.register()
    other = (await api.execute(LOGIN, {"e": user["email"], "p": PASSWORD}))["login"]["token"]
    wrong = await failure_of(api, CHANGE, {"c": "not my password", "p": "a new long passphrase"}, token)
    assert (wrong.code, wrong.field) == ("BAD_USER_INPUT", "currentPassword")
    weak = await failure_of(api, CHANGE, {"c": PASSWORD, "p": " " * 20}, token)
    assert (weak.code, weak.field) == ("BAD_USER_INPUT", "newPassword")
    async with live_feed(server, other) as feed:
        await asyncio.sleep(0.3)
        changed = await api.execute(CHANGE, {"c": PASSWORD, "p": "a new long passphrase"}, token=token)
        await feed.ending(within=5)
    new_token = changed["changePassword"]["token"]
    for old in (token, other):
        assert (await failure_of(api, ME, {}, old)).code == "UNAUTHENTICATED"
    assert (await api.execute(ME, token=new_token))["me"]["id"] == user["id"]


async def test_sessions_are_listed_and_one_can_be_revoked(api: ApiClient, server: ServerProcess) -> None:
    token, user = await api.register()
    other = (await api.execute(LOGIN, {"e": user["email"], "p": PASSWORD}))["login"]["token"]
    stranger, _ = await api.register()
    listed = (await api.execute("{ sessions { id current expiresAt } }", token=token))["sessions"]
    assert [s["current"] for s in listed] == [False, True]  # newest first: the login, then registration
    other_id = listed[0]["id"]
    revoke = "mutation($id: ID!) { revokeSession(id: $id) }"
    assert (await failure_of(api, revoke, {"id": other_id}, stranger)).code == "NOT_FOUND"
    async with live_feed(server, other) as feed:
        await asyncio.sleep(0.3)
        assert (await api.execute(revoke, {"id": other_id}, token=token))["revokeSession"] is True
        await feed.ending(within=5)
    assert (await failure_of(api, ME, {}, other)).code == "UNAUTHENTICATED"
    assert (await failure_of(api, revoke, {"id": other_id}, token)).code == "NOT_FOUND"
    assert [
        s["current"] for s in (await api.execute("{ sessions { current } }", token=token))["sessions"]
    ] == [True]


async def test_a_mail_whose_message_never_left_is_sent_by_the_sweep(
    api: ApiClient, database_url: str
) -> None:
    """The outbox row committed but its Dramatiq message was lost (say Redis was down): a worker resends it."""
    recipient = f"stranded-{uuid.uuid4().hex[:8]}@example.com"
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            """INSERT INTO outgoing_mail (id, recipient, subject, text_body, html_body, created_at, attempts)
               VALUES ($1, $2, 'Stranded', 'the text', '<p>the html</p>', now() - interval '1 hour', 0)""",
            uuid.uuid4(),
            recipient,
        )
        mail = await box(api).wait_for(recipient, "Stranded")
        assert text_of(mail).strip() == "the text"
        for _ in range(100):
            row = await conn.fetchrow(
                "SELECT sent_at, text_body FROM outgoing_mail WHERE recipient = $1", recipient
            )
            if row["sent_at"] is not None:
                break
            await asyncio.sleep(0.1)
        assert row["sent_at"] is not None and row["text_body"] == ""  # the body is not kept once sent
    finally:
        await conn.close()
