"""How an instant is written wherever the API hands one out: the DateTime scalar, webhook bodies, exports.

One rule: UTC with a `Z` suffix, whole seconds when the value is whole (`2027-03-28T05:00:00Z`), fractions
otherwise; a task's zone travels separately (Schedule.timezone), so a client never guesses an offset.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_instant(at: datetime) -> str:
    if at.utcoffset() is None:
        # astimezone would read it in the machine's zone: a naive value here is a bug upstream
        raise ValueError(f"instant {at!r} has no offset")
    return at.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"
