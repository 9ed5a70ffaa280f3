"""The demo against a real server: it partners two users and its proofs leave events both of them can read."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from demo import run_demo
from harness.mailbox import Mailbox, mailed_token
from harness.proofloop import ServerProcess, WorkerProcess

EVENTS = "query($user: ID) { events(userId: $user, first: 100) { type taskTitle } }"
# reminders come from the worker at their time: the first ("at open") is due as the demo starts
REMINDER_WAIT_SECONDS = 30
# the demo never proves its video task, so that task's opening reminder is certain to fire; the other
# tasks' reminders race their proofs (a reminder is rightly dropped once its instance is settled)
CERTAIN_REMINDER = ("DUE_SOON", "Stretching video")
ME = "{ me { id } }"


def as_user(
    server: ServerProcess, token: str, document: str, variables: dict[str, str] | None = None
) -> dict[str, Any]:
    response = httpx.post(
        f"{server.url}/graphql",
        json={"query": document, "variables": variables or {}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    payload = response.json()
    assert "errors" not in payload, payload
    data: dict[str, Any] = payload["data"]
    return data


def test_demo_produces_events_the_partner_sees(
    server: ServerProcess, worker: WorkerProcess, mailbox: Mailbox, capsys: pytest.CaptureFixture[str]
) -> None:
    def mailed_token_of(email: str) -> str:
        deadline = time.monotonic() + 30
        while not mailbox.to(email, "Confirm your email") and time.monotonic() < deadline:
            time.sleep(0.1)
        return mailed_token(mailbox.to(email, "Confirm your email")[-1])

    assert run_demo(server.url, duration=8, mailed_token=mailed_token_of) == 0

    out = capsys.readouterr().out
    alice_token, bob_token = re.findall(r"token: (\S+)", out)
    assert '{"Authorization": "Bearer ' + bob_token + '"}' in out
    assert "subscription { verificationEvents" in out
    alice = as_user(server, alice_token, ME)["me"]["id"]
    deadline = time.monotonic() + REMINDER_WAIT_SECONDS
    while True:
        own = as_user(server, alice_token, EVENTS)["events"]
        if CERTAIN_REMINDER in {(e["type"], e["taskTitle"]) for e in own} or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    as_partner = as_user(server, bob_token, EVENTS, {"user": alice})["events"]

    kinds = {(e["type"], e["taskTitle"]) for e in own}
    assert ("VERIFIED", "Gym check-in") in kinds
    assert ("VERIFIED", "Breakfast photo") in kinds
    assert ("REVIEW_REQUESTED", "Read 20 pages") in kinds
    assert CERTAIN_REMINDER in kinds
    assert {("APPEAL_REQUESTED", "Evening walk"), ("APPEAL_DECIDED", "Evening walk")} <= kinds
    assert "Evening walk" in out and "upholds: ACCEPTED" in out
    # reminders are Alice's own: Bob reads everything else
    assert as_partner == [e for e in own if e["type"] != "DUE_SOON"]
