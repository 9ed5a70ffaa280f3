"""The durable timers' claim: rows with fire_at/link_no/link_for/linked_at, handed to Dramatiq as they
enter the horizon, with lost links resent. The chain, reminders and webhook deliveries each run it over
their own table."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from services.kit import connection, is_sqlite


class TimerKind(Enum):
    """The tables the pump claims from, each its own advisory lock (any constants shared by every
    process; the events' position step holds 7_311_001)."""

    CHAIN = 7_311_002
    REMINDER = 7_311_003
    DELIVERY = 7_311_004


async def take_pump_turn(kind: TimerKind) -> bool:
    """Inside the claiming transaction: whether this process pumps `kind` this tick. One process at a time
    on PostgreSQL (a lock held to the transaction's end; the others skip the tick); SQLite's one writer
    serializes it already."""
    if is_sqlite():
        return True
    got = await connection().execute_query_dict("SELECT pg_try_advisory_xact_lock($1) AS ok", [kind.value])
    return bool(got[0]["ok"])


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
    interval_seconds: float = 1.0  # how often each worker process's pump ticks
