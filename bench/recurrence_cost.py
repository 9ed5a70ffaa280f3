"""Cost of "next occurrence after now" for rules started 1, 10 and 50 years ago.

Target: flat (the slowest age within 2x of the fastest) and below 5 ms for every rule.
Baseline, same run: dateutil's rrule replaying the same rule from its DTSTART (`rrule.after(now)`),
which is what the service did before skip-ahead (capped at 2 s per call so the run stays short).
A COUNT rule's last occurrence is found once, when the task is created (printed), and stored with it.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

from rules import recurrence
from rules.recurrence import (
    Schedule,
    ScheduleError,
    count_ends_at,
    next_occurrence,
    occurrences_after,
    validate_schedule,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
AGES = (1, 10, 50)
REPEATS = 200
BASELINE_CAP_S = 2.0
RULES = [
    ("FREQ=DAILY", "Europe/Berlin"),
    ("FREQ=WEEKLY;BYDAY=MO,WE,FR", "America/New_York"),
    ("FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=18;BYMINUTE=0", "Europe/Berlin"),
    ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "UTC"),
    ("FREQ=YEARLY;INTERVAL=2;BYMONTH=3,10;BYDAY=-1SU;BYHOUR=2;BYMINUTE=30", "Europe/Berlin"),
    ("FREQ=HOURLY;BYHOUR=9,17;BYMINUTE=0,30", "Asia/Kolkata"),
    ("FREQ=MINUTELY;INTERVAL=7", "UTC"),
    ("FREQ=MINUTELY;INTERVAL=90;BYDAY=SA,SU", "Australia/Lord_Howe"),
    ("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8,12,16;BYMINUTE=0,30", "Europe/Berlin"),
    ("FREQ=YEARLY;BYMONTHDAY=1,15;BYHOUR=0,6,12,18", "Pacific/Chatham"),
    (
        "FREQ=DAILY;BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=" + ",".join(map(str, range(60))),
        "Europe/Berlin",
    ),
    ("FREQ=MINUTELY;BYHOUR=" + ",".join(map(str, range(24))), "America/St_Johns"),
    ("FREQ=DAILY;COUNT=10000", "Europe/Berlin"),
    ("FREQ=WEEKLY;BYDAY=TU;COUNT=5000", "America/Sao_Paulo"),
]


def started(rrule: str, zone: str, years: int) -> Schedule:
    """The rule's first occurrence on or after now - `years`, as its startsAt, and its stored COUNT end.

    A YEARLY rule with INTERVAL=k starts a multiple of k years back, so every age has the same distance
    from now to the next occurrence (the cost follows that distance, never the age)."""
    interval = (
        int(match.group(1)) if (match := re.search(r"INTERVAL=(\d+)", rrule)) and "YEARLY" in rrule else 1
    )
    years = -(-years // interval) * interval
    guess = (NOW - timedelta(days=365.2425 * years)).astimezone(ZoneInfo(zone)).replace(microsecond=0)
    schedule = Schedule(guess, rrule, zone, 0, 0)
    try:
        validate_schedule(schedule, min_interval_seconds=60)
    except ScheduleError as error:
        if error.field != "startsAt":
            raise
        first = occurrences_after(schedule, guess, 2)[1].astimezone(ZoneInfo(zone))
        schedule = Schedule(first, rrule, zone, 0, 0)
        validate_schedule(schedule, min_interval_seconds=60)
    recurrence._last_counted.cache_clear()  # as in a freshly started process
    begin = time.perf_counter()
    ends = count_ends_at(schedule)  # what createTask stores with a COUNT rule
    if ends is not None:
        print(
            f"{'':70} {years:>3}y  once, at createTask: COUNT end found in {(time.perf_counter() - begin) * 1000:.1f} ms"
        )
    recurrence._last_counted.cache_clear()
    return replace(schedule, count_ends_at=ends)


def ours_ms(schedule: Schedule) -> tuple[float, float]:
    """(first call of a process, median of the following calls) in ms."""
    begin = time.perf_counter()
    next_occurrence(schedule, NOW)
    first = (time.perf_counter() - begin) * 1000
    samples = []
    for _ in range(REPEATS):
        begin = time.perf_counter()
        next_occurrence(schedule, NOW)
        samples.append((time.perf_counter() - begin) * 1000)
    return first, statistics.median(samples)


def baseline_ms(schedule: Schedule) -> str:
    zone = ZoneInfo(schedule.timezone)
    rule = rrulestr(schedule.rrule or "", dtstart=schedule.starts_at.astimezone(zone).replace(tzinfo=None))
    now_wall = NOW.astimezone(zone).replace(tzinfo=None)
    done = threading.Event()
    result: list[float] = []

    def run() -> None:
        begin = time.perf_counter()
        rule.after(now_wall)
        result.append((time.perf_counter() - begin) * 1000)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return f"{result[0]:9.2f}" if done.wait(BASELINE_CAP_S) else f"> {BASELINE_CAP_S * 1000:.0f}"


def main() -> None:
    print(__doc__)
    print(f"{'rule':70} {'age':>4} {'first ms':>9} {'median ms':>10} {'dateutil ms':>11}")
    worst_ratio, worst_ms = 0.0, 0.0
    for rrule, zone in RULES:
        medians = []
        for years in AGES:
            schedule = started(rrule, zone, years)
            first, median = ours_ms(schedule)
            medians.append(median)
            worst_ms = max(worst_ms, median)
            print(
                f"{rrule[:58] + ' ' + zone[:11]:70} {years:>3}y {first:9.3f} {median:10.3f} {baseline_ms(schedule):>11}"
            )
        ratio = max(medians) / min(medians)
        worst_ratio = max(worst_ratio, ratio)
        print(f"{'':70}  slowest/fastest age: {ratio:.2f}x")
    verdict = "met" if worst_ratio <= 2 and worst_ms < 5 else "NOT met"
    print(
        f"\nworst slowest/fastest ratio {worst_ratio:.2f}x (target <= 2x); worst median {worst_ms:.3f} ms "
        f"(target < 5 ms): {verdict}"
    )


if __name__ == "__main__":
    main()
