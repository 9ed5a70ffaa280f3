"""The horizon's schedule decision (rules/horizon_span.py) against a brute-force expansion of both
rules over the horizon (tests/support/rfc5545_oracle.py), for generated pairs of old and new rules."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules.horizon_span import occurrences_easier
from rules.recurrence import (
    DEFAULT_BUDGET,
    RecurrenceBudget,
    RecurrenceTooCostly,
    Schedule,
    ScheduleError,
    validate_schedule,
)
from tests.support.rfc5545_oracle import Parts, expand

pytestmark = pytest.mark.unit

ZONE = "Europe/Berlin"
SPAN = timedelta(days=16)  # every generated rule ends (COUNT, UNTIL) within this of its start, or never
PERIOD = {"MINUTELY": timedelta(minutes=1), "HOURLY": timedelta(hours=1), "DAILY": timedelta(days=1)}


def schedule_of(p: Parts, starts_at: datetime) -> Schedule:
    return Schedule(starts_at, p.text(), ZONE, 0, 0)


def brute_force(p: Parts, starts_at: datetime) -> list[datetime]:
    """Every due time of the rule up to SPAN past its start, and a little beyond for endless rules."""
    period = PERIOD.get(p.freq, timedelta(weeks=1))
    periods = int((SPAN + timedelta(days=2)) / period) + 2
    return expand(p, starts_at, ZONE, periods, enough=10**9)


def endless(p: Parts) -> bool:
    return p.count is None and p.until is None


def expected_easier(
    old: Parts, old_start: datetime, new: Parts, new_start: datetime, now: datetime, until: datetime
) -> bool:
    """The rule, from its definition: a due time promised in (now, until] dropped, or an earlier end."""
    old_all, new_all = brute_force(old, old_start), brute_force(new, new_start)
    promised = {at for at in old_all if now < at <= until}
    if not promised <= {at for at in new_all if now < at <= until}:
        return True
    if not (endless(old) or any(at > until for at in old_all)):
        return False
    if not (endless(new) or any(at > until for at in new_all)):
        return True
    if endless(new):
        return False
    return endless(old) or max(new_all) < max(old_all)


@st.composite
def rules(draw: st.DrawFn, starts_at: datetime) -> Parts:
    freq = draw(st.sampled_from(["MINUTELY", "HOURLY", "DAILY", "WEEKLY"]))
    interval = draw(st.sampled_from([30, 45, 60, 90]) if freq == "MINUTELY" else st.integers(1, 3))
    p = Parts(freq, interval=interval)
    local = starts_at.astimezone(ZoneInfo(ZONE))
    if freq in ("DAILY", "WEEKLY") and draw(st.booleans()):
        extra = draw(st.lists(st.integers(0, 23), max_size=3))
        p.byhour = sorted({local.hour, *extra})
    if freq == "WEEKLY" and draw(st.booleans()):
        p.byday = sorted({"MO", draw(st.sampled_from(["TU", "WE", "TH", "FR", "SA", "SU"]))})
    ending = draw(st.integers(0, 3))
    if ending == 1:
        p.count = draw(st.integers(1, 40))
    elif ending == 2:
        end = starts_at + timedelta(minutes=draw(st.integers(0, 14 * 24 * 60)))
        p.until = end.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    assume(p.count is None or p.count * PERIOD.get(freq, timedelta(weeks=1)) * interval < SPAN)
    return p


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Parts, datetime, Parts, datetime, datetime, datetime]:
    # a Monday 07:00 in Berlin, shortly before the spring clock change of 2027 (2027-03-28)
    old_start = datetime(2027, 3, 22, 6, 0, tzinfo=UTC) + timedelta(hours=draw(st.integers(0, 3)))
    old = draw(rules(old_start))
    if draw(st.booleans()):
        new_start = old_start + timedelta(hours=draw(st.sampled_from([-1, 0, 0, 1, 24])))
        new = draw(rules(new_start))
    else:  # a variation of the old rule, so that harder edits come up as often as easier ones
        new_start = old_start
        new = replace(old)
        change = draw(st.sampled_from(["count", "until", "end", "interval", "byhour", "same"]))
        if change == "count":
            new.count, new.until = draw(st.integers(1, 40)), None
        elif change == "until":
            end = old_start + timedelta(minutes=draw(st.integers(0, 14 * 24 * 60)))
            new.count, new.until = None, end.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        elif change == "end":
            new.count, new.until = None, None
        elif change == "interval" and old.interval > 1:
            new.interval = 1 if old.freq != "MINUTELY" else 15
        elif change == "byhour":
            new.byhour = sorted({*(old.byhour or []), draw(st.integers(0, 23))})
            if old.freq not in ("DAILY", "WEEKLY"):
                new.byhour = None
    now = old_start + timedelta(minutes=draw(st.integers(-60, 6 * 24 * 60)))
    until = now + timedelta(minutes=draw(st.integers(60, 5 * 24 * 60)))
    return old, old_start, new, new_start, now, until


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow]
)
@given(pairs())
def test_the_decision_matches_a_brute_force_expansion(
    case: tuple[Parts, datetime, Parts, datetime, datetime, datetime],
) -> None:
    old, old_start, new, new_start, now, until = case
    old_schedule, new_schedule = schedule_of(old, old_start), schedule_of(new, new_start)
    for schedule in (old_schedule, new_schedule):
        try:
            validate_schedule(schedule, min_interval_seconds=60)
        except ScheduleError:
            assume(False)
    decided = occurrences_easier(old_schedule, new_schedule, now, until, DEFAULT_BUDGET)
    assert decided is expected_easier(old, old_start, new, new_start, now, until), (old.text(), new.text())


def test_a_pair_too_costly_to_compare_raises_so_the_edit_waits() -> None:
    """The service treats RecurrenceTooCostly as easier: a pair past the budget waits, never guessed."""
    starts_at = datetime(2027, 3, 22, 6, 0, tzinfo=UTC)
    old = Schedule(starts_at, "FREQ=DAILY", ZONE, 0, 0)
    new = Schedule(starts_at, "FREQ=DAILY;BYHOUR=7,19", ZONE, 0, 0)
    tiny = RecurrenceBudget(max_steps=5)
    with pytest.raises(RecurrenceTooCostly):
        occurrences_easier(old, new, starts_at, starts_at + timedelta(days=30), tiny)


def test_an_until_rule_ends_at_its_last_due_time_not_at_until() -> None:
    """The same due times with an UNTIL moved between the last one and the old UNTIL end no sooner."""
    starts_at = datetime(2027, 3, 22, 6, 0, tzinfo=UTC)
    old = Schedule(starts_at, "FREQ=DAILY;UNTIL=20270501T120000Z", ZONE, 0, 0)
    new = Schedule(starts_at, "FREQ=DAILY;UNTIL=20270501T060000Z", ZONE, 0, 0)
    until = starts_at + timedelta(days=5)
    assert occurrences_easier(old, new, starts_at, until, DEFAULT_BUDGET) is False
    earlier = Schedule(starts_at, "FREQ=DAILY;UNTIL=20270430T120000Z", ZONE, 0, 0)
    assert occurrences_easier(old, earlier, starts_at, until, DEFAULT_BUDGET) is True
