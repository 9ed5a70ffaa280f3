from __future__ import annotations

from datetime import datetime

import strawberry

from models import Event as EventRow
from schema.context import Info
from schema.enums import EventType, InstanceStatus
from schema.types.instance import TaskInstance
from schema.types.node import Node
from schema.types.task import Task
from schema.types.user import User
from schema.types.verification import Verification


@strawberry.type
class VerificationEvent(Node):
    """An outbox row read with its user, task, instance and verification (services/feed/feeds.py)."""

    row: strawberry.Private[EventRow]

    @strawberry.field(description="opaque, in stream order; pass as `after` to resume without gaps")
    def id(self, info: Info) -> strawberry.ID:
        return strawberry.ID(info.context.event_ids.encode(self.row.position or 0))

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
    def user(self) -> User:
        return User(row=self.row.user)

    @strawberry.field
    def task(self) -> Task:
        return Task(row=self.row.task)

    @strawberry.field
    def instance(self) -> TaskInstance:
        return TaskInstance(row=self.row.instance, task_row=self.row.task)

    @strawberry.field
    def verification(self) -> Verification | None:
        verification = self.row.verification
        return Verification(row=verification, instance_row=self.row.instance) if verification else None
