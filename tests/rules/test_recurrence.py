from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.recurrence import (
    Schedule,
    ScheduleError,
    next_occurrence,
    occurrences_after,
    smallest_gap_seconds,
    validate_schedule,
)

pytestmark = pytest.mark.unit

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def schedule(
    rrule: str | None,
    starts_at: datetime,
    timezone: str = "Europe/Berlin",
    window: int = 0,
    grace: int = 0,
) -> Schedule:
    return Schedule(
        starts_at=starts_at, rrule=rrule, timezone=timezone, window_seconds=window, grace_seconds=grace
    )


def upcoming(s: Schedule, count: int) -> list[datetime]:
    return occurrences_after(s, s.starts_at - timedelta(seconds=1), count)


def walls(instants: list[datetime], zone: ZoneInfo) -> list[str]:
    return [instant.astimezone(zone).strftime("%Y-%m-%d %H:%M%z") for instant in instants]


def error_of(s: Schedule, min_interval_seconds: int = 60) -> ScheduleError:
    with pytest.raises(ScheduleError) as caught:
        validate_schedule(s, min_interval_seconds=min_interval_seconds)
    return caught.value


@pytest.mark.parametrize(
    ("zone_name", "day_before", "offsets"),
    [
        ("Europe/Berlin", date(2026, 3, 28), ["+0100", "+0200", "+0200"]),
        ("Europe/Berlin", date(2026, 10, 24), ["+0200", "+0100", "+0100"]),
        ("America/New_York", date(2026, 3, 7), ["-0500", "-0400", "-0400"]),
        ("America/New_York", date(2026, 10, 31), ["-0400", "-0500", "-0500"]),
    ],
)
def test_daily_rule_keeps_local_wall_time_across_dst(
    zone_name: str, day_before: date, offsets: list[str]
) -> None:
    zone = ZoneInfo(zone_name)
    got = upcoming(schedule("FREQ=DAILY", datetime.combine(day_before, time(7, 30), zone), zone_name), 3)
    assert all(instant.tzinfo is UTC for instant in got)
    assert [instant.astimezone(zone).strftime("%H:%M") for instant in got] == ["07:30"] * 3
    assert [instant.astimezone(zone).strftime("%z") for instant in got] == offsets
    assert len({instant.time() for instant in got[:2]}) == 2  # the UTC time moves by an hour


def test_nonexistent_wall_time_moves_forward_by_the_gap() -> None:
    got = upcoming(schedule("FREQ=DAILY", datetime(2026, 3, 28, 2, 30, tzinfo=BERLIN)), 3)
    assert walls(got, BERLIN) == ["2026-03-28 02:30+0100", "2026-03-29 03:30+0200", "2026-03-30 02:30+0200"]
    assert got[1] == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def test_a_rule_whose_every_wall_time_falls_in_a_gap_moves_each_forward() -> None:
    # 02:30 on the last Sunday of March never exists in Berlin: each year's occurrence is 03:30+02:00
    # (RFC 5545 3.3.5), and the walk yields it without waiting for a wall time that exists
    rule = "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU;BYHOUR=2;BYMINUTE=30"
    start = datetime(2026, 3, 29, 3, 30, tzinfo=BERLIN)
    validate_schedule(schedule(rule, start), min_interval_seconds=60)
    assert walls(upcoming(schedule(rule, start), 3), BERLIN) == [
        "2026-03-29 03:30+0200",
        "2027-03-28 03:30+0200",
        "2028-03-26 03:30+0200",
    ]


def test_a_proposal_a_gap_moved_off_its_own_grid_is_passed_over() -> None:
    # every 4 hours from 22:45, at 02:xx: 02:45 on the spring-forward night moves to 03:45, but as startsAt
    # 03:45 would anchor the grid on 03, 07, 11...: the proposal is the next night's 02:45, which holds
    rule = "FREQ=HOURLY;INTERVAL=4;BYHOUR=2"
    error = error_of(schedule(rule, datetime(2026, 3, 28, 22, 45, tzinfo=BERLIN)))
    assert (error.field, error.message.rsplit(" ", 1)[-1]) == ("startsAt", "2026-03-30T02:45:00+02:00")
    error_of(schedule(rule, datetime(2026, 3, 29, 3, 45, tzinfo=BERLIN)))  # refused: 03, 07... never reach 02
    validate_schedule(schedule(rule, datetime(2026, 3, 30, 2, 45, tzinfo=BERLIN)), min_interval_seconds=60)


