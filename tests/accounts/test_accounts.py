"""Accounts over real HTTP: register, login, me, logout, and the errors a client sees."""

from __future__ import annotations

import uuid

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, free_port

ME = "query { me { id displayName email timezone } }"


async def test_register_login_me_logout(api: ApiClient) -> None:
    email = f"Mixed.{uuid.uuid4().hex[:6]}@Example.com"
    reg = await api.execute(
        """mutation($e: String!) { register(email: $e, password: "long enough pw", displayName: "Ann",
             timezone: "Europe/Berlin") { token user { id email timezone } } }""",
        {"e": email},
    )
    assert reg["register"]["user"]["email"] == email.lower()
    assert reg["register"]["user"]["timezone"] == "Europe/Berlin"

    login = await api.execute(
        'mutation($e: String!) { login(email: $e, password: "long enough pw") { token user { id } } }',
        {"e": email.upper()},
    )
    token = login["login"]["token"]
    assert token != reg["register"]["token"]
    me = await api.execute(ME, token=token)
    assert me["me"]["id"] == reg["register"]["user"]["id"]
    assert me["me"]["email"] == email.lower()

    assert (await api.execute("mutation { logout }", token=token))["logout"] is True
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(ME, token=token)
    assert failure.value.code == "UNAUTHENTICATED"
    # the other token is untouched
    assert (await api.execute(ME, token=reg["register"]["token"]))["me"]["displayName"] == "Ann"


async def test_email_is_unique_case_insensitively(api: ApiClient) -> None:
    email = f"dup{uuid.uuid4().hex[:6]}@example.com"
    doc = 'mutation($e: String!) { register(email: $e, password: "long enough pw", displayName: "X") { token } }'
    await api.execute(doc, {"e": email})
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(doc, {"e": email.upper()})
    assert failure.value.code == "CONFLICT"


@pytest.mark.parametrize(
    ("email", "password", "field"),
    [("not-an-email", "long enough pw", "email"), ("ok@example.com", "short", "password")],
)
async def test_bad_registration_names_the_field(
    api: ApiClient, email: str, password: str, field: str
) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(
            'mutation($e: String!, $p: String!) { register(email: $e, password: $p, displayName: "X") { token } }',
            {"e": email, "p": password},
        )
    assert failure.value.code == "BAD_USER_INPUT"
    assert failure.value.field == field


async def test_unknown_timezone_is_refused(api: ApiClient) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(
            """mutation { register(email: "tz@example.com", password: "long enough pw", displayName: "X",
                 timezone: "Mars/Olympus") { token } }"""
        )
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "timezone")


async def test_wrong_password_and_unknown_user_look_the_same(api: ApiClient) -> None:
    _, user = await api.register()
    messages = []
    for email in (user["email"], "nobody-here@example.com"):
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(
                'mutation($e: String!) { login(email: $e, password: "wrong password") { token } }',
                {"e": email},
            )
        assert failure.value.code == "UNAUTHENTICATED"
        messages.append(failure.value.message)
    assert messages[0] == messages[1]


@pytest.mark.parametrize("token", [None, "garbage", "Bearer"])
async def test_missing_or_bad_token_is_unauthenticated(api: ApiClient, token: str | None) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(ME, token=token)
    assert failure.value.code == "UNAUTHENTICATED"


async def test_document_errors_are_validation_failures(api: ApiClient) -> None:
    token, _ = await api.register()
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute("query { me { noSuchField } }", token=token)
    assert failure.value.code == "GRAPHQL_VALIDATION_FAILED"


async def test_repeated_failed_logins_are_rate_limited(service_env: dict[str, str]) -> None:
    env = {**service_env, "PROOFLOOP_LOGIN_ATTEMPTS": "3", "PROOFLOOP_LOGIN_BACKOFF_SECONDS": "60"}
    with ServerProcess(env, port=free_port()) as server:
        async with ApiClient(server.url) as api:
            _, user = await api.register()
            _, other = await api.register()
            login = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"
            for _ in range(3):
                with pytest.raises(GraphQLFailure) as failure:
                    await api.execute(login, {"e": user["email"], "p": "not the password"})
                assert failure.value.code == "UNAUTHENTICATED"
            with pytest.raises(GraphQLFailure) as limited:  # even the right password waits its turn
                await api.execute(login, {"e": user["email"], "p": "correct horse battery"})
            assert limited.value.code == "RATE_LIMITED"
            assert 0 < limited.value.errors[0]["extensions"]["retryAfterSeconds"] <= 60
            assert (await api.execute(login, {"e": other["email"], "p": "correct horse battery"}))["login"][
                "token"
            ]
