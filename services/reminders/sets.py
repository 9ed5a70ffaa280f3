"""Reminders due at the same instant fire as a set: the links a worker receives together, and every
reminder due in the same whole seconds, in one transaction (docs/architecture.md, "Settling in sets").

One statement claims them, each by its own compare-and-set (fire.py's rule: still owed and due;
fired when its instance is still open, dropped otherwise; on PostgreSQL rows another transaction holds are
skipped, as the chain's set does); one more writes their DUE_SOON events; webhook deliveries and the
announcement leave after commit. Early links and whatever a failing set held go to reminders.fire's row
path, so a bad row never blocks the others.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from uuid import UUID

from models import EventType, InstanceStatus
from observability.metrics import count_reminder
from observability.outages import report_failure
from services.feed import announce_committed_events, snapshot_columns, snapshot_rows
from services.kit import PerLoop, as_utc, connection, db_now, is_sqlite, on_commit, write_transaction
from services.reminders.fire import INSTANCE_OPEN, fire_reminder
from services.timers import LinkArgs, SetGatherer
from services.webhooks import FiredReminder, queue_webhooks_of

log = logging.getLogger("proofloop.reminders")

# Reminders fired per transaction: a herd costs a few transactions, and one holds its locks briefly.
REMINDER_CHUNK = 1000


@dataclass(frozen=True)
class OwedReminder:
    reminder_id: str
    fire_at: datetime
    link_no: int


def _ids(sqlite: bool, param: str) -> str:
    return f"IN (SELECT value FROM json_each({param}))" if sqlite else f"= ANY({param}::uuid[])"


@cache
def _named_sql(sqlite: bool) -> str:
    return (
        "SELECT id, fire_at, link_no FROM instance_reminders"
        f" WHERE id {_ids(sqlite, '?1' if sqlite else '$1')} AND fire_at IS NOT NULL"
    )


# The reminders still owed and due by $2 whose fire_at falls in one of the whole seconds $1, at most $3:
# on PostgreSQL one range scan of the fire_at index per second.
_GATHER_PG = """
SELECT r.id, r.fire_at, r.link_no
FROM unnest($1::timestamptz[]) AS sec(s)
CROSS JOIN LATERAL (
    SELECT g.id, g.fire_at, g.link_no FROM instance_reminders g
    WHERE g.fire_at >= sec.s AND g.fire_at < sec.s + interval '1 second' AND g.fire_at <= $2
    ORDER BY g.fire_at LIMIT $3
) AS r
LIMIT $3
"""
_GATHER_SQLITE = """
SELECT id, fire_at, link_no FROM instance_reminders r
WHERE r.fire_at <= ?2 AND EXISTS (
    SELECT 1 FROM json_each(?1) AS sec
    WHERE r.fire_at >= sec.value AND r.fire_at < strftime('%Y-%m-%d %H:%M:%S+00:00', sec.value, '+1 second'))
ORDER BY r.fire_at LIMIT ?3
"""

# Each row by its own compare-and-set: still owed and due; fired when its instance is open, else dropped.
_SETTLE = (
    f"fired_at = CASE WHEN {INSTANCE_OPEN} THEN {{now}} ELSE fired_at END, fire_at = NULL, link_for = NULL"
)
_OWED_AND_DUE = "fire_at IS NOT NULL AND fire_at <= {now}"
_CLAIM_PG = f"""
WITH due AS (
    SELECT id FROM instance_reminders
    WHERE id = ANY($2::uuid[]) AND {_OWED_AND_DUE.format(now="$1")}
    FOR UPDATE SKIP LOCKED
)
UPDATE instance_reminders SET {_SETTLE.format(now="$1")}
FROM due WHERE instance_reminders.id = due.id AND {_OWED_AND_DUE.format(now="$1")}
RETURNING instance_reminders.id, instance_reminders.fired_at
"""
_CLAIM_SQLITE = f"""
UPDATE instance_reminders SET {_SETTLE.format(now="?1")}
WHERE id IN (SELECT value FROM json_each(?2)) AND {_OWED_AND_DUE.format(now="?1")}
RETURNING id, fired_at
"""

_FIRED_READ = """
SELECT r.id AS reminder_id, i.id AS instance_id, i.opens_at, i.due_at, i.closes_at, i.proofs_counted,
       t.id AS task_id, t.owner_id, t.title, t.quota_count