def test_repeated_wall_time_takes_the_first_instant() -> None:
    start = datetime(2026, 10, 31, 1, 30, tzinfo=NEW_YORK)
    got = upcoming(schedule("FREQ=DAILY", start, "America/New_York"), 3)
    assert walls(got, NEW_YORK) == ["2026-10-31 01:30-0400", "2026-11-01 01:30-0400", "2026-11-02 01:30-0500"]
    assert [instant for instant in got if instant.astimezone(NEW_YORK).date() == date(2026, 11, 1)] == [
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    ]


def test_the_two_instants_of_a_repeated_wall_time_count_apart() -> None:
    # 02:30 on the fall-back night exists twice; a COUNT rule from each is its own, whichever came first
    first_instant, second_instant = (datetime(2026, 10, 25, 2, 30, fold=f, tzinfo=BERLIN) for f in (0, 1))
    for starts_at in (first_instant, second_instant):
        s = schedule("FREQ=WEEKLY;COUNT=1", starts_at)
        validate_schedule(s, min_interval_seconds=60)
        assert upcoming(s, 2) == [starts_at.astimezone(UTC)]


def test_hourly_rule_steps_in_utc_across_fall_back() -> None:
    start = datetime(2026, 11, 1, 0, 0, tzinfo=NEW_YORK)
    got = upcoming(schedule("FREQ=HOURLY", start, "America/New_York"), 5)
    assert got == [datetime(2026, 11, 1, hour, tzinfo=UTC) for hour in range(4, 9)]
    assert [instant.astimezone(NEW_YORK).strftime("%H:%M") for instant in got] == [
        "00:00",
        "01:00",
        "01:00",
        "02:00",
        "03:00",
    ]


def test_hourly_rule_steps_in_utc_across_spring_forward() -> None:
    start = datetime(2026, 3, 8, 0, 0, tzinfo=NEW_YORK)
    got = upcoming(schedule("FREQ=HOURLY", start, "America/New_York"), 3)
    assert got == [datetime(2026, 3, 8, hour, tzinfo=UTC) for hour in (5, 6, 7)]
    assert [instant.astimezone(NEW_YORK).strftime("%H:%M") for instant in got] == ["00:00", "01:00", "03:00"]


def test_class3_sub_daily_by_parts_are_wall_clock_in_the_zone() -> None:
    got = upcoming(schedule("FREQ=HOURLY;BYHOUR=9", datetime(2026, 7, 1, 9, 0, tzinfo=BERLIN)), 2)
    assert walls(got, BERLIN) == ["2026-07-01 09:00+0200", "2026-07-02 09:00+0200"]
    kolkata = ZoneInfo("Asia/Kolkata")
    got = upcoming(
        schedule("FREQ=HOURLY;BYMINUTE=0", datetime(2026, 7, 1, 9, 0, tzinfo=kolkata), "Asia/Kolkata"), 3
    )
    assert walls(got, kolkata) == [f"2026-07-01 {hour:02d}:00+0530" for hour in (9, 10, 11)]


def test_weekly_byday() -> None:
    s = schedule("RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR", datetime(2026, 6, 1, 9, 0, tzinfo=BERLIN))
    assert walls(upcoming(s, 6), BERLIN) == [f"2026-06-{day:02d} 09:00+0200" for day in (1, 3, 5, 8, 10, 12)]
    assert smallest_gap_seconds(s) == 2 * 86400


def test_weekly_rule_keeps_wall_time_across_dst() -> None:
    s = schedule("FREQ=WEEKLY;BYDAY=SU", datetime(2026, 3, 22, 9, 0, tzinfo=BERLIN))
    assert walls(upcoming(s, 2), BERLIN) == ["2026-03-22 09:00+0100", "2026-03-29 09:00+0200"]


