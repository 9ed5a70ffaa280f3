from __future__ import annotations

from typing import Any

import strawberry

from models import Task as TaskRow
from models import TaskState as TaskStateRow
from resolvers.permissions import IsAuthenticated
from schema.context import Context, Info
from schema.deprecations import replaced_by
from schema.enums import TaskState
from schema.inputs import CreateTaskInput, ScheduleBreakInput, UpdateTaskInput
from schema.types.instance import TaskInstance
from schema.types.pagination import PageInfo, page_request
from schema.types.payloads import (
    EXPECTED,
    MutationInput,
    MutationPayload,
    UserError,
    fits_client_mutation_id,
    settle,
)
from schema.types.task import Task, TaskConnection, TaskEdge
from schema.types.task_break import TaskBreak
from services.kit import BadInput, Forbidden, NotFound, ProofloopError, decode_id, global_id, keyset_page
from services.partners import require_visible_task, visible_instance
from services.tasks import (
    MAX_DUE_IN_SECONDS,
    TASK_ORDER,
    TaskDraft,
    advance_task,
    end_break,
    schedule_break,
    tasks,
)


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


@strawberry.input(description="a new task")
class TaskCreateInput(MutationInput, CreateTaskInput):
    pass


@strawberry.input(description="the task to change, and what to change")
class TaskUpdateInput(MutationInput, UpdateTaskInput):
    id: strawberry.ID


@strawberry.input
class TaskInput(MutationInput):
    id: strawberry.ID


@strawberry.input
class TaskPendingChangeCancelInput(MutationInput):
    task_id: strawberry.ID


@strawberry.input
class TaskBreakScheduleInput(MutationInput, ScheduleBreakInput):
    pass


@strawberry.input
class TaskBreakEndInput(MutationInput):
    id: strawberry.ID


@strawberry.input
class DevTaskAdvanceInput(MutationInput):
    task_id: strawberry.ID
    due_in_seconds: int = strawberry.field(
        default=60, description=f"when its open instance falls due, from now (0..{MAX_DUE_IN_SECONDS})"
    )


@strawberry.type
class TaskPayload(MutationPayload):
    task: Task | None = None


@strawberry.type
class TaskDeletePayload(MutationPayload):
    deleted_task_id: strawberry.ID | None = strawberry.field(
        default=None, description="the task, deleted now (evict it from a cache)"
    )
    task: Task | None = strawberry.field(
        default=None,
        description="the task still there, when its deletion waits out your commitment horizon "
        "(task.pendingChange.delete)",
    )


@strawberry.type
class TaskBreakSchedulePayload(MutationPayload):
    breaks: list[TaskBreak] | None = strawberry.field(default=None, description="one per task")


@strawberry.type
class TaskBreakEndPayload(MutationPayload):
    task_break: TaskBreak | None = None


async def create_task(info: Info, input: CreateTaskInput) -> Task:
    # a document of several fields creating tasks is done as one set: create_tasks_together
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


async def update_task(info: Info, id: strawberry.ID, input: UpdateTaskInput) -> Task:
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


async def pause_task(info: Info, id: strawberry.ID) -> Task:
    row = await tasks.pause_task(
        await info.context.viewer(),
        str(id),
        timing=info.context.policies.chain,
        horizon_day=info.context.policies.horizon_day,
    )
    return Task(row=row)


async def resume_task(info: Info, id: strawberry.ID) -> Task:
    row = await tasks.resume_task(await info.context.viewer(), str(id), timing=info.context.policies.chain)
    return Task(row=row)


async def delete_task(info: Info, id: strawberry.ID) -> TaskDeletePayload:
    waiting = await tasks.delete_task(
        await info.context.viewer(),
        str(id),
        timing=info.context.policies.chain,
        horizon_day=info.context.policies.horizon_day,
    )
    if waiting is not None:
        return TaskDeletePayload(task=Task(row=waiting))
    return TaskDeletePayload(deleted_task_id=strawberry.ID(global_id("Task", decode_id(id, "Task"))))


