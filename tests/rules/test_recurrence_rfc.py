"""RFC 5545 conformance: one regression test per class of defect found, and a differential test against a
brute-force expander written from the RFC (tests/support/rfc5545_oracle.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rules.recurrence import (
    RecurrenceBudget,
    RecurrenceTimedOut,
    RecurrenceTooCostly,
    Schedule,
    ScheduleError,
    occurrences_after,
    validate_schedule,
)
from tests.support.rfc5545_oracle import DAYS, Parts, TooLong, expand

pytestmark = pytest.mark.unit

BERLIN = ZoneInfo("Europe/Berlin")


def schedule(rrule: str | None, starts_at: datetime, timezone: str = "Europe/Berlin") -> Schedule:
    return Schedule(starts_at=starts_at, rrule=rrule, timezone=timezone, window_seconds=0, grace_seconds=0)


def first(s: Schedule, count: int) -> list[datetime]:
    return occurrences_after(
        s, s.starts_at.astimezone(UTC) - timedelta(seconds=1), count
    )  # not wall arithmetic


def error_of(s: Schedule) -> ScheduleError:
    with pytest.raises(ScheduleError) as caught:
        validate_schedule(s, min_interval_seconds=60)
    return caught.value


def test_class1_startsat_must_be_an_occurrence_and_the_refusal_proposes_one() -> None:
    thursday = datetime(2026, 1, 1, 9, 0, tzinfo=BERLIN)
    error = error_of(schedule("FREQ=WEEKLY;BYDAY=MO;COUNT=3", thursday))
    assert error.field == "startsAt"
    assert "2026-01-05T09:00:00+01:00" in error.message
    monday = schedule("FREQ=WEEKLY;BYDAY=MO;COUNT=3", datetime(2026, 1, 5, 9, 0, tzinfo=BERLIN))
    validate_schedule(monday, min_interval_seconds=60)
    assert [d.astimezone(BERLIN).date() for d in first(monday, 10)] == [date(2026, 1, d) for d in (5, 12, 19)]


def test_class2_startsat_keeps_its_fold() -> None:
    second = datetime.fromisoformat("2026-10-25T02:30:00+01:00")  # the second 02:30 in Berlin
    for rrule in ("FREQ=DAILY;COUNT=2", "FREQ=DAILY;COUNT=1"):
        s = schedule(rrule, second)
        validate_schedule(s, min_interval_seconds=60)
        got = occurrences_after(s, datetime(2026, 10, 24, tzinfo=UTC), 5)
        assert got[0] == second
        assert all(instant >= second for instant in got)
    assert first(schedule("FREQ=DAILY;COUNT=2", second), 5)[1] == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_class3_by_parts_of_sub_daily_rules_are_local_wall_clock() -> None:
    got = first(schedule("FREQ=HOURLY;BYHOUR=9", datetime.fromisoformat("2026-07-01T09:00+02:00")), 2)
    assert [d.astimezone(BERLIN).hour for d in got] == [9, 9]
    kolkata = "Asia/Kolkata"
    got = first(
        schedule("FREQ=HOURLY;BYMINUTE=0", datetime.fromisoformat("2026-07-01T09:00+05:30"), kolkata), 3
    )
    assert {d.astimezone(ZoneInfo(kolkata)).minute for d in got} == {0}
    plain = first(schedule("FREQ=HOURLY", datetime.fromisoformat("2026-10-25T01:00+02:00")), 4)
    assert [b - a for a, b in pairwise(plain)] == [timedelta(hours=1)] * 3  # UTC steps


def test_class4_mixed_plain_and_ordinal_byday_is_a_union() -> None:
    s = schedule("FREQ=MONTHLY;BYDAY=MO,1FR", datetime(2026, 1, 5, 9, 0, tzinfo=BERLIN))
    validate_schedule(s, min_interval_seconds=60)
    got = [d.astimezone(BERLIN).date() for d in first(s, 6)]
    assert got == [
        date(2026, 1, 5),
        date(2026, 1, 12),
        date(2026, 1, 19),
        date(2026, 1, 26),
        date(2026, 2, 2),
        date(2026, 2, 6),
    ]
    mondays = [d.astimezone(BERLIN).day for d in first(schedule("FREQ=MONTHLY;BYDAY=MO,1MO", s.starts_at), 3)]
    assert mondays == [5, 12, 19]


def test_class5_never_occurs_is_exact_for_leap_days() -> None:
    s = schedule("FREQ=YEARLY;INTERVAL=2;BYMONTH=2;BYMONTHDAY=29", datetime(2026, 1, 1, tzinfo=UTC), "UTC")
    error = error_of(s)  # it occurs (2028-02-29), so only startsAt is wrong, and the message says when
    assert error.field == "startsAt" and "2028-02-29T00:00:00+00:00" in error.message
    assert first(s, 2)[1] == datetime(2028, 2, 29, tzinfo=UTC)
    never = schedule(
        "FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29", datetime(2026, 1, 1, tzinfo=UTC), "UTC"
    )
    assert "never occurs" in error_of(never).message
    century = schedule(
        "FREQ=YEARLY;INTERVAL=100;BYMONTH=2;BYMONTHDAY=29", datetime(2100, 1, 1, tzinfo=UTC), "UTC"
    )
    assert first(century, 2)[1] == datetime(2400, 2, 29, tzinfo=UTC)  # 2100, 2200, 2300 are not leap years


@pytest.mark.parametrize("rrule", ["FREQ=YEARLY;BYMONTH=12;BYDAY=8MO", "FREQ=YEARLY;BYMONTH=2;BYDAY=53FR"])
def test_class6_month_ordinals_beyond_5_are_bad_input_not_a_crash(rrule: str) -> None:
    error = error_of(schedule(rrule, datetime(2026, 1, 1, tzinfo=UTC)))
    assert error.field == "rrule" and "BYDAY" in error.message
    fifty_third = schedule("FREQ=YEARLY;BYDAY=53FR", datetime(2027, 12, 31, tzinfo=UTC), "UTC")
    validate_schedule(fifty_third, min_interval_seconds=60)


def test_class7_next_occurrence_does_not_replay_from_startsat() -> None:
    # a step budget far below one year of the walk: only skip-ahead can answer within it
    tight = RecurrenceBudget(max_steps=400)
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    for rrule in (
        "FREQ=MONTHLY;BYDAY=MO,TU,WE;BYHOUR=9,17",
        "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU",
        "FREQ=DAILY;INTERVAL=3",
    ):
        for years in (1, 10, 50):
            s = schedule(rrule, datetime(2026 - years, 1, 1, 9, 0, tzinfo=BERLIN))
            assert occurrences_after(s, now, 3, budget=tight) == occurrences_after(s, now, 3)
    with pytest.raises(RecurrenceTooCostly):  # a rule that never occurs exhausts any budget
        validate_schedule(
            schedule("FREQ=HOURLY;INTERVAL=168;BYDAY=MO", datetime(2026, 1, 1, tzinfo=BERLIN)),
            min_interval_seconds=60,
        )


@pytest.mark.parametrize(
    ("rrule", "timezone", "field"),
    [
        ("FREQ=DAILY;COUNT=\uff13", "UTC", "rrule"),
        ("FREQ=DAILY;COUNT=٣", "UTC", "rrule"),
        ("FREQ=DAILY;;;", "UTC", "rrule"),
        ("FREQ=DAILY;", "UTC", "rrule"),
        ("FREQ=DAILY", "Factory", "timezone"),
        ("FREQ=DAILY", "right/Europe/Berlin", "timezone"),
        ("FREQ=DAILY", "localtime", "timezone"),
        ("FREQ=DAILY;" + "BYHOUR=1;" * 60, "UTC", "rrule"),
    ],
)
def test_class8_lenient_parsing_is_tightened(rrule: str, timezone: str, field: str) -> None:
    assert error_of(schedule(rrule, datetime(2026, 1, 1, tzinfo=UTC), timezone)).field == field


@pytest.mark.parametrize(
    "rrule",
    [
        "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
        "FREQ=MONTHLY;BYMONTHDAY="
        + ",".join(map(str, range(1, 32)))
        + ";BYHOUR="
        + ",".join(map(str, range(24)))
        + ";BYMINUTE="
        + ",".join(map(str, range(60))),
        "FREQ=YEARLY;BYHOUR=0,2,4,6,8,10,12,14,16,18,20,22;BYMINUTE=0,15,30,45;BYMONTHDAY="
        + ",".join(map(str, range(1, 32))),
    ],
)
def test_hostile_rules_are_refused_by_the_density_budget(rrule: str) -> None:
    error = error_of(schedule(rrule, datetime(2028, 2, 29, 23, 59, 59, tzinfo=UTC), "UTC"))
    assert error.field == "rrule" and "budget" in error.message


def test_count_from_the_second_instant_of_a_repeated_hour_is_whole_from_any_query() -> None:
    second = datetime.fromisoformat("2026-10-25T02:00:00+01:00")  # Berlin falls back at this instant
    s = schedule("FREQ=DAILY;COUNT=3", second)
    validate_schedule(s, min_interval_seconds=60)
    whole = [second, datetime(2026, 10, 26, 1, 0, tzinfo=UTC), datetime(2026, 10, 27, 1, 0, tzinfo=UTC)]
    assert first(s, 5) == whole
    assert occurrences_after(s, second - timedelta(hours=3), 5) == whole


def test_a_query_from_the_first_pass_of_the_repeated_hour_finds_a_start_in_the_second() -> None:
    second = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 02:30+01:00, the second 02:30
    s = schedule("FREQ=DAILY", second)
    for minutes in (0, 15, 45, 59):  # 02:00..02:59+02:00, the first pass
        after = datetime(2026, 10, 25, 0, minutes, tzinfo=UTC)
        assert occurrences_after(s, after, 2) == [second, datetime(2026, 10, 26, 1, 30, tzinfo=UTC)]


def test_a_proposal_shifted_over_a_gap_is_accepted_when_resubmitted() -> None:
    rrule = "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"
    error = error_of(schedule(rrule, datetime.fromisoformat("2026-03-28T12:00:00+01:00")))
    assert error.field == "startsAt" and "2026-03-29T03:30:00+02:00" in error.message
    proposed = schedule(rrule, datetime.fromisoformat("2026-03-29T03:30:00+02:00"))
    validate_schedule(proposed, min_interval_seconds=60)
    assert first(proposed, 2) == [proposed.starts_at, datetime(2026, 3, 30, 0, 30, tzinfo=UTC)]


def test_a_yearly_rule_may_start_on_its_own_listed_occurrence_inside_a_gap() -> None:
    rrule = "FREQ=YEARLY;BYMONTH=3,10;BYDAY=-1SU;BYHOUR=2;BYMINUTE=30"
    listed = first(schedule(rrule, datetime.fromisoformat("2026-03-29T03:30:00+02:00")), 3)
    for start in listed:
        s = schedule(rrule, start.astimezone(BERLIN))
        validate_schedule(s, min_interval_seconds=60)
        assert first(s, 2)[0] == start
    assert listed == [
        datetime(2026, 3, 29, 1, 30, tzinfo=UTC),  # 02:30 does not exist: moved forward by the gap
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # 02:30 exists twice: its first instant
        datetime(2027, 3, 28, 1, 30, tzinfo=UTC),
    ]


def test_a_wall_time_that_is_not_the_rules_is_still_refused_next_to_a_gap() -> None:
    error = error_of(
        schedule("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", datetime.fromisoformat("2026-03-29T03:00+02:00"))
    )
    assert error.field == "startsAt" and "2026-03-30T02:30:00+02:00" in error.message


def test_a_floating_until_beyond_the_utc_range_means_no_end_within_reach() -> None:
    s = schedule(
        "FREQ=DAILY;UNTIL=99991231T235959",
        datetime.fromisoformat("2026-01-01T09:00-10:00"),
        "Pacific/Honolulu",
    )
    validate_schedule(s, min_interval_seconds=60)
    assert first(s, 2)[1] == datetime(2026, 1, 2, 19, 0, tzinfo=UTC)
    assert occurrences_after(s, datetime.max.replace(tzinfo=UTC) - timedelta(hours=1), 1) == []
    early = schedule("FREQ=DAILY;UNTIL=00010101T000000", datetime(2026, 1, 1, tzinfo=UTC), "Asia/Tokyo")
    assert "UNTIL is before startsAt" in error_of(early).message


def test_verdicts_are_decided_by_steps_and_the_clock_only_reports_its_own_error() -> None:
    never = schedule(
        "FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29", datetime(2026, 1, 1, tzinfo=UTC), "UTC"
    )
    costly = schedule("FREQ=HOURLY;INTERVAL=168;BYDAY=MO", datetime(2026, 1, 1, tzinfo=BERLIN))
    for seconds in (10.0, 1e6):  # the verdict is the same whatever time the host allows
        budget = RecurrenceBudget(max_seconds=seconds)
        with pytest.raises(ScheduleError, match="never occurs"):
            validate_schedule(never, min_interval_seconds=60, budget=budget)
        with pytest.raises(RecurrenceTooCostly):
            validate_schedule(costly, min_interval_seconds=60, budget=budget)
    with pytest.raises(RecurrenceTimedOut) as caught:  # a host with no time left: no verdict at all
        validate_schedule(never, min_interval_seconds=60, budget=RecurrenceBudget(max_seconds=-1))
    assert not isinstance(caught.value, ScheduleError)


# -- differential test against the brute-force RFC 5545 expander --------------------------------------

ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "Europe/London",
    "America/St_Johns",
    "America/Nuuk",
    "Pacific/Apia",
    "UTC",
    "America/Santiago",
    "America/Havana",
]


def _transition_days(zone_name: str) -> list[date]:
    zone, days = ZoneInfo(zone_name), []
    day = date(2016, 1, 1)
    while day < date(2030, 1, 1):
        if (
            datetime(day.year, day.month, day.day, tzinfo=zone).utcoffset()
            != (datetime(day.year, day.month, day.day, tzinfo=zone) + timedelta(days=1)).utcoffset()
        ):
            days.append(day)
        day += timedelta(days=1)
    return days or [date(2026, 3, 29)]


def _transition_instants(zone_name: str) -> list[tuple[datetime, timedelta]]:
    """Each clock change of the transition days: the instant it happens and by how much the offset moves."""
    zone, found = ZoneInfo(zone_name), []
    for day in TRANSITIONS[zone_name]:
        low = datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)
        high = low + timedelta(days=1)
        before, after = low.astimezone(zone).utcoffset(), high.astimezone(zone).utcoffset()
        if before is None or after is None or before == after:
            continue
        while high - low > timedelta(seconds=1):  # the first second with the new offset
            middle = low + (high - low) / 2
            low, high = (middle, high) if middle.astimezone(zone).utcoffset() == before else (low, middle)
        found.append((high.replace(microsecond=0), after - before))
    return found


TRANSITIONS = {zone: _transition_days(zone) for zone in ZONES}
TRANSITION_INSTANTS = {zone: _transition_instants(zone) for zone in ZONES}


def _near_transition(instant: datetime, change: timedelta, where: int) -> datetime:
    """An instant by a clock change: before or after it, in the first or the second pass of an overlap
    (a fall back of D repeats the wall times of [T - D, T) in [T, T + D)), or at either edge of a gap."""
    span = abs(change)
    shifts = [-span, -span / 2, -timedelta(seconds=1), timedelta(0), timedelta(seconds=1), span / 2, span]
    return instant + shifts[where % len(shifts)] - timedelta(seconds=1 if where >= len(shifts) else 0)


EXAMPLES = int(os.environ.get("PROOFLOOP_RRULE_EXAMPLES", "100"))


@st.composite
def rules(draw: st.DrawFn) -> tuple[Parts, datetime, str]:
    zone_name = draw(st.sampled_from(ZONES))
    zone = ZoneInfo(zone_name)
    shape = draw(st.integers(0, 2)) if TRANSITION_INSTANTS[zone_name] else draw(st.integers(0, 1))
    if shape == 2:  # at a clock change's instant, or inside either pass of an overlap
        instant, change = draw(st.sampled_from(TRANSITION_INSTANTS[zone_name]))
        starts_at = _near_transition(instant, change, draw(st.integers(0, 13))).astimezone(zone)
    else:
        if shape == 1:
            day = draw(st.sampled_from(TRANSITIONS[zone_name])) + timedelta(days=draw(st.integers(-1, 1)))
            minutes = 15 * draw(st.integers(-8, 16))
            wall = datetime.combine(day, datetime.min.time()) + timedelta(minutes=minutes)
        else:
            wall = draw(
                st.datetimes(min_value=datetime(2016, 1, 1), max_value=datetime(2029, 12, 1))
            ).replace(microsecond=0)
        starts_at = wall.replace(tzinfo=zone, fold=draw(st.integers(0, 1))).astimezone(UTC).astimezone(zone)
    freq = draw(st.sampled_from(["SECONDLY", "MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"]))
    p = Parts(freq=freq)
    p.interval = draw(
        {"SECONDLY": st.sampled_from([60, 90, 600, 3600, 5400]), "MINUTELY": st.integers(1, 200)}.get(
            freq, st.integers(1, 4)
        )
    )

    def small(low: int, high: int, n: int) -> st.SearchStrategy[list[int] | None]:
        values = st.lists(st.integers(low, high), min_size=1, max_size=n, unique=True).map(sorted)
        return st.one_of(st.none(), values)

    if freq in ("MONTHLY", "YEARLY") or draw(st.integers(0, 3)) == 0:
        p.bymonth = draw(small(1, 12, 4))
    if freq != "WEEKLY" and draw(st.booleans()):
        p.bymonthday = draw(st.lists(st.integers(-31, 31).filter(bool), min_size=1, max_size=4, unique=True))
    if draw(st.booleans()):
        ordinal = 5 if freq == "MONTHLY" or p.bymonth else 53
        items = st.sampled_from(DAYS)
        if freq in ("MONTHLY", "YEARLY"):
            items = st.one_of(
                items,
                st.tuples(st.integers(-ordinal, ordinal).filter(bool), st.sampled_from(DAYS)).map(
                    lambda t: f"{t[0]}{t[1]}"
                ),
            )
        p.byday = draw(st.lists(items, min_size=1, max_size=4, unique=True))
    if freq != "MINUTELY" and freq != "SECONDLY":
        p.byhour = draw(small(0, 23, 3))
    p.byminute = draw(small(0, 59, 2)) if freq != "SECONDLY" else draw(small(0, 59, 3))
    if freq != "SECONDLY" and draw(st.integers(0, 4)) == 0:
        p.bysecond = draw(small(0, 59, 2))
    if draw(st.integers(0, 3)) == 0:
        p.count = draw(st.integers(1, 30))
    elif draw(st.integers(0, 4)) == 0:
        p.until = (
            (starts_at + timedelta(days=draw(st.integers(0, 900)))).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        )
    p.wkst = draw(st.sampled_from(DAYS)) if freq == "WEEKLY" and draw(st.booleans()) else "MO"
    return p, starts_at, zone_name


PERIODS = {
    "SECONDLY": 20000,
    "MINUTELY": 20000,
    "HOURLY": 20000,
    "DAILY": 3000,
    "WEEKLY": 600,
    "MONTHLY": 300,
    "YEARLY": 40,
}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(rules(), st.data())
def test_expansion_matches_the_rfc_5545_brute_force(
    case: tuple[Parts, datetime, str], data: st.DataObject
) -> None:
    p, starts_at, zone_name = case
    s = schedule(p.text(), starts_at, zone_name)
    try:
        validate_schedule(s, min_interval_seconds=60)
    except ScheduleError as error:
        assume(error.field == "startsAt")  # not an occurrence: start at the proposed one instead
        # the proposal is among the rule's next 64 occurrences (only those a gap moved are passed over);
        # the brute force looks at 8 first, which nearly always hold it
        for enough in (8, 64):
            own = expand(
                replace(p, count=None, until=None), starts_at, zone_name, PERIODS[p.freq], enough, False
            )
            proposed = [o for o in own if o.astimezone(ZoneInfo(zone_name)).isoformat() in error.message]
            if proposed:
                break
        else:
            assume(len(own) == 64)  # else the oracle's search ended before it
            raise AssertionError((p.text(), error.message))  # the proposal is one of the rule's own
        for earlier in own[: own.index(proposed[0])]:  # passed over: refused as startsAt
            with pytest.raises(ScheduleError):
                validate_schedule(schedule(p.text(), earlier, zone_name), min_interval_seconds=60)
        starts_at = proposed[0].astimezone(ZoneInfo(zone_name))
        s = schedule(p.text(), starts_at, zone_name)
        try:
            validate_schedule(s, min_interval_seconds=60)
        except ScheduleError as again:
            assert again.field != "startsAt", (p.text(), again.message)  # a proposal is always accepted
            assume(False)
    try:
        expected = expand(p, starts_at, zone_name, PERIODS[p.freq])
    except TooLong:
        assume(False)
    horizon = expected[:25]
    got = first(s, len(horizon))
    assert got == horizon, p.text()
    if len(horizon) > 3:
        k = data.draw(st.integers(0, len(horizon) - 3))
        after = horizon[k] + timedelta(seconds=data.draw(st.sampled_from([-1, 0, 1])))
        later = [at for at in expected if at > after][:3]
        assert occurrences_after(s, after, len(later)) == later, p.text()
    # queries from inside overlaps and at the edges of gaps that fall within what the brute force covers
    changes = [
        (instant, change)
        for instant, change in TRANSITION_INSTANTS[zone_name]
        if starts_at - timedelta(days=2) <= instant and instant + abs(change) < horizon[-1]
    ]
    if changes and len(horizon) > 1:
        instant, change = data.draw(st.sampled_from(changes))
        after = _near_transition(instant, change, data.draw(st.integers(0, 13)))
        later = [at for at in expected if at > after][:3]
        assume(later and later[-1] <= horizon[-1])
        assert occurrences_after(s, after, len(later)) == later, (p.text(), after)
