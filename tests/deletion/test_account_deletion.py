"""Account deletion through the real API, worker, mail and media storage: asked with the password, every
device signed out, a grace period a sign-in cancels, then nothing of the user in any table (a scan of every
row of every table) or in media storage, partners told, and the address free to register again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.media_factory import photo
from harness.private_services import local_receivers_env
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    file_var,
    free_port,
    migrated_database,
    row_key,
    upload,
)
from tests.support.integrations import activity, connected_task
from tests.support.reminders import receiving

GRACE_SECONDS = 6  # long enough for a request and a sign-in on a loaded machine
DELETE = "mutation($p: String!) { requestAccountDeletion(password: $p) { id deletionDueAt } }"
ME = "query { me { id deletionDueAt } }"
PASSWORD = "correct horse battery"  # ApiClient.register's
INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }"
CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 10) { id }
}"""
PHOTO = "mutation($id: ID!, $photo: Upload!) { submitPhoto(instanceId: $id, photo: $photo) { id status } }"
REQUEST_REVIEW = 'mutation($id: ID!) { requestReview(instanceId: $id, note: "done") { id } }'
REVIEW = 'mutation($v: ID!) { review(verificationId: $v, approve: true, comment: "well done") { status } }'
WEBHOOK = """mutation($url: String!, $types: [EventType!]) {
  registerWebhook(input: {url: $url, eventTypes: $types}) { webhook { id } } }"""
EXPORT = "mutation { requestDataExport { id } }"
LOGIN = """mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token user { deletionDueAt } } }"""
REGISTER = """mutation($e: String!, $n: String!) {
  register(email: $e, password: "another long password", displayName: $n) { user { id } } }"""


@pytest.fixture(scope="module")
def env(service_env: dict[str, str]) -> Iterator[dict[str, str]]:
    with local_receivers_env(
        service_env, "proofloop_deletion", {"PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS": str(GRACE_SECONDS)}
    ) as env:
        yield env


