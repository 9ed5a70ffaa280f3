"""Who may do what to one user's proofs: owner, active, invited and removed partner, stranger.

Each action is tried by every role, the one allowed to succeed last, and the exact code is pinned:
FORBIDDEN only where the object is visible to the caller, NOT_FOUND everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness import media_factory
from harness.proofloop import ApiClient, GraphQLFailure, create_open_task, file_var, local_http, upload

INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { id } }"
REMOVE = "mutation($id: ID!) { removePartner(partnershipId: $id) }"
CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 5) { status }
}"""
REQUEST = "mutation($id: ID!) { requestReview(instanceId: $id) { id } }"
REVIEW = "mutation($id: ID!) { review(verificationId: $id, approve: true) { status } }"
SUBMIT_PHOTO = "mutation($id: ID!, $p: Upload!) { submitPhoto(instanceId: $id, photo: $p) { id mediaUrl } }"
MEDIA_OF = "query($id: ID!) { instance(id: $id) { verifications { mediaUrl thumbnailUrl } } }"


@dataclass
class Cast:
    tokens: dict[str, str]  # role -> bearer token
    removed_partner_url: str  # a media link issued to the removed partner while still active
    photo_instance: str
    verification_id: str


async def _partner_of(api: ApiClient, owner_token: str, email: str, token: str) -> str:
    partnership = (await api.execute(INVITE, {"e": email}, token=owner_token))["invitePartner"]["id"]
    await api.execute(ACCEPT, {"id": partnership}, token=token)
    return str(partnership)


@pytest.fixture
async def cast(api: ApiClient) -> Cast:
    tokens: dict[str, str] = {}
    emails: dict[str, str] = {}
    for role in ("owner", "partner", "invited", "removed", "stranger"):
        tokens[role], user = await (
            api.register_verified() if role in ("partner", "removed") else api.register()
        )
        emails[role] = user["email"]
    owner = tokens["owner"]
    await _partner_of(api, owner, emails["partner"], tokens["partner"])
    await api.execute(INVITE, {"e": emails["invited"]}, token=owner)  # never accepted
    removed = await _partner_of(api, owner, emails["removed"], tokens["removed"])

    _, photo_instance = await create_open_task(api, owner, "PHOTO")
    variables = {"id": photo_instance, "p": file_var(media_factory.photo(501))}
    proof = (await upload(api, SUBMIT_PHOTO, variables, token=owner))["submitPhoto"]
    seen = await api.execute(MEDIA_OF, {"id": photo_instance}, token=tokens["removed"])
    removed_url = seen["instance"]["verifications"][0]["mediaUrl"]
    await api.execute(REMOVE, {"id": removed}, token=owner)
    return Cast(tokens, removed_url, photo_instance, proof["id"])


async def _code(api: ApiClient, document: str, variables: dict[str, str], token: str) -> str:
    try:
        await api.execute(document, variables, token=token)
    except GraphQLFailure as failure:
        return failure.code
    return "OK"


async def test_submitting_proof(api: ApiClient, cast: Cast) -> None:
    _, instance_id = await create_open_task(api, cast.tokens["owner"], "GPS")
    expected = {
        "stranger": "NOT_FOUND",
        "invited": "NOT_FOUND",
        "removed": "NOT_FOUND",
        "partner": "FORBIDDEN",
    }
    for role, code in expected.items():
        assert await _code(api, CHECK_IN, {"id": instance_id}, cast.tokens[role]) == code, role
    assert await _code(api, CHECK_IN, {"id": instance_id}, cast.tokens["owner"]) == "OK"


async def test_reviewing(api: ApiClient, cast: Cast) -> None:
    _, instance_id = await create_open_task(api, cast.tokens["owner"], "PARTNER")
    requested = await api.execute(REQUEST, {"id": instance_id}, token=cast.tokens["owner"])
    verification = {"id": requested["requestReview"]["id"]}
    expected = {"stranger": "NOT_FOUND", "invited": "NOT_FOUND", "removed": "NOT_FOUND", "owner": "FORBIDDEN"}
    for role, code in expected.items():
        assert await _code(api, REVIEW, verification, cast.tokens[role]) == code, role
    assert await _code(api, REVIEW, verification, cast.tokens["partner"]) == "OK"


async def test_reading_media(api: ApiClient, cast: Cast) -> None:
    async with local_http(base_url=api.url) as client:
        for role in ("owner", "partner"):
            seen = await api.execute(MEDIA_OF, {"id": cast.photo_instance}, token=cast.tokens[role])
            (verification,) = seen["instance"]["verifications"]
            for url in (verification["mediaUrl"], verification["thumbnailUrl"]):
                assert (await client.get(url)).status_code == 200, role
        for role in ("invited", "removed", "stranger"):
            seen = await api.execute(MEDIA_OF, {"id": cast.photo_instance}, token=cast.tokens[role])
            assert seen["instance"] is None, role
            bearer = {"Authorization": f"Bearer {cast.tokens[role]}"}
            assert (await client.get(f"/media/{cast.verification_id}", headers=bearer)).status_code == 404, (
                role
            )
        # a link issued while the partnership was active dies with it
        assert (await client.get(cast.removed_partner_url)).status_code == 404
