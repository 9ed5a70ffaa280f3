"""A user's profile: the name partners see, and the zone the user lives in.

The zone is where a new task's schedule is read when the task names none; tasks keep their own zone, so
changing the profile's moves no task by itself (the caller may move them: resolvers/accounts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from models import User
from services.accounts.accounts import check_display_name, validate_timezone
from services.kit import write_transaction


@dataclass(frozen=True)
class ProfileChange:
    user: User
    previous_timezone: str  # the zone before this change: tasks still in it are the ones that may move

    @property
    def moved_zone(self) -> bool:
        return self.user.timezone != self.previous_timezone


async def update_profile(user: User, *, display_name: str | None, timezone: str | None) -> ProfileChange:
    """Sets the fields given (None keeps one); every field is checked before anything is written."""
    name = check_display_name(display_name) if display_name is not None else None
    zone = validate_timezone(timezone, "timezone") if timezone is not None else None
    async with write_transaction():
        row = await User.filter(id=user.id).select_for_update().get()
        previous = row.timezone
        row.display_name = name if name is not None else row.display_name
        row.timezone = zone if zone is not None else row.timezone
        await row.save(update_fields=["display_name", "timezone"])
    return ProfileChange(row, previous)
