"""Photo and video proofs over real HTTP multipart: decoding, the rules, limits, and the served copies."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlparse

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
    upload,
)
from services.media import LinkSigner, media_path
from tests.support.proofs_media import SUBMIT_PHOTO, SUBMIT_VIDEO, VERIFICATIONS, fetch, submit_photo

SECRET = "test-secret-key"  # tests/conftest.py service_env
PERIOD_SECONDS = 3600  # PROOFLOOP_MEDIA_LINK_PERIOD_SECONDS' default
SMALL_LIMIT = 20_000


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
async def test_photo_formats_are_accepted(api: ApiClient, fmt: str) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    proof = await submit_photo(api, token, instance_id, media_factory.photo(10 + len(fmt), fmt=fmt))
    assert (proof["status"], proof["reason"], proof["method"]) == ("ACCEPTED", None, "PHOTO")
    assert proof["instance"]["status"] == "VERIFIED"


async def test_capture_time_outside_the_window_is_rejected_and_a_clean_retry_is_not_reuse(
    api: ApiClient,
) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    old = media_factory.photo_with_exif(21, taken=datetime.now(UTC) - timedelta(days=3), offset="+00:00")
    proof = await submit_photo(api, token, instance_id, old)
    assert (proof["status"], proof["reason"]) == ("REJECTED", "CAPTURED_OUTSIDE_WINDOW")
    assert proof["instance"]["status"] == "PENDING"

    same_picture = media_factory.photo(21)  # no EXIF this time; the same instance, so not reuse
    retry = await submit_photo(api, token, instance_id, same_picture)
    assert (retry["status"], retry["reason"]) == ("ACCEPTED", None)


async def test_a_resized_copy_on_another_instance_is_reuse(api: ApiClient) -> None:
    token, _ = await api.register()
    _, first_instance = await create_open_task(api, token, "PHOTO")
    _, second_instance = await create_open_task(api, token, "PHOTO")
    original = media_factory.photo(31)
    assert (await submit_photo(api, token, first_instance, original))["status"] == "ACCEPTED"

    copy = await submit_photo(api, token, second_instance, media_factory.resized(original, 0.6))
    assert (copy["status"], copy["reason"]) == ("REJECTED", "REUSED_MEDIA")
    other = await submit_photo(api, token, second_instance, media_factory.photo(32))
    assert other["status"] == "ACCEPTED"


@pytest.mark.parametrize(
    "data",
    [
        b"this is not an image",
        b"",
        media_factory.truncated(media_factory.photo(41), 0.3),
        media_factory.bomb_png(),
    ],
    ids=["text", "empty", "truncated", "bomb"],
)
async def test_bad_files_are_bad_input_and_store_nothing(api: ApiClient, data: bytes) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    with pytest.raises(GraphQLFailure) as failure:
        await submit_photo(api, token, instance_id, data)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "photo")
    instance = (await api.execute(VERIFICATIONS, {"id": instance_id}, token=token))["instance"]
    assert instance == {"status": "PENDING", "verifications": []}


async def test_photo_on_a_gps_task_is_bad_input(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    with pytest.raises(GraphQLFailure) as failure:
        await submit_photo(api, token, instance_id, media_factory.photo(45))
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "instanceId")


async def test_served_media_is_clean_and_nosniff(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    photo = media_factory.photo_with_exif(51, gps=(52.52, 13.405))
    proof = await submit_photo(api, token, instance_id, photo)
    for url in (proof["mediaUrl"], proof["thumbnailUrl"]):
        response = await fetch(api, url)
        assert response.status_code == 200
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-type"] == "image/jpeg"
        assert "private" in response.headers["cache-control"]
        served = Image.open(io.BytesIO(response.content))
        assert not served.getexif()
        assert b"secret" not in response.content
    # a bearer header works too, without a signature
    plain = f"/media/{proof['id']}"
    assert (await fetch(api, plain, {"Authorization": f"Bearer {token}"})).status_code == 200
    assert (await fetch(api, plain)).status_code == 404


async def test_expired_or_forged_links_are_not_found(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    proof = await submit_photo(api, token, instance_id, media_factory.photo(61))
    query = parse_qs(urlparse(proof["mediaUrl"]).query)
    key = urlparse(proof["mediaUrl"]).path.rsplit("/", 1)[1]
    signer = LinkSigner(SECRET, PERIOD_SECONDS)

    def signed(expires: int | None = None) -> str:
        return signer.link(media_path(key), key, query["viewer"][0], "media", query["session"][0], expires)

    assert (await fetch(api, signed())).status_code == 200  # the scheme, signed here as the API signs
    assert (await fetch(api, signed(int(time.time()) - 5))).status_code == 404  # expired
    assert (
        await fetch(api, signed(signer.expiry() + 3 * PERIOD_SECONDS))
    ).status_code == 404  # not one we issue

    forged_sig = "0" * len(query["sig"][0])
    forged = proof["mediaUrl"].replace(query["sig"][0], forged_sig)
    assert (await fetch(api, forged)).status_code == 404
    other_kind = proof["mediaUrl"].replace("kind=media", "kind=thumbnail")  # the signature covers the kind
    assert (await fetch(api, other_kind)).status_code == 404
    assert (await fetch(api, proof["mediaUrl"])).status_code == 200


async def test_logout_and_password_change_kill_the_links_issued_to_that_token(api: ApiClient) -> None:
    token, user = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    proof = await submit_photo(api, token, instance_id, media_factory.photo(62))
    login = 'mutation($e: String!) { login(email: $e, password: "correct horse battery") { token } }'
    second = (await api.execute(login, {"e": user["email"]}))["login"]["token"]
    again = await api.execute(
        "query($id: ID!) { instance(id: $id) { verifications { mediaUrl } } }",
        {"id": instance_id},
        token=second,
    )
    second_link = again["instance"]["verifications"][0]["mediaUrl"]
    assert (await fetch(api, proof["mediaUrl"])).status_code == 200

    await api.execute("mutation { logout }", token=token)
    assert (await fetch(api, proof["mediaUrl"])).status_code == 404  # issued to the token just revoked
    assert (await fetch(api, second_link)).status_code == 200  # another session's link lives on
    await api.execute(
        """mutation { changePassword(currentPassword: "correct horse battery",
             newPassword: "a brand new passphrase") { token } }""",
        token=second,
    )
    assert (await fetch(api, second_link)).status_code == 404


async def test_video_is_accepted_and_a_short_one_is_too_short(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "VIDEO")  # minDurationSeconds: 2
    short = await upload(
        api,
        SUBMIT_VIDEO,
        {"id": instance_id, "video": file_var(media_factory.clip(1.0, seed=71))},
        token=token,
    )
    assert (short["submitVideo"]["status"], short["submitVideo"]["reason"]) == ("REJECTED", "TOO_SHORT")

    long_enough = await upload(
        api,
        SUBMIT_VIDEO,
        {"id": instance_id, "video": file_var(media_factory.clip(3.0, seed=72))},
        token=token,
    )
    proof = long_enough["submitVideo"]
    assert (proof["status"], proof["instance"]["status"]) == ("ACCEPTED", "VERIFIED")
    response = await fetch(api, proof["mediaUrl"])
    assert (response.status_code, response.headers["content-type"]) == (200, "video/mp4")


def multipart_body(instance_id: str, data: bytes) -> tuple[bytes, str]:
    """A GraphQL multipart request (operations, map, one file) built by hand."""
    boundary = "proofloop-test-boundary"
    operations = json.dumps({"query": SUBMIT_PHOTO, "variables": {"id": instance_id, "photo": None}})
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{operations}\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n'
        '{"0": ["variables.photo"]}\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="0"; filename="p.jpg"\r\n'
        "Content-Type: image/jpeg\r\n\r\n".encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode(),
    ]
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


@pytest.fixture(scope="module")
def small_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    env = {**service_env, "PROOFLOOP_MAX_UPLOAD_BYTES": str(SMALL_LIMIT)}
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


async def test_body_over_the_limit_is_413_before_parsing(api: ApiClient, small_server: ServerProcess) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    # a few times the limit: refused unread, yet small enough that closing never resets the connection
    body, content_type = multipart_body(instance_id, os.urandom(3 * SMALL_LIMIT))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    async with local_http(base_url=small_server.url) as client:
        response = await client.post("/graphql", content=body, headers=headers)
    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while streaming
        for start in range(0, len(body), 4096):
            yield body[start : start + 4096]

    async with local_http(base_url=small_server.url) as client:
        streamed = await client.post("/graphql", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert streamed.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"

    small = await ApiClient(small_server.url).execute(
        SUBMIT_PHOTO,
        {"id": instance_id, "photo": file_var(media_factory.photo(82, size=(120, 90)))},
        token=token,
        upload_files=True,
    )
    assert small["submitPhoto"]["status"] == "ACCEPTED"  # under the limit, the same server takes it
    instance = (await api.execute(VERIFICATIONS, {"id": instance_id}, token=token))["instance"]
    assert len(instance["verifications"]) == 1


@pytest.mark.parametrize("token", [None, "not-a-token"])
async def test_unauthenticated_multipart_is_refused(api: ApiClient, token: str | None) -> None:
    owner_token, _ = await api.register()
    _, instance_id = await create_open_task(api, owner_token, "PHOTO")
    # small: a client still sending a large body when the refusal closes the connection sees a reset
    small_photo = media_factory.photo(91, size=(120, 90))
    body, content_type = multipart_body(instance_id, small_photo)
    headers = {"Content-Type": content_type}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with local_http(base_url=api.url) as client:
        response = await client.post("/graphql", content=body, headers=headers)
    assert response.status_code == 401
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    with pytest.raises(GraphQLFailure) as failure:  # what a gql client sees
        await upload(api, SUBMIT_PHOTO, {"id": instance_id, "photo": file_var(small_photo)}, token=token)
    assert failure.value.code == "UNAUTHENTICATED"


async def test_an_oversized_graphql_document_is_413(api: ApiClient) -> None:
    token, _ = await api.register()
    document = json.dumps({"query": "query { me { id } }", "variables": {"pad": "x" * (2 * 1024 * 1024)}})
    async with local_http(base_url=api.url) as client:
        response = await client.post(
            "/graphql",
            content=document,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"


async def test_a_media_link_is_stable_absolute_and_revalidates_by_its_digest(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    proof = await submit_photo(api, token, instance_id, media_factory.photo(63))
    read = "query($id: ID!) { instance(id: $id) { verificationsConnection { edges { node { mediaUrl } } } } }"
    again = (await api.execute(read, {"id": instance_id}, token=token))["instance"]["verificationsConnection"]
    # the same URL on another read: an image cache keyed by it hits
    assert [edge["node"]["mediaUrl"] for edge in again["edges"]] == [proof["mediaUrl"]]
    assert proof["mediaUrl"].startswith(f"{api.url}/media/")
    first = await fetch(api, proof["mediaUrl"])
    etag, cache = first.headers["etag"], first.headers["cache-control"]
    assert first.status_code == 200 and etag.startswith('"') and "immutable" in cache
    max_age = int(cache.split("max-age=")[1].split(",")[0])
    assert PERIOD_SECONDS - 60 <= max_age <= 2 * PERIOD_SECONDS  # as long as the link lives
    unchanged = await fetch(api, proof["mediaUrl"], {"If-None-Match": etag})
    assert (unchanged.status_code, unchanged.content, unchanged.headers["etag"]) == (304, b"", etag)
    changed = await fetch(api, proof["mediaUrl"], {"If-None-Match": '"something-else"'})
    assert changed.status_code == 200 and changed.content == first.content
