"""Hostile media through the real HTTP API: each gets its contract code, nothing half-stored stays behind,
and the API process's memory stays under a stated budget."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from harness import media_factory
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    file_var,
    free_port,
    local_http,
    migrated_database,
    open_schedule,
    partner_pair,
    upload,
)
from rules.photo import inspect_photo
from storage import FileBlobStore
from tests.support.backends import Deployment, both_backends
from tests.support.media_budgets import RSS_BUDGET_MB, api_rss_mb
from tests.support.proofs_media import SUBMIT_PHOTO, SUBMIT_VIDEO, VERIFICATIONS, fetch, submit_photo
from tests.support.reviews import request_review

GPS_TEXT = "GPS 52.5200N 13.4050E"


def media_files(data_dir: Path) -> set[Path]:
    root = data_dir / "media"
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def webp_bomb() -> bytes:
    """A lossless 6400x6250 WebP of one colour: about 1.6 KB that Pillow decodes into ~650 MB."""
    out = io.BytesIO()
    Image.new("RGB", (6400, 6250), (10, 20, 30)).save(out, "WEBP", lossless=True)
    return out.getvalue()


async def verifications_of(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    return dict((await api.execute(VERIFICATIONS, {"id": instance_id}, token=token))["instance"])


async def test_ten_upload_aliases_are_refused_before_anything_is_decoded(
    api: ApiClient, data_dir: Path
) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    aliases = " ".join(f"p{i}: submitPhoto(instanceId: $id, photo: $photo) {{ id }}" for i in range(10))
    before = media_files(data_dir)
    with pytest.raises(GraphQLFailure) as failure:
        await upload(
            api,
            f"mutation($id: ID!, $photo: Upload!) {{ {aliases} }}",
            {"id": instance_id, "photo": file_var(media_factory.photo(101))},
            token=token,
        )
    assert failure.value.code == "GRAPHQL_VALIDATION_FAILED"
    assert "at most 1" in failure.value.message
    # through a fragment too
    with pytest.raises(GraphQLFailure) as failure:
        await upload(
            api,
            """mutation($id: ID!, $photo: Upload!) { ...Two }
               fragment Two on Mutation { a: submitPhoto(instanceId: $id, photo: $photo) { id }
                                          b: submitPhoto(instanceId: $id, photo: $photo) { id } }""",
            {"id": instance_id, "photo": file_var(media_factory.photo(101))},
            token=token,
        )
    assert failure.value.code == "GRAPHQL_VALIDATION_FAILED"
    assert await verifications_of(api, token, instance_id) == {"status": "PENDING", "verifications": []}
    assert media_files(data_dir) == before


@both_backends
async def test_webp_bombs_are_refused_from_the_header_within_the_memory_budget(
    api_deployment: Deployment,
) -> None:
    api, server, data_dir = api_deployment.client(), api_deployment.server, api_deployment.data_dir
    bomb = webp_bomb()
    assert len(bomb) < 4096
    token, _ = await api.register()
    instances = [(await create_open_task(api, token, "PHOTO"))[1] for _ in range(4)]
    before = media_files(data_dir)

    async def attack(instance_id: str) -> GraphQLFailure:
        with pytest.raises(GraphQLFailure) as failure:
            await submit_photo(api, token, instance_id, bomb)
        return failure.value

    peak = 0.0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, api_rss_mb(server))
            await asyncio.sleep(0.02)

    watcher = asyncio.create_task(watch())
    try:
        failures = await asyncio.gather(*(attack(i) for i in instances))
    finally:
        watcher.cancel()
    peak = max(peak, api_rss_mb(server))
    assert {(f.code, f.field) for f in failures} == {("BAD_USER_INPUT", "photo")}
    assert "too much memory" in failures[0].message
    assert peak < RSS_BUDGET_MB, f"API RSS peaked at {peak:.0f} MB"
    for instance_id in instances:
        assert await verifications_of(api, token, instance_id) == {"status": "PENDING", "verifications": []}
    assert media_files(data_dir) == before


@pytest.fixture(scope="module")
def video_of_40_megapixels() -> bytes:
    """4 frames of 6400x6240 (39.9 MP, under the photo budget) in about half a megabyte."""
    return media_factory.large_frame_clip((6400, 6240))


@both_backends
async def test_a_40_megapixel_video_is_refused_from_its_header_within_the_memory_budget(
    api_deployment: Deployment, video_of_40_megapixels: bytes
) -> None:
    api, server, data_dir = api_deployment.client(), api_deployment.server, api_deployment.data_dir
    token, _ = await api.register()
    instances = [(await create_open_task(api, token, "VIDEO"))[1] for _ in range(2)]
    before = media_files(data_dir)
    idle = api_rss_mb(server)

    async def attack(instance_id: str) -> GraphQLFailure:
        video = file_var(video_of_40_megapixels, "big.mp4")
        with pytest.raises(GraphQLFailure) as failure:
            await upload(api, SUBMIT_VIDEO, {"id": instance_id, "video": video}, token=token)
        return failure.value

    peak = 0.0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, api_rss_mb(server))
            await asyncio.sleep(0.02)

    watcher = asyncio.create_task(watch())
    try:
        failures = await asyncio.gather(*(attack(i) for i in instances))  # two at once
    finally:
        watcher.cancel()
    peak = max(peak, api_rss_mb(server))
    assert {(f.code, f.field) for f in failures} == {("BAD_USER_INPUT", "video")}
    assert "6400x6240" in failures[0].message and "8294400 pixels" in failures[0].message
    print(f"API RSS {idle:.0f} MB before two 40 MP videos, {peak:.0f} MB at most while they were refused")
    assert peak < RSS_BUDGET_MB, f"API RSS peaked at {peak:.0f} MB"
    for instance_id in instances:
        assert await verifications_of(api, token, instance_id) == {"status": "PENDING", "verifications": []}
    assert media_files(data_dir) == before
    # an ordinary video still passes
    clip = file_var(media_factory.clip(3.0, seed=115), "clip.mp4")
    proof = (await upload(api, SUBMIT_VIDEO, {"id": instances[0], "video": clip}, token=token))["submitVideo"]
    assert (proof["status"], proof["instance"]["status"]) == ("ACCEPTED", "VERIFIED")


async def test_a_4k_video_decodes_and_the_memory_is_given_back(api: ApiClient, server: ServerProcess) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "VIDEO", video={"minDurationSeconds": 1})
    video = media_factory.large_frame_clip((3840, 2160), frames=20, fps=10)
    idle = api_rss_mb(server)
    result = await upload(api, SUBMIT_VIDEO, {"id": instance_id, "video": file_var(video)}, token=token)
    assert result["submitVideo"]["status"] == "ACCEPTED"
    after = api_rss_mb(server)
    print(f"API RSS {idle:.0f} MB before a 4K video, {after:.0f} MB after")
    assert after - idle < 64, f"API RSS {idle:.0f} MB before a 4K video, {after:.0f} MB after"


async def test_outside_the_window_nothing_is_read_decoded_or_stored(api: ApiClient, data_dir: Path) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(
        api, token, "PHOTO", schedule=open_schedule(starts_in_seconds=7200, window_seconds=600)
    )
    before = media_files(data_dir)
    # not even an image: had it been decoded this would be BAD_USER_INPUT
    proof = await submit_photo(api, token, instance_id, b"not an image at all")
    assert (proof["status"], proof["reason"], proof["mediaUrl"]) == ("REJECTED", "OUTSIDE_WINDOW", None)
    assert proof["instance"]["status"] == "PENDING"
    assert media_files(data_dir) == before


async def test_a_patched_matroska_duration_is_too_short_and_its_media_not_kept(
    api: ApiClient, data_dir: Path
) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "VIDEO", video={"minDurationSeconds": 1200})
    patched = media_factory.matroska_with_duration(media_factory.clip(2.0, seed=111), claimed_seconds=1800)
    before = media_files(data_dir)
    result = await upload(
        api, SUBMIT_VIDEO, {"id": instance_id, "video": file_var(patched, "clip.mkv")}, token=token
    )
    proof = result["submitVideo"]
    assert (proof["status"], proof["reason"], proof["mediaUrl"]) == ("REJECTED", "TOO_SHORT", None)
    assert media_files(data_dir) == before  # a rejected proof keeps no media


async def test_sei_user_data_does_not_reach_the_partners_copy(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "VIDEO")
    tagged = media_factory.with_sei(media_factory.clip(3.0, seed=112), GPS_TEXT)
    assert GPS_TEXT.encode() in tagged
    result = await upload(api, SUBMIT_VIDEO, {"id": instance_id, "video": file_var(tagged)}, token=token)
    proof = result["submitVideo"]
    assert proof["status"] == "ACCEPTED"
    served = await fetch(api, proof["mediaUrl"])
    assert served.status_code == 200
    assert GPS_TEXT.encode() not in served.content
    assert b"GPS" not in served.content


@both_backends
async def test_a_failed_thumbnail_write_leaves_no_clean_copy_and_no_row(
    api_deployment: Deployment,
) -> None:
    api, data_dir = api_deployment.client(), api_deployment.data_dir
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    data = media_factory.photo(113)
    facts = inspect_photo(data, zone="UTC")  # the same bytes the server will write
    store_root = data_dir / "media"
    clean_digest = hashlib.sha256(facts.clean).hexdigest()
    thumb_digest = hashlib.sha256(facts.thumbnail).hexdigest()
    thumb_path = store_root / thumb_digest[:2] / thumb_digest[2:4] / thumb_digest
    clean_path = store_root / clean_digest[:2] / clean_digest[2:4] / clean_digest
    thumb_path.mkdir(parents=True)  # a non-empty directory where the thumbnail must go: its write fails
    (thumb_path / "in-the-way").write_bytes(b"")
    try:
        with pytest.raises(GraphQLFailure) as failure:
            await submit_photo(api, token, instance_id, data)
        assert failure.value.code == "INTERNAL_SERVER_ERROR"
        assert not clean_path.exists()
        assert await verifications_of(api, token, instance_id) == {"status": "PENDING", "verifications": []}
    finally:
        (thumb_path / "in-the-way").unlink()
        thumb_path.rmdir()
    retry = await submit_photo(api, token, instance_id, data)  # once the disk behaves, the same photo passes
    assert retry["status"] == "ACCEPTED"
    assert clean_path.is_file() and thumb_path.is_file()


@pytest.fixture(scope="module")
def gate_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """One decode at a time and no queue."""
    env = {**service_env, "PROOFLOOP_MEDIA_DECODE_CONCURRENCY": "1", "PROOFLOOP_MEDIA_DECODE_QUEUE": "0"}
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def quota_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """A storage quota a few small photos fill."""
    with ServerProcess({**service_env, "PROOFLOOP_MEDIA_QUOTA_BYTES": "150000"}, port=free_port()) as proc:
        yield proc


async def test_decodes_beyond_the_gate_are_rate_limited_and_store_nothing(gate_server: ServerProcess) -> None:
    api = ApiClient(gate_server.url)
    uploads = []
    token, _ = await api.register()
    for seed in range(5):
        _, instance_id = await create_open_task(api, token, "PHOTO")
        uploads.append((token, instance_id, media_factory.photo(120 + seed, fmt="PNG", size=(1200, 900))))

    async def send(token: str, instance_id: str, data: bytes) -> str:
        try:
            return str((await submit_photo(api, token, instance_id, data))["status"])
        except GraphQLFailure as failure:
            return failure.code

    outcomes = await asyncio.gather(*(send(*u) for u in uploads))
    assert set(outcomes) <= {"ACCEPTED", "RATE_LIMITED"}, outcomes
    assert "RATE_LIMITED" in outcomes and "ACCEPTED" in outcomes, outcomes
    for (token, instance_id, _), outcome in zip(uploads, outcomes, strict=True):
        rows = (await verifications_of(api, token, instance_id))["verifications"]
        assert len(rows) == (1 if outcome == "ACCEPTED" else 0)


async def test_the_storage_quota_refuses_the_proof_that_would_pass_it(quota_server: ServerProcess) -> None:
    api = ApiClient(quota_server.url)
    token, _ = await api.register()
    accepted = 0
    outcome: GraphQLFailure | None = None
    for seed in range(10):
        _, instance_id = await create_open_task(api, token, "PHOTO")
        try:
            proof = await submit_photo(api, token, instance_id, media_factory.photo(140 + seed))
        except GraphQLFailure as failure:
            outcome = failure
            break
        assert proof["status"] == "ACCEPTED"
        accepted += 1
    assert outcome is not None and outcome.code == "RATE_LIMITED", "the quota never filled"
    assert "storage quota" in outcome.message
    assert accepted >= 1
    assert await verifications_of(api, token, instance_id) == {"status": "PENDING", "verifications": []}


@pytest.fixture(scope="module")
def quiet_server(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """An API on a database of its own with no worker, so no deadline fires while a body trickles in."""
    data_dir = tmp_path_factory.mktemp("arrival-data")
    with migrated_database("proofloop_media_arrival") as url:
        env = {
            "PROOFLOOP_DATABASE_URL": url,
            "PROOFLOOP_REDIS_URL": redis_url,
            "PROOFLOOP_DATA_DIR": str(data_dir),
            "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
            "PROOFLOOP_SECRET_KEY": "test-secret-key",
            # the run's Redis counts every test's registrations from 127.0.0.1: the limit has its own test
            "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "100000",
        }
        with ServerProcess(env, port=free_port()) as proc:
            yield proc


async def test_a_body_trickling_in_across_closes_at_is_judged_at_its_arrival(
    quiet_server: ServerProcess,
) -> None:
    api = ApiClient(quiet_server.url)
    token, _ = await api.register()
    starts = (datetime.now(UTC) + timedelta(seconds=4)).replace(microsecond=0)
    schedule: dict[str, Any] = {"startsAt": starts.isoformat(), "rrule": "FREQ=DAILY", "timezone": "UTC"}
    schedule |= {"windowSeconds": 600, "graceSeconds": 0}
    _, instance_id = await create_open_task(api, token, "PHOTO", schedule=schedule)
    closes_at = starts  # graceSeconds 0

    operations = json.dumps({"query": SUBMIT_PHOTO, "variables": {"id": instance_id, "photo": None}})
    boundary = "trickle-boundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{operations}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{{"0": ["variables.photo"]}}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="0"; filename="p.jpg"\r\n'
        "Content-Type: image/jpeg\r\n\r\n"
    ).encode()
    body = head + media_factory.photo(150) + f"\r\n--{boundary}--\r\n".encode()

    async def trickle() -> AsyncIterator[bytes]:
        yield body[:100]  # the request has arrived, well inside the window
        rest, last = body[100:-64], body[-64:]
        step = len(rest) // 10 + 1
        for start in range(0, len(rest), step):
            await asyncio.sleep(0.1)
            yield rest[start : start + step]
        # the last piece only after closesAt
        await asyncio.sleep((closes_at + timedelta(seconds=1) - datetime.now(UTC)).total_seconds())
        yield last

    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }
    async with local_http(base_url=quiet_server.url, timeout=60) as client:
        response = await client.post("/graphql", content=trickle(), headers=headers)
    assert datetime.now(UTC) > closes_at  # the body did finish after the window closed
    proof = response.json()["data"]["submitPhoto"]
    assert (proof["status"], proof["reason"], proof["instance"]["status"]) == ("ACCEPTED", None, "VERIFIED")


@both_backends
async def test_a_proof_that_loses_the_race_leaves_no_files(
    api_deployment: Deployment,
) -> None:
    api, data_dir = api_deployment.client(), api_deployment.data_dir
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    photos = [media_factory.photo(160 + i, size=(800, 600)) for i in range(3)]
    before = media_files(data_dir)

    async def send(data: bytes) -> str:
        try:
            return str((await submit_photo(api, token, instance_id, data))["status"])
        except GraphQLFailure as failure:
            return failure.code

    outcomes = await asyncio.gather(*(send(p) for p in photos))
    assert sorted(outcomes) == ["ACCEPTED", "CONFLICT", "CONFLICT"], outcomes
    winner = photos[outcomes.index("ACCEPTED")]
    facts = inspect_photo(winner, zone="UTC")
    kept = {hashlib.sha256(blob).hexdigest() for blob in (facts.clean, facts.thumbnail)}
    assert {p.name for p in media_files(data_dir) - before} == kept  # the losers' files are gone
    rows = (await verifications_of(api, token, instance_id))["verifications"]
    assert len(rows) == 1


async def test_a_review_request_that_loses_the_race_leaves_no_files(api: ApiClient, data_dir: Path) -> None:
    owner_token, _, _, _ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    photos = [media_factory.photo(180 + i, size=(800, 600)) for i in range(3)]
    before = media_files(data_dir)

    async def send(data: bytes) -> str:
        try:
            return str((await request_review(api, owner_token, instance_id, photo=data))["status"])
        except GraphQLFailure as failure:
            return failure.code

    outcomes = await asyncio.gather(*(send(p) for p in photos))
    assert sorted(outcomes) == ["CONFLICT", "CONFLICT", "PENDING_REVIEW"], outcomes
    winner = photos[outcomes.index("PENDING_REVIEW")]
    facts = inspect_photo(winner, zone="UTC")
    kept = {hashlib.sha256(blob).hexdigest() for blob in (facts.clean, facts.thumbnail)}
    assert {p.name for p in media_files(data_dir) - before} == kept  # the losers' files are gone


@pytest.fixture(scope="module")
def sweeping_server(
    service_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerProcess, Path]]:
    """An API sweeping its media store twice a second, in a data dir of its own."""
    data_dir = tmp_path_factory.mktemp("sweep-data")
    env = {**service_env, "PROOFLOOP_DATA_DIR": str(data_dir), "PROOFLOOP_MEDIA_SWEEP_SECONDS": "0.5"}
    with ServerProcess(env, port=free_port()) as proc:
        yield proc, data_dir


async def test_files_a_crash_left_without_a_row_are_swept(
    sweeping_server: tuple[ServerProcess, Path],
) -> None:
    server, data_dir = sweeping_server
    api = ApiClient(server.url)
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    assert (await submit_photo(api, token, instance_id, media_factory.photo(170)))["status"] == "ACCEPTED"
    store = FileBlobStore(data_dir / "media")
    referenced = media_files(data_dir)
    orphan = store.path((await store.put(b"a clean copy whose row never committed")).digest)
    half_written = orphan.parent / ".tmp-crashed"
    half_written.write_bytes(b"half")
    hour_ago = datetime.now(UTC).timestamp() - 3600
    for path in (*referenced, orphan, half_written):
        os.utime(path, (hour_ago, hour_ago))
    in_flight = store.path((await store.put(b"a proof being recorded right now")).digest)  # young: kept

    for _ in range(300):
        if not orphan.exists() and not half_written.exists():
            break
        await asyncio.sleep(0.1)
    assert not orphan.exists() and not half_written.exists()
    assert all(path.is_file() for path in referenced)
    assert in_flight.is_file()
    served = await fetch(api, (await verifications_media(api, token, instance_id))["mediaUrl"])
    assert served.status_code == 200


async def verifications_media(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    query = "query($id: ID!) { instance(id: $id) { verifications { mediaUrl } } }"
    return dict((await api.execute(query, {"id": instance_id}, token=token))["instance"]["verifications"][0])
