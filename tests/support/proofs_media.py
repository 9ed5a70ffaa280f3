"""Media proofs: submitting photos and videos as uploads, and fetching what was stored."""

from __future__ import annotations

from typing import Any

import httpx

from harness.proofloop import (
    ApiClient,
    file_var,
    local_http,
    upload,
)

SUBMIT_PHOTO = """mutation($id: ID!, $photo: Upload!) {
  submitPhoto(instanceId: $id, photo: $photo) {
    id status reason method mediaUrl thumbnailUrl instance { status }
  }
}"""


SUBMIT_VIDEO = """mutation($id: ID!, $video: Upload!) {
  submitVideo(instanceId: $id, video: $video) { id status reason mediaUrl thumbnailUrl instance { status } }
}"""


VERIFICATIONS = "query($id: ID!) { instance(id: $id) { status verifications { id } } }"


async def submit_photo(api: ApiClient, token: str, instance_id: str, data: bytes) -> dict[str, Any]:
    result = await upload(api, SUBMIT_PHOTO, {"id": instance_id, "photo": file_var(data)}, token=token)
    return dict(result["submitPhoto"])


async def fetch(api: ApiClient, url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async with local_http(base_url=api.url) as client:
        return await client.get(url, headers=headers)
