"""APNs and FCM through the real API and worker, against local stand-ins that check credentials as Apple and
Google do (tests/support/push_services.py): a partner's iPhone and an owner's Android phone are told the
owner's verdict with the webhooks' access rules, over HTTP/2 to APNs; a device the platform forgot is
removed; bad tokens and platforms the server is not set up for are refused."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.chain_support import eventually
from harness.media_factory import photo
from harness.proofloop import ApiClient, create_open_task, done, file_var, partner_pair, upload
from tests.support.backends import Backend, Deployment, deployed
from tests.support.push_services import ApnsStandIn, FcmStandIn, Received, apns_stand_in, fcm_stand_in

KEY_ID, TEAM_ID, TOPIC = "ABC123DEFG", "TEAM123456", "app.proofloop.ios"
IPHONE = "a1" * 32
ANDROID = "fcm-token:" + "b" * 140
REGISTER = """mutation($input: PushDeviceRegisterInput!) {
  pushDeviceRegister(input: $input) { pushSubscription { id platform pushService } userErrors { field code message } }
}"""


@pytest.fixture(scope="module")
def stand_ins() -> Iterator[tuple[ApnsStandIn, FcmStandIn]]:
    with apns_stand_in() as apns, fcm_stand_in() as fcm:
        yield apns, fcm


@pytest.fixture(scope="module")
def phones(
    backend: Backend, request: pytest.FixtureRequest, stand_ins: tuple[ApnsStandIn, FcmStandIn]
) -> Iterator[Deployment]:
    apns, fcm = stand_ins
    settings = {
        "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",  # the stand-ins are on 127.0.0.1, over cleartext
        "PROOFLOOP_APNS_URL": apns.url,
        "PROOFLOOP_APNS_KEY": apns.key_pem(),
        "PROOFLOOP_APNS_KEY_ID": KEY_ID,
        "PROOFLOOP_APNS_TEAM_ID": TEAM_ID,
        "PROOFLOOP_APNS_TOPIC": TOPIC,
        "PROOFLOOP_FCM_URL": fcm.url,
        "PROOFLOOP_FCM_SERVICE_ACCOUNT": fcm.service_account(),
    }
    with deployed(request, backend, settings, workers=1, private=True) as deployment:
        yield deployment


async def register(api: ApiClient, token: str, platform: str, device: str, types: list[str]) -> str:
    variables = {"input": {"platform": platform, "token": device, "deviceName": "phone", "eventTypes": types}}
    subscription: dict[str, Any] = done(
        await api.execute(REGISTER, variables, token=token), "pushDeviceRegister"
    )
    assert subscription["pushSubscription"]["platform"] == platform
    return str(subscription["pushSubscription"]["id"])


class Recipient:
    """The requests a stand-in got for one user (the stand-ins serve every test of the module)."""

    def __init__(self, received: list[Received], user_id: str, payload: Callable[[Received], Any]) -> None:
        self.received, self.user_id, self.payload = received, user_id, payload

    def mine(self) -> list[Received]:
        return [r for r in list(self.received) if self.payload(r)["recipient"]["id"] == self.user_id]

    async def arrived(self, count: int, within: float = 30) -> list[Received]:
        async def enough() -> bool:
            return len(self.mine()) >= count

        await eventually(enough, within, f"{count} push requests for the user")
        return self.mine()


@pytest.mark.both_backends
async def test_phones_are_told_the_verdict_through_apns_and_fcm(
    phones: Deployment, stand_ins: tuple[ApnsStandIn, FcmStandIn]
) -> None:
    apns, fcm = stand_ins
    api = phones.client()
    owner, owner_id, partner, partner_id = await partner_pair(api)
    await register(api, partner, "APNS", IPHONE, ["VERIFIED"])
    await register(api, owner, "FCM", ANDROID, ["VERIFIED"])
    _, instance_id = await create_open_task(api, owner, "PHOTO")
    proof = """mutation($input: ProofPhotoSubmitInput!) {
      proofPhotoSubmit(input: $input) { verification { status } userErrors { message } }
    }"""
    await upload(
        api, proof, {"input": {"instanceId": instance_id, "photo": file_var(photo(95))}}, token=owner
    )

    to_partner = Recipient(apns.received, partner_id, lambda r: r.body["proofloop"])
    [ios] = await to_partner.arrived(1)
    apns.verify(ios, KEY_ID, TEAM_ID)
    assert ios.headers[":path"] == f"/3/device/{IPHONE}" and ios.headers["apns-topic"] == TOPIC
    assert (ios.headers["apns-push-type"], ios.headers["apns-priority"]) == ("alert", "5")
    alert = ios.body["aps"]["alert"]
    assert alert["title"] == "Photo task" and alert["body"].endswith(" verified")  # "<owner> verified"
    assert (ios.body["proofloop"]["type"], ios.body["proofloop"]["recipient"]["role"]) == (
        "VERIFIED",
        "PARTNER",
    )

    to_owner = Recipient(fcm.received, owner_id, lambda r: json.loads(r.body["message"]["data"]["payload"]))
    [android] = await to_owner.arrived(1)
    message = android.body["message"]
    assert message["token"] == ANDROID and message["notification"] == {
        "title": "Photo task",
        "body": "Verified",
    }
    assert json.loads(message["data"]["payload"])["recipient"]["role"] == "OWNER"
    assert fcm.assertions and all(  # the access token was granted for FCM's scope, by the account's key
        claims["scope"] == "https://www.googleapis.com/auth/firebase.messaging" for claims in fcm.assertions
    )


async def test_a_device_the_platform_forgot_is_removed(
    phones: Deployment, stand_ins: tuple[ApnsStandIn, FcmStandIn]
) -> None:
    apns, fcm = stand_ins
    api = phones.client()
    token, _ = await api.register()
    forgotten_iphone, forgotten_android = "c3" * 32, "fcm-token:" + "d" * 140
    apns.gone.add(forgotten_iphone)
    fcm.gone.add(forgotten_android)
    ping = "mutation($id: ID!) { pushSubscriptionPing(input: {id: $id}) { userErrors { message } } }"
    for platform, device in (("APNS", forgotten_iphone), ("FCM", forgotten_android)):
        subscription = await register(api, token, platform, device, ["DUE_SOON"])
        done(await api.execute(ping, {"id": subscription}, token=token), "pushSubscriptionPing")

    async def removed() -> bool:
        listed = await api.execute("{ pushSubscriptions { totalCount } }", token=token)
        return bool(listed["pushSubscriptions"]["totalCount"] == 0)

    await eventually(removed, 30, "the devices the platforms forgot are removed")


async def test_bad_tokens_and_platforms_not_set_up_are_refused(phones: Deployment, api: ApiClient) -> None:
    token, _ = await phones.client().register()

    async def refused(client: ApiClient, who: str, platform: str, device: str) -> list[tuple[str, str]]:
        variables = {"input": {"platform": platform, "token": device}}
        data = (await client.execute(REGISTER, variables, token=who))["pushDeviceRegister"]
        assert data["pushSubscription"] is None
        return [(".".join(e["field"] or []), e["code"]) for e in data["userErrors"]]

    assert await refused(phones.client(), token, "APNS", "not-hex") == [("input.token", "BAD_USER_INPUT")]
    assert await refused(phones.client(), token, "FCM", "short") == [("input.token", "BAD_USER_INPUT")]
    elsewhere, _ = await api.register()  # the run's API: neither platform is set up there
    assert await refused(api, elsewhere, "APNS", IPHONE) == [("input.platform", "BAD_USER_INPUT")]