def test_count_exhaustion() -> None:
    s = schedule("FREQ=DAILY;COUNT=3", datetime(2026, 1, 1, 7, 30, tzinfo=BERLIN))
    got = upcoming(s, 10)
    assert walls(got, BERLIN) == [f"2026-01-0{day} 07:30+0100" for day in (1, 2, 3)]
    assert next_occurrence(s, got[-1] - timedelta(seconds=1)) == got[-1]
    assert next_occurrence(s, got[-1]) is None


def test_count_counts_from_dtstart_when_skipping_ahead() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    plain = schedule("FREQ=MINUTELY;INTERVAL=15;COUNT=100", start)
    assert occurrences_after(plain, start + timedelta(hours=10), 3) == [
        start + timedelta(hours=10, minutes=minutes) for minutes in (15, 30, 45)
    ]
    last = start + timedelta(hours=24, minutes=45)
    assert next_occurrence(plain, last - timedelta(minutes=1)) == last
    assert next_occurrence(plain, last) is None
    filtered = schedule("FREQ=HOURLY;BYMINUTE=0,30;COUNT=10", start)
    assert occurrences_after(filtered, start + timedelta(hours=3), 10) == [
        start + timedelta(hours=3, minutes=30),
        start + timedelta(hours=4),
        start + timedelta(hours=4, minutes=30),
    ]


@pytest.mark.parametrize(
    ("until", "expected"),
    [
        ("UNTIL=20260105T063000Z", 5),
        ("UNTIL=20260105T062959Z", 4),
        ("UNTIL=20260105T073000", 5),  # floating: a wall time in the schedule's zone
        ("until=20260104", 4),  # a bare date includes the whole local day
    ],
)
def test_until(until: str, expected: int) -> None:
    s = schedule(f"FREQ=DAILY;{until}", datetime(2026, 1, 1, 7, 30, tzinfo=BERLIN))
    got = upcoming(s, 100)
    assert len(got) == expected
    assert next_occurrence(s, got[-1]) is None


def test_until_on_a_sub_daily_rule() -> None:
    s = schedule("FREQ=HOURLY;UNTIL=20260101T100000Z", datetime(2026, 1, 1, 6, 30, tzinfo=UTC))
    assert [instant.hour for instant in upcoming(s, 100)] == [6, 7, 8, 9]


@pytest.mark.parametrize("rrule", ["FREQ=MONTHLY;BYMONTHDAY=31", "FREQ=MONTHLY"])
def test_the_31st_skips_short_months(rrule: str) -> None:
    got = upcoming(schedule(rrule, datetime(2026, 1, 31, 9, 0, tzinfo=BERLIN)), 7)
    assert [instant.astimezone(BERLIN).strftime("%m-%d") for instant in got] == [
        "01-31",
        "03-31",
        "05-31",
        "07-31",
        "08-31",
        "10-31",
        "12-31",
    ]


def test_last_day_of_month_with_negative_bymonthday() -> None:
    got = upcoming(schedule("FREQ=MONTHLY;BYMONTHDAY=-1", datetime(2026, 1, 31, 9, 0, tzinfo=BERLIN)), 3)
    assert [instant.astimezone(BERLIN).strftime("%m-%d") for instant in got] == ["01-31", "02-28", "03-31"]


def test_29_february_occurs_only_in_leap_years() -> None:
    s = schedule("FREQ=YEARLY", datetime(2028, 2, 29, 9, 0, tzinfo=BERLIN))
    got = upcoming(s, 3)
    assert walls(got, BERLIN) == [f"{year}-02-29 09:00+0100" for year in (2028, 2032, 2036)]
    validate_schedule(s, min_interval_seconds=60)


def test_one_off() -> None:
    start = datetime(2026, 5, 1, 9, 0, tzinfo=BERLIN)
    s = schedule(None, start, window=10**6)
    assert next_occurrence(s, start - timedelta(seconds=1)) == start
    assert next_occurrence(s, start - timedelta(seconds=1)).tzinfo is UTC  # type: ignore[union-attr]
    assert next_occurrence(s, start) is None
    assert smallest_gap_seconds(s) is None
    validate_schedule(s, min_interval_seconds=60)


