"""Event positions never go back: deleting the account whose events are the newest leaves the next events
of everyone else after them, live and on resume, and no event id is given twice."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.chain_support import eventually
from harness.proofloop import create_open_task, event_position, partner_pair
from tests.support.backends import Backend, Deployment, deployed
from tests.support.live import history, live_feed, wait_for_history

GRACE_SECONDS = 2
CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 10) { id }
}"""
DELETE = 'mutation { requestAccountDeletion(password: "correct horse battery") { deletionDueAt } }'


@pytest.fixture(scope="module")
def running(backend: Backend, request: pytest.FixtureRequest) -> Iterator[Deployment]:
    grace = {"PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS": str(GRACE_SECONDS)}
    with deployed(request, backend, grace) as deployment:
        yield deployment


@pytest.mark.both_backends
async def test_a_deleted_accounts_newest_events_never_hide_the_next_ones(running: Deployment) -> None:
    api = running.client()
    owner, owner_id, partner, _ = await partner_pair(api)
    _, first = await create_open_task(api, owner, "GPS")
    await api.execute(CHECK_IN, {"id": first}, token=owner)
    seen = await wait_for_history(api, partner, 1)

    async with live_feed(running.server, partner, userId=owner_id, after=seen[-1]) as feed:
        leaving, leaving_user = await api.register()
        _, theirs = await create_open_task(api, leaving, "GPS")
        await api.execute(CHECK_IN, {"id": theirs}, token=leaving)
        their_ids = await wait_for_history(api, leaving, 1)  # positioned: the newest events of all
        newest = max(event_position(i) for i in their_ids)
        assert newest > max(event_position(i) for i in seen)
        await api.execute(DELETE, token=leaving)

        async def deleted() -> bool:
            return not await running.sql("SELECT 1 FROM users WHERE email = $1", leaving_user["email"])

        await eventually(deleted, 30, "the sweep deletes the account once its grace period has passed")

        _, second = await create_open_task(api, owner, "GPS")
        await api.execute(CHECK_IN, {"id": second}, token=owner)
        arrived = await feed.next(within=30)  # the live cursor has passed the deleted events' positions
        while arrived["instance"]["id"] == first:  # the first check-in's later event, if it came late
            arrived = await feed.next(within=30)

    assert arrived["instance"]["id"] == second
    assert event_position(arrived["id"]) > newest
    assert arrived["id"] not in their_ids
    resumed = await history(api, partner, after=seen[-1])
    assert arrived["id"] in resumed
    assert not set(resumed) & set(their_ids)
