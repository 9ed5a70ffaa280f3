from __future__ import annotations

from typing import Any

import strawberry

from models import Task as TaskRow
from models import TaskState as TaskStateRow
from resolvers.permissions import IsAuthenticated
from schema.context import Context, Info
from schema.enums import TaskState
from schema.inputs import CreateTaskInput, ScheduleBreakInput, UpdateTaskInput
from schema.types.instance import TaskInstance
from schema.types.pagination import PageInfo, page_request
from schema.types.task import Task, TaskConnection, TaskEdge
from schema.types.task_break import TaskBreak
from services.kit import NotFound, ProofloopError, decode_id, keyset_page
from services.partners import require_visible_task, visible_instance
from services.tasks import TASK_ORDER, TaskDraft, end_break, schedule_break, tasks


async def _tasks_owner_id(info: Info, user_id: strawberry.ID | None) -> str:
    access = await info.context.access()
    if user_id is None:
        return access.viewer_id
    wanted = decode_id(user_id, "User")
    if wanted is None or not access.sees_user(wanted):
        raise NotFound("no such user among those you partner for")
    return wanted


@strawberry.type
class TaskQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated], description="yours, or one of a user you partner for"
    )
    async def task(self, info: Info, id: strawberry.ID) -> Task | None:
        try:
            return Task(row=await require_visible_task(await info.context.access(), str(id)))
        except NotFound:
            return None

    @strawberry.field(permission_classes=[IsAuthenticated])
    async def tasks(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        state: TaskState | None = None,
        user_id: strawberry.ID | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> TaskConnection:
        request = page_request(
            info, TASK_ORDER, first=first, after=after, last=last, before=before, default=20
        )
        owner_id = await _tasks_owner_id(info, user_id)
        query = TaskRow.filter(owner_id=owner_id, deleted_at=None)
        if state is not None:
            query = query.filter(state=TaskStateRow(state))
        page = await keyset_page(query, TASK_ORDER, request)
        edges = [TaskEdge(cursor=TASK_ORDER.cursor(r), node=Task(row=r)) for r in page.rows]
        return TaskConnection(
            edges=edges,
            count=query.count,  # the query before the page narrows it: the total is of every page
            page_info=PageInfo.of(
                [edge.cursor for edge in edges],
                has_next_page=page.has_next_page,
                has_previous_page=page.has_previous_page,
            ),
        )

    @strawberry.field(permission_classes=[IsAuthenticated])
    async def instance(self, info: Info, id: strawberry.ID) -> TaskInstance | None:
        found = (
            await visible_instance(await info.context.access(), key)
            if (key := decode_id(id, "TaskInstance"))
            else None
        )
        return TaskInstance(row=found[0], task_row=found[1]) if found else None


@strawberry.type
class TaskMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def create_task(self, info: Info, input: CreateTaskInput) -> Task:
        # a document of several createTask fields is done as one set: create_tasks_together
        settings = info.context.settings
        viewer = await info.context.viewer()
        created = await tasks.create_task_planned(
            viewer,
            input.to_draft(viewer.timezone),
            min_interval_seconds=settings.min_interval_seconds,
            timing=info.context.policies.chain,
            max_tasks=settings.max_tasks_per_user,
        )
        return _created_result(info.context, created)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="easier parts wait out your commitment horizon (Task.pendingChange); the rest apply now",
    )
    async def update_task(self, info: Info, id: strawberry.ID, input: UpdateTaskInput) -> Task:
        settings = info.context.settings
        row = await tasks.update_task(
            await info.context.viewer(),
            str(id),
            input.to_patch(),
            min_interval_seconds=settings.min_interval_seconds,
            timing=info.context.policies.chain,
            horizon_day=info.context.policies.horizon_day,
        )
        return Task(row=row)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="with a commitment horizon, an ACTIVE task's pause waits (Task.pendingChange.pause)",
    )
    async def pause_task(self, info: Info, id: strawberry.ID) -> Task:
        row = await tasks.pause_task(
            await info.context.viewer(),
            str(id),
            timing=info.context.policies.chain,
            horizon_day=info.context.policies.horizon_day,
        )
        return Task(row=row)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def resume_task(self, info: Info, id: strawberry.ID) -> Task:
        row = await tasks.resume_task(
            await info.context.viewer(), str(id), timing=info.context.policies.chain
        )
        return Task(row=row)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="with a commitment horizon, an ACTIVE task's deletion waits (Task.pendingChange.delete)",
    )
    async def delete_task(self, info: Info, id: strawberry.ID) -> bool:
        # true also when the deletion waits out the commitment horizon (the task shows it as pendingChange)
        await tasks.delete_task(
            await info.context.viewer(),
            str(id),
            timing=info.context.policies.chain,
            horizon_day=info.context.policies.horizon_day,
        )
        return True

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="drops the task's pending change (one already in effect has applied)",
    )
    async def cancel_pending_change(self, info: Info, task_id: strawberry.ID) -> Task:
        row = await tasks.cancel_pending_change(
            await info.context.viewer(), str(task_id), timing=info.context.policies.chain
        )
        return Task(row=row)


@strawberry.type
class BreakMutations:
    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="plans days off for a task (or all of yours): under a commitment horizon a break applies "
        "only from the horizon's end; returns one break per task",
    )
    async def schedule_break(self, info: Info, input: ScheduleBreakInput) -> list[TaskBreak]:
        rows = await schedule_break(
            await info.context.viewer(),
            input.to_request(),
            timing=info.context.policies.chain,
            horizon_day=info.context.policies.horizon_day,
        )
        return [TaskBreak(row=row) for row in rows]

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="ends a break now (one not begun is dropped): harder, so it applies at once",
    )
    async def end_break(self, info: Info, id: strawberry.ID) -> TaskBreak:
        row = await end_break(await info.context.viewer(), str(id), timing=info.context.policies.chain)
        return TaskBreak(row=row)


async def create_tasks_together(
    context: Context, arguments: list[dict[str, Any]]
) -> tuple[list[Task], ProofloopError | None]:
    """createTask for each field of a document whose fields are all createTask (schema/execution.py):
    one transaction, the same results in the same order as one after another, and the refusal that
    would have stopped the document (the fields after it are not created)."""
    settings = context.settings
    viewer = await context.viewer()
    drafts: list[TaskDraft] = []
    refusal: ProofloopError | None = None
    for kwargs in arguments:
        try:
            drafts.append(kwargs["input"].to_draft(viewer.timezone))
        except ProofloopError as exc:
            refusal = exc
            break
    created, stopped = await tasks.create_tasks_planned(
        viewer,
        drafts,
        min_interval_seconds=settings.min_interval_seconds,
        timing=context.policies.chain,
        max_tasks=settings.max_tasks_per_user,
    )
    return [_created_result(context, c) for c in created], stopped if stopped is not None else refusal


def _created_result(context: Context, created: tasks.CreatedTask) -> Task:
    # currentInstance is the one just planned: no read to find it again
    context.loaders.open_instance.prime(str(created.task.id), created.instance)
    return Task(row=created.task)
