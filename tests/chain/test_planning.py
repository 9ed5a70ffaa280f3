"""The planning rule as a table (services/chain/planning.py): what comes after an instance, on time or
late, after a settlement or an edit, through breaks, to the end of a rule, up to the catch-up limit.
No database: the rule only expands schedules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rules.breaks import BreakSpan
from rules.recurrence import DEFAULT_BUDGET, Schedule
from services.chain.planning import Ask, Step, next_steps

pytestmark = pytest.mark.unit

D = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)  # a Monday, 07:00
DAY, HOUR = timedelta(days=1), timedelta(hours=1)


def daily(rrule: str = "FREQ=DAILY") -> Schedule:
    return Schedule(starts_at=D, rrule=rrule, timezone="UTC", window_seconds=600, grace_seconds=60)


async def step(ask: Ask, now: datetime, limit: int = 1000) -> Step:
    return (await next_steps([ask], now, DEFAULT_BUDGET, limit))[ask.task_id]


@pytest.mark.parametrize(
    ("schedule", "excuse", "now", "breaks", "passed_over", "next_due"),
    [
        # settled at its close (+ grace), on time: the next day, nothing passed over
        (daily(), True, D + timedelta(seconds=61), (), (), D + DAY),
        # settled 3.5 days late: the three days between had no instance
        (daily(), True, D + 3 * DAY + 12 * HOUR, (), (D + DAY, D + 2 * DAY, D + 3 * DAY), D + 4 * DAY),
        # the same moment after an edit (a re-plan): skipped on purpose, nothing recorded
        (daily(), False, D + 3 * DAY + 12 * HOUR, (), (), D + 4 * DAY),
        # a break over the next day: the one after it
        (
            daily(),
            True,
            D + timedelta(seconds=61),
            (BreakSpan(D + 12 * HOUR, D + DAY + 12 * HOUR),),
            (),
            D + 2 * DAY,
        ),
        # a COUNT rule of 5, late past its end: the rest passed over, and it ENDs
        (daily("FREQ=DAILY;COUNT=5"), True, D + 10 * DAY, (), tuple(D + n * DAY for n in range(1, 5)), None),
        # its last occurrence settled on time: it ENDs, nothing passed over
        (daily("FREQ=DAILY;COUNT=1"), True, D + timedelta(seconds=61), (), (), None),
    ],
    ids=["on time", "late", "an edit", "a break", "late past the end", "the end"],
)
async def test_what_comes_after_an_instance(
    schedule: Schedule,
    excuse: bool,
    now: datetime,
    breaks: tuple[BreakSpan, ...],
    passed_over: tuple[datetime, ...],
    next_due: datetime | None,
) -> None:
    got = await step(Ask("t", schedule, D, excuse=excuse, breaks=breaks), now)
    assert (got.passed_over, got.next_due, got.more_passed_over) == (passed_over, next_due, False)


async def test_a_long_outage_records_up_to_the_limit_and_says_there_were_more() -> None:
    hourly = Schedule(starts_at=D, rrule="FREQ=HOURLY", timezone="UTC", window_seconds=60, grace_seconds=0)
    got = await step(Ask("t", hourly, D, excuse=True), D + 10 * HOUR + timedelta(minutes=30), limit=3)
    assert got.passed_over == (D + HOUR, D + 2 * HOUR, D + 3 * HOUR)
    assert got.more_passed_over and got.next_due == D + 11 * HOUR


async def test_a_set_of_asks_is_answered_each_by_its_own_schedule() -> None:
    now = D + 2 * DAY + HOUR
    asks = [Ask("late", daily(), D, excuse=True), Ask("edited", daily(), D, excuse=False)]
    got = await next_steps(asks, now, DEFAULT_BUDGET, 1000)
    assert got["late"] == Step((D + DAY, D + 2 * DAY), D + 3 * DAY)
    assert got["edited"] == Step((), D + 3 * DAY)
