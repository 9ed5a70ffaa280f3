"""The pump's share for reminders: drop those of instances no longer open, hand over the rest as they
enter the horizon, and resend lost links (the rule of services/pump.py, on instance_reminders)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from models import InstanceStatus
from observability.metrics import count_links_sent, count_reminder
from services.db import connection, db_now, is_sqlite, write_transaction
from services.messaging import send
from services.pump import PumpSettings, lost_link_condition
from services.reminders import reminder_message

_REMINDER_PUMP_LOCK_KEY = 7_311_003

# Reminders of an instance that left PENDING (proved, missed, paused, rescheduled, deleted) are dropped
# in one statement as they come near, so the chain's settlements never have to touch them.
_DROP_SQL = """
UPDATE instance_reminders SET fire_at = NULL, link_for = NULL
WHERE fire_at IS NOT NULL AND fire_at <= {horizon} AND EXISTS (
    SELECT 1 FROM task_instances i
    WHERE i.id = instance_reminders.instance_id AND i.status <> '{pending}'
)
"""

_LIVE_SQL = """
SELECT COUNT(*) AS n FROM instance_reminders
WHERE fire_at IS NOT NULL AND link_for = fire_at AND NOT {lost}
"""

_CLAIM_SQL = """
UPDATE instance_reminders SET link_no = link_no + 1, link_for = fire_at, linked_at = {now}
WHERE id IN (
    SELECT id FROM instance_reminders
    WHERE fire_at IS NOT NULL AND fire_at <= {horizon}
      AND (link_for IS NULL OR link_for <> fire_at OR ({resend} AND {lost}))
    ORDER BY fire_at
    LIMIT {limit}{skip_locked}
)
RETURNING id, link_no, fire_at
"""


def _instant(value: Any) -> datetime:
    if isinstance(value, str):  # SQLite hands back the stored ISO text
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.astimezone(UTC)


@cache
def _statements(sqlite: bool) -> tuple[str, str, str]:
    """(drop, live count, claim); parameters as services/pump.py's: now, overdue cutoff, overdue seconds,
    horizon, limit, resend overdue (the drop takes only the horizon, the count the first three)."""
    dialect = "sqlite" if sqlite else "postgres"
    ph = [f"?{n}" if sqlite else f"${n}" for n in range(1, 7)]
    lost = lost_link_condition(dialect, ph[0], ph[1], ph[2])
    drop = _DROP_SQL.format(horizon="?1" if sqlite else "$1", pending=InstanceStatus.PENDING.value)
    live = _LIVE_SQL.format(lost=lost)
    claim = _CLAIM_SQL.format(
        now=ph[0],
        horizon=ph[3],
        lost=lost,
        resend=ph[5] if sqlite else f"{ph[5]}::boolean",
        limit=ph[4],
        skip_locked="" if sqlite else " FOR UPDATE SKIP LOCKED",
    )
    return drop, live, claim


async def claim_due_reminders(
    settings: PumpSettings, *, links_in_use: int, resend_overdue: bool = True
) -> int:
    """One tick for reminders, inside what the chain's links (`links_in_use`) left of the budget; returns
    how many links it sent."""
    sqlite = is_sqlite()
    drop_sql, live_sql, claim_sql = _statements(sqlite)
    async with write_transaction():
        conn = connection()
        if not sqlite:
            got = await conn.execute_query_dict(
                "SELECT pg_try_advisory_xact_lock($1) AS ok", [_REMINDER_PUMP_LOCK_KEY]
            )
            if not got[0]["ok"]:
                return 0
        now = await db_now()
        horizon = now + timedelta(seconds=settings.link_horizon_seconds)
        dropped, _ = await conn.execute_query(drop_sql, [horizon])
        if dropped:
            count_reminder("dropped", dropped)
        overdue_s = settings.link_overdue_seconds
        cutoff = now - timedelta(seconds=overdue_s)
        live = int((await conn.execute_query_dict(live_sql, [now, cutoff, overdue_s]))[0]["n"])
        budget = settings.max_outstanding_links - links_in_use - live
        if budget <= 0:
            return 0
        rows = await conn.execute_query_dict(
            claim_sql, [now, cutoff, overdue_s, horizon, budget, resend_overdue]
        )
    await send([reminder_message(str(r["id"]), int(r["link_no"]), _instant(r["fire_at"])) for r in rows])
    count_links_sent("reminder", len(rows))
    return len(rows)
