"""The statements of set-based settlement: claim-and-settle the due rows, write what follows.

Hand-written because a batch must cost a few statements, not a few per row, and because PostgreSQL's
claim locks with SKIP LOCKED (SQLite needs no row locks: BEGIN IMMEDIATE already holds the file's).
The columns written here are chain.settlement's and plan_next_instance's, and events.record_event's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from models import EventType, InstanceStatus, TaskState, VerdictReason
from rules.recurrence import Schedule
from services.chain.settle_reads import NO_CHANGE_DUE, PENDING, TASK_COLUMNS, maybe_utc, schedule_from
from services.feed import snapshot_columns, snapshot_rows
from services.kit import as_utc, connection, is_sqlite


@dataclass(frozen=True)
class ClaimedRow:
    """An instance this transaction settled (MISSED, or CANCELED when its chain was stale), task locked."""

    instance_id: str
    task_id: str
    status: InstanceStatus
    due_at: datetime
    scheduled_due_at: datetime | None  # the occurrence it stands for, when the dev clock moved it
    chain_version: int
    owner_id: str
    title: str
    last_seq: int
    schedule: Schedule
    reminders: object  # the task's stored reminder offsets (services.reminders.reminders.offsets_from)


@dataclass(frozen=True)
class PlannedRow:
    instance_id: str
    task_id: str
    seq: int
    chain_version: int
    opens_at: datetime
    due_at: datetime
    closes_at: datetime
    linked: bool  # inside the horizon: its link leaves after commit


@dataclass(frozen=True)
class ExcusedRow:
    """An occurrence due while the service could not plan it (services/chain/catch_up.py), recorded
    EXCUSED with an event of its own (a feed Snapshot)."""

    instance_id: str
    task_id: str
    seq: int
    chain_version: int
    opens_at: datetime
    due_at: datetime
    closes_at: datetime
    owner_id: str
    title: str


_LIVE = (
    f"t.deleted_at IS NULL AND t.state = '{TaskState.ACTIVE.value}'"
    " AND t.chain_version = {instance}.chain_version"
)
_CLAIMED = "i.id, i.task_id, i.status, i.due_at, i.scheduled_due_at, i.chain_version, " + TASK_COLUMNS

# One statement: lock (skipping rows another transaction holds, instance or task) and settle each due
# PENDING row by its own compare-and-set: MISSED when its chain is live, CANCELED when stale. Every row is
# reached through its primary key (per-id lateral probes; the update through an array the planner cannot
# size), so a batch costs the same on a table of thousands as of millions.
_CLAIM_PG = f"""
WITH due AS (
    SELECT i.id, ({_LIVE.format(instance="i")}) AS live
    FROM unnest($1::uuid[]) AS link(id)
    CROSS JOIN LATERAL (
        SELECT id, task_id, chain_version FROM task_instances
        WHERE id = link.id AND status = '{PENDING}' AND fire_at <= $2
        FOR UPDATE SKIP LOCKED
    ) AS i
    CROSS JOIN LATERAL (
        SELECT * FROM tasks t WHERE t.id = i.task_id AND {NO_CHANGE_DUE.format(now="$2")}
        FOR UPDATE SKIP LOCKED
    ) AS t
)
UPDATE task_instances i
SET status = CASE WHEN due.live THEN '{InstanceStatus.MISSED.value}'
                  ELSE '{InstanceStatus.CANCELED.value}' END,
    verdict_reason = CASE WHEN due.live THEN '{VerdictReason.NO_PROOF.value}'
                          ELSE '{VerdictReason.TASK_CHANGED.value}' END,
    rule_revision = CASE WHEN due.live THEN t.rule_revision END,
    settled_at = $2, fire_at = NULL, link_for = NULL
FROM due, tasks t
WHERE i.id = ANY(ARRAY(SELECT id FROM due)) AND i.id = due.id AND t.id = i.task_id
  AND i.status = '{PENDING}' AND i.fire_at <= $2
RETURNING {_CLAIMED}
"""

_LIVE_RULE_SQLITE = f"""(SELECT t.rule_revision FROM tasks t WHERE t.id = task_instances.task_id
                       AND {_LIVE.format(instance="task_instances")})"""
_CLAIM_SQLITE = f"""
UPDATE task_instances
SET status = CASE WHEN {_LIVE_RULE_SQLITE} IS NOT NULL
             THEN '{InstanceStatus.MISSED.value}' ELSE '{InstanceStatus.CANCELED.value}' END,
    verdict_reason = CASE WHEN {_LIVE_RULE_SQLITE} IS NOT NULL
                     THEN '{VerdictReason.NO_PROOF.value}' ELSE '{VerdictReason.TASK_CHANGED.value}' END,
    rule_revision = {_LIVE_RULE_SQLITE},
    settled_at = ?2, fire_at = NULL, link_for = NULL
