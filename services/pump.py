"""The pump: hands far-future rows over to Dramatiq as they enter the horizon, and heals lost links.

Every worker process runs it; on PostgreSQL a try-lock lets one process claim per tick (the others
skip), so the outstanding-link budget counted in SQL is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from observability.metrics import PUMP_BACKLOG, count_links_sent
from services.chain import ChainTiming, send_links
from services.db import as_utc, connection, db_now, is_sqlite, write_transaction
from services.events import announce_committed_events
from services.pending_timer import apply_overdue_changes, link_pending_changes

_PUMP_LOCK_KEY = 7_311_002

# A link counts as lost once its fire_at is PROOFLOOP_LINK_OVERDUE_SECONDS past and, if it was resent,
# the resend is that old times 2^(resends so far, at most 3): a worker busy with a backlog is not a lost
# link, and backing off keeps a slow drain from being flooded with duplicates.
_SENT_LONG_AGO = {
    "postgres": "COALESCE(linked_at, fire_at) <= {now}::timestamptz"
    " - {overdue_s}::float8 * power(2, LEAST(GREATEST(link_no - 1, 0), 3)) * interval '1 second'",
    "sqlite": "julianday(COALESCE(linked_at, fire_at)) <= julianday({now})"
    " - ({overdue_s} * (1 << MIN(MAX(link_no - 1, 0), 3))) / 86400.0",
}
_LOST = "(fire_at <= {overdue} AND " + "{sent_long_ago})"

_LIVE_LINKS_SQL = """
SELECT COUNT(*) AS n FROM {table}
WHERE fire_at IS NOT NULL AND link_for = fire_at AND NOT {lost}
"""

# Earliest fire_at first: a near link never waits behind a far one.
_CLAIM_SQL = """
UPDATE {table} SET link_no = link_no + 1, link_for = fire_at, linked_at = {now}
WHERE id IN (
    SELECT id FROM {table}
    WHERE fire_at IS NOT NULL AND fire_at <= {horizon}
      AND (link_for IS NULL OR link_for <> fire_at OR ({resend} AND {lost}))
    ORDER BY fire_at
    LIMIT {limit}{skip_locked}
)
RETURNING id, link_no, fire_at
"""


def timer_statements(dialect: str, table: str = "task_instances") -> tuple[str, str]:
    """(live-links count, claim) over a table of durable timers (fire_at, link_no, link_for, linked_at)
    for this dialect; parameters: now, overdue cutoff, overdue seconds,
    horizon, limit, resend overdue (numbered placeholders, which both dialects have, so one may appear
    twice). The resend switch is a parameter, not a text edit: every placeholder stays in the claim, so
    PostgreSQL can type each of them."""
    ph = [f"?{n}" if dialect == "sqlite" else f"${n}" for n in range(1, 7)]
    sent_long_ago = _SENT_LONG_AGO[dialect].format(now=ph[0], overdue_s=ph[2])
    lost = _LOST.format(overdue=ph[1], sent_long_ago=sent_long_ago)
    live = _LIVE_LINKS_SQL.format(table=table, lost=lost)
    claim = _CLAIM_SQL.format(
        table=table,
        now=ph[0],
        horizon=ph[3],
        lost=lost,
        resend=ph[5] if dialect == "sqlite" else f"{ph[5]}::boolean",
        limit=ph[4],
        skip_locked="" if dialect == "sqlite" else " FOR UPDATE SKIP LOCKED",
    )
    return live, claim


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


async def claim_due_links(settings: PumpSettings, *, resend_overdue: bool = True) -> PumpTick:
    """Claim (earliest first, within the budget) the rows inside the horizon that lack a live link;
    with `resend_overdue` False (the workers are behind), only rows that never had a link for their
    fire_at."""
    sqlite = is_sqlite()
    live_sql, claim_sql = timer_statements("sqlite" if sqlite else "postgres")
    async with write_transaction():
        conn = connection()
        if not sqlite:
            got = await conn.execute_query_dict(
                "SELECT pg_try_advisory_xact_lock($1) AS ok", [_PUMP_LOCK_KEY]
            )
            if not got[0]["ok"]:
                return PumpTick(sent=0, live_before=0, skipped=True)
        now = await db_now()
        overdue_s = settings.link_overdue_seconds
        cutoff = now - timedelta(seconds=overdue_s)
        # the count takes the first three parameters, the claim all six
        live_rows = await conn.execute_query_dict(live_sql, [now, cutoff, overdue_s])
        live = int(live_rows[0]["n"])
        budget = settings.max_outstanding_links - live
        if budget <= 0:
            return PumpTick(sent=0, live_before=live)
        horizon = now + timedelta(seconds=settings.link_horizon_seconds)
        rows = await conn.execute_query_dict(
            claim_sql, [now, cutoff, overdue_s, horizon, budget, resend_overdue]
        )
    claimed = [(str(r["id"]), int(r["link_no"]), as_utc(r["fire_at"])) for r in rows]
    await send_links(claimed)
    PUMP_BACKLOG.set(len(claimed))
    count_links_sent("pump", len(claimed))
    return PumpTick(sent=len(claimed), live_before=live)


async def pump_once(settings: PumpSettings, *, resend_overdue: bool = True) -> PumpTick:
    """One tick: hand over pending task changes and links, and position/announce events a crashed
    process left behind."""
    timing = ChainTiming(settings.link_horizon_seconds)
    await link_pending_changes(timing)
    await apply_overdue_changes(timing, settings.link_overdue_seconds)
    tick = await claim_due_links(settings, resend_overdue=resend_overdue)
    await announce_committed_events()
    return tick
