"""How much work one recurrence call may do, and the rules refused for being too dense or too sparse."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from rules.rrule_expand import Budget
from rules.rrule_parse import Freq, Rule, rrule_error

_UNIT_SECONDS = {Freq.HOURLY: 3600, Freq.MINUTELY: 60, Freq.SECONDLY: 1}


@dataclass(frozen=True)
class RecurrenceBudget:
    """How much work one call may do: calendar steps walked, and wall-clock seconds."""

    max_steps: int = 200_000
    max_seconds: float = 10.0  # only catches a stalled host: the steps decide, and take well under 1 s
    max_per_period: int = 1440  # occurrences one FREQ period may expand to (a day has 1440 minutes)
    max_skipped_periods: int = 1_000_000  # sub-daily: FREQ periods walked past between two occurrences

    def start(self) -> Budget:
        return Budget(self.max_steps, self.max_seconds)


DEFAULT_BUDGET = RecurrenceBudget()


def check_density(rule: Rule, max_per_period: int) -> None:
    """Refuse a rule whose BY parts expand one FREQ period into more occurrences than the budget."""
    per_period = _per_period_bound(rule)
    if per_period > max_per_period:
        raise rrule_error(
            f"the rule is denser than the recurrence budget: one {rule.freq.name} period expands to up to "
            f"{per_period} occurrences (at most {max_per_period}); use a finer FREQ with fewer BY values"
        )


def _per_period_bound(rule: Rule) -> int:
    def size(part: tuple[int, ...] | None, absent: int) -> int:
        return len(part) if part is not None else absent

    if rule.freq < Freq.DAILY:
        finer = {
            Freq.HOURLY: size(rule.byminute, 1) * size(rule.bysecond, 1),
            Freq.MINUTELY: size(rule.bysecond, 1),
        }
        return finer.get(rule.freq, 1)
    times = size(rule.byhour, 1) * size(rule.byminute, 1) * size(rule.bysecond, 1)
    byday = rule.byday or ()
    weekly = len([day for day in byday if day[0] is None])
    month_days = size(rule.bymonthday, 0) or min(31, 5 * weekly + len(byday) - weekly) or 1
    days = {
        Freq.DAILY: 1,
        Freq.WEEKLY: weekly or 1,
        Freq.MONTHLY: month_days,
        Freq.YEARLY: size(rule.bymonth, 12) * month_days
        if rule.bymonthday or rule.bymonth
        else 53 * weekly + len(byday) - weekly or 1,
    }[rule.freq]
    return days * times


def check_sparsity(rule: Rule, sample: list[datetime], max_skipped: int) -> None:
    """Refuse a sub-daily rule that walks past more of its periods between occurrences than the budget."""
    if rule.freq >= Freq.DAILY or not sample:
        return
    stride = _UNIT_SECONDS[rule.freq] * rule.interval
    widest = max((later - earlier).total_seconds() for earlier, later in pairwise(sorted(set(sample))))
    if widest / stride > max_skipped:
        raise rrule_error(
            f"the rule is sparser than the recurrence budget: it passes {int(widest // stride)} of its "
            f"{rule.freq.name} periods between two occurrences (at most {max_skipped}); use a coarser FREQ"
        )
