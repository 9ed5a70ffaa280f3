from __future__ import annotations

from datetime import datetime

import strawberry

from models import Event as EventRow
from schema.context import Info
from schema.enums import EventType, InstanceStatus
from schema.types.instance import TaskInstance
from schema.types.task import Task
from schema.types.user import User, load_user
from schema.types.verification import Verification


@strawberry.type
class VerificationEvent:
    row: strawberry.Private[EventRow]

    @strawberry.field(description="strictly increasing per stream; pass as `after` to resume without gaps")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.row.position))

    @strawberry.field
    def type(self) -> EventType:
        return self.row.type

    @strawberry.field
    def occurred_at(self) -> datetime:
        return self.row.occurred_at

    @strawberry.field
    def task_title(self) -> str:
        return self.row.task_title

    @strawberry.field
    def instance_status(self) -> InstanceStatus:
        return self.row.instance_status

    @strawberry.field
    def due_at(self) -> datetime:
        return self.row.due_at

    @strawberry.field
    async def user(self, info: Info) -> User:
        return await load_user(info, self.row.user_id)

    @strawberry.field
    async def task(self, info: Info) -> Task:
        row = await info.context.loaders.task.load(str(self.row.task_id))
        if row is None:
            raise LookupError(f"task {self.row.task_id} vanished")
        return Task(row=row)

    @strawberry.field
    async def instance(self, info: Info) -> TaskInstance:
        row = await info.context.loaders.instance.load(str(self.row.instance_id))
        if row is None:
            raise LookupError(f"instance {self.row.instance_id} vanished")
        return TaskInstance(row=row)

    @strawberry.field
    async def verification(self, info: Info) -> Verification | None:
        if self.row.verification_id is None:
            return None
        row = await info.context.loaders.verification.load(str(self.row.verification_id))
        return Verification(row=row) if row else None
