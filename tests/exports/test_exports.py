"""Data exports through the real API, worker and mail: an archive of everything of the user's, its media,
no secret in it, a link mailed to a verified address that works once it exists and not after it expires,
the same 404 for every wrong link, and a per-day budget that concurrent requests cannot pass."""

from __future__ import annotations

import asyncio
import io
import json
import re
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
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
    row_key,
    upload,
)
from tests.support.integrations import activity, connected_task
from tests.support.reminders import receiving

PER_DAY = 2
REQUEST = "mutation { requestDataExport { id status requestedAt readyAt expiresAt sizeBytes } }"
EXPORTS = "query { dataExports { id status readyAt expiresAt sizeBytes byteSize downloadUrl } }"
SUBJECT = "Your Proofloop data export is ready"
LINK = re.compile(r"(/exports/[0-9a-f-]+\?token=[A-Za-z0-9_\-]+)")
WEBHOOK = """mutation($url: String!, $secret: String!) {
  registerWebhook(input: {url: $url, secret: $secret, eventTypes: [MISSED]}) { webhook { id } } }"""
CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 10) { id status }
}"""
PHOTO = "mutation($id: ID!, $photo: Upload!) { submitPhoto(instanceId: $id, photo: $photo) { id status } }"
INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }"
HOOK_SECRET = "a webhook secret nobody may read back"


@pytest.fixture(scope="module")
def env(service_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A database and Redis of their own: webhooks to this machine, and a budget of its own."""
    with local_receivers_env(
        service_env, "proofloop_exports", {"PROOFLOOP_EXPORTS_PER_DAY": str(PER_DAY)}
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


async def download(server: ServerProcess, path: str) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as session, session.get(f"{server.url}{path}") as answer:
        return answer.status, await answer.read()


async def mailed_link(mailbox: Mailbox, email: str, count: int = 1) -> str:
    mail = await mailbox.wait_for(email, SUBJECT, count=count)
    body = mail.get_body(preferencelist=("plain",))
    assert body is not None
    found = LINK.search(str(body.get_content()))
    assert found, body.get_content()
    return found.group(1)


async def test_an_export_holds_everything_of_the_users_and_no_secret(
    api: ApiClient, api_server: ServerProcess, mailbox: Mailbox, env: dict[str, str]
) -> None:
    token, user = await api.register_verified()
    partner, partner_user = await api.register_verified()
    invite = await api.execute(INVITE, {"e": partner_user["email"]}, token=token)
    await api.execute(ACCEPT, {"id": invite["invitePartner"]["id"]}, token=partner)
    _, gps_instance = await create_open_task(api, token, "GPS")
    checked = (await api.execute(CHECK_IN, {"id": gps_instance}, token=token))["checkIn"]
    _, photo_instance = await create_open_task(api, token, "PHOTO")
    image = photo(7)
    proved = (await upload(api, PHOTO, {"id": photo_instance, "photo": file_var(image)}, token=token))[
        "submitPhoto"
    ]
    assert proved["status"] == "ACCEPTED"
    run_task, _, sender = await connected_task(api, api_server, token)
    event = activity()
    ran = await sender.send(event)
    assert ran.status_code == 200, ran.text
    integration_key = sender.url.rsplit("/", 2)[1]  # /integrations/{key}/events
    with receiving() as receiver:
        await api.execute(WEBHOOK, {"url": receiver.url, "secret": HOOK_SECRET}, token=token)

    requested = (await api.execute(REQUEST, token=token))["requestDataExport"]
    assert (requested["status"], requested["readyAt"], requested["expiresAt"]) == ("PENDING", None, None)
    path = await mailed_link(mailbox, user["email"])
    status, body = await download(api_server, path)
    assert status == 200
    listed = (await api.execute(EXPORTS, token=token))["dataExports"]
    assert listed[0]["status"] == "READY" and listed[0]["sizeBytes"] == len(body) == listed[0]["byteSize"]
    # the owner's signed link: absolute, the same on every read this period, the same archive
    signed = listed[0]["downloadUrl"]
    assert signed.startswith(f"{api_server.url}/exports/")
    assert (await api.execute(EXPORTS, token=token))["dataExports"][0]["downloadUrl"] == signed
    assert await download(api_server, signed.removeprefix(api_server.url)) == (200, body)
    forged = signed.replace(f"viewer={row_key(user['id'])}", f"viewer={row_key(partner_user['id'])}")
    assert forged != signed and (await download(api_server, forged.removeprefix(api_server.url)))[0] == 404

    archive = zipfile.ZipFile(io.BytesIO(body))
    document = json.loads(archive.read("proofloop-export.json"))
    assert document["account"]["email"] == user["email"]
    assert {t["title"] for t in document["tasks"]} == {"Gps task", "Photo task", "Integration task"}
    [run] = [t for t in document["tasks"] if t["id"] == row_key(run_task)]
    assert run["activity_rule"] == {
        "activity_types": ["run", "trail run"],
        "min_duration_seconds": 600.0,
        "min_distance_meters": 3000.0,
    }
    [recorded] = document["integrationEvents"]
    assert (recorded["task_id"], recorded["external_id"]) == (run["id"], event["id"])
    assert recorded["verification_id"] == row_key(ran.json()["data"]["verification"]["id"])
    assert {str(v["id"]) for v in document["verifications"]} >= {
        row_key(checked["id"]),
        row_key(proved["id"]),
    }
    assert any(v["latitude"] == 52.52 for v in document["verifications"])  # the owner's own location
    assert {e["type"] for e in document["events"]} >= {"PROOF_SUBMITTED", "VERIFIED"}
    assert len(document["partnerships"]) == 1 and document["partnerships"][0]["status"] == "ACTIVE"
    assert document["webhooks"][0]["event_types"] == "MISSED"
    assert len(document["instances"]) >= 2 and document["sessions"]
    media = [name for name in archive.namelist() if name.startswith("media/")]
    assert f"media/{row_key(proved['id'])}.jpg" in media and len(media) == 2  # the copy and its thumbnail

    # nothing that signs in, signs webhook bodies or integration events, or downloads again
    connection = await asyncpg.connect(env["PROOFLOOP_DATABASE_URL"])
    try:
        secrets = await connection.fetchrow(
            "SELECT u.password_hash, (SELECT digest FROM auth_tokens WHERE user_id = u.id LIMIT 1) AS digest,"
            " (SELECT token_digest FROM data_exports WHERE user_id = u.id LIMIT 1) AS export_digest"
            " FROM users u WHERE u.email = $1",
            user["email"],
        )
    finally:
        await connection.close()
    everything = b"".join(archive.read(name) for name in archive.namelist() if not name.startswith("media/"))
    for secret in (HOOK_SECRET, secrets["password_hash"], secrets["digest"], secrets["export_digest"]):
        assert secret is not None and secret.encode() not in everything
    assert "password_hash" not in document["account"] and "secret" not in document["webhooks"][0]
    whole = b"".join(archive.read(name) for name in archive.namelist())
    for secret in (sender.secret, integration_key):
        assert secret.encode() not in whole and secret.encode() not in body

    # the mailed link names the export by its bare key; the API's id (DataExport.id) names it as well
    export_key, mailed_token = path.split("/exports/", 1)[1].split("?token=", 1)
    by_global_id = f"/exports/{listed[0]['id']}?token={mailed_token}"
    assert listed[0]["id"] != export_key and await download(api_server, by_global_id) == (200, body)
    # a new password ends every credential of the account: the mailed link and the signed one
    change = """mutation($c: String!, $n: String!) {
      passwordChange(input: {currentPassword: $c, newPassword: $n}) { token userErrors { message } }
    }"""
    changed = await api.execute(
        change, {"c": "correct horse battery", "n": "a brand new password"}, token=token
    )
    assert changed["passwordChange"]["userErrors"] == []
    assert (await download(api_server, path))[0] == 404
    assert (await download(api_server, signed.removeprefix(api_server.url)))[0] == 404


async def test_every_wrong_or_expired_link_is_the_same_404(
    api: ApiClient, api_server: ServerProcess, mailbox: Mailbox, env: dict[str, str]
) -> None:
    token, user = await api.register_verified()
    await api.execute(REQUEST, token=token)
    path = await mailed_link(mailbox, user["email"])
    export_path, _, secret = path.partition("?token=")
    other = "00000000-0000-4000-8000-000000000000"
    wrong = [
        f"{export_path}?token={secret[:-1]}{'A' if secret[-1] != 'A' else 'B'}",  # one character off
        f"{export_path}?token=",
        f"{export_path}",
        f"{export_path}?token={'x' * 10_000}",
        f"/exports/{other}?token={secret}",  # another id with this token
        f"/exports/not-a-uuid?token={secret}",
    ]
    for bad in wrong:
        assert (await download(api_server, bad))[0] == 404, bad
    assert (await download(api_server, path))[0] == 200
    archive = Path(env["PROOFLOOP_DATA_DIR"]) / "exports" / f"{export_path.removeprefix('/exports/')}.zip"
    assert archive.is_file()
    # its life ends: the same link answers 404, and the sweep removes the archive
    connection = await asyncpg.connect(env["PROOFLOOP_DATABASE_URL"])
    try:
        await connection.execute(
            "UPDATE data_exports SET expires_at = now() - interval '1 second' WHERE id = $1::uuid",
            export_path.removeprefix("/exports/"),
        )
    finally:
        await connection.close()
    assert (await download(api_server, path))[0] == 404

    async def swept() -> bool:
        listed = (await api.execute(EXPORTS, token=token))["dataExports"]
        return bool(listed[0]["status"] == "EXPIRED")

    await eventually(swept, 30, "the workers' sweep (PROOFLOOP_MAIL_SWEEP_SECONDS) expires the export")
    assert not archive.exists()


async def test_an_unverified_address_gets_no_export(api: ApiClient) -> None:
    token, _ = await api.register()
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(REQUEST, token=token)
    assert failure.value.code == "FORBIDDEN"
    assert (await api.execute(EXPORTS, token=token))["dataExports"] == []
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(REQUEST)
    assert failure.value.code == "UNAUTHENTICATED"


async def test_concurrent_requests_never_pass_the_daily_budget(api: ApiClient) -> None:
    token, _ = await api.register_verified()
    answers: list[Any] = await asyncio.gather(
        *(api.execute(REQUEST, token=token) for _ in range(8)), return_exceptions=True
    )
    refused = [a for a in answers if isinstance(a, GraphQLFailure)]
    assert len(answers) - len(refused) == PER_DAY
    assert {r.code for r in refused} == {"RATE_LIMITED"}
    assert "PROOFLOOP_EXPORTS_PER_DAY" in refused[0].message
    assert len((await api.execute(EXPORTS, token=token))["dataExports"]) == PER_DAY
