"""Progress a partner can read: completion rates, streaks and a calendar, for tasks and for users.

What counts: an instance is *completed* when VERIFIED; it is *settled* (the denominator of a rate, and a
link in a streak) when VERIFIED, MISSED or REJECTED. CANCELED instances (a pause, an edit), EXCUSED ones
(an outage) and unsettled ones (PENDING, PENDING_REVIEW) neither count nor break anything. A user's
progress covers their tasks that are not deleted, so the owner and their partners read the same figures.

Each function answers for every scope a request asked about in one grouped statement per scope kind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from functools import lru_cache
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from models import InstanceStatus, TaskInstance
from services.kit import BadInput, connection, is_sqlite

SETTLED = (InstanceStatus.VERIFIED, InstanceStatus.MISSED, InstanceStatus.REJECTED)
MAX_RATE_DAYS = 366
MAX_CALENDAR_DAYS = 92
# calendar days a schedule can reach (and far from date.min/max, so the zone margins stay dates)
EARLIEST_DAY, LATEST_DAY = date(1900, 1, 1), date(2200, 12, 31)
# a calendar of one scope holds at most this many instances (a task due every minute fills it in a day)
MAX_CALENDAR_INSTANCES = 2000
# a local date spans UTC instants from 14 h before its UTC midnight to 12 h after the next one
_ZONE_MARGIN = timedelta(days=1)


class ScopeKind(StrEnum):
    TASK = "task"
    USER = "user"


@dataclass(frozen=True)
class Scope:
    """Whose instances: one task's, or every not-deleted task of one owner; for a partner, only those still
    open when the partnership began (`since`, partners/access.py's history start; None: all of them)."""

    kind: ScopeKind
    id: str
    since: datetime | None = None


@dataclass(frozen=True)
class Completion:
    verified: int
    settled: int

    @property
    def rate(self) -> float | None:
        return self.verified / self.settled if self.settled else None


@dataclass(frozen=True)
class Streaks:
    current: int
    best: int


@dataclass(frozen=True)
class CalendarAsk:
    scope: Scope
    first: date
    last: date


@dataclass(frozen=True)
class DatedInstance:
    day: date
    row: TaskInstance


def check_days(days: int) -> int:
    if not 1 <= days <= MAX_RATE_DAYS:
        raise BadInput("days", f"must be between 1 and {MAX_RATE_DAYS}")
    return days


def check_range(first: date, last: date) -> None:
    for field, day in (("from", first), ("to", last)):
        if not EARLIEST_DAY <= day <= LATEST_DAY:
            raise BadInput(field, f"must be between {EARLIEST_DAY} and {LATEST_DAY}")
    if last < first:
        raise BadInput("to", "must not be before `from`")
    if (last - first).days + 1 > MAX_CALENDAR_DAYS:
        raise BadInput("to", f"a calendar spans at most {MAX_CALENDAR_DAYS} days")


def _marks(sqlite: bool, start: int, count: int) -> list[str]:
    return [f"?{n}" if sqlite else f"${n}" for n in range(start, start + count)]


def _statuses(statuses: Sequence[InstanceStatus]) -> str:
    return ", ".join(f"'{status.value}'" for status in statuses)


def _key_column(kind: ScopeKind) -> str:
    return "i.task_id" if kind is ScopeKind.TASK else "t.owner_id"


T = TypeVar("T")


def _by_kind(items: Sequence[T], scope_of: Any) -> dict[tuple[ScopeKind, datetime | None], list[T]]:
    """Items whose scopes share a kind and a history start: one statement each (a page has one owner)."""
    grouped: dict[tuple[ScopeKind, datetime | None], list[T]] = defaultdict(list)
    for item in items:
        scope = scope_of(item)
        grouped[(scope.kind, scope.since)].append(item)
    return grouped


def _history_from(mark: str | None) -> str:
    return f" AND i.closes_at >= {mark}" if mark is not None else ""


@lru_cache(maxsize=256)
def _completion_sql(sqlite: bool, kind: ScopeKind, ids: int, windows: int, bounded: bool) -> str:
    key = _key_column(kind)
    id_marks = _marks(sqlite, 1, ids)
    since = _marks(sqlite, ids + 1, windows)
    start = _marks(sqlite, ids + windows + 1, 1)[0] if bounded else None
    verified = InstanceStatus.VERIFIED.value
    sums = ", ".join(
        f"SUM(CASE WHEN i.due_at >= {mark} THEN 1 ELSE 0 END) AS s{n},"
        f" SUM(CASE WHEN i.due_at >= {mark} AND i.status = '{verified}' THEN 1 ELSE 0 END) AS v{n}"
        for n, mark in enumerate(since)
    )
    return (
        f"SELECT {key} AS scope_key, {sums} FROM task_instances i JOIN tasks t ON t.id = i.task_id"
        f" WHERE {key} IN ({', '.join(id_marks)}) AND t.deleted_at IS NULL"
        f" AND i.status IN ({_statuses(SETTLED)}) AND i.due_at >= {since[-1]}{_history_from(start)}"
        f" GROUP BY {key}"
    )


async def completions(asks: Sequence[tuple[Scope, datetime]]) -> dict[tuple[Scope, datetime], Completion]:
    """Completed and settled instances due since each ask's instant (early proofs of later ones count too)."""
    found: dict[tuple[Scope, datetime], Completion] = {}
    sqlite = is_sqlite()
    for (kind, start), members in _by_kind(asks, lambda ask: ask[0]).items():
        ids = sorted({scope.id for scope, _ in members})
        windows = sorted(
            {since for _, since in members}, reverse=True
        )  # the earliest last: it bounds the scan
        bounded = start is not None
        rows = await connection().execute_query_dict(
            _completion_sql(sqlite, kind, len(ids), len(windows), bounded),
            [*ids, *windows, *([start] if bounded else [])],
        )
        by_key = {str(row["scope_key"]): row for row in rows}
        for scope, since in members:
            row = by_key.get(scope.id)
            n = windows.index(since)
            found[(scope, since)] = (
                Completion(verified=int(row[f"v{n}"] or 0), settled=int(row[f"s{n}"] or 0))
                if row
                else Completion(verified=0, settled=0)
            )
    return found


@lru_cache(maxsize=256)
def _streaks_sql(sqlite: bool, kind: ScopeKind, ids: int, bounded: bool) -> str:
    key = _key_column(kind)
    start = _marks(sqlite, ids + 1, 1)[0] if bounded else None
    order = "i.seq" if kind is ScopeKind.TASK else "i.due_at, i.task_id, i.seq"
    verified = InstanceStatus.VERIFIED.value
    # each break starts a new group; a group's VERIFIED rows are one run
    return (
        "WITH marked AS ("
        f" SELECT {key} AS scope_key, i.status AS status,"
        f" SUM(CASE WHEN i.status = '{verified}' THEN 0 ELSE 1 END)"
        f" OVER (PARTITION BY {key} ORDER BY {order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS grp"
        " FROM task_instances i JOIN tasks t ON t.id = i.task_id"
        f" WHERE {key} IN ({', '.join(_marks(sqlite, 1, ids))}) AND t.deleted_at IS NULL"
        f" AND i.status IN ({_statuses(SETTLED)}){_history_from(start)}),"
        " runs AS (SELECT scope_key, grp,"
        f" SUM(CASE WHEN status = '{verified}' THEN 1 ELSE 0 END) AS run"
        " FROM marked GROUP BY scope_key, grp),"
        " latest AS (SELECT scope_key, MAX(grp) AS grp FROM runs GROUP BY scope_key)"
        " SELECT r.scope_key AS scope_key, MAX(r.run) AS best,"
        " MAX(CASE WHEN r.grp = l.grp THEN r.run ELSE 0 END) AS current"
        " FROM runs r JOIN latest l ON l.scope_key = r.scope_key GROUP BY r.scope_key"
    )


async def streaks(scopes: Sequence[Scope]) -> dict[Scope, Streaks]:
    """Current streak (VERIFIED in a row up to the latest settled instance) and the best one ever."""
    found: dict[Scope, Streaks] = {}
    sqlite = is_sqlite()
    for (kind, start), members in _by_kind(scopes, lambda scope: scope).items():
        ids = sorted({scope.id for scope in members})
        bounded = start is not None
        rows = await connection().execute_query_dict(
            _streaks_sql(sqlite, kind, len(ids), bounded), [*ids, *([start] if bounded else [])]
        )
        by_key = {str(row["scope_key"]): row for row in rows}
        for scope in members:
            row = by_key.get(scope.id)
            found[scope] = (
                Streaks(current=int(row["current"]), best=int(row["best"])) if row else Streaks(0, 0)
            )
    return found


@lru_cache(maxsize=256)
def _calendar_sql(sqlite: bool, kind: ScopeKind, ids: int, bounded: bool) -> str:
    key = _key_column(kind)
    columns = sorted(TaskInstance._meta.db_fields)
    inner = ", ".join(f'i."{c}" AS "{c}"' for c in columns)
    outer = ", ".join(f'"{c}"' for c in columns)
    lo, hi, cap = _marks(sqlite, ids + 1, 3)
    start = _marks(sqlite, ids + 4, 1)[0] if bounded else None
    return (
        f"SELECT {outer}, tz, scope_key FROM (SELECT {inner}, t.timezone AS tz, {key} AS scope_key,"
        f" ROW_NUMBER() OVER (PARTITION BY {key} ORDER BY i.due_at, i.id) AS day_row"
        " FROM task_instances i JOIN tasks t ON t.id = i.task_id"
        f" WHERE {key} IN ({', '.join(_marks(sqlite, 1, ids))}) AND t.deleted_at IS NULL"
        f" AND i.due_at >= {lo} AND i.due_at < {hi}{_history_from(start)}) AS ranged WHERE day_row <= {cap}"
        " ORDER BY scope_key, due_at, id"
    )


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


async def calendars(asks: Sequence[CalendarAsk]) -> dict[CalendarAsk, list[DatedInstance] | BadInput]:
    """Each ask's instances, dated by their due time in their task's zone, oldest first (ties by id).

    Asks of one kind and range share one statement; a scope with more than MAX_CALENDAR_INSTANCES in
    the range gets BadInput instead (ask a shorter range).
    """
    groups: dict[tuple[ScopeKind, date, date, datetime | None], list[CalendarAsk]] = defaultdict(list)
    for ask in asks:
        groups[(ask.scope.kind, ask.first, ask.last, ask.scope.since)].append(ask)
    sqlite = is_sqlite()
    found: dict[CalendarAsk, list[DatedInstance] | BadInput] = {}
    for (kind, first, last, start), members in groups.items():
        ids = sorted({ask.scope.id for ask in members})
        bounds = [_midnight(first) - _ZONE_MARGIN, _midnight(last) + timedelta(days=1) + _ZONE_MARGIN]
        bounded = start is not None
        values: list[Any] = [*ids, *bounds, MAX_CALENDAR_INSTANCES + 1, *([start] if bounded else [])]
        grouped: dict[str, list[DatedInstance]] = defaultdict(list)
        counted: dict[str, int] = defaultdict(int)
        for row in await connection().execute_query_dict(
            _calendar_sql(sqlite, kind, len(ids), bounded), values
        ):
            scope_key, zone = str(row.pop("scope_key")), ZoneInfo(row.pop("tz"))
            counted[scope_key] += 1
            instance = TaskInstance._init_from_db(**row)
            day = instance.due_at.astimezone(zone).date()
            if first <= day <= last:
                grouped[scope_key].append(DatedInstance(day=day, row=instance))
        for ask in members:
            if counted[ask.scope.id] > MAX_CALENDAR_INSTANCES:
                found[ask] = BadInput(
                    "from", f"the range holds over {MAX_CALENDAR_INSTANCES} instances: ask a shorter one"
                )
            else:
                found[ask] = grouped[ask.scope.id]
    return found
