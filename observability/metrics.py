"""Every Proofloop metric, defined once. Import the objects and call them; exposition lives in exposition.py.

Under several processes (uvicorn --workers, dramatiq's worker processes) prometheus_client must be in
multiprocess mode, which it picks from PROMETHEUS_MULTIPROC_DIR when this module is first imported:
the commands that start those processes set it (see observability.exposition).
"""

from __future__ import annotations

import atexit
from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Iterable
from datetime import datetime

from prometheus_client import Counter, Gauge, Histogram

from observability.exposition import forget_this_process

LATENESS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

LINK_LATENESS = Histogram(
    "proofloop_link_lateness_seconds",
    "How late the chain settled an instance: settled_at - fire_at.",
    buckets=LATENESS_BUCKETS,
)
SETTLEMENTS = Counter(
    "proofloop_settlements_total",
    "Instances the chain settled at their fire_at, by outcome.",
    ["outcome"],
)
LINKS_SENT = Counter(
    "proofloop_links_sent_total",
    "chain.fire links sent, by who sent them: the chain itself or the pump.",
    ["source"],
)
PUMP_BACKLOG = Gauge(
    "proofloop_pump_backlog",
    "Rows inside the horizon owing work without a live link, as the last pump tick claimed them.",
    multiprocess_mode="livemostrecent",
)
OPEN_SUBSCRIPTIONS = Gauge(
    "proofloop_open_subscriptions",
    "verificationEvents subscriptions open in this API.",
    multiprocess_mode="livesum",
)
HANDED_OFF_SUBSCRIPTIONS = Gauge(
    "proofloop_handed_off_subscriptions",
    "Open subscriptions carried by their socket's sender after their replay (no task of their own).",
    multiprocess_mode="livesum",
)
LIVE_VIEWERS = Gauge(
    "proofloop_live_viewers",
    "Users with at least one open verificationEvents subscription in this API.",
    multiprocess_mode="livesum",
)
LIVE_WATCHED_USERS = Gauge(
    "proofloop_live_watched_users",
    "Users whose events this API's open subscriptions watch (the viewers and whom they partner for).",
    multiprocess_mode="livesum",
)
LIVE_NOTICES = Counter(
    "proofloop_live_notices_total",
    "Event notices this API received from Redis.",
)
LIVE_ROWS_READ = Counter(
    "proofloop_live_event_rows_read_total",
    "Event rows this API's live fan-out read from the table (catch-up reads and backfills).",
)
LIVE_CHANNEL_CHANGES = Counter(
    "proofloop_live_channel_changes_total",
    "Per-user event channels this API subscribed to or unsubscribed from, by command.",
    ["command"],
)
GC_FROZEN_OBJECTS = Gauge(
    "proofloop_gc_frozen_objects",
    "Objects the API froze out of the collector's full passes (start-up, then settled subscriptions).",
    multiprocess_mode="livesum",
)
GC_PAUSES = Histogram(
    "proofloop_gc_pause_seconds",
    "How long each cyclic garbage collection stopped the process, by generation (2: a full one).",
    ["generation"],
    buckets=(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
)
GC_LONGEST_PAUSE = Gauge(
    "proofloop_gc_longest_pause_seconds",
    "The longest cyclic garbage collection since the process started, by generation.",
    ["generation"],
    multiprocess_mode="max",
)
EVENTS_PUBLISHED = Counter(
    "proofloop_events_published_total",
    "Events given their position and announced to the live listeners.",
)
DEAD_LETTERS = Counter(
    "proofloop_dead_letters_total",
    "Messages that failed for good, by queue and whether Dramatiq's dead-letter queue kept them"
    " (the chain's are dropped: the pump resends their rows).",
    ["queue", "kept"],
)
CONSUMER_RESTARTS = Counter(
    "proofloop_worker_consumer_restarts_total",
    "Dramatiq consumer threads found dead by the watchdog and started again, by queue.",
    ["queue"],
)
CONSUMERS_ALIVE = Gauge(
    "proofloop_worker_consumers_alive",
    "Dramatiq consumer threads alive at the watchdog's last look.",
    multiprocess_mode="livesum",
)
REMINDERS = Counter(
    "proofloop_reminders_total",
    "Reminders fired (a DUE_SOON event), or dropped because their instance was no longer open.",
    ["outcome"],
)
WEBHOOK_DELIVERIES = Counter(
    "proofloop_webhook_deliveries_total",
    "Webhook and Web Push delivery attempts, by outcome: delivered, failed (retried later), given_up (out"
    " of attempts), refused (the address resolved to a private or reserved network), gone (a push service"
    " no longer knows the subscription: removed).",
    ["outcome"],
)
GRAPHQL_DURATION = Histogram(
    "proofloop_graphql_operation_duration_seconds",
    "GraphQL query and mutation durations, by operation name and type.",
    ["operation_name", "operation_type"],
    buckets=DURATION_BUCKETS,
)

SETTLEMENT_OUTCOMES = ("missed", "verified", "rejected", "canceled")
LINK_SOURCES = ("chain", "pump", "reminder")
REMINDER_OUTCOMES = ("fired", "dropped")
WEBHOOK_OUTCOMES = ("delivered", "failed", "given_up", "refused")

# Zero-valued series exist from the start, so dashboards and alerts see 0 rather than nothing.
for _outcome in SETTLEMENT_OUTCOMES:
    SETTLEMENTS.labels(outcome=_outcome)
for _source in LINK_SOURCES:
    LINKS_SENT.labels(source=_source)
for _outcome in REMINDER_OUTCOMES:
    REMINDERS.labels(outcome=_outcome)
for _outcome in WEBHOOK_OUTCOMES:
    WEBHOOK_DELIVERIES.labels(outcome=_outcome)


def observe_settlement(outcome: str, fire_at: datetime | None, settled_at: datetime) -> None:
    """One settlement: count it by outcome and, when it came at or after its fire_at (the chain's timer,
    not a proof or a partner before it), how late."""
    observe_settlements([(outcome, fire_at)], settled_at)


def observe_settlements(settled: Iterable[tuple[str, datetime | None]], settled_at: datetime) -> None:
    """observe_settlement for a set settled together: one counter step per outcome and one histogram
    step per bucket, instead of a few locked writes per instance (multiprocess mode writes each one
    to a shared file)."""
    outcomes: Tally[str] = Tally()
    late: list[float] = []
    for outcome, fire_at in settled:
        outcomes[outcome.lower()] += 1
        if fire_at is not None and settled_at >= fire_at:
            late.append((settled_at - fire_at).total_seconds())
    for outcome, n in outcomes.items():
        SETTLEMENTS.labels(outcome=outcome).inc(n)
    observe_many(LINK_LATENESS, late)


def observe_many(histogram: Histogram, values: list[float]) -> None:
    """Histogram.observe for each value, one write per bucket touched (the same series as observe's)."""
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None:  # another client version: the public way
        for value in values:
            histogram.observe(value)
        return
    for index, n in Tally(bisect_left(bounds, value) for value in values).items():
        buckets[index].inc(n)  # bisect_left: the first bound >= value, as observe's `value <= bound`
    if values:
        total.inc(sum(values))


def count_links_sent(source: str, count: int = 1) -> None:
    LINKS_SENT.labels(source=source).inc(count)


def count_reminder(outcome: str, count: int = 1) -> None:
    REMINDERS.labels(outcome=outcome).inc(count)


def count_webhook_delivery(outcome: str) -> None:
    WEBHOOK_DELIVERIES.labels(outcome=outcome).inc()


# a stopped process's live gauges must leave the sums (its counters rightly stay)
atexit.register(forget_this_process)
