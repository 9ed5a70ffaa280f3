"""Partner changes under the commitment horizon, through the real API and worker: removing a partner waits
out the horizon (the partner keeps watching and deciding), a partner accepted beside another watches at
once but decides only once the horizon has passed (a first partner at once), and a review's timeout never
approves without a partner able to decide who is staying. A horizon "day" lasts one second here."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    free_port,
    partner_pair,
)
from tests.support.commitment_horizon import set_horizon
from tests.support.partner_horizon import (
    INSTANCE,
    a_removal_waits_out_the_horizon_and_the_partner_keeps_deciding,
    add_partner,
    removing_the_partner_under_a_review_that_approves_on_timeout_never_verifies,
    swapping_partners_waits_the_new_one_watches_but_decides_later,
)
from tests.support.reviews import request_review, review


@pytest.fixture(scope="module")
def horizon_server(service_env: dict[str, str], worker: WorkerProcess) -> Iterator[ServerProcess]:
    with ServerProcess(
        {**service_env, "PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS": "1"}, port=free_port()
    ) as proc:
        yield proc


@pytest.fixture
def api(horizon_server: ServerProcess, mailbox: Mailbox) -> ApiClient:
    return ApiClient(horizon_server.url, mailbox)


@pytest.mark.parametrize("days", [0, 30])
async def test_removing_the_partner_under_a_review_that_approves_on_timeout_never_verifies(
    api: ApiClient, days: int
) -> None:
    await removing_the_partner_under_a_review_that_approves_on_timeout_never_verifies(api, days)


async def test_a_removal_waits_out_the_horizon_and_the_partner_keeps_deciding(api: ApiClient) -> None:
    await a_removal_waits_out_the_horizon_and_the_partner_keeps_deciding(api)


async def test_swapping_partners_waits_the_new_one_watches_but_decides_later(api: ApiClient) -> None:
    await swapping_partners_waits_the_new_one_watches_but_decides_later(api)


async def test_a_held_back_partner_decides_once_the_horizon_has_passed(api: ApiClient) -> None:
    owner_token, _, _, _ = await partner_pair(api)
    await set_horizon(api, owner_token, 3)
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    second_token, _ = await add_partner(api, owner_token)
    requested = await request_review(api, owner_token, instance_id)
    with pytest.raises(GraphQLFailure) as held_back:
        await review(api, second_token, requested["id"], approve=True)
    assert held_back.value.code == "FORBIDDEN"
    later = datetime.now().astimezone() + timedelta(seconds=4)

    async def may_decide() -> bool:
        if datetime.now().astimezone() < later:
            return False
        try:
            await review(api, second_token, requested["id"], approve=True)
        except GraphQLFailure:
            return False
        return True

    await eventually(may_decide, 20, "the held-back partner decides once the horizon has passed")
    assert (await api.execute(INSTANCE, {"id": instance_id}, token=owner_token))["instance"][
        "status"
    ] == "VERIFIED"


async def test_a_first_partner_is_never_held_back(api: ApiClient) -> None:
    owner_token, _ = await api.register()
    await set_horizon(api, owner_token, 30)
    partner_token, _ = await add_partner(api, owner_token)
    _, instance_id = await create_open_task(api, owner_token, "PARTNER")
    requested = await request_review(api, owner_token, instance_id)
    decided = await review(api, partner_token, requested["id"], approve=True)
    assert decided["instance"]["status"] == "VERIFIED"