FROM instance_reminders r JOIN task_instances i ON i.id = r.instance_id JOIN tasks t ON t.id = i.task_id
WHERE r.id {ids}
"""

# The DUE_SOON events (record_event's columns), snapshots as of now; the instance is PENDING by the claim.
_EVENTS_PG = f"""
INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)
SELECT '{EventType.DUE_SOON.value}', $1, u, t, i, title, '{InstanceStatus.PENDING.value}', d
FROM unnest($2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::timestamptz[]) AS x(u, t, i, title, d)
"""
_EVENT_SQLITE = f"""
INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)
VALUES ('{EventType.DUE_SOON.value}', ?, ?, ?, ?, ?, '{InstanceStatus.PENDING.value}', ?)
"""


def _id_param(sqlite: bool, ids: list[str]) -> Any:
    return json.dumps(ids) if sqlite else ids


def _owed(row: dict[str, Any]) -> OwedReminder:
    return OwedReminder(str(row["id"]), as_utc(row["fire_at"]), int(row["link_no"]))


async def read_owed(reminder_ids: list[str]) -> list[OwedReminder]:
    """The named reminders still owed (no lock: decides what to try)."""
    sqlite = is_sqlite()
    rows = await connection().execute_query_dict(_named_sql(sqlite), [_id_param(sqlite, reminder_ids)])
    return [_owed(r) for r in rows]


async def read_due_in_seconds(seconds: list[datetime], now: datetime, limit: int) -> list[OwedReminder]:
    """Reminders still owed and due by `now` whose fire_at falls in one of the whole `seconds`."""
    sqlite = is_sqlite()
    param: Any = json.dumps([s.isoformat(" ") for s in seconds]) if sqlite else seconds
    sql = _GATHER_SQLITE if sqlite else _GATHER_PG
    return [_owed(r) for r in await connection().execute_query_dict(sql, [param, now, limit])]


async def fire_reminder_set(links: list[LinkArgs]) -> list[LinkArgs]:
    """The set path: fire the due reminders the links name and those due in the same whole seconds, in
    one transaction; returns the links left to the row path (early ones; all of them if the set fails)."""
    link_no = {key: n for key, n in ((_key(i), n) for i, n in links) if key is not None}
    named = await read_owed(list(link_no)) if link_no else []
    now = await db_now()
    leftover = [(r.reminder_id, link_no[r.reminder_id]) for r in named if r.fire_at > now]
    due = [r for r in named if r.fire_at <= now]
    seconds = sorted({r.fire_at.replace(microsecond=0) for r in due})
    gathered = await read_due_in_seconds(seconds, now, REMINDER_CHUNK) if seconds else []
    rows = list({r.reminder_id: r for r in [*due, *gathered]}.values())[:REMINDER_CHUNK]
    if len(rows) <= 1:
        return leftover + [(r.reminder_id, r.link_no) for r in rows]  # a set of one: the row path
    try:
        await _fire_rows([r.reminder_id for r in rows])
    except Exception as exc:
        report_failure(
            log, "reminder set", exc, "firing %d reminders as a set failed; firing them one by one", len(rows)
        )
        leftover += [(r.reminder_id, link_no.get(r.reminder_id, r.link_no)) for r in rows]
    return leftover


def _key(reminder_id: str) -> str | None:
    try:
        return str(UUID(reminder_id))
    except ValueError:
        return None  # a malformed link names nothing


async def _fire_rows(reminder_ids: list[str]) -> None:
    sqlite = is_sqlite()
    async with write_transaction() as conn:
        now = await db_now()
        claim = _CLAIM_SQLITE if sqlite else _CLAIM_PG
        claimed = await conn.execute_query_dict(claim, [now, _id_param(sqlite, reminder_ids)])
        # fired_at itself, not `fired_at IS NOT NULL`: SQLite 3.40 returned the latter wrong here
        fired_ids = [str(r["id"]) for r in claimed if r["fired_at"] is not None]
        dropped = len(claimed) - len(fired_ids)
        fired = await _read_fired(fired_ids) if fired_ids else []
        if fired:
            await _write_events(fired, now)
            await queue_webhooks_of(fired, now)
            on_commit(announce_committed_events)
    count_reminder("fired", len(fired))
    if dropped:
        count_reminder("dropped", dropped)
    log.info(
        "fired %d reminders as a set, dropped %d; %d taken by another transaction",
        len(fired),
        dropped,
        len(reminder_ids) - len(claimed),
    )


async def _read_fired(reminder_ids: list[str]) -> list[FiredReminder]:
    sqlite = is_sqlite()
    sql = _FIRED_READ.format(ids=_ids(sqlite, "?1" if sqlite else "$1"))
    rows = await connection().execute_query_dict(sql, [_id_param(sqlite, reminder_ids)])
    return [
        FiredReminder(
            reminder_id=str(r["reminder_id"]),
            owner_id=str(r["owner_id"]),
            task_id=str(r["task_id"]),
            title=str(r["title"]),
            instance_id=str(r["instance_id"]),
            opens_at=as_utc(r["opens_at"]),
            due_at=as_utc(r["due_at"]),
            closes_at=as_utc(r["closes_at"]),
            proofs_counted=int(r["proofs_counted"]),
            proofs_required=int(r["quota_count"]) if r["quota_count"] is not None else None,
        )
        for r in rows
    ]


async def _write_events(fired: list[FiredReminder], now: datetime) -> None:
    conn = connection()
    if is_sqlite():
        await conn.execute_many(_EVENT_SQLITE, snapshot_rows(now, fired))
        return
    await conn.execute_query(
        _EVENTS_PG,
        [now, *snapshot_columns(fired)],
    )


async def _fire_one(reminder_id: str, link_no: int) -> object:
    return await fire_reminder(reminder_id, link_no)


_gatherers = PerLoop(lambda: SetGatherer(fire_reminder_set, _fire_one))


async def fire_reminder_links(links: list[LinkArgs]) -> None:
    """Deliver reminder links (reminders.fire, reminders.fire_batch): together with every link this
    process receives meanwhile, as a set; what the set leaves, row by row."""
    await _gatherers.get().deliver(links)