def test_single_occurrence_has_no_gap() -> None:
    s = schedule("FREQ=DAILY;COUNT=1", datetime(2026, 5, 1, 9, 0, tzinfo=BERLIN), window=10**6)
    assert smallest_gap_seconds(s) is None
    validate_schedule(s, min_interval_seconds=60)


START = datetime(2026, 1, 1, 7, 30, tzinfo=BERLIN)


@pytest.mark.parametrize(
    ("s", "field", "fragment"),
    [
        (schedule("garbage", START), "rrule", "garbage"),
        (schedule("", START), "rrule", "FREQ is required"),
        (schedule("FREQ=DAILY;INTERVAL", START), "rrule", "INTERVAL"),
        (schedule("FREQ=FORTNIGHTLY", START), "rrule", "FREQ"),
        (schedule("FREQ=DAILY;INTERVAL=0", START), "rrule", "INTERVAL"),
        (schedule("FREQ=DAILY;BYHOUR=24", START), "rrule", "BYHOUR"),
        (schedule("FREQ=DAILY;COUNT=2;COUNT=3", START), "rrule", "COUNT appears more than once"),
        (schedule("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-1", START), "rrule", "BYSETPOS"),
        (schedule("FREQ=YEARLY;BYWEEKNO=20", START), "rrule", "BYWEEKNO"),
        (schedule("FREQ=WEEKLY;BYDAY=1MO", START), "rrule", "BYDAY"),
        (schedule("FREQ=MONTHLY;BYDAY=XX", START), "rrule", "BYDAY"),
        (schedule("FREQ=DAILY;COUNT=3;UNTIL=20270101T000000Z", START), "rrule", "COUNT and UNTIL"),
        (schedule("FREQ=DAILY;UNTIL=2026", START), "rrule", "UNTIL"),
        (schedule("FREQ=DAILY;UNTIL=20251231T000000Z", START), "rrule", "UNTIL is before startsAt"),
        (schedule("FREQ=DAILY", START, timezone="Mars/Olympus_Mons"), "timezone", "Mars/Olympus_Mons"),
        (schedule("FREQ=DAILY", START, timezone="../etc/passwd"), "timezone", "passwd"),
        (schedule("FREQ=DAILY", START, window=-1), "windowSeconds", "windowSeconds"),
        (schedule("FREQ=YEARLY", START, grace=400 * 86400), "graceSeconds", "graceSeconds"),
        (schedule("FREQ=DAILY", START.replace(tzinfo=None)), "startsAt", "startsAt"),
    ],
)
def test_validation_errors(s: Schedule, field: str, fragment: str) -> None:
    error = error_of(s)
    assert (error.field, isinstance(error, ValueError)) == (field, True)
    assert fragment in error.message


def test_byday_ordinals_are_allowed_for_monthly_and_yearly() -> None:
    s = schedule("FREQ=MONTHLY;BYDAY=-1FR", datetime(2026, 1, 30, 18, 0, tzinfo=BERLIN))
    validate_schedule(s, min_interval_seconds=60)
    assert [instant.astimezone(BERLIN).day for instant in upcoming(s, 3)] == [30, 27, 27]
    first_monday = datetime(2026, 5, 4, 7, 30, tzinfo=BERLIN)
    validate_schedule(schedule("FREQ=YEARLY;BYMONTH=5;BYDAY=1MO", first_monday), min_interval_seconds=60)


def test_interval_under_the_minimum() -> None:
    error = error_of(schedule("FREQ=SECONDLY;INTERVAL=30", START))
    assert error.field == "rrule"
    assert (
        error.message
        == "rrule: occurrences must be at least 60 seconds apart (this rule repeats every 30 seconds)"
    )


def test_window_and_grace_must_fit_the_smallest_gap() -> None:
    # the spring-forward day makes a daily Berlin rule's smallest gap 23 hours
    error = error_of(schedule("FREQ=DAILY", START, window=82800, grace=1))
    assert error.field == "windowSeconds"
    assert error.message == (
        "windowSeconds + graceSeconds (82801 s) must not exceed "
        "the smallest gap between occurrences (82800 s)"
    )
    validate_schedule(schedule("FREQ=DAILY", START, window=82000, grace=800), min_interval_seconds=60)