WHERE id IN (SELECT value FROM json_each(?1)) AND status = '{PENDING}' AND fire_at <= ?2
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = task_instances.task_id
                  AND NOT {NO_CHANGE_DUE.format(now="?2")})
RETURNING id
"""

_CLAIMED_SQLITE = (
    f"SELECT {_CLAIMED} FROM task_instances i JOIN tasks t ON t.id = i.task_id"
    " WHERE i.id IN (SELECT value FROM json_each(?1))"
)


async def claim_and_settle(instance_ids: list[str], now: datetime) -> list[ClaimedRow]:
    """Inside a write transaction: settle those of `instance_ids` still PENDING and due by `now`."""
    conn = connection()
    rows: Sequence[Any]
    if is_sqlite():
        settled = await conn.execute_query_dict(_CLAIM_SQLITE, [json.dumps(instance_ids), now])
        if not settled:
            return []
        rows = await conn.execute_query_dict(_CLAIMED_SQLITE, [json.dumps([str(r["id"]) for r in settled])])
    else:
        _, rows = await conn.execute_query(_CLAIM_PG, [instance_ids, now])  # records: no dict per row
    return [
        ClaimedRow(
            instance_id=str(r["id"]),
            task_id=str(r["task_id"]),
            status=InstanceStatus(r["status"]),
            due_at=as_utc(r["due_at"]),
            scheduled_due_at=maybe_utc(r["scheduled_due_at"]),
            chain_version=int(r["chain_version"]),
            owner_id=str(r["owner_id"]),
            title=str(r["title"]),
            last_seq=int(r["last_seq"]),
            schedule=schedule_from(r),
            reminders=r["reminders"],
        )
        for r in rows
    ]


# PostgreSQL: the events, the tasks' new last_seq or ENDED state, and the next instances in one statement
# (the tasks through their primary key, as in the claim: ARRAY(SELECT unnest(...)) hides the batch's size).
_WRITE_PG = f"""
WITH missed AS (
    INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)
    SELECT '{EventType.MISSED.value}', $1, u, t, i, title, '{InstanceStatus.MISSED.value}', d
    FROM unnest($2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::timestamptz[]) AS x(u, t, i, title, d)
    RETURNING 1
), ended AS (
    UPDATE tasks SET state = '{TaskState.ENDED.value}', updated_at = $1
    WHERE id = ANY(ARRAY(SELECT unnest($7::uuid[])))
    RETURNING 1
), advanced AS (
    UPDATE tasks SET last_seq = last_seq + 1, updated_at = $1
    WHERE id = ANY(ARRAY(SELECT unnest($8::uuid[])))
    RETURNING 1
), planned AS (
    INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at, status,
                                created_at, fire_at, link_no, link_for, linked_at, proofs_counted)
    SELECT id, task_id, seq, v, o, d, c, '{PENDING}', $1, c,
           CASE WHEN l THEN 1 ELSE 0 END, CASE WHEN l THEN c END, CASE WHEN l THEN $1::timestamptz END, 0
    FROM unnest($8::uuid[], $9::uuid[], $10::int[], $11::int[], $12::timestamptz[], $13::timestamptz[],
                $14::timestamptz[], $15::bool[]) AS x(task_id, id, seq, v, o, d, c, l)
    RETURNING 1
)
SELECT (SELECT COUNT(*) FROM missed) AS events, (SELECT COUNT(*) FROM planned) AS planned,
       (SELECT COUNT(*) FROM ended) + (SELECT COUNT(*) FROM advanced) AS tasks
"""

_EVENT_SQLITE = f"""
INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)
VALUES ('{EventType.MISSED.value}', ?, ?, ?, ?, ?, '{InstanceStatus.MISSED.value}', ?)
"""
_TASKS_SQLITE = "UPDATE tasks SET {change}, updated_at = ?1 WHERE id IN (SELECT value FROM json_each(?2))"
_ENDED_SQLITE = _TASKS_SQLITE.format(change=f"state = '{TaskState.ENDED.value}'")
_ADVANCED_SQLITE = _TASKS_SQLITE.format(change="last_seq = last_seq + 1")
_PLANNED_SQLITE = f"""
INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at, status,
                            created_at, fire_at, link_no, link_for, linked_at, proofs_counted)
