"""The demo against a real server: it partners two users, its proofs leave events both of them can read,
and the partner's phone (a webhook on this machine) is told what he may read."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from demo import run_demo
from harness.mailbox import Mailbox, mailed_token
from harness.private_services import local_receivers_env
from harness.proofloop import ServerProcess, WorkerProcess, free_port

EVENTS = "query($user: ID) { events(userId: $user, first: 100) { type taskTitle } }"
# reminders come from the worker at their time: the first ("at open") is due as the demo starts
REMINDER_WAIT_SECONDS = 30
# the demo never proves its video task, so that task's opening reminder is certain to fire; the other
# tasks' reminders race their proofs (a reminder is rightly dropped once its instance is settled)
CERTAIN_REMINDER = ("DUE_SOON", "Stretching video")
ME = "{ me { id } }"


@pytest.fixture(scope="module")
def env(service_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A database and Redis of their own, with `make run`'s local webhook receivers allowed (the run's
    own worker keeps production's address rules)."""
    with local_receivers_env(service_env, "proofloop_demo") as env:
        yield env


@pytest.fixture(scope="module")
def server(env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def worker(env: dict[str, str], server: ServerProcess) -> Iterator[WorkerProcess]:
    with WorkerProcess(env) as proc:
        yield proc


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
    assert ("VERIFIED", "Morning run") in kinds  # an automatic proof: the watch's signed event
    assert ("VERIFIED", "Gym 3x a week") in kinds  # a quota goal, on its third check-in of the week
    assert "three gym check-ins this week (ACCEPTED, ACCEPTED, ACCEPTED): 3 of 3, VERIFIED" in out
    assert "Alice's watch reports a 30-minute run: ACCEPTED" in out
    assert "location sample away from the casino" in out  # an avoid-a-place task, judged at its due time
    assert CERTAIN_REMINDER in kinds
    assert {("APPEAL_REQUESTED", "Evening walk"), ("APPEAL_DECIDED", "Evening walk")} <= kinds
    assert "Evening walk" in out and "upholds: ACCEPTED" in out
    # Bob's phone was told of the review Alice asked of him and of her miss (her appeal comes seconds
    # later, near the demo's end on a loaded machine)
    assert "Bob's phone (webhook)  Alice: REVIEW_REQUESTED Read 20 pages" in out
    assert "Bob's phone (webhook)  Alice: MISSED Evening walk" in out
    assert "DUE_SOON" not in "".join(line for line in out.splitlines() if "phone" in line)
    # reminders are Alice's own: Bob reads everything else
    assert as_partner == [e for e in own if e["type"] != "DUE_SOON"]