async def cancel_pending_change(info: Info, task_id: strawberry.ID) -> Task:
    row = await tasks.cancel_pending_change(
        await info.context.viewer(), str(task_id), timing=info.context.policies.chain
    )
    return Task(row=row)


async def plan_break(info: Info, input: ScheduleBreakInput) -> list[TaskBreak]:
    rows = await schedule_break(
        await info.context.viewer(),
        input.to_request(),
        timing=info.context.policies.chain,
        horizon_day=info.context.policies.horizon_day,
    )
    return [TaskBreak(row=row) for row in rows]


async def end_task_break(info: Info, id: strawberry.ID) -> TaskBreak:
    row = await end_break(await info.context.viewer(), str(id), timing=info.context.policies.chain)
    return TaskBreak(row=row)


async def advance_for_dev(info: Info, input: DevTaskAdvanceInput) -> Task:
    if not info.context.settings.dev_clock:
        raise Forbidden("the dev clock is off: it runs only under `proofloop dev` (PROOFLOOP_DEV_CLOCK)")
    if not 0 <= input.due_in_seconds <= MAX_DUE_IN_SECONDS:
        raise BadInput("dueInSeconds", f"must be between 0 and {MAX_DUE_IN_SECONDS}")
    timing = info.context.policies.chain
    viewer = await info.context.viewer()
    return Task(row=await advance_task(viewer, str(input.task_id), input.due_in_seconds, timing=timing))


PAUSE = "with a commitment horizon, an ACTIVE task's pause waits (Task.pendingChange.pause)"
UPDATE = "easier parts wait out your commitment horizon (Task.pendingChange); the rest apply now"
DELETE = "with a commitment horizon, an ACTIVE task's deletion waits (Task.pendingChange.delete)"
CANCEL = "drops the task's pending change (one already in effect has applied)"
BREAK = (
    "plans days off for a task (or all of yours): under a commitment horizon a break applies only from "
    "the horizon's end; returns one break per task"
)
END_BREAK = "ends a break now (one not begun is dropped): harder, so it applies at once"


@strawberry.type
class TaskMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def task_create(self, info: Info, input: TaskCreateInput) -> TaskPayload:
        async def work() -> TaskPayload:
            return TaskPayload(task=await create_task(info, input))

        return await settle(TaskPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=UPDATE)
    async def task_update(self, info: Info, input: TaskUpdateInput) -> TaskPayload:
        async def work() -> TaskPayload:
            return TaskPayload(task=await update_task(info, input.id, input))

        return await settle(TaskPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=PAUSE)
    async def task_pause(self, info: Info, input: TaskInput) -> TaskPayload:
        async def work() -> TaskPayload:
            return TaskPayload(task=await pause_task(info, input.id))

        return await settle(TaskPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def task_resume(self, info: Info, input: TaskInput) -> TaskPayload:
        async def work() -> TaskPayload:
            return TaskPayload(task=await resume_task(info, input.id))

        return await settle(TaskPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=DELETE)
    async def task_delete(self, info: Info, input: TaskInput) -> TaskDeletePayload:
        return await settle(TaskDeletePayload, input, lambda: delete_task(info, input.id))

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=CANCEL)
    async def task_pending_change_cancel(
        self, info: Info, input: TaskPendingChangeCancelInput
    ) -> TaskPayload:
        async def work() -> TaskPayload:
            return TaskPayload(task=await cancel_pending_change(info, input.task_id))

        return await settle(TaskPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=BREAK)
    async def task_break_schedule(
        self, info: Info, input: TaskBreakScheduleInput
    ) -> TaskBreakSchedulePayload:
        async def work() -> TaskBreakSchedulePayload:
            return TaskBreakSchedulePayload(breaks=await plan_break(info, input))

        return await settle(TaskBreakSchedulePayload, input, work)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="dev only (`make run`): brings your task's open instance forward to fall due dueInSeconds"
        " from now, its window with it; the next one is planned from the occurrence it stood for, so each"
        " call brings the schedule's next occurrence (a week of a daily task in seven calls). FORBIDDEN"
        " elsewhere",
    )
    async def dev_task_advance(self, info: Info, input: DevTaskAdvanceInput) -> TaskPayload:
        async def work() -> TaskPayload:
            return TaskPayload(task=await advance_for_dev(info, input))

        return await settle(TaskPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=END_BREAK)
    async def task_break_end(self, info: Info, input: TaskBreakEndInput) -> TaskBreakEndPayload:
        async def work() -> TaskBreakEndPayload:
            return TaskBreakEndPayload(task_break=await end_task_break(info, input.id))

        return await settle(TaskBreakEndPayload, input, work)


