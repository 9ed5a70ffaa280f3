"""Catch-up after an outage, through the real API: a worker stopped across three occurrences leaves the
open instance MISSED (its window was usable: the API took proofs) and the occurrences due while nothing
could plan them EXCUSED with reason SERVICE_OUTAGE, pushed live to partners, with their verdicts; neither
counts in progress. A deployment of its own (private database and Redis), so no other worker fires it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.chain_support import create_short_task, eventually
from harness.proofloop import ApiClient, WorkerProcess, free_port
from tests.support.backends import Backend, Deployment, both_backends, deployed
from tests.support.live import live_feed, make_partners

EVERY = 3
INSTANCES = """query($id: ID!) {
  task(id: $id) {
    ruleRevision
    progress { completion(days: 1) { settled verified } }
    instances(first: 20) { edges { node {
      status dueAt
      verdict { outcome reason ruleRevision appealableUntil isFinal proofs { id } reviewer { id } }
    } } }
  }
  eventsConnection(taskId: $id, first: 50) { edges { node { type instance { status } } } }
}"""

pytestmark = both_backends


@pytest.fixture(scope="module")
def outage(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    with deployed(request, backend, workers=1, private=True) as running:
        yield running


async def _read(api: ApiClient, token: str, task_id: str) -> dict[str, Any]:
    data: dict[str, Any] = await api.execute(INSTANCES, {"id": task_id}, token=token)
    return data


async def test_a_worker_stopped_across_occurrences_leaves_them_excused_and_the_open_one_missed(
    outage: Deployment,
) -> None:
    async with outage.client() as api:
        owner_token, _ = await api.register()
        partner_token, partner = await api.register()
        await make_partners(api, owner_token, partner_token, partner["email"])  # mail needs the worker
        outage.worker.stop()
        async with live_feed(outage.server, partner_token, after="0") as seen:
            task = await create_short_task(api, owner_token, start_in=1, every=EVERY)
            first_due = datetime.fromisoformat(
                (await _read(api, owner_token, task["id"]))["task"]["instances"]["edges"][0]["node"]["dueAt"]
            )
            # three occurrences pass with no worker: the first instance's and two that have none
            await _sleep_until(first_due + timedelta(seconds=2 * EVERY + 1))
            worker = WorkerProcess({**outage.env, "PROOFLOOP_WORKER_METRICS_PORT": str(free_port())})
            worker.start()
            try:

                async def first_settled() -> bool:
                    read = await _read(api, owner_token, task["id"])
                    return bool(_oldest_first(read)[0]["status"] != "PENDING")

                await eventually(first_settled, 30, "the first instance settled once a worker runs")
                read = await _read(api, owner_token, task["id"])
                live = [await seen.next(within=15) for _ in range(3)]
            finally:
                worker.stop()

    nodes = _oldest_first(read)
    statuses = [node["status"] for node in nodes]
    excused = [node for node in nodes if node["status"] == "EXCUSED"]
    assert statuses[0] == "MISSED"
    assert statuses == ["MISSED", *["EXCUSED"] * len(excused), "PENDING"], statuses
    assert len(excused) >= 2, statuses
    dues = [datetime.fromisoformat(node["dueAt"]) for node in nodes]
    # nothing skipped by omission: one instance per occurrence, each EVERY seconds after the last
    assert all(b - a == timedelta(seconds=EVERY) for a, b in itertools.pairwise(dues))

    missed = nodes[0]["verdict"]
    assert missed["outcome"] == "MISSED" and missed["reason"] == "NO_PROOF"
    assert missed["ruleRevision"] == read["task"]["ruleRevision"] == 1
    assert missed["appealableUntil"] is not None and missed["isFinal"] is False
    for node in excused:
        assert node["verdict"] == {
            "outcome": "EXCUSED",
            "reason": "SERVICE_OUTAGE",
            "ruleRevision": None,
            "appealableUntil": None,
            "isFinal": True,
            "proofs": [],
            "reviewer": None,
        }
    assert nodes[-1]["verdict"] is None  # still open

    # the history and the partner's live feed say the same; progress counts the MISSED one only
    types = [edge["node"]["type"] for edge in read["eventsConnection"]["edges"]]
    assert types.count("EXCUSED") == len(excused) and types.count("MISSED") == 1
    assert [event["type"] for event in live] == ["MISSED", "EXCUSED", "EXCUSED"]
    assert read["task"]["progress"]["completion"] == {"settled": 1, "verified": 0}


def _oldest_first(read: dict[str, Any]) -> list[dict[str, Any]]:
    return [edge["node"] for edge in reversed(read["task"]["instances"]["edges"])]  # newest first


async def _sleep_until(moment: datetime) -> None:
    await asyncio.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()))
