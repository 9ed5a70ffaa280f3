"""The feed: events recorded with their writes and announced after commit, the partner feeds that read
them, progress and streaks."""

from __future__ import annotations

from services.feed.events import (
    Snapshot,
    announce_committed_events,
    commits_wait_for_positions,
    record_event,
    record_events,
    snapshot_columns,
    snapshot_rows,
)
from services.feed.feeds import readable_events
from services.feed.progress import (
    CalendarAsk,
    Completion,
    DatedInstance,
    Scope,
    ScopeKind,
    Streaks,
    calendars,
    check_days,
    check_range,
    completions,
    streaks,
)
from services.feed.task_streaks import streaks_of

__all__ = [
    "CalendarAsk",
    "Completion",
    "DatedInstance",
    "Scope",
    "ScopeKind",
    "Snapshot",
    "Streaks",
    "announce_committed_events",
    "calendars",
    "check_days",
    "check_range",
    "commits_wait_for_positions",
    "completions",
    "readable_events",
    "record_event",
    "record_events",
    "snapshot_columns",
    "snapshot_rows",
    "streaks",
    "streaks_of",
]
