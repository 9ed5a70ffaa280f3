"""The pump's share for webhook deliveries: hand over retries as they enter the horizon, resend a
delivery whose link was lost or whose attempt's worker died (its hold expired), earliest first, and
forget finished deliveries after 30 days.

An attempt holds its row until its own deadline, so no per-resend backoff is needed here (the chain's
rule in services/timers/claims.py backs off because a busy worker and a lost link look alike): a row is resent
once its fire_at and its last link are both PROOFLOOP_LINK_OVERDUE_SECONDS old.
"""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from services.kit import as_utc, connection, db_now, is_sqlite, send, write_transaction
from services.timers import PumpSettings, TimerKind, take_pump_turn
from services.webhooks.outbox import delivery_message

CLAIM_BATCH = 1000
# a finished delivery's row (its outcome, for an operator's questions) is kept this long, as sent mail is
KEEP_FINISHED = timedelta(days=30)
FORGET_BATCH = 500

_FORGET_SQL = """
DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries WHERE finished_at < {before} ORDER BY finished_at LIMIT {limit}
)
"""

_CLAIM_SQL = """
UPDATE webhook_deliveries SET link_no = link_no + 1, link_for = fire_at, linked_at = {now}
WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE fire_at IS NOT NULL AND fire_at <= {horizon}
      AND (link_for IS NULL OR link_for <> fire_at OR (fire_at <= {overdue} AND linked_at <= {overdue}))
    ORDER BY fire_at
    LIMIT {limit}{skip_locked}
)
RETURNING id, link_no, fire_at
"""


@cache
def _forget_sql(sqlite: bool) -> str:
    return _FORGET_SQL.format(before="?1" if sqlite else "$1", limit="?2" if sqlite else "$2")


@cache
def _claim_sql(sqlite: bool) -> str:
    ph = [f"?{n}" if sqlite else f"${n}" for n in range(1, 5)]
    return _CLAIM_SQL.format(
        now=ph[0],
        horizon=ph[1],
        overdue=ph[2],
        limit=ph[3],
        skip_locked="" if sqlite else " FOR UPDATE SKIP LOCKED",
    )


async def claim_due_deliveries(settings: PumpSettings) -> int:
    """One tick: link the deliveries entering the horizon, resend lost ones and forget a batch of old
    finished ones; how many were sent."""
    sqlite = is_sqlite()
    async with write_transaction():
        if not await take_pump_turn(TimerKind.DELIVERY):
            return 0
        now = await db_now()
        horizon = now + timedelta(seconds=settings.link_horizon_seconds)
        overdue = now - timedelta(seconds=settings.link_overdue_seconds)
        rows = await connection().execute_query_dict(_claim_sql(sqlite), [now, horizon, overdue, CLAIM_BATCH])
        await connection().execute_query(_forget_sql(sqlite), [now - KEEP_FINISHED, FORGET_BATCH])
    await send([delivery_message(str(r["id"]), int(r["link_no"]), as_utc(r["fire_at"])) for r in rows])
    return len(rows)