@pytest.fixture(scope="module")
def api_server(env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def worker(env: dict[str, str], api_server: ServerProcess) -> Iterator[WorkerProcess]:
    with WorkerProcess(env) as proc:
        yield proc


@pytest.fixture
async def api(api_server: ServerProcess, worker: WorkerProcess, mailbox: Mailbox) -> AsyncIterator[ApiClient]:
    async with ApiClient(api_server.url, mailbox) as client:
        yield client


async def sql(env: dict[str, str], query: str, *args: Any) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(env["PROOFLOOP_DATABASE_URL"])
    try:
        return list(await connection.fetch(query, *args))
    finally:
        await connection.close()


async def rows_naming(env: dict[str, str], needles: list[str]) -> dict[str, int]:
    """For every table, how many rows hold any of `needles` anywhere (each row read whole, as text)."""
    tables = await sql(env, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
    patterns = [f"%{needle}%" for needle in needles]
    found = {}
    for (table,) in tables:
        (count,) = (
            await sql(env, f'SELECT count(*) FROM "{table}" AS t WHERE t::text ILIKE ANY($1)', patterns)
        )[0]
        if count:
            found[table] = count
    return found


async def become_partner(api: ApiClient, owner: str, partner: str, partner_email: str) -> None:
    invite = await api.execute(INVITE, {"e": partner_email}, token=owner)
    await api.execute(ACCEPT, {"id": invite["invitePartner"]["id"]}, token=partner)


async def test_nothing_of_a_deleted_account_is_left_and_its_partners_are_told(
    api: ApiClient, api_server: ServerProcess, env: dict[str, str], mailbox: Mailbox
) -> None:
    name = f"Zelda-{uuid.uuid4().hex[:10]}"
    token, user = await api.register_verified(name)
    watcher, watcher_user = await api.register_verified()  # watches Zelda
    watched, watched_user = await api.register_verified()  # Zelda watches them, and decides their review
    inviter, _ = await api.register()  # invites Zelda's address, never answered
    await become_partner(api, token, watcher, watcher_user["email"])
    await become_partner(api, watched, token, user["email"])
    await api.execute(INVITE, {"e": user["email"]}, token=inviter)

    with receiving() as at_watcher, receiving() as at_zelda:
        await api.execute(WEBHOOK, {"url": at_watcher.url, "types": ["PROOF_SUBMITTED"]}, token=watcher)
        await api.execute(WEBHOOK, {"url": at_zelda.url, "types": ["VERIFIED"]}, token=token)
        _, gps = await create_open_task(api, token, "GPS")
        await api.execute(CHECK_IN, {"id": gps}, token=token)
        _, shot = await create_open_task(api, token, "PHOTO")
        await upload(api, PHOTO, {"id": shot, "photo": file_var(photo(11))}, token=token)
        run_task, _, sender = await connected_task(api, api_server, token)
        event = activity()
        ran = await sender.send(event)
        assert ran.status_code == 200, ran.text
        _, theirs = await create_open_task(api, watched, "PARTNER")
        review = (await api.execute(REQUEST_REVIEW, {"id": theirs}, token=watched))["requestReview"]
        await api.execute(REVIEW, {"v": review["id"]}, token=token)
        await api.execute(EXPORT, token=token)
        await mailbox.wait_for(user["email"], "data export is ready")
        await at_watcher.wait_for(3)  # Zelda's proofs, carried to the watcher's webhook
    user_key = str((await sql(env, "SELECT id FROM users WHERE email = $1", user["email"]))[0]["id"])
    digests = [
        d
        for row in await sql(
            env, "SELECT media_digest, thumbnail_digest FROM verifications WHERE user_id = $1::uuid", user_key
        )
        for d in row
        if d
    ]
    exports = [
        r["id"] for r in await sql(env, "SELECT id FROM data_exports WHERE user_id = $1::uuid", user_key)
    ]
    data_dir = Path(env["PROOFLOOP_DATA_DIR"])
    blobs = [data_dir / "media" / d[:2] / d[2:4] / d for d in digests]
    archives = [data_dir / "exports" / f"{e}.zip" for e in exports]
    assert len(blobs) == 2 and all(b.is_file() for b in blobs) and all(a.is_file() for a in archives)
    # an integration event's row names only its task and what the sender gave it: those are needles too,
    # with the endpoint's key and secret the task holds
    integration = [row_key(run_task), sender.url.rsplit("/", 2)[1], sender.secret, event["id"]]
    needles = [user_key, user["id"], user["email"], name, *integration]
    living = await rows_naming(env, needles)  # the scan finds them while the account lives
    assert {"tasks", "verifications", "integration_events"} <= set(living)
    assert await rows_naming(env, integration[1:3]) == {"tasks": 1}

    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(DELETE, {"p": "not my password at all"}, token=token)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "password")
    asked = datetime.now(UTC)
    scheduled = (await api.execute(DELETE, {"p": PASSWORD}, token=token))["requestAccountDeletion"]
    answered = datetime.now(UTC)
    due = datetime.fromisoformat(scheduled["deletionDueAt"].replace("Z", "+00:00"))
    grace = timedelta(seconds=GRACE_SECONDS)
    # set while the request ran, whatever its length (the clocks of this host and the database's agree)
    assert asked + grace - timedelta(seconds=1) <= due <= answered + grace + timedelta(seconds=1)
    with pytest.raises(GraphQLFailure) as failure:  # every device is signed out at once
        await api.execute(ME, token=token)
    assert failure.value.code == "UNAUTHENTICATED"

    async def gone() -> bool:
        return not await sql(env, "SELECT 1 FROM users WHERE id = $1::uuid", user_key)

    await eventually(gone, 30, "the workers' sweep deletes the account once its grace period has passed")
    for partner_email in (watcher_user["email"], watched_user["email"]):
        told = await mailbox.wait_for(partner_email, "A partnership has ended")
        assert name in str(told.get_body(preferencelist=("plain",)).get_content())  # type: ignore[union-attr]

    async def mail_sent() -> bool:  # sent mail keeps no body: the partners' notice names Zelda until then
        return not await sql(env, "SELECT 1 FROM outgoing_mail WHERE sent_at IS NULL")

    await eventually(mail_sent, 30, "the notices are sent")
    assert await rows_naming(env, needles) == {}
    assert not any(b.exists() for b in blobs) and not any(a.exists() for a in archives)
    # the partners' side: no partnership, no event of Zelda's left
    for viewer in (watcher, watched):
        listed = await api.execute(
            "query { partnerships { id } events(first: 100) { user { id } } }", token=viewer
        )
        assert listed["partnerships"] == []
        assert user["id"] not in {e["user"]["id"] for e in listed["events"]}
    # the address is free again
    again = await api.execute(REGISTER, {"e": user["email"], "n": "Zelda again"})
    assert again["register"]["user"]["id"] != user["id"]


async def test_signing_in_within_the_grace_period_keeps_the_account(api: ApiClient) -> None:
    token, user = await api.register()
    await api.execute(DELETE, {"p": PASSWORD}, token=token)
    signed_in = (await api.execute(LOGIN, {"e": user["email"], "p": PASSWORD}))["login"]
    assert signed_in["user"]["deletionDueAt"] is None
    await asyncio.sleep(GRACE_SECONDS + 2)  # past the first due time, and a sweep or two
    assert (await api.execute(ME, token=signed_in["token"]))["me"] == {
        "id": user["id"],
        "deletionDueAt": None,
    }


async def test_a_deletion_needs_a_sign_in(api: ApiClient) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(DELETE, {"p": PASSWORD})
    assert failure.value.code == "UNAUTHENTICATED"


@pytest.fixture(scope="module")
def unswept_api(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """An API on a database of its own that no worker sweeps: an account stays past its deletion's due time."""
    with migrated_database("proofloop_unswept") as database:
        env = {
            **service_env,
            "PROOFLOOP_DATABASE_URL": database,
            "PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS": "1",
        }
        with ServerProcess(env, port=free_port()) as proc:
            yield proc


async def test_a_sign_in_after_the_due_time_finds_no_account_though_the_sweep_is_late(
    unswept_api: ServerProcess,
) -> None:
    async with ApiClient(unswept_api.url) as api:
        token, user = await api.register()
        due = (await api.execute(DELETE, {"p": PASSWORD}, token=token))["requestAccountDeletion"][
            "deletionDueAt"
        ]
        await asyncio.sleep(1.5)  # past the due time; no sweep runs here
        assert datetime.now(UTC) > datetime.fromisoformat(due)
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(LOGIN, {"e": user["email"], "p": PASSWORD})
        assert (failure.value.code, failure.value.message) == ("UNAUTHENTICATED", "wrong email or password")
        with pytest.raises(GraphQLFailure) as unknown:  # the same answer as for an address with no account
            await api.execute(LOGIN, {"e": f"nobody-{uuid.uuid4().hex[:8]}@example.com", "p": PASSWORD})
        assert unknown.value.message == failure.value.message
    connection = await asyncpg.connect(unswept_api.env["PROOFLOOP_DATABASE_URL"])
    try:
        still_due = await connection.fetchval(
            "SELECT deletion_due_at FROM users WHERE email = $1", user["email"]
        )
    finally:
        await connection.close()
    assert still_due is not None  # the sign-in cancelled nothing: the sweep deletes it when it comes
