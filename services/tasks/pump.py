"""The pump: hands far-future rows over to Dramatiq as they enter the horizon, and heals lost links.

Every worker process runs it; on PostgreSQL a try-lock lets one process claim per tick (the others
skip), so the outstanding-link budget counted in SQL is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from observability.metrics import PUMP_BACKLOG, count_links_sent
from services.chain import ChainTiming, send_links
from services.feed import announce_committed_events
from services.kit import as_utc, connection, db_now, is_sqlite, write_transaction
from services.tasks.pending_delivery import apply_overdue_changes, link_pending_changes
from services.timers import PumpSettings, TimerKind, take_pump_turn, timer_statements


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
        if not await take_pump_turn(TimerKind.CHAIN):
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


async def pump_once(settings: PumpSettings, timing: ChainTiming, *, resend_overdue: bool = True) -> PumpTick:
    """One tick: hand over pending task changes and links, and position/announce events a crashed
    process left behind."""
    await link_pending_changes(timing)
    await apply_overdue_changes(timing, settings.link_overdue_seconds)
    tick = await claim_due_links(settings, resend_overdue=resend_overdue)
    await announce_committed_events()
    return tick
