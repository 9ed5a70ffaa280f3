"""The chain plans from due times expanded before its transaction; these say when they can answer."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from rules.recurrence import Schedule
from services.schedules.due_times import DueTimes

pytestmark = pytest.mark.unit

DAILY = Schedule(datetime(2026, 1, 1, 7, tzinfo=UTC), "FREQ=DAILY", "UTC", 0, 0)
AFTER = datetime(2026, 3, 1, 7, tzinfo=UTC)
TIMES = tuple(AFTER + timedelta(days=n) for n in (1, 2, 3))


def test_prefetched_times_answer_for_a_later_moment_of_the_same_schedule() -> None:
    due = DueTimes(DAILY, AFTER, TIMES, exhausted=False)
    assert due.first_after(AFTER, DAILY) == (True, TIMES[0])
    assert due.first_after(TIMES[0], DAILY) == (True, TIMES[1])  # the database's clock moved on meanwhile


def test_they_cannot_answer_past_their_last_time_earlier_than_computed_or_for_an_edited_rule() -> None:
    due = DueTimes(DAILY, AFTER, TIMES, exhausted=False)
    assert due.first_after(TIMES[-1], DAILY) == (False, None)  # the planner expands anew
    assert due.first_after(AFTER - timedelta(seconds=1), DAILY) == (False, None)
    assert due.first_after(AFTER, replace(DAILY, rrule="FREQ=WEEKLY")) == (False, None)


def test_an_exhausted_schedule_answers_none_past_its_last_time() -> None:
    due = DueTimes(DAILY, AFTER, TIMES[:1], exhausted=True)
    assert due.first_after(TIMES[0], DAILY) == (True, None)
