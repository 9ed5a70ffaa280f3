"""The recurrence clock is a backstop: when it fires, callers get RATE_LIMITED (try again), logged at WARNING,
never a verdict on the rule and never a stored rule taken as exhausted."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from rules.recurrence import RecurrenceBudget, Schedule
from services.kit.errors import RateLimited
from services.schedules.due_times import check_schedule, due_times_after

pytestmark = pytest.mark.unit

STALLED = RecurrenceBudget(max_seconds=-1)  # a host that has no time left at the first step
DAILY = Schedule(datetime(2026, 1, 1, 7, tzinfo=UTC), "FREQ=DAILY", "Europe/Berlin", 0, 0)


async def test_a_stalled_validation_is_rate_limited_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="proofloop.schedules"),
        pytest.raises(RateLimited) as refused,
    ):
        await check_schedule(DAILY, min_interval_seconds=60, budget=STALLED)
    assert refused.value.retry_after_seconds is not None
    assert [r.levelno for r in caplog.records if "ran out of time" in r.getMessage()] == [logging.WARNING]


async def test_a_stalled_expansion_is_no_answer() -> None:
    for _ in range(2):  # neither remembered nor taken as an exhausted schedule
        with pytest.raises(RateLimited):
            await due_times_after(DAILY, datetime(2026, 5, 1, tzinfo=UTC), 3, STALLED)
