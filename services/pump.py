"""The pump: hands far-future rows over to Dramatiq as they enter the horizon, and heals lost links.

Every worker process runs it; on PostgreSQL a try-lock lets one process claim per tick (the others
skip), so the outstanding-link budget counted in SQL is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from observability.metrics import PUMP_BACKLOG, count_links_sent
from services.chain import send_links
from services.db import connection, db_now, is_sqlite, write_transaction
from services.events import announce_committed_events

_PUMP_LOCK_KEY = 7_311_002

_LIVE_LINKS_SQL = """
SELECT COUNT(*) AS n FROM task_instances
WHERE fire_at IS NOT NULL AND link_for = fire_at AND link_for > {overdue}
"""

# Earliest fire_at first: a near link never waits behind a far one.
_CLAIM_SQL = """
UPDATE task_instances SET link_no = link_no + 1, link_for = fire_at
WHERE id IN (
    SELECT id FROM task_instances
    WHERE fire_at IS NOT NULL AND fire_at <= {horizon}
      AND (link_for IS NULL OR link_for <> fire_at OR link_for <= {overdue})
    ORDER BY fire_at
    LIMIT {limit}{skip_locked}
)
RETURNING id, link_no, fire_at
"""


@dataclass(frozen=True)
class PumpSettings:
    link_horizon_seconds: float
    link_overdue_seconds: float
    max_outstanding_links: int


@dataclass(frozen=True)
class PumpTick:
    sent: int
    live_before: int
    skipped: bool = False


def _as_utc(value: Any) -> datetime:
    if isinstance(value, str):  # SQLite hands back the stored ISO text
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.astimezone(UTC)


async def claim_due_links(settings: PumpSettings) -> PumpTick:
    """Claim (earliest first, within the budget) the rows inside the horizon that lack a live link."""
    sqlite = is_sqlite()
    ph = ["?", "?", "?"] if sqlite else ["$1", "$2", "$3"]
    async with write_transaction():
        conn = connection()
        if not sqlite:
            got = await conn.execute_query_dict(
                "SELECT pg_try_advisory_xact_lock($1) AS ok", [_PUMP_LOCK_KEY]
            )
            if not got[0]["ok"]:
                return PumpTick(sent=0, live_before=0, skipped=True)
        now = await db_now()
        overdue = now - timedelta(seconds=settings.link_overdue_seconds)
        live_rows = await conn.execute_query_dict(_LIVE_LINKS_SQL.format(overdue=ph[0]), [overdue])
        live = int(live_rows[0]["n"])
        budget = settings.max_outstanding_links - live
        if budget <= 0:
            return PumpTick(sent=0, live_before=live)
        sql = _CLAIM_SQL.format(
            horizon=ph[0], overdue=ph[1], limit=ph[2], skip_locked="" if sqlite else " FOR UPDATE SKIP LOCKED"
        )
        horizon = now + timedelta(seconds=settings.link_horizon_seconds)
        rows = await conn.execute_query_dict(sql, [horizon, overdue, budget])
    claimed = [(str(r["id"]), int(r["link_no"]), _as_utc(r["fire_at"])) for r in rows]
    await send_links(claimed)
    PUMP_BACKLOG.set(len(claimed))
    count_links_sent("pump", len(claimed))
    return PumpTick(sent=len(claimed), live_before=live)


async def pump_once(settings: PumpSettings) -> PumpTick:
    """One tick: hand over links, and position/announce events a crashed process left behind."""
    tick = await claim_due_links(settings)
    await announce_committed_events()
    return tick
