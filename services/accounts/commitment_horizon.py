"""A user's commitment horizon: how long an easier edit of their tasks waits before it applies.

Raising it applies at once; lowering it is itself an easier edit, so the lower value waits out the
current horizon (read lazily: the lowered value simply counts from `lowered_horizon_at` on).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from models import User
from services.kit import BadInput, db_now, write_transaction

MAX_HORIZON_DAYS = 30


def horizon_days(user: User, now: datetime) -> int:
    """The days in force at `now`."""
    lowered, at = user.lowered_horizon_days, user.lowered_horizon_at
    if lowered is not None and at is not None and at <= now:
        return lowered
    return user.commitment_horizon_days


def horizon_of(user: User, now: datetime, day: timedelta) -> timedelta:
    return horizon_days(user, now) * day


async def set_commitment_horizon(user: User, days: int, *, day: timedelta) -> User:
    if not 0 <= days <= MAX_HORIZON_DAYS:
        raise BadInput("days", f"must be between 0 and {MAX_HORIZON_DAYS}")
    async with write_transaction():
        row = await User.filter(id=user.id).select_for_update().get()
        now = await db_now()
        current = horizon_days(row, now)
        if days >= current:
            row.commitment_horizon_days, row.lowered_horizon_days, row.lowered_horizon_at = days, None, None
        else:
            row.commitment_horizon_days = current
            row.lowered_horizon_days, row.lowered_horizon_at = days, now + current * day
        await row.save(
            update_fields=["commitment_horizon_days", "lowered_horizon_days", "lowered_horizon_at"]
        )
    return row
