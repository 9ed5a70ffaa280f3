"""Moving a user's tasks to the zone the user moved to.

A task in the old zone keeps its wall times in the new one (a 07:00 gym stays at 07:00 where the user now
is), so its first occurrence is re-read in the new zone. Each move is that task's own schedule edit, judged
as `updateTask` judges one: under a commitment horizon a move that drops a due time promised within the
horizon waits as the task's pending change, like any other easier edit; tasks never wait on each other, and
a task that cannot move keeps its zone and is reported with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from models import Task, TaskState, User
from rules.timezones import zone_of
from services.chain import ChainTiming
from services.kit import ProofloopError
from services.tasks.drafts import SchedulePatch, TaskPatch
from services.tasks.schedule_edits import DAY
from services.tasks.tasks import update_task


@dataclass(frozen=True)
class RefusedMove:
    task: Task
    error: ProofloopError


@dataclass(frozen=True)
class ZoneMoves:
    moved: list[Task] = field(default_factory=list)  # in the new zone now, or with the move pending
    refused: list[RefusedMove] = field(default_factory=list)


def moved_patch(task: Task, to_zone: str) -> TaskPatch:
    """The schedule edit that moves `task` to `to_zone` with its wall times."""
    wall = task.starts_at.astimezone(zone_of(task.timezone, "timezone"))
    starts_at = wall.replace(tzinfo=zone_of(to_zone, "timezone"))
    return TaskPatch(schedule=SchedulePatch(starts_at=starts_at, timezone=to_zone))


async def move_tasks_to_zone(
    owner: User,
    from_zone: str,
    to_zone: str,
    *,
    min_interval_seconds: int,
    timing: ChainTiming,
    horizon_day: timedelta = DAY,
) -> ZoneMoves:
    """Every task of `owner` still in `from_zone` that has occurrences ahead, oldest first."""
    moves = ZoneMoves()
    if from_zone == to_zone:
        return moves
    tasks = (
        await Task.filter(owner_id=owner.id, deleted_at=None, timezone=from_zone)
        .exclude(state=TaskState.ENDED)
        .order_by("created_at", "id")
    )
    for task in tasks:
        try:
            moved = await update_task(
                owner,
                str(task.id),
                moved_patch(task, to_zone),
                min_interval_seconds=min_interval_seconds,
                timing=timing,
                horizon_day=horizon_day,
            )
        except ProofloopError as exc:
            moves.refused.append(RefusedMove(task, exc))
        else:
            moves.moved.append(moved)
    return moves