@strawberry.type
class FirstTaskMutations:
    """The first shape, deprecated: plain arguments, the object as the result, refusals as errors."""

    @strawberry.mutation(permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("taskCreate"))
    async def create_task(self, info: Info, input: CreateTaskInput) -> Task:
        return await create_task(info, input)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description=UPDATE, deprecation_reason=replaced_by("taskUpdate")
    )
    async def update_task(self, info: Info, id: strawberry.ID, input: UpdateTaskInput) -> Task:
        return await update_task(info, id, input)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description=PAUSE, deprecation_reason=replaced_by("taskPause")
    )
    async def pause_task(self, info: Info, id: strawberry.ID) -> Task:
        return await pause_task(info, id)

    @strawberry.mutation(permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("taskResume"))
    async def resume_task(self, info: Info, id: strawberry.ID) -> Task:
        return await resume_task(info, id)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description=DELETE, deprecation_reason=replaced_by("taskDelete")
    )
    async def delete_task(self, info: Info, id: strawberry.ID) -> bool:
        # true also when the deletion waits out the commitment horizon (the task shows it as pendingChange)
        await delete_task(info, id)
        return True

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=CANCEL,
        deprecation_reason=replaced_by("taskPendingChangeCancel"),
    )
    async def cancel_pending_change(self, info: Info, task_id: strawberry.ID) -> Task:
        return await cancel_pending_change(info, task_id)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=BREAK,
        deprecation_reason=replaced_by("taskBreakSchedule"),
    )
    async def schedule_break(self, info: Info, input: ScheduleBreakInput) -> list[TaskBreak]:
        return await plan_break(info, input)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=END_BREAK,
        deprecation_reason=replaced_by("taskBreakEnd"),
    )
    async def end_break(self, info: Info, id: strawberry.ID) -> TaskBreak:
        return await end_task_break(info, id)


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


async def task_payloads_together(
    context: Context, arguments: list[dict[str, Any]]
) -> tuple[list[TaskPayload], ProofloopError | None]:
    """taskCreate for each field of a document whose fields are all taskCreate: as create_tasks_together,
    but a refused field answers its user errors and the fields after it go on, as they would one by one."""
    inputs: list[TaskCreateInput] = [kwargs["input"] for kwargs in arguments]
    if any(not fits_client_mutation_id(i) for i in inputs):
        return [], None  # every field runs on its own, and the one too long says so
    payloads: list[TaskPayload] = []
    while len(payloads) < len(arguments):
        created, refusal = await create_tasks_together(context, arguments[len(payloads) :])
        payloads += [TaskPayload(task=task) for task in created]
        if refusal is None:
            break
        if not isinstance(refusal, EXPECTED):
            return payloads, refusal
        payloads.append(TaskPayload(user_errors=[UserError.of(refusal)]))
    for payload, given in zip(payloads, inputs, strict=False):
        payload.client_mutation_id = given.client_mutation_id
    return payloads, None


def _created_result(context: Context, created: tasks.CreatedTask) -> Task:
    # currentInstance is the one just planned: no read to find it again
    context.loaders.open_instance.prime(str(created.task.id), created.instance)
    return Task(row=created.task)
