"""Media in an S3 bucket (moto's real S3-protocol server), behind two API processes that share nothing on
disk: a photo stored through one is served by the other, refused and losing proofs leave nothing in the
bucket, account deletion and the orphan sweep empty it, and a store that does not answer costs a bounded
SERVICE_UNAVAILABLE while the API keeps answering."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import socket
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from harness import media_factory
from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.object_store import MotoServer
from harness.private_services import PrivateRedis
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    free_port,
    local_http,
    migrated_database,
    row_key,
)
from rules.photo import inspect_photo
from storage import blob_key
from tests.support.proofs_media import submit_photo

PASSWORD = "correct horse battery"  # ApiClient.register's
ORPHAN_AGE_SECONDS = 3


class Deployment:
    def __init__(self, env: dict[str, str], moto: MotoServer, bucket: str) -> None:
        self.env, self.moto, self.bucket = env, moto, bucket

    def objects(self) -> set[str]:
        return set(self.moto.keys(self.bucket))


@pytest.fixture(scope="module")
def deployment(service_env: dict[str, str], moto: MotoServer) -> Iterator[Deployment]:
    """A database and a Redis of its own (its worker must not take the run's messages), media in a bucket."""
    bucket = moto.new_bucket()
    with PrivateRedis() as redis_server, migrated_database("proofloop_s3") as url:
        env = {
            **service_env,
            "PROOFLOOP_DATABASE_URL": url,
            "PROOFLOOP_REDIS_URL": redis_server.url,
            "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),
            "PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS": "2",
            **moto.env(bucket),
        }
        yield Deployment(env, moto, bucket)


def own_data_dir(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory, name: str) -> dict[str, str]:
    return {**env, "PROOFLOOP_DATA_DIR": str(tmp_path_factory.mktemp(name))}


@pytest.fixture(scope="module")
def first(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The API that sweeps the bucket for orphans."""
    env = own_data_dir(deployment.env, tmp_path_factory, "s3-first")
    env |= {
        "PROOFLOOP_MEDIA_SWEEP_SECONDS": "0.5",
        "PROOFLOOP_MEDIA_ORPHAN_AGE_SECONDS": str(ORPHAN_AGE_SECONDS),
    }
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def second(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = own_data_dir(deployment.env, tmp_path_factory, "s3-second")
    with ServerProcess({**env, "PROOFLOOP_MEDIA_SWEEP_SECONDS": "0"}, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def worker(
    deployment: Deployment, first: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    with WorkerProcess(own_data_dir(deployment.env, tmp_path_factory, "s3-worker")) as proc:
        yield proc


def media_files(server: ServerProcess) -> list[Path]:
    root = Path(server.env["PROOFLOOP_DATA_DIR"]) / "media"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def kept_keys(photo: bytes) -> set[str]:
    facts = inspect_photo(photo, zone="UTC")
    return {key_of(blob) for blob in (facts.clean, facts.thumbnail)}


def key_of(blob: bytes) -> str:
    """The object's key in the bucket: the store's prefix, then the blob's name."""
    return f"media/{blob_key(hashlib.sha256(blob).hexdigest())}"


async def get(server: ServerProcess, url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """`url` asked of `server`, whichever API's address the link carries (links are absolute)."""
    parts = urlsplit(url)
    async with local_http(base_url=server.url, timeout=10) as client:
        return await client.get(f"{parts.path}?{parts.query}" if parts.query else parts.path, headers=headers)


async def test_a_photo_stored_through_one_api_is_served_by_the_other(
    deployment: Deployment, first: ServerProcess, second: ServerProcess
) -> None:
    api = ApiClient(first.url)
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    photo = media_factory.photo_with_exif(301, gps=(52.52, 13.405))
    proof = await submit_photo(api, token, instance_id, photo)
    assert proof["status"] == "ACCEPTED"
    assert kept_keys(photo) <= deployment.objects()

    for url in (proof["mediaUrl"], proof["thumbnailUrl"]):
        served = await get(second, url)
        assert served.status_code == 200, served.text
        assert served.headers["content-type"] == "image/jpeg"
        assert served.headers["x-content-type-options"] == "nosniff"
        assert int(served.headers["content-length"]) == len(served.content)
        assert key_of(served.content) in deployment.objects()
        assert served.content == (await get(first, url)).content
    plain = f"/media/{proof['id']}"
    assert (await get(second, plain, {"Authorization": f"Bearer {token}"})).status_code == 200
    assert (await get(second, plain)).status_code == 404  # the access rule runs on every read
    assert media_files(first) == media_files(second) == []  # nothing of it on either host's disk


async def test_refused_and_losing_proofs_leave_nothing_in_the_bucket(
    deployment: Deployment, first: ServerProcess, second: ServerProcess
) -> None:
    api = ApiClient(first.url)
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    before = deployment.objects()
    with pytest.raises(GraphQLFailure) as failure:
        await submit_photo(api, token, instance_id, b"this is not an image")
    assert failure.value.code == "BAD_USER_INPUT"
    old = media_factory.photo_with_exif(311, taken=datetime.now(UTC) - timedelta(days=3), offset="+00:00")
    rejected = await submit_photo(api, token, instance_id, old)
    assert (rejected["status"], rejected["reason"]) == ("REJECTED", "CAPTURED_OUTSIDE_WINDOW")
    assert deployment.objects() == before

    # three proofs of one instance at once, through both APIs: one wins, the losers' objects are removed
    photos = [media_factory.photo(320 + i, size=(800, 600)) for i in range(3)]

    async def send(server: ServerProcess, data: bytes) -> str:
        try:
            return str((await submit_photo(ApiClient(server.url), token, instance_id, data))["status"])
        except GraphQLFailure as failure:
            return failure.code

    outcomes = await asyncio.gather(
        *(send(s, p) for s, p in zip((first, second, first), photos, strict=True))
    )
    assert sorted(outcomes) == ["ACCEPTED", "CONFLICT", "CONFLICT"], outcomes
    assert deployment.objects() - before == kept_keys(photos[outcomes.index("ACCEPTED")])


async def test_account_deletion_removes_the_users_objects(
    deployment: Deployment, first: ServerProcess, second: ServerProcess, worker: WorkerProcess
) -> None:
    api = ApiClient(second.url)
    token, _ = await api.register()
    other_token, _ = await api.register()
    mine, theirs = media_factory.photo(331), media_factory.photo(332)
    for owner, photo in ((token, mine), (other_token, theirs)):
        _, instance_id = await create_open_task(api, owner, "PHOTO")
        assert (await submit_photo(api, owner, instance_id, photo))["status"] == "ACCEPTED"
    assert kept_keys(mine) | kept_keys(theirs) <= deployment.objects()
    delete = "mutation($p: String!) { requestAccountDeletion(password: $p) { id } }"
    await api.execute(delete, {"p": PASSWORD}, token=token)

    async def removed() -> bool:
        return not kept_keys(mine) & deployment.objects()

    await eventually(removed, 30, "the worker deletes the account and its objects once the grace has passed")
    assert kept_keys(theirs) <= deployment.objects()


async def test_an_export_built_by_the_worker_is_served_by_either_api_from_the_bucket(
    deployment: Deployment,
    first: ServerProcess,
    second: ServerProcess,
    worker: WorkerProcess,
    mailbox: Mailbox,
) -> None:
    async with ApiClient(second.url, mailbox) as api:
        token, user = await api.register_verified()
        _, instance_id = await create_open_task(api, token, "PHOTO")
        proof = await submit_photo(api, token, instance_id, media_factory.photo(351))
        assert proof["status"] == "ACCEPTED"
        await api.execute("mutation { requestDataExport { id } }", token=token)
        mail = await mailbox.wait_for(user["email"], "Your Proofloop data export is ready")
    body = mail.get_body(preferencelist=("plain",))
    assert body is not None
    found = re.search(r"(/exports/([0-9a-f-]+)\?token=[A-Za-z0-9_\-]+)", str(body.get_content()))
    assert found, body.get_content()
    link, export_id = found.groups()
    assert f"media/exports/{export_id}.zip" in deployment.objects()

    photo_copy = (await get(second, proof["mediaUrl"])).content
    for server in (first, second):
        served = await get(server, link)
        assert served.status_code == 200
        assert served.headers["content-type"] == "application/zip"
        assert served.headers["cache-control"] == "no-store"
        assert int(served.headers["content-length"]) == len(served.content)
        archive = zipfile.ZipFile(io.BytesIO(served.content))
        assert archive.read(f"media/{row_key(proof['id'])}.jpg") == photo_copy
    for process in (first, second, worker):  # built on the worker's disk, kept only in the bucket
        exports = Path(process.env["PROOFLOOP_DATA_DIR"]) / "exports"
        assert not exports.exists() or list(exports.iterdir()) == []

    connection = await asyncpg.connect(deployment.env["PROOFLOOP_DATABASE_URL"])
    try:
        await connection.execute(
            "UPDATE data_exports SET expires_at = now() - interval '1 second' WHERE id = $1::uuid", export_id
        )
    finally:
        await connection.close()

    async def swept() -> bool:
        return f"media/exports/{export_id}.zip" not in deployment.objects()

    await eventually(swept, 30, "the workers' sweep removes the expired archive from the bucket")
    assert (await get(first, link)).status_code == 404


async def test_the_sweep_removes_orphaned_objects_only(deployment: Deployment, first: ServerProcess) -> None:
    api = ApiClient(first.url)
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    photo = media_factory.photo(341)
    assert (await submit_photo(api, token, instance_id, photo))["status"] == "ACCEPTED"
    store = deployment.moto.blob_store(deployment.bucket)
    orphan, _ = await store.put(b"a clean copy whose row never committed")
    started = time.monotonic()

    async def swept() -> bool:
        return not await store.exists(orphan)

    await eventually(swept, 30, "the API's sweep removes an object no proof refers to")
    assert time.monotonic() - started >= ORPHAN_AGE_SECONDS - 1  # never while it may be a proof in flight
    assert kept_keys(photo) <= deployment.objects()


@pytest.fixture(scope="module")
def stalled(deployment: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """An API on the same database whose media store accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        silent = f"s3://{deployment.bucket}/media?endpoint=http://127.0.0.1:{listener.getsockname()[1]}"
        env = own_data_dir(deployment.env, tmp_path_factory, "s3-stalled")
        env |= {"PROOFLOOP_MEDIA_STORE_URL": silent, "PROOFLOOP_MEDIA_STORE_TIMEOUT_SECONDS": "1"}
        with ServerProcess(env, port=free_port()) as proc:
            yield proc


async def test_a_store_that_does_not_answer_is_a_bounded_service_unavailable(
    first: ServerProcess, stalled: ServerProcess
) -> None:
    token, _ = await ApiClient(first.url).register()
    _, instance_id = await create_open_task(ApiClient(first.url), token, "PHOTO")
    stored = await submit_photo(ApiClient(first.url), token, instance_id, media_factory.photo(351))

    _, other_instance = await create_open_task(ApiClient(stalled.url), token, "PHOTO")
    started = time.monotonic()
    with pytest.raises(GraphQLFailure) as failure:
        await submit_photo(ApiClient(stalled.url), token, other_instance, media_factory.photo(352))
    assert failure.value.code == "SERVICE_UNAVAILABLE"
    assert "media store" in failure.value.message
    served = await get(stalled, stored["mediaUrl"])
    assert (served.status_code, served.headers["retry-after"]) == (503, "1")
    assert time.monotonic() - started < 8  # two calls of at most a second each, plus a decode
    assert (await get(stalled, "/healthz")).status_code == 200
    log = stalled.log()
    assert log.count("media store unreachable") == 1  # one line for the outage, no traceback per request
    assert "Traceback" not in log
