"""Browsers on other origins: one origin rule for HTTP CORS and websocket handshakes, any localhost port in
dev, configured origins normalized, common client and tracing headers allowed, absolute media links with
PROOFLOOP_API_URL.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from harness.media_factory import photo
from harness.proofloop import (
    ApiClient,
    ServerProcess,
    create_open_task,
    file_var,
    free_port,
    local_http,
    upload,
)

API_URL = "https://api.proofloop.example"
CONFIGURED = "https://App.Example.com:443/"  # written with a trailing slash and odd case
UNMATCHABLE = "https://app.example.com/frontend"
TRACING_HEADERS = "authorization, content-type, apollographql-client-name, sentry-trace, baggage, traceparent"


@pytest.fixture(scope="module")
def dev_api(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    env = {
        **service_env,
        "PROOFLOOP_ENV": "dev",
        "PROOFLOOP_CORS_ORIGINS": f"{CONFIGURED},{UNMATCHABLE}",
        "PROOFLOOP_CORS_ALLOWED_HEADERS": "x-tenant",
        "PROOFLOOP_API_URL": API_URL + "/",
    }
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


def preflight(server: ServerProcess, origin: str, headers: str = TRACING_HEADERS) -> httpx.Response:
    return httpx.options(
        f"{server.url}/graphql",
        headers={
            "origin": origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": headers,
        },
    )


async def handshake_status(server: ServerProcess, origin: str) -> int:
    url = server.url.replace("http://", "ws://") + "/graphql"
    try:
        async with connect(url, origin=origin, subprotocols=["graphql-transport-ws"]):  # type: ignore[arg-type, list-item]
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


@pytest.mark.parametrize(
    "origin", ["http://localhost:4321", "http://127.0.0.1:8080", "https://app.example.com"]
)
async def test_allowed_origins_pass_preflight_and_websocket_handshake(
    dev_api: ServerProcess, origin: str
) -> None:
    response = preflight(dev_api, origin)
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == origin
    assert await handshake_status(dev_api, origin) == 101


@pytest.mark.parametrize("origin", ["https://evil.example.com", "http://localhost.evil.example.com"])
async def test_other_origins_are_refused_on_both(dev_api: ServerProcess, origin: str) -> None:
    assert "access-control-allow-origin" not in preflight(dev_api, origin).headers
    assert await handshake_status(dev_api, origin) == 403


def test_extra_allowed_headers_and_a_warning_for_an_origin_that_cannot_match(dev_api: ServerProcess) -> None:
    assert preflight(dev_api, "http://localhost:3000", "x-tenant").status_code == 200
    assert preflight(dev_api, "http://localhost:3000", "x-not-allowed").status_code == 400
    assert f"PROOFLOOP_CORS_ORIGINS: '{UNMATCHABLE}' can never match" in dev_api.log()


def test_a_browser_may_send_an_idempotency_key_and_read_whether_it_was_replayed(
    dev_api: ServerProcess,
) -> None:
    allowed = preflight(dev_api, "http://localhost:3000", "authorization, content-type, idempotency-key")
    assert allowed.status_code == 200, allowed.text
    answer = httpx.post(
        f"{dev_api.url}/graphql",
        json={"query": "{ __typename }"},
        headers={"origin": "http://localhost:3000"},
    )
    exposed = {h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")}
    assert {"idempotent-replayed", "retry-after"} <= exposed


def test_production_allows_no_localhost(server: ServerProcess) -> None:
    assert "access-control-allow-origin" not in preflight(server, "http://localhost:3000").headers


async def test_media_links_are_absolute_with_an_api_url(dev_api: ServerProcess) -> None:
    async with ApiClient(dev_api.url) as api:
        token, _ = await api.register()
        _, instance_id = await create_open_task(api, token, "PHOTO")
        proof = await upload(
            api,
            "mutation($i: ID!, $p: Upload!) { submitPhoto(instanceId: $i, photo: $p) { mediaUrl thumbnailUrl } }",
            {"i": instance_id, "p": file_var(photo(7), "proof.jpg", "image/jpeg")},
            token=token,
        )
    for url in proof["submitPhoto"].values():
        assert url.startswith(f"{API_URL}/media/"), url
        local = url.replace(API_URL, dev_api.url)
        async with local_http() as http:
            assert (await http.get(local)).status_code == 200
