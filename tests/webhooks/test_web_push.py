"""Web Push through the real API and worker, to a push service the test runs: a partner's browser gets the
owner's events encrypted for it (RFC 8291, decrypted here with the browser's keys) and signed with the
API's VAPID key (RFC 8292, checked here against webPushKey), under the webhooks' access rules; a push
service that says the subscription is gone gets it removed; bad keys, private addresses and a full quota
are refused as user errors."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from typing import Any

import http_ece
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from harness.chain_support import eventually
from harness.media_factory import photo
from harness.proofloop import ApiClient, create_open_task, done, file_var, partner_pair, upload
from tests.support.backends import Backend, Deployment, deployed
from tests.support.reminders import receiving

MAX_PER_USER = 3
REFUSED = "userErrors { field code message }"
REGISTER = f"""mutation($input: PushSubscriptionRegisterInput!) {{
  pushSubscriptionRegister(input: $input) {{ pushSubscription {{ id pushService eventTypes }} {REFUSED} }}
}}"""
SUBSCRIPTIONS = "{ pushSubscriptions { totalCount } webhooksConnection { totalCount } }"


@pytest.fixture(scope="module")
def pushing(backend: Backend, request: pytest.FixtureRequest) -> Iterator[Deployment]:
    settings = {
        "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",  # the push service is on 127.0.0.1, over http
        "PROOFLOOP_PUSH_SUBSCRIPTIONS_PER_USER": str(MAX_PER_USER),
        "PROOFLOOP_VAPID_SUBJECT": "mailto:ops@proofloop.test",
    }
    with deployed(request, backend, settings, workers=1, private=True) as deployment:
        yield deployment


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Browser:
    """What PushManager.subscribe() makes: a key pair and an auth secret, and the endpoint it was given."""

    def __init__(self, endpoint: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        self.endpoint = endpoint

    def subscription(self, **more: Any) -> dict[str, Any]:
        public = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"endpoint": self.endpoint, "keys": {"p256dh": b64(public), "auth": b64(self.auth)}, **more}

    def read(self, body: bytes) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(
            http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")
        )
        return message


def check_vapid(headers: dict[str, str], application_server_key: str, endpoint: str) -> dict[str, Any]:
    """What a push service does: the JWT is ES256-signed by the key the browser subscribed with."""
    scheme, _, params = headers["authorization"].partition(" ")
    fields = dict(part.split("=", 1) for part in params.split(","))
    assert scheme == "vapid" and fields["k"] == application_server_key
    head, claims, signature = fields["t"].split(".")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(fields["k"]))
    raw = unb64(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public.verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise AssertionError("the VAPID JWT is not signed by the applicationServerKey") from None
    decoded: dict[str, Any] = json.loads(unb64(claims))
    assert decoded["aud"] == endpoint.split("/hooks")[0] and decoded["sub"] == "mailto:ops@proofloop.test"
    return decoded


async def subscribe(api: ApiClient, token: str, browser: Browser, types: list[str]) -> str:
    data = await api.execute(REGISTER, {"input": browser.subscription(eventTypes=types)}, token=token)
    subscription_id: str = done(data, "pushSubscriptionRegister")["pushSubscription"]["id"]
    return subscription_id


@pytest.mark.both_backends
async def test_a_partners_browser_gets_the_owners_verdict_encrypted_and_signed(pushing: Deployment) -> None:
    api = pushing.client()
    owner, _, partner, _ = await partner_pair(api)
    stranger, _ = await api.register()
    with receiving(201) as service, receiving(201) as strangers_service:
        browser, strangers = Browser(service.url), Browser(strangers_service.url)
        await subscribe(api, partner, browser, ["VERIFIED", "MISSED"])
        await subscribe(api, stranger, strangers, ["VERIFIED", "MISSED", "PROOF_SUBMITTED"])
        counts = await api.execute(SUBSCRIPTIONS, token=partner)
        assert (counts["pushSubscriptions"]["totalCount"], counts["webhooksConnection"]["totalCount"]) == (
            1,
            0,
        )
        key = (await api.execute("{ webPushKey }", token=partner))["webPushKey"]

        _, instance_id = await create_open_task(api, owner, "PHOTO")
        proof = """mutation($input: ProofPhotoSubmitInput!) {
          proofPhotoSubmit(input: $input) { verification { status } userErrors { message } }
        }"""
        await upload(
            api, proof, {"input": {"instanceId": instance_id, "photo": file_var(photo(91))}}, token=owner
        )

        [(headers, body)] = await service.wait_for(1)
        assert headers["content-encoding"] == "aes128gcm" and int(headers["ttl"]) > 0
        check_vapid(headers, key, service.url)
        assert b"VERIFIED" not in body  # encrypted: the push service reads nothing
        message = browser.read(body)
        assert (message["type"], message["recipient"]["role"]) == ("VERIFIED", "PARTNER")
        assert message["task"]["title"] == "Photo task"
        assert set(message["event"]) == {"id"}  # the opaque id the API shows, never the platform's position
        assert strangers_service.requests == []  # not the stranger's to read, so not theirs to be told


async def test_a_test_notification_and_a_subscription_the_push_service_forgot(pushing: Deployment) -> None:
    api = pushing.client()
    token, _ = await api.register()
    ping = f"""mutation($id: ID!) {{ pushSubscriptionPing(input: {{id: $id}}) {{ delivery {{ kind }} {REFUSED} }} }}"""
    with receiving(201) as service:
        browser = Browser(service.url)
        subscription = await subscribe(api, token, browser, ["DUE_SOON"])
        assert done(await api.execute(ping, {"id": subscription}, token=token), "pushSubscriptionPing")[
            "delivery"
        ]
        [(_, body)] = await service.wait_for(1)
        assert browser.read(body)["type"] == "PING"
    with receiving(410) as forgotten:
        subscription = await subscribe(api, token, Browser(forgotten.url), ["DUE_SOON"])
        done(await api.execute(ping, {"id": subscription}, token=token), "pushSubscriptionPing")
        await forgotten.wait_for(1)

        async def removed() -> bool:
            return bool(
                (await api.execute(SUBSCRIPTIONS, token=token))["pushSubscriptions"]["totalCount"] == 1
            )

        await eventually(removed, 30, "the subscription its push service forgot is removed")


async def test_bad_subscriptions_are_refused_and_the_quota_holds(pushing: Deployment) -> None:
    api = pushing.client()
    token, _ = await api.register()

    async def refused(subscription: dict[str, Any]) -> list[tuple[str, str]]:
        data = (await api.execute(REGISTER, {"input": subscription}, token=token))["pushSubscriptionRegister"]
        assert data["pushSubscription"] is None
        return [(".".join(e["field"] or []), e["code"]) for e in data["userErrors"]]

    good = Browser("http://127.0.0.1:8080/push").subscription()
    not_a_point = {**good, "keys": {**good["keys"], "p256dh": b64(b"\x04" + b"\x01" * 64)}}
    assert await refused(not_a_point) == [("input.keys.p256dh", "BAD_USER_INPUT")]
    short_auth = {**good, "keys": {**good["keys"], "auth": b64(b"short")}}
    assert await refused(short_auth) == [("input.keys.auth", "BAD_USER_INPUT")]
    assert await refused({**good, "endpoint": "http://10.0.0.7/push"}) == [
        ("input.endpoint", "BAD_USER_INPUT")
    ]
    assert await refused({**good, "endpoint": "ftp://push.example/x"}) == [
        ("input.endpoint", "BAD_USER_INPUT")
    ]
    for n in range(MAX_PER_USER):
        await subscribe(api, token, Browser(f"http://127.0.0.1:8080/push/{n}"), ["DUE_SOON"])
    assert await refused(Browser("http://127.0.0.1:8080/push/more").subscription()) == [("", "CONFLICT")]
    assert (await api.execute(SUBSCRIPTIONS, token=token))["pushSubscriptions"]["totalCount"] == MAX_PER_USER
