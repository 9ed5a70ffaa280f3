"""argon2's cost is a setting: hashes are made at the configured cost, a hash made at another cost is remade
at the configured one when its account signs in, and a cost below argon2's floor is refused at start."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from pydantic import ValidationError

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, free_port
from settings import Settings
from tests.support.passwords import DEFAULT_PASSWORD_COST, QUICK_PASSWORD_COST, hash_cost

LOGIN = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"
PASSWORD = "correct horse battery"  # ApiClient.register's


async def stored_cost(db: asyncpg.Connection, email: str) -> tuple[int, int]:
    return hash_cost(await db.fetchval("SELECT password_hash FROM users WHERE email = $1", email))


async def test_a_hash_made_at_another_cost_is_remade_at_the_configured_one_on_sign_in(
    server: ServerProcess, service_env: dict[str, str], db: asyncpg.Connection
) -> None:
    run_api = ApiClient(server.url)  # the run's API, at the run's cost
    _, user = await run_api.register()
    _, racer = await run_api.register()
    quick = tuple(
        int(QUICK_PASSWORD_COST[f"PROOFLOOP_PASSWORD_HASH_{k}"]) for k in ("TIME_COST", "MEMORY_KIB")
    )
    assert await stored_cost(db, user["email"]) == quick

    with ServerProcess({**service_env, **DEFAULT_PASSWORD_COST}, port=free_port()) as default_cost:
        api = ApiClient(default_cost.url)
        with pytest.raises(GraphQLFailure) as wrong:
            await api.execute(LOGIN, {"e": user["email"], "p": "not the password at all"})
        assert wrong.value.code == "UNAUTHENTICATED"
        assert await stored_cost(db, user["email"]) == quick  # a wrong password remakes nothing

        assert (await api.execute(LOGIN, {"e": user["email"], "p": PASSWORD}))["login"]["token"]
        assert await stored_cost(db, user["email"]) == (3, 64 * 1024)
        # the remade hash holds the same password
        assert (await api.execute(LOGIN, {"e": user["email"], "p": PASSWORD}))["login"]["token"]
        _, newcomer = await api.register()
        assert await stored_cost(db, newcomer["email"]) == (3, 64 * 1024)

        # concurrent sign-ins each remake the hash; whichever is stored holds the password
        logins = await asyncio.gather(
            *(api.execute(LOGIN, {"e": racer["email"], "p": PASSWORD}, timeout=60) for _ in range(6))
        )
        assert all(login["login"]["token"] for login in logins)
        assert await stored_cost(db, racer["email"]) == (3, 64 * 1024)
        assert (await api.execute(LOGIN, {"e": racer["email"], "p": PASSWORD}))["login"]["token"]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("field", "value"), [("password_hash_time_cost", 0), ("password_hash_memory_kib", 7)]
)
def test_a_cost_below_argon2s_floor_is_refused(field: str, value: int) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings.model_validate({field: value})
    assert field in str(refused.value)
