"""Verdict records through the real API: why each settled instance has its status, under which revision
of the task's rule, on which proofs and by whom, read the same by the owner and a partner; a stranger
reads nothing (the instance is null to them). (Outage verdicts: tests/chain/test_catch_up.py; appeals: tests/proofs/test_appeals.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from harness.proofloop import BERLIN, ApiClient, create_open_task, done, partner_pair
from tests.support.backends import Deployment, both_backends
from tests.support.proofs_gps import check_in
from tests.support.reviews import request_review, review

VERDICT = """query($id: ID!) { instance(id: $id) {
  status
  verdict { outcome reason ruleRevision appealableUntil isFinal proofs { id status } reviewer { id } }
  task { ruleRevision }
} }"""
UPDATE = """mutation($input: TaskUpdateInput!) {
  taskUpdate(input: $input) { task { ruleRevision } userErrors { code message } }
}"""


@pytest.fixture
def api(deployment: Deployment) -> ApiClient:
    return deployment.client()


async def verdict_of(api: ApiClient, token: str, instance_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await api.execute(VERDICT, {"id": instance_id}, token=token))["instance"]
    return found


@both_backends
async def test_an_accepted_proof_names_itself_and_the_rule_revision_that_judged_it(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    task_id, instance_id = await create_open_task(api, owner, "GPS")
    assert (await verdict_of(api, owner, instance_id))["verdict"] is None  # open: no verdict yet

    # a wider geofence is a rule change (revision 2); a title is not
    gps = {"center": {"latitude": BERLIN[0], "longitude": BERLIN[1]}, "radiusMeters": 300}
    widened = await api.execute(UPDATE, {"input": {"id": task_id, "gps": gps}}, token=owner)
    assert done(widened, "taskUpdate")["task"]["ruleRevision"] == 2
    renamed = await api.execute(UPDATE, {"input": {"id": task_id, "title": "Gym"}}, token=owner)
    assert done(renamed, "taskUpdate")["task"]["ruleRevision"] == 2

    proof = await check_in(api, owner, instance_id)
    assert proof["status"] == "ACCEPTED"
    for reader in (owner, partner):
        read = await verdict_of(api, reader, instance_id)
        assert read["verdict"] == {
            "outcome": "VERIFIED",
            "reason": "PROOF_ACCEPTED",
            "ruleRevision": 2,
            "appealableUntil": None,
            "isFinal": True,
            "proofs": [{"id": proof["id"], "status": "ACCEPTED"}],
            "reviewer": None,
        }
    stranger, _ = await api.register()
    assert await api.execute(VERDICT, {"id": instance_id}, token=stranger) == {"instance": None}


@both_backends
async def test_a_partners_decision_names_the_partner_and_the_review(api: ApiClient) -> None:
    owner, _, partner, partner_id = await partner_pair(api)
    _, approved_id = await create_open_task(api, owner, "PARTNER")
    _, rejected_id = await create_open_task(api, owner, "PARTNER")
    approved = await request_review(api, owner, approved_id, note="done")
    rejected = await request_review(api, owner, rejected_id, note="done too")
    assert (await verdict_of(api, owner, approved_id))["verdict"] is None  # waiting for the partner

    await review(api, partner, approved["id"], approve=True)
    await review(api, partner, rejected["id"], approve=False)

    yes = (await verdict_of(api, owner, approved_id))["verdict"]
    assert (yes["outcome"], yes["reason"], yes["reviewer"]) == (
        "VERIFIED",
        "PARTNER_APPROVED",
        {"id": partner_id},
    )
    assert yes["proofs"] == [{"id": approved["id"], "status": "ACCEPTED"}] and yes["isFinal"] is True
    no = (await verdict_of(api, partner, rejected_id))["verdict"]
    assert (no["outcome"], no["reason"], no["reviewer"]) == (
        "REJECTED",
        "PARTNER_REJECTED",
        {"id": partner_id},
    )
    assert no["proofs"] == [{"id": rejected["id"], "status": "REJECTED"}]
    # a partner's rejection is final: only a MISSED instance may be appealed
    assert no["appealableUntil"] is None and no["isFinal"] is True
