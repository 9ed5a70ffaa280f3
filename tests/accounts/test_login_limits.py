"""Login limits through the real API: counted before argon2 (no race), doubling waits per email that never
hold the owner's own address back, a limit per client address, and argon2's bounded queue."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis
from gql import GraphQLRequest
from gql.transport.exceptions import TransportConnectionFailed

from harness.mailbox import Mailbox
from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, WorkerProcess, free_port
from services.kit.rate_limits import AttemptWindow
from tests.support.backends import Backend, both_backends, deployed
from tests.support.live import close_code, live_feed
from tests.support.passwords import DEFAULT_PASSWORD_COST

LOGIN = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"
PASSWORD = "correct horse battery"


def from_address(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def login_code(api: ApiClient, email: str, password: str, address: str) -> GraphQLFailure | None:
    try:
        await api.execute(LOGIN, {"e": email, "p": password}, headers=from_address(address))
    except GraphQLFailure as failure:
        return failure
    return None


@both_backends
async def test_concurrent_guesses_cannot_outrun_the_count_nor_lock_the_owner_out(
    request: pytest.FixtureRequest, backend: Backend
) -> None:
    settings = {
        "PROOFLOOP_LOGIN_ATTEMPTS": "3",
        "PROOFLOOP_LOGIN_BACKOFF_SECONDS": "60",
        "PROOFLOOP_TRUSTED_PROXIES": "127.0.0.1",
    }
    with deployed(request, backend, settings, api_only=True) as deployment:  # counted in its Redis
        api = deployment.client()
        name = f"owner-{uuid.uuid4().hex[:8]}"
        await api.execute(
            'mutation($e: String!, $p: String!) { register(email: $e, password: $p, displayName: "O") { token } }',
            {"e": f"{name}@example.com", "p": PASSWORD},
            headers=from_address("10.0.0.1"),  # the owner's own address from now on
        )
        email = f"{name}@example.com"

        guesses = await asyncio.gather(*(login_code(api, email, f"guess {i}", "10.6.6.6") for i in range(12)))
        codes = [g.code if g else "OK" for g in guesses]
        assert codes.count("UNAUTHENTICATED") <= 3  # each was counted before its password was checked
        assert codes.count("RATE_LIMITED") >= 9
        limited = next(g for g in guesses if g is not None and g.code == "RATE_LIMITED")
        retry = limited.errors[0]["extensions"]["retryAfterSeconds"]
        assert isinstance(retry, int) and 0 < retry <= 60

        # a stranger's address now waits, even with the right password ...
        stranger = await login_code(api, email, PASSWORD, "10.7.7.7")
        assert stranger is not None and stranger.code == "RATE_LIMITED"
        # ... but the owner's own address is not locked out of the right password
        assert await login_code(api, email, PASSWORD, "10.0.0.1") is None


async def test_each_client_address_has_a_limit_that_a_spoofed_header_does_not_escape(
    service_env: dict[str, str],
) -> None:
    env = {**service_env, "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "4"}  # no trusted proxies: the header is ignored
    # every test of the run comes from 127.0.0.1: start this address's window afresh
    redis.Redis.from_url(env["PROOFLOOP_REDIS_URL"]).delete(
        AttemptWindow("auth-address", 0, 0).key("127.0.0.1")
    )
    with ServerProcess(env, port=free_port()) as server:
        api = ApiClient(server.url)
        codes = []
        for i in range(6):
            failure = await login_code(api, f"spray-{i}@example.com", "some long guess", f"10.1.1.{i}")
            codes.append(failure.code if failure else "OK")
        assert codes == ["UNAUTHENTICATED"] * 4 + ["RATE_LIMITED"] * 2
        with pytest.raises(GraphQLFailure) as register:
            await api.register()
        assert register.value.code == "RATE_LIMITED"


async def test_argon2_runs_on_a_bounded_queue(service_env: dict[str, str]) -> None:
    env = {
        **service_env,
        "PROOFLOOP_PASSWORD_HASH_THREADS": "1",
        "PROOFLOOP_PASSWORD_HASH_QUEUE": "1",
        "PROOFLOOP_TRUSTED_PROXIES": "127.0.0.1",
        **DEFAULT_PASSWORD_COST,  # hashes that take their real time, so eight at once overlap
    }
    with ServerProcess(env, port=free_port()) as server:
        api = ApiClient(server.url)
        flood = await asyncio.gather(
            *(login_code(api, f"flood-{i}@example.com", "some long guess", f"10.2.0.{i}") for i in range(8))
        )
        codes = [f.code if f else "OK" for f in flood]
        assert "RATE_LIMITED" in codes  # beyond one hashing and one waiting, refused at once
        assert "UNAUTHENTICATED" in codes
        message = next(f.message for f in flood if f is not None and f.code == "RATE_LIMITED")
        assert "password checks" in message


async def test_an_expiring_token_closes_its_socket_at_that_moment(service_env: dict[str, str]) -> None:
    env = {**service_env, "PROOFLOOP_TOKEN_TTL_SECONDS": "3"}
    with ServerProcess(env, port=free_port()) as server:
        api = ApiClient(server.url)
        token, _ = await api.register()
        async with live_feed(server, token) as feed:
            await feed.ending(within=10)  # no logout: the expiry alone ends it
            await asyncio.sleep(0.5)
            with pytest.raises(TransportConnectionFailed) as closed:
                await feed.session.execute(GraphQLRequest("query { me { id } }"))
            assert close_code(closed.value) == 4401


async def test_mail_requests_per_address_are_limited_without_revealing_accounts(
    service_env: dict[str, str], worker: WorkerProcess, mailbox: Mailbox
) -> None:
    env = {**service_env, "PROOFLOOP_MAIL_REQUESTS_PER_HOUR": "2"}
    with ServerProcess(env, port=free_port()) as server:
        api = ApiClient(server.url, mailbox)
        token, user = await api.register()
        resend = "mutation { requestEmailVerification }"
        for _ in range(2):
            assert (await api.execute(resend, token=token))["requestEmailVerification"] is True
        with pytest.raises(GraphQLFailure) as limited:
            await api.execute(resend, token=token)
        assert limited.value.code == "RATE_LIMITED"
        assert 0 < limited.value.errors[0]["extensions"]["retryAfterSeconds"] <= 3600
        await mailbox.wait_for(user["email"], "Confirm your email", count=3)  # registration's and two more

        # a reset request past the limit still answers true, and sends nothing more
        reset = "mutation($e: String!) { requestPasswordReset(email: $e) }"
        stranger = f"flooded-{uuid.uuid4().hex[:8]}@example.com"
        for _ in range(4):
            assert (await api.execute(reset, {"e": stranger}))["requestPasswordReset"] is True
        await mailbox.wait_for(stranger, "Reset your password", count=2)
        await asyncio.sleep(1)  # what a third mail would need to arrive, had one been sent
        assert len(mailbox.to(stranger)) == 2
        assert len(mailbox.to(user["email"], "Confirm your email")) == 3
