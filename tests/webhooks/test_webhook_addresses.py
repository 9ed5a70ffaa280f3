"""Webhook registration through the real API, with production's address rules (the run's own server has no
webhook allowance): every spelling of an internal address, every URL that could not be sent, the stored URL
normalized, and the per-user quota under 30 concurrent registrations (on both backends)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, local_http, row_key
from tests.support.backends import Deployment, both_backends
from tests.support.reminders import REGISTER_WEBHOOK
from tests.support.webhook_addresses import INTERNAL_ADDRESSES, refusal

# spellings that hide an address, or carry what must never be stored
DISGUISED_ADDRESSES = [
    "https://2130706433/",  # decimal 127.0.0.1
    "https://0177.0.0.1/",  # octal
    "https://0x7f.0.0.1/",  # hex
    "https://0xa9fea9fe/",
    "https://127.1/",
    "https://%31%32%37.0.0.1/",
    "https://[fe80::1%25eth0]/",  # zone id
    "https://user:pw@8.8.8.8/",  # credentials
    "https://8.8.8.8@10.0.0.1/",
]
UNSENDABLE = [
    "https://8.8.8.8/a hook",
    "https://8.8.8.8/a\r\nX-Injected: 1",
    "https://8.8.8.8/a\nb",
    "https://8.8.8.8/\ud800",  # a lone surrogate: no encoding carries it
    "https://8.8.8.8:0/",
    "https://8.8.8.8:22/",
    "https://8.8.8.8:25/",
    "https://8.8.8.8:65536/",
    "https://8.8.8.8/" + "a" * 2000,
]


async def test_every_internal_address_form_is_refused_as_bad_input(server: ServerProcess) -> None:
    async with ApiClient(server.url) as api:
        token, _ = await api.register()
        for url in INTERNAL_ADDRESSES + DISGUISED_ADDRESSES:
            refused = await refusal(api, token, url)
            assert refused is not None, f"{url} was registered"
            assert (refused.code, refused.field) == ("BAD_USER_INPUT", "input.url"), (url, refused.errors)
        assert (await api.execute("{ webhooks { id } }", token=token))["webhooks"] == []


async def test_urls_that_could_not_be_sent_are_refused_at_registration(server: ServerProcess) -> None:
    async with ApiClient(server.url) as api:
        token, _ = await api.register()
        for url in UNSENDABLE:
            refused = await refusal(api, token, url)
            assert refused is not None, f"{url!r} was registered"
            assert (refused.code, refused.field) == ("BAD_USER_INPUT", "input.url"), (url, refused.errors)
        assert (await api.execute("{ webhooks { id } }", token=token))["webhooks"] == []


async def test_the_stored_url_is_the_normalized_one(server: ServerProcess) -> None:
    async with ApiClient(server.url) as api:
        token, _ = await api.register()
        given = {
            "HTTPS://8.8.8.8:443/ü/%zz?q=ü&r=<x>#fragment": "https://8.8.8.8/%C3%BC/%25zz?q=%C3%BC&r=%3Cx%3E",
            "https://[2606:4700:4700:0:0::1111]:8443/hook": "https://[2606:4700:4700::1111]:8443/hook",
        }
        for url, normalized in given.items():
            registered = await api.execute(REGISTER_WEBHOOK, {"url": url}, token=token)
            assert registered["registerWebhook"]["webhook"]["url"] == normalized
        listed = (await api.execute("{ webhooks { url } }", token=token))["webhooks"]
    assert [w["url"] for w in listed] == list(given.values())


@both_backends
async def test_thirty_concurrent_registrations_store_exactly_the_quota(api_deployment: Deployment) -> None:
    async with api_deployment.client() as api:
        token, user = await api.register()
        results: list[Any] = await asyncio.gather(
            *(api.execute(REGISTER_WEBHOOK, {"url": f"https://8.8.8.8/{n}"}, token=token) for n in range(30)),
            return_exceptions=True,
        )
    stored = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, GraphQLFailure)]
    assert len(stored) == 5  # PROOFLOOP_WEBHOOKS_PER_USER's default
    assert len(refused) == 25 and {r.code for r in refused} == {"CONFLICT"}
    [(rows,)] = await api_deployment.sql(
        "SELECT count(*) FROM webhooks WHERE owner_id = $1", row_key(user["id"])
    )
    assert rows == 5
    async with local_http(base_url=api_deployment.url, timeout=5) as client:
        assert (await client.get("/healthz")).status_code == 200


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/hook", "http://localhost:8080/", "http://[::1]:8080/"]
)
async def test_production_refuses_local_http_receivers(server: ServerProcess, url: str) -> None:
    async with ApiClient(server.url) as api:
        token, _ = await api.register()
        refused = await refusal(api, token, url)
    assert refused is not None and refused.field == "input.url"
    assert "https" in refused.message
