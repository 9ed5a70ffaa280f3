"""Progress: the documents and the calendar a written history is expected to give (shared with the embedded
default)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from services.kit.ids import global_id

# (days ago, status) of task A, oldest first; each is due that many days and one hour before now
HISTORY_A = [
    (40, "MISSED"),
    (20, "VERIFIED"),
    (10, "VERIFIED"),
    (9, "VERIFIED"),
    (8, "REJECTED"),
    (6, "VERIFIED"),
    (5, "CANCELED"),
    (4, "VERIFIED"),
    (3, "MISSED"),
    (2, "VERIFIED"),
    (1, "VERIFIED"),
]


PROGRESS = """fragment P on Progress {
  r7: completionRate(days: 7) r30: completionRate(days: 30) r90: completionRate(days: 90)
  c7: completion(days: 7) { days verified settled rate }
  currentStreak bestStreak
  calendar(from: $from, to: $to) { date verified missed rejected canceled open instances { id status } }
}"""


USER_PROGRESS = "query($u: ID, $from: Date!, $to: Date!) { progress(userId: $u) { ...P } }\n" + PROGRESS


@dataclass(frozen=True)
class Written:
    id: str
    due: datetime
    status: str


def expected_calendar(rows: list[Written], first: date, last: date) -> list[dict[str, Any]]:
    by_day: dict[date, list[Written]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r.due, r.id)):  # the API's order: due time, then id
        by_day[row.due.date()].append(row)  # the tasks are in UTC
    days = []
    for n in range((last - first).days + 1):
        day = first + timedelta(days=n)
        entries = by_day.get(day, [])

        def count(*statuses: str, entries: list[Written] = entries) -> int:
            return sum(1 for e in entries if e.status in statuses)

        days.append(
            {
                "date": day.isoformat(),
                "verified": count("VERIFIED"),
                "missed": count("MISSED"),
                "rejected": count("REJECTED"),
                "canceled": count("CANCELED"),
                "open": count("PENDING", "PENDING_REVIEW"),
                "instances": [{"id": global_id("TaskInstance", e.id), "status": e.status} for e in entries],
            }
        )
    return days
