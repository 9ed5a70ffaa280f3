"""The home screen: instances across the viewer's tasks and those of the users they partner for, by due
time, and the count of the viewer's own instances due today.

Each task's chain plans one instance at a time, so a range holds the instances already settled in it, the
open ones, and each task's next planned one; occurrences further ahead are `Task.upcoming`. A partner sees a
user's instances from the partnership's start on, as everywhere (services/partners/access.py).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from tortoise.expressions import Q
from tortoise.queryset import QuerySet

from models import InstanceStatus, TaskInstance, User
from services.kit import BadInput, Keyset, SortKey, parse_instant, parse_uuid
from services.partners import Access

# by due time; the id breaks ties between tasks due at the same instant
AGENDA_ORDER = Keyset("agenda", (SortKey("due_at", parse_instant), SortKey("id", parse_uuid)))
# a quarter: longer ranges are pages of history, which `instances` and `events` serve
MAX_AGENDA_DAYS = 92


def check_range(starts: datetime, ends: datetime) -> None:
    if ends <= starts:
        raise BadInput("to", "must be after from")
    if ends - starts > timedelta(days=MAX_AGENDA_DAYS):
        raise BadInput("to", f"must be at most {MAX_AGENDA_DAYS} days after from")


def agenda(
    access: Access, user_ids: Collection[str], starts: datetime, ends: datetime
) -> QuerySet[TaskInstance]:
    """The instances of `user_ids` (each one the viewer sees) due in [starts, ends), canceled ones aside."""
    check_range(starts, ends)
    clauses = [
        Q(task__owner_id=user_id)
        if access.owns(user_id)
        else Q(task__owner_id=user_id, closes_at__gte=access.since[user_id])
        for user_id in sorted(user_ids)
    ]
    return TaskInstance.filter(
        Q(*clauses, join_type=Q.OR) if clauses else Q(task__owner_id__in=[]),
        task__deleted_at=None,
        due_at__gte=starts,
        due_at__lt=ends,
    ).exclude(status=InstanceStatus.CANCELED)


def today_in(zone: str, now: datetime) -> tuple[datetime, datetime]:
    """[midnight, next midnight) of `now`'s date in `zone` (23 or 25 hours across a DST change)."""
    tz = ZoneInfo(zone)
    day = now.astimezone(tz).date()
    return datetime.combine(day, time(), tz), datetime.combine(day + timedelta(days=1), time(), tz)


async def due_today(viewer: User, now: datetime) -> int:
    """The viewer's PENDING instances due on today's date in their profile's zone."""
    starts, ends = today_in(viewer.timezone, now)
    return await TaskInstance.filter(
        task__owner_id=viewer.id,
        task__deleted_at=None,
        status=InstanceStatus.PENDING,
        due_at__gte=starts,
        due_at__lt=ends,
    ).count()
