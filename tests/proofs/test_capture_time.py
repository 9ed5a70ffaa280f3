"""Capture time as evidence, through the real API: a photo's EXIF capture time (with its offset tag, else
in the task's zone) and a video's creation time are shown on the proof with where they were read; a task
may require one, and dropping that requirement waits out the commitment horizon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from harness import media_factory
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    create_open_task,
    file_var,
    open_schedule,
    partner_pair,
    upload,
)

PROOF = "id status reason capturedAt captureTimeSource instance { status }"
SUBMIT_PHOTO = f"mutation($id: ID!, $f: Upload!) {{ submitPhoto(instanceId: $id, photo: $f) {{ {PROOF} }} }}"
SUBMIT_VIDEO = f"mutation($id: ID!, $f: Upload!) {{ submitVideo(instanceId: $id, video: $f) {{ {PROOF} }} }}"
BERLIN = "Europe/Berlin"
TASK = """query($id: ID!) { task(id: $id) { photo { requireCaptureTime } video { requireCaptureTime }
  pendingChange { requireCaptureTime } } }"""
UPDATE = "mutation($id: ID!, $in: UpdateTaskInput!) { updateTask(id: $id, input: $in) { id } }"


async def submit(api: ApiClient, token: str, document: str, instance_id: str, data: bytes) -> dict[str, Any]:
    result = await upload(api, document, {"id": instance_id, "f": file_var(data)}, token=token)
    proof: dict[str, Any] = next(iter(result.values()))
    return proof


def berlin_schedule() -> dict[str, Any]:
    return {**open_schedule(), "timezone": BERLIN}


async def test_a_photos_capture_time_is_shown_with_where_it_was_read(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)  # the owner's own zone is UTC; the task's is Berlin
    taken = (datetime.now(UTC) - timedelta(minutes=10)).replace(microsecond=0)
    wall_in_berlin = taken.astimezone(ZoneInfo(BERLIN)).replace(tzinfo=None)
    cases = [
        (media_factory.photo_with_exif(31, taken=taken.replace(tzinfo=None), offset="+00:00"), "EXIF_OFFSET"),
        # no offset tag: the wall time is read in the task's zone (in the owner's, UTC, it would be an
        # hour or two after the request and so CAPTURED_OUTSIDE_WINDOW)
        (media_factory.photo_with_exif(32, taken=wall_in_berlin), "EXIF_TASK_ZONE"),
    ]
    for data, source in cases:
        _, instance_id = await create_open_task(api, owner, "PHOTO", berlin_schedule())
        proof = await submit(api, owner, SUBMIT_PHOTO, instance_id, data)
        assert (proof["status"], proof["captureTimeSource"]) == ("ACCEPTED", source), proof
        assert datetime.fromisoformat(proof["capturedAt"]) == taken
        seen = await api.execute(
            "query($id: ID!) { instance(id: $id) { verifications { capturedAt captureTimeSource } } }",
            {"id": instance_id},
            token=partner,
        )
        assert seen["instance"]["verifications"][0]["captureTimeSource"] == source  # partners see it too

    _, instance_id = await create_open_task(api, owner, "PHOTO", berlin_schedule())
    bare = await submit(api, owner, SUBMIT_PHOTO, instance_id, media_factory.photo(33, fmt="PNG"))
    assert (bare["status"], bare["capturedAt"], bare["captureTimeSource"]) == ("ACCEPTED", None, "ABSENT")


async def test_a_task_that_requires_a_capture_time_rejects_a_file_without_one(api: ApiClient) -> None:
    token, _ = await api.register()
    task_id, instance_id = await create_open_task(
        api, token, "PHOTO", berlin_schedule(), photo={"requireCaptureTime": True}
    )
    assert (await api.execute(TASK, {"id": task_id}, token=token))["task"]["photo"] == {
        "requireCaptureTime": True
    }
    for data in (media_factory.photo(41), media_factory.photo(42, fmt="PNG")):
        refused = await submit(api, token, SUBMIT_PHOTO, instance_id, data)
        assert (refused["status"], refused["reason"], refused["captureTimeSource"]) == (
            "REJECTED",
            "NO_CAPTURE_TIME",
            "ABSENT",
        )
        assert refused["instance"]["status"] == "PENDING"
    taken = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=5)
    kept = await submit(
        api, token, SUBMIT_PHOTO, instance_id, media_factory.photo_with_exif(43, taken=taken, offset="+00:00")
    )
    assert (kept["status"], kept["instance"]["status"]) == ("ACCEPTED", "VERIFIED")


async def test_a_videos_creation_time_is_its_capture_time(api: ApiClient) -> None:
    token, _ = await api.register()
    video_rule = {"minDurationSeconds": 1, "requireCaptureTime": True}
    _, instance_id = await create_open_task(api, token, "VIDEO", video=video_rule)
    refused = await submit(api, token, SUBMIT_VIDEO, instance_id, media_factory.clip(1.5, seed=51))
    assert (refused["status"], refused["reason"]) == ("REJECTED", "NO_CAPTURE_TIME")
    created = (datetime.now(UTC) - timedelta(minutes=3)).replace(microsecond=0)
    stamped = media_factory.clip(1.5, seed=52, creation_time=created.strftime("%Y-%m-%dT%H:%M:%S.000000Z"))
    proof = await submit(api, token, SUBMIT_VIDEO, instance_id, stamped)
    assert (proof["status"], proof["captureTimeSource"]) == ("ACCEPTED", "CONTAINER"), proof
    assert datetime.fromisoformat(proof["capturedAt"]) == created


async def test_dropping_the_requirement_waits_and_adding_it_applies_at_once(api: ApiClient) -> None:
    token, _ = await api.register()
    task_id, _ = await create_open_task(api, token, "PHOTO", berlin_schedule())
    await api.execute("mutation { setCommitmentHorizon(days: 2) { id } }", token=token)
    await api.execute(UPDATE, {"id": task_id, "in": {"photo": {"requireCaptureTime": True}}}, token=token)
    task = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    assert (task["photo"], task["pendingChange"]) == ({"requireCaptureTime": True}, None)

    await api.execute(UPDATE, {"id": task_id, "in": {"photo": {"requireCaptureTime": False}}}, token=token)
    task = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    assert task["photo"] == {"requireCaptureTime": True}
    assert task["pendingChange"] == {"requireCaptureTime": False}

    await api.execute(UPDATE, {"id": task_id, "in": {"photo": {"requireCaptureTime": True}}}, token=token)
    assert (await api.execute(TASK, {"id": task_id}, token=token))["task"]["pendingChange"] is None

    gps_task, _ = await create_open_task(api, token, "GPS")
    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(
            UPDATE, {"id": gps_task, "in": {"photo": {"requireCaptureTime": True}}}, token=token
        )
    assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "input.photo")
