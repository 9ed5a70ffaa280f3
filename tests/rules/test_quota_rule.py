"""Quota goals' pure rules: periods bounded at local midnight in the task's zone (through clock changes and
month ends), the minimum gap, the bounds a quota must keep, and the recurrence the periods become."""

from __future__ import annotations

import json
import runpy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from rules.errors import InvalidInput
from rules.quota import (
    Period,
    Quota,
    boundary_rule,
    check_quota,
    counts_after_gap,
    first_period_end,
    local_midnight,
    period_start,
)
from rules.recurrence import Schedule, occurrences_after, validate_schedule
from services.webhooks.webhooks import FiredReminder, _reminder_body

pytestmark = pytest.mark.unit

BERLIN = ZoneInfo("Europe/Berlin")
SANTIAGO = ZoneInfo("America/Santiago")  # its clocks change at midnight: 2026-09-06 00:00 does not exist


def quota_schedule(starts_at: datetime, quota: Quota, zone: str) -> Schedule:
    return Schedule(
        starts_at=first_period_end(starts_at, quota, ZoneInfo(zone)),
        rrule=boundary_rule(quota),
        timezone=zone,
        window_seconds=0,
        grace_seconds=0,
        period=quota.period,
    )


def test_a_week_of_the_spring_clock_change_is_167_hours_from_monday_to_monday() -> None:
    quota = Quota(3, Period.WEEK)
    thursday = datetime(2027, 3, 25, 12, 0, tzinfo=BERLIN)
    end = first_period_end(thursday, quota, BERLIN)
    assert end == datetime(2027, 3, 29, 0, 0, tzinfo=BERLIN)
    start = period_start(end, Period.WEEK, BERLIN)
    assert start == datetime(2027, 3, 22, 0, 0, tzinfo=BERLIN)
    assert end - start == timedelta(hours=167)
    schedule = quota_schedule(thursday, quota, "Europe/Berlin")
    validate_schedule(schedule, min_interval_seconds=60)
    following = occurrences_after(schedule, end, 2)
    assert [f.astimezone(BERLIN) for f in following] == [
        datetime(2027, 4, 5, 0, 0, tzinfo=BERLIN),
        datetime(2027, 4, 12, 0, 0, tzinfo=BERLIN),
    ]
    assert following[0] - end == timedelta(hours=168)


@pytest.mark.parametrize(
    ("week_start", "first_day"),
    [("MO", 0), ("SU", 6), ("SA", 5), ("WE", 2)],
)
def test_a_week_starts_on_its_chosen_day(week_start: str, first_day: int) -> None:
    friday = datetime(2026, 12, 4, 9, 0, tzinfo=BERLIN)
    end = first_period_end(friday, Quota(2, Period.WEEK, week_start), BERLIN)
    start = period_start(end, Period.WEEK, BERLIN).astimezone(BERLIN)
    assert start.weekday() == first_day and (start.hour, start.minute) == (0, 0)
    assert start <= friday < end


def test_months_and_days_end_at_local_midnight_through_february_and_the_autumn_change() -> None:
    january = datetime(2027, 1, 31, 23, 30, tzinfo=BERLIN)
    end = first_period_end(january, Quota(20, Period.MONTH), BERLIN)
    assert end == datetime(2027, 2, 1, 0, 0, tzinfo=BERLIN)
    february = occurrences_after(quota_schedule(january, Quota(20, Period.MONTH), "Europe/Berlin"), end, 1)[0]
    assert february == datetime(2027, 3, 1, 0, 0, tzinfo=BERLIN)
    assert period_start(february, Period.MONTH, BERLIN) == end
    assert period_start(datetime(2027, 1, 1, tzinfo=BERLIN), Period.MONTH, BERLIN) == datetime(
        2026, 12, 1, tzinfo=BERLIN
    )
    autumn = first_period_end(datetime(2027, 10, 31, 12, 0, tzinfo=BERLIN), Quota(1, Period.DAY), BERLIN)
    assert autumn - period_start(autumn, Period.DAY, BERLIN) == timedelta(hours=25)