VALUES (?, ?, ?, ?, ?, ?, ?, '{PENDING}', ?, ?, ?, ?, ?, 0)
"""


async def write_settlements(
    now: datetime, missed: list[ClaimedRow], ended: list[str], planned: list[PlannedRow]
) -> None:
    """Inside the claiming transaction: a MISSED event per missed row (snapshots as of now), ENDED for
    the exhausted tasks, and the planned next instances with their tasks' last_seq moved on."""
    conn = connection()
    if not is_sqlite():
        await conn.execute_query(
            _WRITE_PG,
            [
                now,
                *snapshot_columns(missed),
                ended,
                [p.task_id for p in planned],
                [p.instance_id for p in planned],
                [p.seq for p in planned],
                [p.chain_version for p in planned],
                [p.opens_at for p in planned],
                [p.due_at for p in planned],
                [p.closes_at for p in planned],
                [p.linked for p in planned],
            ],
        )
        return
    if missed:
        await conn.execute_many(_EVENT_SQLITE, snapshot_rows(now, missed))
    if ended:
        await conn.execute_query(_ENDED_SQLITE, [now, json.dumps(ended)])
    if planned:
        await conn.execute_query(_ADVANCED_SQLITE, [now, json.dumps([p.task_id for p in planned])])
        await conn.execute_many(
            _PLANNED_SQLITE,
            [
                [
                    p.instance_id,
                    p.task_id,
                    p.seq,
                    p.chain_version,
                    p.opens_at,
                    p.due_at,
                    p.closes_at,
                    now,
                    p.closes_at,
                    1 if p.linked else 0,
                    p.closes_at if p.linked else None,
                    now if p.linked else None,
                ]
                for p in planned
            ],
        )


OUTAGE = VerdictReason.SERVICE_OUTAGE.value

# The catch-up after an outage (rare, so apart from the statements above, and after them, so its events
# follow the MISSED one as its occurrences do): the EXCUSED instances, their events, and their tasks'
# last_seq moved on by their number (the planned instances' seq counted them already).
_EXCUSED_PG = f"""
WITH excused AS (
    INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at, status,
                                verdict_reason, created_at, settled_at, link_no, proofs_counted)
    SELECT id, task_id, seq, v, o, d, c, '{InstanceStatus.EXCUSED.value}', '{OUTAGE}', $1, $1, 0, 0
    FROM unnest($2::uuid[], $3::uuid[], $4::int[], $5::int[], $6::timestamptz[], $7::timestamptz[],
                $8::timestamptz[]) AS x(id, task_id, seq, v, o, d, c)
    RETURNING 1
), events AS (
    INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)
    SELECT '{EventType.EXCUSED.value}', $1, u, t, i, title, '{InstanceStatus.EXCUSED.value}', d
    FROM unnest($9::uuid[], $10::uuid[], $11::uuid[], $12::text[], $13::timestamptz[]) AS x(u, t, i, title, d)
    RETURNING 1
)
UPDATE tasks SET last_seq = tasks.last_seq + moved.n, updated_at = $1
FROM (SELECT task_id, COUNT(*) AS n FROM unnest($3::uuid[]) AS x(task_id) GROUP BY task_id) AS moved
WHERE tasks.id = moved.task_id
"""
_EXCUSED_SQLITE = f"""
INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at, status,
                            verdict_reason, created_at, settled_at, link_no, proofs_counted)
VALUES (?, ?, ?, ?, ?, ?, ?, '{InstanceStatus.EXCUSED.value}', '{OUTAGE}', ?, ?, 0, 0)
"""
_EXCUSED_EVENT_SQLITE = f"""
INSERT INTO events (type, occurred_at, user_id, task_id, instance_id, task_title, instance_status, due_at)
VALUES ('{EventType.EXCUSED.value}', ?, ?, ?, ?, ?, '{InstanceStatus.EXCUSED.value}', ?)
"""
_MOVED_SQLITE = "UPDATE tasks SET last_seq = last_seq + ?1, updated_at = ?2 WHERE id = ?3"


async def write_excused(now: datetime, excused: list[ExcusedRow]) -> None:
    """Inside the claiming transaction, after write_settlements: the EXCUSED instances with their events,
    and each task's last_seq moved on by their number."""
    if not excused:
        return
    conn = connection()
    if not is_sqlite():
        await conn.execute_query(
            _EXCUSED_PG,
            [
                now,
                [e.instance_id for e in excused],
                [e.task_id for e in excused],
                [e.seq for e in excused],
                [e.chain_version for e in excused],
                [e.opens_at for e in excused],
                [e.due_at for e in excused],
                [e.closes_at for e in excused],
                *snapshot_columns(excused),
            ],
        )
        return
    await conn.execute_many(
        _EXCUSED_SQLITE,
        [
            [e.instance_id, e.task_id, e.seq, e.chain_version, e.opens_at, e.due_at, e.closes_at, now, now]
            for e in excused
        ],
    )
    await conn.execute_many(_EXCUSED_EVENT_SQLITE, snapshot_rows(now, excused))
    moved = Counter(e.task_id for e in excused)
    await conn.execute_many(_MOVED_SQLITE, [[n, now, task_id] for task_id, n in moved.items()])
