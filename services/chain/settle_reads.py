"""What set-based settlement reads before any lock: the rows links name, and the rows due in the same
whole seconds (services/chain/settle_sql.py then claims and writes them).

Hand-written for the same reason as the claim: a batch must cost a few statements, not a few per row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from models import InstanceStatus, VerificationMethod
from rules.quota import Period
from rules.recurrence import Schedule
from services.kit import as_utc, connection, is_sqlite

PENDING = InstanceStatus.PENDING.value
# what settles one of these tasks' instances at the deadline needs rows of its own: an avoid-a-place
# task's samples (services/chain/avoidance.py), a PARTNER quota goal's waiting reviews (chain/quota.py)
_DECIDED_BY_ROW = (
    f"(t.gps_avoid OR (t.quota_period IS NOT NULL AND t.method = '{VerificationMethod.PARTNER.value}'))"
)
TASK_COLUMNS = (
    "t.owner_id, t.title, t.last_seq, t.starts_at, t.rrule, t.timezone, t.window_seconds,"
    " t.grace_seconds, t.count_ends_at, t.reminders, t.pending_effective_at, t.break_until,"
    f" t.quota_period, {_DECIDED_BY_ROW} AS decided_by_row"
)
# a task whose waiting change has come due is settled by chain.fire, which applies the change first; so
# is one with a planned break ahead, whose next instance is planned around it (services/chain/breaks.py),
# and a task whose own rows decide its outcome (_DECIDED_BY_ROW)
NO_CHANGE_DUE = (
    "((t.pending_effective_at IS NULL OR t.pending_effective_at > {now})"
    " AND (t.break_until IS NULL OR t.break_until <= {now}) AND NOT " + _DECIDED_BY_ROW + ")"
)


@dataclass(frozen=True)
class LinkedRow:
    """An instance named by a link or due in the same second, as read before any lock."""

    instance_id: str
    status: InstanceStatus
    fire_at: datetime | None
    due_at: datetime
    schedule: Schedule
    change_due_at: datetime | None  # the task's waiting change (commitment horizon), if any
    break_until: datetime | None = None  # the end of the task's latest planned break, if any
    decided_by_row: bool = False  # its own rows decide at the deadline (avoid samples, waiting reviews)

    def change_due(self, now: datetime) -> bool:
        return self.change_due_at is not None and self.change_due_at <= now

    def takes_row_path(self, now: datetime) -> bool:
        """A break lies ahead (the row path plans around it), or its own rows decide its outcome."""
        return self.decided_by_row or (self.break_until is not None and self.break_until > now)


def maybe_utc(value: Any) -> datetime | None:
    return None if value is None else as_utc(value)


def schedule_from(row: Any) -> Schedule:
    return Schedule(
        starts_at=as_utc(row["starts_at"]),
        rrule=row["rrule"],
        timezone=row["timezone"],
        window_seconds=int(row["window_seconds"]),
        grace_seconds=int(row["grace_seconds"]),
        count_ends_at=maybe_utc(row["count_ends_at"]),
        period=Period(row["quota_period"]) if row["quota_period"] else None,
    )


def id_list(sqlite: bool, ids: list[str]) -> Any:
    return json.dumps(ids) if sqlite else ids


def in_list(sqlite: bool, param: str, cast: str = "uuid") -> str:
    return f"IN (SELECT value FROM json_each({param}))" if sqlite else f"= ANY({param}::{cast}[])"


_READ_COLUMNS = f"i.id, i.status, i.fire_at, i.due_at, {TASK_COLUMNS}"

# The PENDING rows due by $2 in the given whole seconds (half-open ranges), at most $3, earliest first:
# on PostgreSQL one range scan of the fire_at index per second. With $5 false, only rows no link was
# sent for (a row with a live link is settled by whichever process its message reaches: two processes
# gathering the same rows would read and try to claim each of them twice), found among the first $6 rows
# of each second: the rows with links on their way, not yet settled, are not scanned past again and
# again, once per chunk of a herd.
_GATHER_PG = f"""
SELECT {_READ_COLUMNS}
FROM unnest($1::timestamptz[]) AS sec(s)
CROSS JOIN LATERAL (
    SELECT * FROM (
        SELECT * FROM task_instances g
        WHERE g.fire_at >= sec.s AND g.fire_at < sec.s + interval '1 second' AND g.fire_at <= $2
          AND g.status = '{PENDING}' AND g.id <> ALL($4::uuid[])
        ORDER BY g.fire_at LIMIT $6
    ) AS seen
    WHERE $5 OR seen.link_for IS DISTINCT FROM seen.fire_at
    LIMIT $3
) AS i
JOIN tasks t ON t.id = i.task_id
LIMIT $3
"""
_GATHER_SQLITE = f"""
SELECT * FROM (
    SELECT {_READ_COLUMNS}, i.link_for AS link_for
    FROM task_instances i JOIN tasks t ON t.id = i.task_id
    WHERE i.status = '{PENDING}' AND i.fire_at <= ?2 AND i.id NOT IN (SELECT value FROM json_each(?4))
      AND EXISTS (
        SELECT 1 FROM json_each(?1) AS sec
        WHERE i.fire_at >= sec.value
          AND i.fire_at < strftime('%Y-%m-%d %H:%M:%S+00:00', sec.value, '+1 second'))
    ORDER BY i.fire_at LIMIT ?6
)
WHERE ?5 OR link_for IS NULL OR link_for <> fire_at
LIMIT ?3
"""
# How many rows of a second a gather looks at per row it may take, when it takes only rows without a link
UNLINKED_LOOK_AHEAD = 2


# A batch of ids is looked up through the primary key, one probe each, whatever the table's size: with a
# plain `= ANY($1)` the planner, seeing a few hundred ids, scans and hashes the whole table instead.
_NAMED_PG = f"""
SELECT {_READ_COLUMNS}
FROM unnest($1::uuid[]) AS link(id)
CROSS JOIN LATERAL (SELECT * FROM task_instances WHERE id = link.id LIMIT 1) AS i
CROSS JOIN LATERAL (SELECT * FROM tasks WHERE id = i.task_id LIMIT 1) AS t
"""
_NAMED_SQLITE = (
    f"SELECT {_READ_COLUMNS} FROM task_instances i JOIN tasks t ON t.id = i.task_id"
    f" WHERE i.id {in_list(True, '?1')}"
)


def _linked(row: Any) -> LinkedRow:
    return LinkedRow(
        instance_id=str(row["id"]),
        status=InstanceStatus(row["status"]),
        fire_at=maybe_utc(row["fire_at"]),
        due_at=as_utc(row["due_at"]),
        schedule=schedule_from(row),
        change_due_at=maybe_utc(row["pending_effective_at"]),
        break_until=maybe_utc(row["break_until"]),
        decided_by_row=bool(row["decided_by_row"]),
    )


async def read_named(instance_ids: list[str]) -> list[LinkedRow]:
    """The instances the links name, with their tasks' schedules (no lock: decides what to try)."""
    sqlite = is_sqlite()
    sql = _NAMED_SQLITE if sqlite else _NAMED_PG
    _, rows = await connection().execute_query(sql, [id_list(sqlite, instance_ids)])
    return [_linked(r) for r in rows]


async def read_due_in_seconds(
    seconds: list[datetime], now: datetime, limit: int, excluded: set[str], *, with_linked: bool = True
) -> list[LinkedRow]:
    """PENDING instances due by `now` whose fire_at falls in one of the whole `seconds`, earliest first,
    but for the `excluded` ones; without `with_linked`, only those no link was sent for among the first
    rows of each second."""
    sqlite = is_sqlite()
    param: Any = json.dumps([s.isoformat(" ") for s in seconds]) if sqlite else seconds
    sql = _GATHER_SQLITE if sqlite else _GATHER_PG
    looked_at = limit if with_linked else UNLINKED_LOOK_AHEAD * limit
    values = [param, now, limit, id_list(sqlite, list(excluded)), with_linked, looked_at]
    _, rows = await connection().execute_query(sql, values)
    return [_linked(r) for r in rows]


def whole_second(at: datetime) -> datetime:
    return at.replace(microsecond=0)
