"""The pump's share for reminders: drop those of instances no longer open, hand over the rest as they
enter the horizon, and resend lost links (the rule of services/timers/claims.py, on instance_reminders)."""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from models import InstanceStatus
from observability.metrics import count_links_sent, count_reminder
from services.kit import as_utc, connection, db_now, is_sqlite, send, write_transaction
from services.reminders.reminders import reminder_messages
from services.timers import PumpSettings, TimerKind, take_pump_turn, timer_statements

# Reminders of an instance that left PENDING (proved, missed, paused, rescheduled, deleted) are dropped
# in one statement as they come near, so the chain's settlements never have to touch them.
_DROP_SQL = """
UPDATE instance_reminders SET fire_at = NULL, link_for = NULL
WHERE fire_at IS NOT NULL AND fire_at <= {horizon} AND EXISTS (
    SELECT 1 FROM task_instances i
    WHERE i.id = instance_reminders.instance_id AND i.status <> '{pending}'
)
"""


@cache
def _statements(sqlite: bool) -> tuple[str, str, str]:
    """(drop, live count, claim); parameters as timer_statements': now, overdue cutoff, overdue seconds,
    horizon, limit, resend overdue (the drop takes only the horizon, the count the first three)."""
    dialect = "sqlite" if sqlite else "postgres"
    drop = _DROP_SQL.format(horizon="?1" if sqlite else "$1", pending=InstanceStatus.PENDING.value)
    live, claim = timer_statements(dialect, "instance_reminders")
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
        if not await take_pump_turn(TimerKind.REMINDER):
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
    await send(reminder_messages([(str(r["id"]), int(r["link_no"]), as_utc(r["fire_at"])) for r in rows]))
    count_links_sent("reminder", len(rows))
    return len(rows)