@pytest.mark.parametrize(
    "rrule",
    [
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=MINUTELY;BYMONTH=4;BYMONTHDAY=-31",
        "FREQ=HOURLY;INTERVAL=168;BYDAY=MO",  # starts on a Thursday, lands on Thursdays only
        "FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29",  # 2026, 2030, ... are never leap years
        "FREQ=MINUTELY;INTERVAL=2;BYHOUR=3;BYMINUTE=1",  # starts on an even minute
    ],
)
def test_never_occurring_rule_is_rejected(rrule: str) -> None:
    assert error_of(schedule(rrule, START)).field == "rrule"


def test_minutely_rule_started_years_ago_is_exact() -> None:
    start = datetime(2023, 5, 5, 12, 0, 13, tzinfo=BERLIN)
    after = datetime(2026, 5, 5, tzinfo=UTC)
    got = occurrences_after(schedule("FREQ=MINUTELY;INTERVAL=7", start), after, 5)
    steps = -(-(after - start) // timedelta(minutes=7))
    assert got == [start + timedelta(minutes=7 * (steps + i)) for i in range(5)]
    assert got[0] > after >= got[0] - timedelta(minutes=7)


@pytest.mark.parametrize(
    "rrule",
    [
        "FREQ=HOURLY;INTERVAL=5;BYDAY=MO,TU",
        "FREQ=MINUTELY;INTERVAL=45;BYHOUR=9,10,11",
        "FREQ=DAILY;INTERVAL=3;BYHOUR=6,18",
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,SA",
        "FREQ=MINUTELY;INTERVAL=90;COUNT=500",
        "FREQ=HOURLY;BYDAY=MO;COUNT=400",
    ],
)
def test_skipping_ahead_matches_a_full_replay(rrule: str) -> None:
    s = schedule(rrule, datetime(2026, 2, 20, 8, 15, tzinfo=BERLIN))
    full = upcoming(s, 400)
    for k in (150, 300):
        assert occurrences_after(s, full[k], 5) == full[k + 1 : k + 6]
        assert occurrences_after(s, full[k] - timedelta(seconds=1), 5) == full[k : k + 5]


ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kolkata",
    "UTC",
]
WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


def exists(day: date, wall: time, zone: ZoneInfo) -> bool:
    local = datetime.combine(day, wall, zone)
    return local.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == local.replace(tzinfo=None)


@settings(max_examples=60, deadline=None)
@given(
    zone_name=st.sampled_from(ZONES),
    starts_at=st.datetimes(
        min_value=datetime(2020, 1, 1), max_value=datetime(2032, 1, 1), timezones=st.just(UTC)
    ),
    weekly_days=st.one_of(st.none(), st.sets(st.sampled_from(WEEKDAYS), min_size=1)),
    interval=st.integers(min_value=1, max_value=3),
)
def test_daily_and_weekly_occurrences_increase_and_keep_wall_time(
    zone_name: str, starts_at: datetime, weekly_days: set[str] | None, interval: int
) -> None:
    zone = ZoneInfo(zone_name)
    if weekly_days is None:
        rrule = f"FREQ=DAILY;INTERVAL={interval}"
    else:
        rrule = f"FREQ=WEEKLY;INTERVAL={interval};BYDAY={','.join(sorted(weekly_days))}"
    starts_at = starts_at.replace(microsecond=0)
    got = upcoming(schedule(rrule, starts_at, zone_name), 120)
    assert len(got) == 120
    assert all(earlier < later for earlier, later in pairwise(got))
    wall = starts_at.astimezone(zone).time()
    assert got[0] == starts_at  # DTSTART is the first occurrence, whether or not the rule produces it
    for instant in got[1:]:
        local = instant.astimezone(zone)
        if weekly_days is not None:
            assert WEEKDAYS[local.weekday()] in weekly_days
        if local.time() != wall:  # only where the wall time does not exist: it moved forward by the gap
            intended = datetime.combine(local.date(), wall, zone)
            assert not exists(local.date(), wall, zone)
            assert instant == intended.astimezone(UTC)
