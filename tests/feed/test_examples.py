"""examples/partner_feed.py as a user runs it: a subprocess that logs in and prints a partner's live feed."""

from __future__ import annotations

import asyncio
import sys
import uuid

from harness.chain_support import create_short_task
from harness.proofloop import ROOT, ApiClient, ServerProcess, WorkerProcess, child_env

INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }"
PASSWORD = "correct horse battery"  # what ApiClient.register gives every account


async def read_until(stream: asyncio.StreamReader, *texts: str, timeout: float = 45) -> str:
    async def scan() -> str:
        while line := (await stream.readline()).decode():
            if all(text in line for text in texts):
                return line
        raise AssertionError(f"the feed ended before a line with {texts}")

    return await asyncio.wait_for(scan(), timeout)


async def test_partner_feed_prints_a_missed_instance(
    server: ServerProcess, worker: WorkerProcess, api: ApiClient
) -> None:
    alice_token, _ = await api.register(f"alice-{uuid.uuid4().hex[:6]}")
    bob_name = f"bob-{uuid.uuid4().hex[:6]}"
    bob_token, bob = await api.register_verified(bob_name)
    invite = await api.execute(INVITE, {"e": bob["email"]}, token=alice_token)
    await api.execute(ACCEPT, {"id": invite["invitePartner"]["id"]}, token=bob_token)

    feed = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "examples" / "partner_feed.py"),
        "--url",
        server.url,
        env=child_env({"PARTNER_FEED_EMAIL": bob["email"], "PARTNER_FEED_PASSWORD": PASSWORD}),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert feed.stderr is not None and feed.stdout is not None
        await read_until(feed.stderr, f"signed in as {bob_name}")
        title = f"Feed {uuid.uuid4().hex[:6]}"
        await create_short_task(api, alice_token, title=title)

        line = await read_until(feed.stdout, "MISSED", title)

        assert "alice-" in line
    finally:
        feed.terminate()
        await feed.wait()
