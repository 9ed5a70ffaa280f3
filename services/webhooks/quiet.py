"""Recipients' quiet hours: when a notification for each of them may first be sent."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from models import User
from rules.quiet_hours import quiet_until
from rules.timezones import zone_of


async def quiet_ends(user_ids: Collection[str], now: datetime) -> dict[str, datetime]:
    """For each of `user_ids` inside their quiet hours at `now`, when those end (the others are absent)."""
    if not user_ids:
        return {}
    rows = await User.filter(id__in=sorted(user_ids), quiet_start_minute__isnull=False).values_list(
        "id", "timezone", "quiet_start_minute", "quiet_end_minute"
    )
    ends = {}
    for user_id, zone, start, end in rows:
        if start is None or end is None:
            continue
        until = quiet_until(now, zone_of(zone, "timezone"), start, end)
        if until is not None:
            ends[str(user_id)] = until
    return ends
