"""The conventions a normalized client cache relies on, through the real API: every connection counts its
pages (totalCount), a partnership says which side the viewer is on, and a review of a proof its method
already judged says so with a reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.media_factory import photo
from harness.proofloop import ApiClient, GraphQLFailure, create_open_task, file_var, partner_pair, upload

COUNTS = """query($from: DateTime!, $to: DateTime!) {
  sessionsConnection(first: 1) { totalCount edges { node { id } } }
  partnershipsConnection(first: 1) { totalCount }
  eventsConnection(first: 1) { totalCount }
  reviewQueueConnection(first: 1) { totalCount }
  webhooksConnection(first: 1) { totalCount }
  agenda(from: $from, to: $to, first: 1) { totalCount edges { node { id } } }
  tasks(first: 1) { totalCount edges { node { currentInstance { verificationsConnection(first: 1) {
    totalCount } } } } }
}"""


async def test_every_connection_counts_every_page(api: ApiClient) -> None:
    owner, *_ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner, "PHOTO")
    await create_open_task(api, owner, "PHOTO")
    await upload(
        api,
        "mutation($i: ID!, $p: Upload!) { proofPhotoSubmit(input: {instanceId: $i, photo: $p}) { userErrors { code } } }",
        {"i": instance_id, "p": file_var(photo(7))},
        token=owner,
    )
    now = datetime.now(UTC)
    span = {"from": (now - timedelta(days=1)).isoformat(), "to": (now + timedelta(days=2)).isoformat()}
    data = await api.execute(COUNTS, span, token=owner)
    assert data["sessionsConnection"]["totalCount"] == 1
    assert data["partnershipsConnection"]["totalCount"] == 1
    assert data["eventsConnection"]["totalCount"] >= 1  # the proof, at least
    assert data["reviewQueueConnection"]["totalCount"] == 0
    assert data["webhooksConnection"]["totalCount"] == 0
    assert data["agenda"]["totalCount"] >= 2 and len(data["agenda"]["edges"]) == 1
    assert data["tasks"]["totalCount"] == 2
    counted = [
        edge["node"]["currentInstance"]["verificationsConnection"]["totalCount"]
        for edge in data["tasks"]["edges"]
    ]
    assert counted[0] in (0, 1)


async def test_a_partnership_says_which_side_the_viewer_is_on(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    query = "{ partnershipsConnection { edges { node { viewerRole user { id } } } } }"
    [mine] = (await api.execute(query, token=owner))["partnershipsConnection"]["edges"]
    [theirs] = (await api.execute(query, token=partner))["partnershipsConnection"]["edges"]
    assert (mine["node"]["viewerRole"], theirs["node"]["viewerRole"]) == ("OWNER", "PARTNER")


async def test_reviewing_a_proof_its_method_judged_says_so(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner, "PHOTO")
    submitted = await upload(
        api,
        "mutation($i: ID!, $p: Upload!) { proofPhotoSubmit(input: {instanceId: $i, photo: $p}) { verification { id } } }",
        {"i": instance_id, "p": file_var(photo(8))},
        token=owner,
    )
    verification_id = submitted["proofPhotoSubmit"]["verification"]["id"]
    decide = """mutation($v: ID!) {
      reviewDecide(input: {verificationId: $v, approve: false}) { verification { id } userErrors { code reason message } }
    }"""
    data = (await api.execute(decide, {"v": verification_id}, token=partner))["reviewDecide"]
    [error] = data["userErrors"]
    assert (data["verification"], error["code"], error["reason"]) == (None, "CONFLICT", "JUDGED_BY_METHOD")
    assert "PHOTO" in error["message"]
    try:
        await api.execute(
            "mutation($v: ID!) { review(verificationId: $v, approve: false) { id } }",
            {"v": verification_id},
            token=partner,
        )
    except GraphQLFailure as failure:
        assert failure.errors[0]["extensions"] == {"code": "CONFLICT", "reason": "JUDGED_BY_METHOD"}
    else:
        raise AssertionError("the first shape decided a review of a proof its method judged")


async def test_what_a_viewer_may_not_see_is_null(api: ApiClient) -> None:
    owner, owner_id, partner, _ = await partner_pair(api)
    query = "query($id: ID!) { node(id: $id) { ... on User { email profileTimezone timezone } } }"
    mine = (await api.execute(query, {"id": owner_id}, token=owner))["node"]
    theirs = (await api.execute(query, {"id": owner_id}, token=partner))["node"]
    assert mine["profileTimezone"] == mine["timezone"] == "UTC" and mine["email"]
    assert (theirs["email"], theirs["profileTimezone"], theirs["timezone"]) == (None, None, "")
