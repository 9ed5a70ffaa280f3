"""Partnerships over real HTTP: invites by email (never revealing accounts), answers, removal."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from harness.mailbox import html_of, text_of
from harness.proofloop import ApiClient, GraphQLFailure, create_open_task

FIELDS = "id status invitedEmail createdAt user { id } partner { id displayName }"
INVITE = f"mutation($e: String!) {{ invitePartner(email: $e) {{ {FIELDS} }} }}"
RESPOND = (
    f"mutation($id: ID!, $a: Boolean!) {{ respondToInvite(partnershipId: $id, accept: $a) {{ {FIELDS} }} }}"
)
REMOVE = "mutation($id: ID!) { removePartner(partnershipId: $id) }"
LIST = f"query {{ partnerships {{ {FIELDS} }} }}"
TASK = "query($id: ID!) { task(id: $id) { id } }"


async def invite(api: ApiClient, token: str, email: str) -> dict[str, Any]:
    return dict((await api.execute(INVITE, {"e": email}, token=token))["invitePartner"])


async def respond(api: ApiClient, token: str, partnership_id: str, accept: bool) -> dict[str, Any]:
    return dict(
        (await api.execute(RESPOND, {"id": partnership_id, "a": accept}, token=token))["respondToInvite"]
    )


async def partnerships(api: ApiClient, token: str) -> list[dict[str, Any]]:
    return list((await api.execute(LIST, token=token))["partnerships"])


async def expect_code(api: ApiClient, document: str, variables: dict[str, Any], token: str) -> str:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    return failure.value.code


async def test_invite_accept_and_both_directions(api: ApiClient) -> None:
    owner_token, owner = await api.register()
    partner_token, partner = await api.register_verified()
    invited = await invite(api, owner_token, partner["email"].upper())
    assert invited["status"] == "INVITED"
    assert invited["partner"] is None
    assert invited["invitedEmail"] == partner["email"]

    seen_by_invitee = await partnerships(api, partner_token)
    assert [(p["id"], p["user"]["id"], p["invitedEmail"]) for p in seen_by_invitee] == [
        (invited["id"], owner["id"], None)  # the address is the inviter's to see
    ]

    accepted = await respond(api, partner_token, invited["id"], True)
    assert accepted["status"] == "ACTIVE"
    assert accepted["partner"]["id"] == partner["id"]
    for token in (owner_token, partner_token):
        assert [(p["id"], p["status"]) for p in await partnerships(api, token)] == [(invited["id"], "ACTIVE")]


async def test_unknown_email_looks_exactly_like_a_known_one(api: ApiClient) -> None:
    token, _ = await api.register()
    _, known = await api.register()
    unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
    shapes = []
    for email in (known["email"], unknown):
        row = await invite(api, token, email)
        shapes.append({k: v for k, v in row.items() if k not in ("id", "invitedEmail", "createdAt")})
    assert shapes[0] == shapes[1]

    # whoever registers the address later (and proves it is theirs) finds the invite waiting
    later_token, later = await api.register_verified(unknown.split("@")[0])
    waiting = await partnerships(api, later_token)
    assert [p["status"] for p in waiting] == ["INVITED"]
    assert (await respond(api, later_token, waiting[0]["id"], True))["partner"]["id"] == later["id"]


async def test_invite_rules(api: ApiClient) -> None:
    token, me = await api.register()
    _, other = await api.register()
    for email in (me["email"], me["email"].upper(), "not-an-email"):
        with pytest.raises(GraphQLFailure) as failure:
            await invite(api, token, email)
        assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "email")
    await invite(api, token, other["email"])
    assert await expect_code(api, INVITE, {"e": other["email"].upper()}, token) == "CONFLICT"


async def test_only_the_invitee_answers_and_only_once(api: ApiClient) -> None:
    owner_token, _ = await api.register()
    partner_token, partner = await api.register_verified()
    stranger_token, _ = await api.register()
    row = await invite(api, owner_token, partner["email"])
    variables = {"id": row["id"], "a": True}
    assert await expect_code(api, RESPOND, variables, stranger_token) == "NOT_FOUND"
    assert await expect_code(api, RESPOND, variables, owner_token) == "FORBIDDEN"
    assert await expect_code(api, RESPOND, {"id": "nope", "a": True}, partner_token) == "NOT_FOUND"

    declined = await respond(api, partner_token, row["id"], False)
    assert (declined["status"], declined["partner"]) == ("DECLINED", None)
    assert await expect_code(api, RESPOND, variables, partner_token) == "CONFLICT"
    # a declined invite may be sent again
    assert (await invite(api, owner_token, partner["email"]))["status"] == "INVITED"


@pytest.mark.parametrize("side", ["user", "partner"])
async def test_either_side_removes_and_access_ends(api: ApiClient, side: str) -> None:
    owner_token, _ = await api.register()
    partner_token, partner = await api.register_verified()
    stranger_token, _ = await api.register()
    task_id, _ = await create_open_task(api, owner_token, "PHOTO")
    row = await invite(api, owner_token, partner["email"])
    await respond(api, partner_token, row["id"], True)
    assert (await api.execute(TASK, {"id": task_id}, token=partner_token))["task"] is not None

    assert await expect_code(api, REMOVE, {"id": row["id"]}, stranger_token) == "NOT_FOUND"
    remover = owner_token if side == "user" else partner_token
    assert (await api.execute(REMOVE, {"id": row["id"]}, token=remover))["removePartner"] is True
    assert [p["status"] for p in await partnerships(api, owner_token)] == ["REMOVED"]
    assert (await api.execute(TASK, {"id": task_id}, token=partner_token))["task"] is None
    assert await expect_code(api, REMOVE, {"id": row["id"]}, remover) == "CONFLICT"
    # once removed, a fresh invite is allowed
    assert (await invite(api, owner_token, partner["email"]))["status"] == "INVITED"


async def test_partnerships_are_newest_first(api: ApiClient) -> None:
    token, _ = await api.register()
    emails = [f"p{i}-{uuid.uuid4().hex[:6]}@example.com" for i in range(3)]
    ids = [(await invite(api, token, email))["id"] for email in emails]
    assert [p["id"] for p in await partnerships(api, token)] == ids[::-1]


async def test_registering_an_invited_address_does_not_take_the_invite(api: ApiClient) -> None:
    """The takeover: an owner invites an address with no account; someone else registers it first."""
    owner_token, _ = await api.register("owner")
    await create_open_task(api, owner_token, "PHOTO")
    invited = f"victim-{uuid.uuid4().hex[:8]}@example.com"
    row = await invite(api, owner_token, invited)
    assert api.mailbox is not None
    mail = await api.mailbox.wait_for(
        invited, "invited to be an accountability partner"
    )  # the address itself is told
    assert "owner" in text_of(mail) and "owner" in html_of(mail)

    attacker_token, _ = await api.register(invited.split("@")[0])  # never sees the mail sent there
    with pytest.raises(GraphQLFailure) as failure:
        await respond(api, attacker_token, row["id"], True)
    assert failure.value.code == "FORBIDDEN"
    assert "verify your email" in failure.value.message
    assert (await api.execute("{ tasks { edges { node { id } } } }", token=attacker_token))["tasks"][
        "edges"
    ] == []

    # the one who reads the address's mail verifies it, then accepts
    await api.verify_email(invited)
    assert (await respond(api, attacker_token, row["id"], True))["status"] == "ACTIVE"


async def test_declining_needs_no_verification(api: ApiClient) -> None:
    owner_token, _ = await api.register()
    _, partner = await api.register()
    partner_token = (
        await api.execute(
            'mutation($e: String!) { login(email: $e, password: "correct horse battery") { token } }',
            {"e": partner["email"]},
        )
    )["login"]["token"]
    row = await invite(api, owner_token, partner["email"])
    assert (await respond(api, partner_token, row["id"], False))["status"] == "DECLINED"


async def test_invite_mail_is_the_same_for_known_and_unknown_addresses(api: ApiClient) -> None:
    token, _ = await api.register("inviter")
    _, known = await api.register()
    unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
    assert api.mailbox is not None
    mails = []
    for email in (known["email"], unknown):
        await invite(api, token, email)
        mails.append(await api.mailbox.wait_for(email, "invited to be an accountability partner"))
    assert [str(m["Subject"]) for m in mails] == [str(mails[0]["Subject"])] * 2
    assert text_of(mails[0]) == text_of(mails[1])
