"""Seconds one recurrence call takes to spend its whole step budget, for the rules that cost most per step.

The steps decide every verdict ("too costly", "never occurs"); the clock (PROOFLOOP_RECURRENCE_MAX_SECONDS)
is only a backstop for a stalled host. Target: the slowest rule spends the default 200 000 steps well
inside the backstop (under a tenth of it), so the steps, not the clock, end a long walk even under load.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from rules.recurrence import (
    DEFAULT_BUDGET,
    RecurrenceBudget,
    RecurrenceTooCostly,
    Schedule,
    ScheduleError,
    validate_schedule,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
ODD = ",".join(str(n) for n in range(1, 60, 2))
RULES = [
    "FREQ=HOURLY;INTERVAL=168;BYDAY=MO",  # lands on Thursdays only
    "FREQ=DAILY;INTERVAL=7;BYDAY=MO",
    "FREQ=SECONDLY;INTERVAL=2;BYSECOND=1",  # starts on an even second
    "FREQ=SECONDLY;INTERVAL=3600;BYSECOND=1",
    f"FREQ=SECONDLY;INTERVAL=2;BYSECOND={ODD}",
    "FREQ=MINUTELY;INTERVAL=2;BYMINUTE=1",
    f"FREQ=MINUTELY;INTERVAL=2;BYMINUTE={ODD}",
    "FREQ=MINUTELY;INTERVAL=2;BYHOUR=3;BYMINUTE=1",
    "FREQ=MONTHLY;BYMONTHDAY=31;BYDAY=1MO",
    "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
]


def main() -> None:
    # the clock out of the way: what is measured is how long the steps take
    budget = RecurrenceBudget(max_steps=DEFAULT_BUDGET.max_steps, max_seconds=3600)
    print(f"load average {os.getloadavg()[0]:.1f}; {budget.max_steps} steps per call")
    slowest = 0.0
    for rrule in RULES:
        schedule = Schedule(START, rrule, "Europe/Berlin", 0, 0)
        started = time.perf_counter()
        try:
            validate_schedule(schedule, min_interval_seconds=1, budget=budget)
            verdict = "accepted"
        except RecurrenceTooCostly:
            verdict = "too costly"
        except ScheduleError as error:
            verdict = error.message[:50]
        took = time.perf_counter() - started
        slowest = max(slowest, took)
        print(f"{took:7.3f} s  {rrule[:60]:60}  {verdict}")
    target = DEFAULT_BUDGET.max_seconds / 10
    print(f"slowest {slowest:.3f} s; target under {target:.1f} s: {'met' if slowest < target else 'NOT met'}")


if __name__ == "__main__":
    main()
