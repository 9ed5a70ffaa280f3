"""What browsers render from this API carries its own protection: GraphiQL's page and assets, and media.

GraphiQL: a Content-Security-Policy of this origin plus the page's inline script and style by hash, no
framing, nosniff. Media: a sandboxing policy, no framing, nosniff, and a Content-Disposition that names
a media type a browser shows, never a page. (tests/browser runs GraphiQL under its policy for real.)
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid

import httpx

from harness import media_factory
from harness.proofloop import (
    ApiClient,
    ServerProcess,
    create_open_task,
    file_var,
    local_http,
    row_key,
    upload,
)
from tests.support.proofs_media import SUBMIT_VIDEO, fetch, submit_photo


def directives(policy: str) -> dict[str, list[str]]:
    parsed = (part.split() for part in policy.split(";") if part.strip())
    return {name: sources for name, *sources in parsed}


def assert_unframeable(response: httpx.Response) -> None:
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert directives(response.headers["content-security-policy"])["frame-ancestors"] == ["'none'"]


async def test_graphiql_allows_only_its_origin_and_its_own_inline_code(server: ServerProcess) -> None:
    async with local_http(base_url=server.url) as client:
        page = await client.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200
        assert_unframeable(page)
        assert page.headers["referrer-policy"] == "no-referrer"
        policy = directives(page.headers["content-security-policy"])
        assert policy["default-src"] == ["'none'"]
        for kind in ("script", "style"):
            inline = re.findall(rf"<{kind}>(.*?)</{kind}>", page.text, re.DOTALL)
            assert inline, f"the page has no inline {kind}"
            hashes = {
                f"'sha256-{base64.b64encode(hashlib.sha256(i.encode()).digest()).decode()}'" for i in inline
            }
            assert set(policy[f"{kind}-src"]) == {"'self'", *hashes}  # no 'unsafe-inline', no other host
        assert not any("http" in source for sources in policy.values() for source in sources)
        for asset in re.findall(r'(?:src|href)="(graphiql-assets/[^"]+)"', page.text):
            served = await client.get(f"/{asset}")
            assert served.status_code == 200, asset
            assert served.headers["x-content-type-options"] == "nosniff"
            assert served.headers["x-frame-options"] == "DENY"


async def test_media_is_sandboxed_unframeable_and_named_as_media(api: ApiClient) -> None:
    token, _ = await api.register()
    _, photo_instance = await create_open_task(api, token, "PHOTO")
    photo = await submit_photo(api, token, photo_instance, media_factory.photo(190, fmt="PNG"))
    _, video_instance = await create_open_task(api, token, "VIDEO")
    clip = file_var(media_factory.clip(3.0, seed=191), "clip.mp4")
    video = (await upload(api, SUBMIT_VIDEO, {"id": video_instance, "video": clip}, token=token))[
        "submitVideo"
    ]
    for proof, url, kind, extension in (
        (photo, photo["mediaUrl"], "media", "jpg"),
        (photo, photo["thumbnailUrl"], "thumbnail", "jpg"),
        (video, video["mediaUrl"], "media", "mp4"),
    ):
        served = await fetch(api, url)
        assert served.status_code == 200, url
        assert_unframeable(served)
        policy = directives(served.headers["content-security-policy"])
        assert policy["default-src"] == ["'none'"] and "sandbox" in policy
        expected = f'inline; filename="proof-{row_key(proof["id"])}-{kind}.{extension}"'
        assert served.headers["content-disposition"] == expected
    missing = await fetch(api, f"/media/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert_unframeable(missing)
