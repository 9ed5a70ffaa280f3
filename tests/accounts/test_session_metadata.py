"""Sessions list the device name given at sign-in, the sign-in's user agent and when each was last used (a
write at most once a minute per session, not one per request)."""

from __future__ import annotations

import uuid
from datetime import datetime

import asyncpg
import pytest

from harness.proofloop import ApiClient, GraphQLFailure, row_key

SESSIONS = "{ sessions { id current deviceName userAgent createdAt lastUsedAt } }"
LOGIN = """mutation($e: String!, $p: String!, $d: String) {
  login(email: $e, password: $p, deviceName: $d) { token } }"""
REGISTER = """mutation($e: String!, $p: String!, $d: String) {
  register(email: $e, password: $p, displayName: "Sessions", deviceName: $d) { token } }"""
PASSWORD = "correct horse battery"


async def test_sessions_show_device_name_user_agent_and_last_use(api: ApiClient) -> None:
    email = f"sessions-{uuid.uuid4().hex[:8]}@example.com"
    phone_agent = {"User-Agent": "Proofloop-iOS/3.1 (iPhone; iOS 19.1)"}
    registered = await api.execute(
        REGISTER, {"e": email, "p": PASSWORD, "d": "  Ana's phone "}, headers=phone_agent
    )
    phone = registered["register"]["token"]
    laptop = (await api.execute(LOGIN, {"e": email, "p": PASSWORD}, headers={"User-Agent": "Firefox/150"}))[
        "login"
    ]["token"]

    sessions = (await api.execute(SESSIONS, token=phone))["sessions"]
    by_device = {s["deviceName"]: s for s in sessions}
    assert set(by_device) == {"Ana's phone", None}
    assert by_device["Ana's phone"]["userAgent"] == phone_agent["User-Agent"]
    assert by_device["Ana's phone"]["current"] is True
    assert by_device[None]["userAgent"] == "Firefox/150"
    assert by_device[None]["current"] is False
    # signing in counts as a use; a use within the minute writes nothing new
    assert all(session["lastUsedAt"] for session in sessions)
    again = (await api.execute(SESSIONS, token=laptop))["sessions"]
    assert {s["id"]: s["lastUsedAt"] for s in again} == {s["id"]: s["lastUsedAt"] for s in sessions}


async def test_a_device_name_over_100_characters_is_refused(api: ApiClient) -> None:
    email = f"sessions-{uuid.uuid4().hex[:8]}@example.com"
    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(REGISTER, {"e": email, "p": PASSWORD, "d": "x" * 101})
    assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "deviceName")
    for bad in ("nul\x00", "x" * 101):
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(LOGIN, {"e": email, "p": PASSWORD, "d": bad})
        assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "deviceName")


async def test_a_long_user_agent_is_cut_to_fit(api: ApiClient) -> None:
    email = f"sessions-{uuid.uuid4().hex[:8]}@example.com"
    agent = "Mozilla/5.0 " + "x" * 400
    token = (await api.execute(REGISTER, {"e": email, "p": PASSWORD}, headers={"User-Agent": agent}))[
        "register"
    ]["token"]
    (session,) = (await api.execute(SESSIONS, token=token))["sessions"]
    assert session["userAgent"] == agent[:256]
    assert session["deviceName"] is None


async def test_a_use_after_the_minute_moves_last_used(api: ApiClient, database_url: str) -> None:
    token, _ = await api.register()
    (session,) = (await api.execute(SESSIONS, token=token))["sessions"]
    conn = await asyncpg.connect(database_url)
    try:  # as if its last request were two minutes ago
        await conn.execute(
            "UPDATE auth_tokens SET last_used_at = now() - interval '2 minutes' WHERE id = $1",
            uuid.UUID(row_key(session["id"])),
        )
        stale = await conn.fetchval(
            "SELECT last_used_at FROM auth_tokens WHERE id = $1", uuid.UUID(row_key(session["id"]))
        )
    finally:
        await conn.close()
    (used,) = (await api.execute(SESSIONS, token=token))["sessions"]
    assert datetime.fromisoformat(used["lastUsedAt"]) > stale