def test_a_midnight_the_clock_skips_moves_forward_and_the_next_is_midnight_again() -> None:
    assert local_midnight(datetime(2026, 9, 6).date(), SANTIAGO).astimezone(SANTIAGO).hour == 1
    quota = Quota(1, Period.DAY)
    schedule = quota_schedule(datetime(2026, 9, 5, 10, 0, tzinfo=SANTIAGO), quota, "America/Santiago")
    validate_schedule(schedule, min_interval_seconds=60)
    ends = [e.astimezone(SANTIAGO) for e in occurrences_after(schedule, schedule.starts_at, 2)]
    assert [(e.day, e.hour) for e in [schedule.starts_at.astimezone(SANTIAGO), *ends]] == [
        (6, 1),
        (7, 0),
        (8, 0),
    ]


def test_the_minimum_gap_counts_from_the_last_counted_proof() -> None:
    first = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    assert counts_after_gap(None, first, 3600)
    assert not counts_after_gap(first, first + timedelta(minutes=59), 3600)
    assert counts_after_gap(first, first + timedelta(hours=1), 3600)
    assert counts_after_gap(first, first, 0)


@pytest.mark.parametrize(
    ("quota", "field"),
    [
        (Quota(0, Period.WEEK), "q.count"),
        (Quota(101, Period.WEEK), "q.count"),
        (Quota(2, Period.WEEK, "XX"), "q.weekStartsOn"),
        (Quota(2, Period.WEEK, "MO", -1), "q.minGapSeconds"),
        (Quota(2, Period.WEEK, "MO", 8 * 86400), "q.minGapSeconds"),
        (Quota(3, Period.DAY, "MO", 12 * 3600), "q.minGapSeconds"),  # 24 h of gaps in a 23-hour day
        (Quota(29, Period.MONTH, "MO", 86400), "q.minGapSeconds"),  # February has not 28 days of gaps
    ],
)
def test_a_quota_that_could_never_be_met_or_says_nothing_is_refused(quota: Quota, field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_quota(quota, "q")
    assert refused.value.field == field


def test_quotas_that_fit_are_kept() -> None:
    for quota in (
        Quota(1, Period.DAY),
        Quota(3, Period.WEEK, "SU", 86400),
        Quota(20, Period.MONTH, "MO", 3600),
    ):
        assert check_quota(quota, "q") == quota


def test_a_quota_goals_reminder_tells_how_far_its_period_has_come() -> None:
    at = datetime(2026, 12, 6, 20, 0, tzinfo=UTC)
    fired = FiredReminder("r", "u", "t", "Gym", "i", at - timedelta(days=6), at, at, 2, 3)
    instance = json.loads(_reminder_body(fired, at, "d"))["instance"]
    assert (instance["proofsCounted"], instance["proofsRequired"]) == (2, 3)
    plain = FiredReminder("r", "u", "t", "Gym", "i", at, at, at)
    assert "proofsCounted" not in json.loads(_reminder_body(plain, at, "d"))["instance"]


def test_the_example_push_gateway_tells_a_quota_goals_progress() -> None:
    relay = runpy.run_path(str(Path(__file__).parents[2] / "examples" / "push_relay.py"))
    due = {"dueAt": "2026-12-07T00:00:00Z"}
    goal = {
        "type": "DUE_SOON",
        "task": {"title": "Gym"},
        "instance": {**due, "proofsCounted": 2, "proofsRequired": 3},
    }
    assert relay["notification"](goal) == ("Gym is due soon", "2 of 3 done, due 2026-12-07T00:00:00Z")
    fixed = {"type": "DUE_SOON", "task": {"title": "Gym"}, "instance": due}
    assert relay["notification"](fixed) == ("Gym is due soon", "due 2026-12-07T00:00:00Z")
