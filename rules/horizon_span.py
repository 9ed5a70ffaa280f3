"""Everything a schedule promises over the commitment horizon, expanded exactly (never sampled).

Runs on the budgeted expander's public functions only, so it is synchronous and pure: callers run it in a
worker thread. Every expansion call runs under the recurrence budget, and the whole comparison is capped
in due times and calls; a pair that costs more raises RecurrenceTooCostly, and the caller treats such an
edit as easier (it waits) rather than guessing.
"""

from __future__ import annotations

from datetime import datetime

from rules.horizon import DueSpan, RuleField, makes_easier
from rules.recurrence import (
    RecurrenceBudget,
    RecurrenceTooCostly,
    Schedule,
    count_ends_at,
    occurrences_after,
)
from rules.rrule_parse import parse_rrule, zone_of

_CHUNK = 2048  # due times asked for per expansion call
MAX_COMPARED = 100_000  # due times per schedule: 30 days of a rule every minute is 43,200
_MAX_SEARCH_CALLS = 128  # finding an UNTIL rule's last due time halves a span of microseconds each call


def due_span(schedule: Schedule, after: datetime, until: datetime, budget: RecurrenceBudget) -> DueSpan:
    """The schedule's due times in (after, until], whether it goes on after `until`, and if so its end."""
    times: list[datetime] = []
    cursor = after
    while True:
        chunk = occurrences_after(schedule, cursor, _CHUNK, budget=budget)
        inside = [at for at in chunk if at <= until]
        times.extend(inside)
        if len(times) > MAX_COMPARED:
            raise RecurrenceTooCostly(f"more than {MAX_COMPARED} due times within the commitment horizon")
        if len(inside) < len(chunk):
            beyond = chunk[len(inside)]
            return DueSpan(frozenset(times), True, _last_due(schedule, beyond, budget))
        if len(chunk) < _CHUNK:
            return DueSpan(frozenset(times), False)
        cursor = chunk[-1]


def _last_due(schedule: Schedule, known: datetime, budget: RecurrenceBudget) -> datetime | None:
    """The schedule's final due time, given one at `known`; None when it never ends."""
    if schedule.rrule is None:
        return known  # a one-off occurs once
    rule = parse_rrule(schedule.rrule, zone_of(schedule.timezone))
    if rule.count is not None:
        return schedule.count_ends_at or count_ends_at(schedule, budget=budget)
    if rule.until is None:
        return None
    # bisect (known, UNTIL]: `low` is always a due time, and none comes after `high`
    low, high = known, rule.until
    for _ in range(_MAX_SEARCH_CALLS):
        middle = low + (high - low) // 2
        later = occurrences_after(schedule, middle, 1, budget=budget)
        if later:
            low = later[0]
        elif middle == low:
            return low
        else:
            high = middle
    raise RecurrenceTooCostly("the schedule's last due time could not be found within the budget")


def occurrences_easier(
    old: Schedule, new: Schedule, after: datetime, until: datetime, budget: RecurrenceBudget
) -> bool:
    """Whether replacing `old` by `new` drops a due time promised in (after, until] or ends sooner."""
    return makes_easier(
        RuleField.OCCURRENCES,
        due_span(old, after, until, budget),
        due_span(new, after, until, budget),
    )
