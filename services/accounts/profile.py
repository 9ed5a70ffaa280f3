"""A user's profile: the name partners see, the zone the user lives in, and their quiet hours.

The zone is where a new task's schedule is read when the task names none; tasks keep their own zone, so
changing the profile's moves no task by itself (the caller may move them: resolvers/accounts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from models import User
from rules.errors import InvalidInput
from rules.quiet_hours import check_span, minute_of
from services.accounts.accounts import check_display_name, validate_timezone
from services.kit import BadInput, write_transaction


@dataclass(frozen=True)
class QuietHours:
    """Minutes after midnight on the user's wall clock; notifications falling in [start, end) wait."""

    start: int
    end: int

    @staticmethod
    def of(start: str, end: str, field: str = "quietHours") -> QuietHours:
        try:
            span = QuietHours(minute_of(start, f"{field}.start"), minute_of(end, f"{field}.end"))
            check_span(span.start, span.end, field)
        except InvalidInput as exc:
            raise BadInput(exc.field, exc.message) from None
        return span


# what update_profile does with quiet hours: keep them (KEEP), clear them (None) or set them
KEEP = object()


@dataclass(frozen=True)
class ProfileChange:
    user: User
    previous_timezone: str  # the zone before this change: tasks still in it are the ones that may move

    @property
    def moved_zone(self) -> bool:
        return self.user.timezone != self.previous_timezone


async def update_profile(
    user: User,
    *,
    display_name: str | None,
    timezone: str | None,
    quiet_hours: QuietHours | object | None = KEEP,
) -> ProfileChange:
    """Sets the fields given (None keeps a name or zone; quiet hours: KEEP, None clears them); every
    field is checked before anything is written."""
    name = check_display_name(display_name) if display_name is not None else None
    zone = validate_timezone(timezone, "timezone") if timezone is not None else None
    async with write_transaction():
        row = await User.filter(id=user.id).select_for_update().get()
        previous = row.timezone
        row.display_name = name if name is not None else row.display_name
        row.timezone = zone if zone is not None else row.timezone
        if quiet_hours is None or isinstance(quiet_hours, QuietHours):
            row.quiet_start_minute = quiet_hours.start if quiet_hours else None
            row.quiet_end_minute = quiet_hours.end if quiet_hours else None
        await row.save(update_fields=["display_name", "timezone", "quiet_start_minute", "quiet_end_minute"])
    return ProfileChange(row, previous)
