from __future__ import annotations

from datetime import datetime

import strawberry

from models import InstanceStatus as InstanceStatusRow
from models import Task as TaskRow
from models import TaskInstance as TaskInstanceRow
from schema.context import Info
from schema.deprecations import list_replaced_by
from schema.enums import InstanceStatus
from schema.types.node import Node
from schema.types.pagination import Connection, PageInfo, page_request
from schema.types.task import Task
from schema.types.verdict import Verdict
from schema.types.verification import Verification
from services.kit import Page, global_id, page_of_rows
from services.tasks import INSTANCE_ORDER, VERIFICATION_ORDER, InstanceCount, InstancePage


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
    def opens_at(self) -> datetime:
        return self.row.opens_at

    @strawberry.field
    def due_at(self) -> datetime:
        return self.row.due_at

    @strawberry.field(description="dueAt + grace: the last moment a proof counts")
    def closes_at(self) -> datetime:
        return self.row.closes_at

    @strawberry.field(description="PENDING and now within [opensAt, closesAt]")
    async def is_open(self, info: Info) -> bool:
        if self.row.status is not InstanceStatusRow.PENDING:
            return False
        now = await info.context.now()
        return self.row.opens_at <= now <= self.row.closes_at

    @strawberry.field(description="PENDING_REVIEW: when onTimeout applies")
    def review_deadline(self) -> datetime | None:
        return self.row.review_deadline

    @strawberry.field
    def status(self) -> InstanceStatus:
        return self.row.status

    @strawberry.field(
        description="proofs counted towards it: for a quota goal, VERIFIED once proofsRequired are in"
    )
    async def proofs_counted(self, info: Info) -> int:
        if (await self._task_row(info)).quota_count is None:
            return 1 if self.row.status is InstanceStatusRow.VERIFIED else 0
        return self.row.proofs_counted

    @strawberry.field(description="a quota goal's count per period; 1 for every other task")
    async def proofs_required(self, info: Info) -> int:
        return (await self._task_row(info)).quota_count or 1

    @strawberry.field(description="when the chain (or a review) settled it")
    def settled_at(self) -> datetime | None:
        return self.row.settled_at

    @strawberry.field(
        description=(
            "why it has its status, recorded as it settled (reason, rule revision, the proofs, the reviewer, "
            "how long it may be appealed); null while it is open"
        )
    )
    def verdict(self) -> Verdict | None:
        if self.row.status in (InstanceStatusRow.PENDING, InstanceStatusRow.PENDING_REVIEW):
            return None
        return Verdict(row=self.row)

    @strawberry.field(deprecation_reason=list_replaced_by("verificationsConnection"))
    async def verifications(self, info: Info) -> list[Verification]:
        rows = await info.context.loaders.verifications_of_instance.load(str(self.row.id))
        return [Verification(row=r, instance_row=self.row) for r in rows]

    @strawberry.field(description="this instance's proofs, oldest first, as a connection")
    async def verifications_connection(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Connection[Verification]:
        order = VERIFICATION_ORDER
        request = page_request(info, order, first=first, after=after, last=last, before=before, default=20)
        # an instance has a few proofs (attempts are capped): read whole, one grouped statement per page
        rows = await info.context.loaders.verifications_of_instance.load(str(self.row.id))
        page = page_of_rows(rows, order, request)

        async def count() -> int:
            return len(rows)

        return Connection.of(page, order, lambda r: Verification(row=r, instance_row=self.row), count)


@strawberry.type
class TaskInstanceEdge:
    cursor: str
    node: TaskInstance


@strawberry.type
class TaskInstanceConnection:
    """One task's instances; each part is read only when selected, batched across the tasks of a page."""

    task_row: strawberry.Private[TaskRow]
    page: strawberry.Private[InstancePage]

    async def _page(self, info: Info) -> Page[TaskInstanceRow]:
        return await info.context.loaders.instance_page.load(self.page)

    @strawberry.field
    async def edges(self, info: Info) -> list[TaskInstanceEdge]:
        return [
            TaskInstanceEdge(
                cursor=INSTANCE_ORDER.cursor(r), node=TaskInstance(row=r, task_row=self.task_row)
            )
            for r in (await self._page(info)).rows
        ]

    @strawberry.field
    async def page_info(self, info: Info) -> PageInfo:
        page = await self._page(info)
        return PageInfo.of(
            [INSTANCE_ORDER.cursor(row) for row in page.rows],
            has_next_page=page.has_next_page,
            has_previous_page=page.has_previous_page,
        )

    @strawberry.field  # counted only when selected
    async def total_count(self, info: Info) -> int:
        key = InstanceCount(self.page.task_id, self.page.closes_from)
        return await info.context.loaders.instance_count.load(key)
