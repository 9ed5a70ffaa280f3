from __future__ import annotations

import strawberry

from schema.types.task import Task
from schema.types.user import User


@strawberry.type(description="a task updateProfile could not move: it keeps its zone")
class UnmovedTask:
    task: Task
    code: str = strawberry.field(description="the error code updateTask would answer, e.g. BAD_USER_INPUT")
    message: str


@strawberry.type
class ProfileUpdate:
    user: User
    moved_tasks: list[Task] = strawberry.field(
        description="tasks moved to your new zone with their wall times: at once, or under your commitment"
        " horizon as their pendingChange"
    )
    unmoved_tasks: list[UnmovedTask] = strawberry.field(description="tasks that could not move, with why")
