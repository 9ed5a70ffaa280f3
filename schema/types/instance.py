from __future__ import annotations

from datetime import datetime

import strawberry

from models import InstanceStatus as InstanceStatusRow
from models import Task as TaskRow
from models import TaskInstance as TaskInstanceRow
from schema.context import Info
from schema.enums import InstanceStatus
from schema.types.node import Node
from schema.types.pagination import PageInfo, encode_cursor
from schema.types.task import Task, local
from schema.types.verification import Verification
from services.ids import global_id
from services.task_reads import InstanceCount, InstancePage


@strawberry.type
class TaskInstance(Node):
    row: strawberry.Private[TaskInstanceRow]
    task_row: strawberry.Private[TaskRow | None] = None

    async def _task_row(self, info: Info) -> TaskRow:
        if self.task_row is None:
            self.task_row = await info.context.loaders.task.load(str(self.row.task_id))
        if self.task_row is None:
            raise LookupError(f"task {self.row.task_id} vanished")
        return self.task_row

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("TaskInstance", self.row.id))

    @strawberry.field
    async def task(self, info: Info) -> Task:
        return Task(row=await self._task_row(info))

    @strawberry.field
    async def opens_at(self, info: Info) -> datetime:
        return local(await self._task_row(info), self.row.opens_at)

    @strawberry.field
    async def due_at(self, info: Info) -> datetime:
        return local(await self._task_row(info), self.row.due_at)

    @strawberry.field(description="dueAt + grace: the last moment a proof counts")
    async def closes_at(self, info: Info) -> datetime:
        return local(await self._task_row(info), self.row.closes_at)

    @strawberry.field(description="PENDING and now within [opensAt, closesAt]")
    async def is_open(self, info: Info) -> bool:
        if self.row.status is not InstanceStatusRow.PENDING:
            return False
        now = await info.context.now()
        return self.row.opens_at <= now <= self.row.closes_at

    @strawberry.field(description="PENDING_REVIEW: when onTimeout applies")
    async def review_deadline(self, info: Info) -> datetime | None:
        deadline = self.row.review_deadline
        return local(await self._task_row(info), deadline) if deadline else None

    @strawberry.field
    def status(self) -> InstanceStatus:
        return self.row.status

    @strawberry.field(description="when the chain (or a review) settled it")
    def settled_at(self) -> datetime | None:
        return self.row.settled_at

    @strawberry.field
    async def verifications(self, info: Info) -> list[Verification]:
        rows = await info.context.loaders.verifications_of_instance.load(str(self.row.id))
        return [Verification(row=r, instance_row=self.row) for r in rows]


@strawberry.type
class TaskInstanceEdge:
    cursor: str
    node: TaskInstance


@strawberry.type
class TaskInstanceConnection:
    """One task's instances; each part is read only when selected, batched across the tasks of a page."""

    task_row: strawberry.Private[TaskRow]
    page: strawberry.Private[InstancePage]

    async def _rows(self, info: Info) -> list[TaskInstanceRow]:
        return await info.context.loaders.instance_page.load(self.page)

    @strawberry.field
    async def edges(self, info: Info) -> list[TaskInstanceEdge]:
        rows = (await self._rows(info))[: self.page.first]
        return [
            TaskInstanceEdge(cursor=encode_cursor(r.seq), node=TaskInstance(row=r, task_row=self.task_row))
            for r in rows
        ]

    @strawberry.field
    async def page_info(self, info: Info) -> PageInfo:
        rows = await self._rows(info)
        page = rows[: self.page.first]
        return PageInfo.of(
            [encode_cursor(row.seq) for row in page],
            has_next_page=len(rows) > self.page.first,
            has_previous_page=self.page.before_seq is not None,
        )

    @strawberry.field  # counted only when selected
    async def total_count(self, info: Info) -> int:
        key = InstanceCount(self.page.task_id, self.page.closes_from)
        return await info.context.loaders.instance_count.load(key)
