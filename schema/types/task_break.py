"""A planned break as owners and partners see it."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from models import TaskBreak as TaskBreakRow
from schema.context import Info
from services.kit import global_id

if TYPE_CHECKING:
    from schema.types.task import Task


@strawberry.type(description="days off a task: the occurrences due inside are not planned, never MISSED")
class TaskBreak:
    row: strawberry.Private[TaskBreakRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("TaskBreak", self.row.id))

    @strawberry.field
    async def task(self, info: Info) -> Annotated[Task, strawberry.lazy("schema.types.task")]:
        from schema.types.task import Task  # noqa: PLC0415 - task.py imports this module

        row = await info.context.loaders.task.load(str(self.row.task_id))
        if row is None:
            raise LookupError(f"task {self.row.task_id} vanished")
        return Task(row=row)

    @strawberry.field(description="the first day off, in the task's zone")
    def starts_on(self) -> date:
        return self.row.starts_on

    @strawberry.field(description="the last day off")
    def ends_on(self) -> date:
        return self.row.ends_on

    @strawberry.field(
        description="from when it applies: the start of startsOn, or the end of the owner's commitment "
        "horizon when that was later (the days inside it stay due)"
    )
    def applies_from(self) -> datetime:
        return self.row.applies_from

    @strawberry.field(description="when it ends: the end of endsOn, or when it was ended early")
    def ends_at(self) -> datetime:
        return self.row.ends_at

    @strawberry.field(description="endBreak ended it before its last day")
    def ended_early(self) -> bool:
        return self.row.ended_early_at is not None

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at
