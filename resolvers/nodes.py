"""node(id:) and nodes(ids:): any object by its global id, read through its type's own access rule.

Someone else's id and an id that names nothing answer alike: null. Every read goes through a DataLoader,
so nodes(ids:) costs one grouped statement per type asked for, whatever the number of ids.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.types.event import VerificationEvent
from schema.types.instance import TaskInstance
from schema.types.node import Node
from schema.types.partnership import Partnership
from schema.types.session import Session
from schema.types.task import Task
from schema.types.user import User
from schema.types.verification import Verification
from schema.types.webhook import Webhook
from services.kit import EVENT_TYPE, BadInput, decode_id, split_global_id

MAX_NODES = 100


async def _user(info: Info, key: str) -> Node | None:
    viewer = await info.context.viewer()
    if str(viewer.id) != key and not await info.context.loaders.counterpart.load((viewer, key)):
        return None
    row = await info.context.loaders.user.load(key)
    return User(row=row) if row is not None else None


async def _task(info: Info, key: str) -> Node | None:
    row = await info.context.loaders.task.load(key)
    return Task(row=row) if row is not None and (await info.context.access()).sees_task(row) else None


async def _instance(info: Info, key: str) -> Node | None:
    row = await info.context.loaders.instance.load(key)
    task = await info.context.loaders.task.load(str(row.task_id)) if row is not None else None
    if row is None or task is None or not (await info.context.access()).sees_instance(row, task):
        return None
    return TaskInstance(row=row, task_row=task)


async def _verification(info: Info, key: str) -> Node | None:
    # a proof is read as its instance is (TaskInstance.verifications)
    row = await info.context.loaders.verification.load(key)
    instance = await _instance(info, str(row.instance_id)) if row is not None else None
    if row is None or not isinstance(instance, TaskInstance):
        return None
    return Verification(row=row, instance_row=instance.row)


async def _partnership(info: Info, key: str) -> Node | None:
    viewer = await info.context.viewer()
    row = await info.context.loaders.readable_partnership.load((viewer, key))
    return Partnership(row=row) if row is not None else None


async def _session(info: Info, key: str) -> Node | None:
    session = await info.context.authenticate()
    row = await info.context.loaders.live_session.load((session.user, key))
    return Session(row=row, current_id=session.token_id) if row is not None else None


async def _webhook(info: Info, key: str) -> Node | None:
    row = await info.context.loaders.owned_webhook.load((await info.context.viewer(), key))
    return Webhook(row=row) if row is not None else None


READERS: dict[str, Callable[[Info, str], Awaitable[Node | None]]] = {
    "User": _user,
    "Task": _task,
    "TaskInstance": _instance,
    "Verification": _verification,
    "Partnership": _partnership,
    "Session": _session,
    "Webhook": _webhook,
}


async def read_node(info: Info, value: str) -> Node | None:
    """The object a global id names, if the viewer may read it; None otherwise."""
    parts = split_global_id(value)
    if parts is None:
        return None
    if parts[0] == EVENT_TYPE:
        position = info.context.event_ids.decode(value)
        if position is None:
            return None
        row = await info.context.loaders.readable_event.load((await info.context.access(), position))
        return VerificationEvent(row=row) if row is not None else None
    reader, key = READERS.get(parts[0]), decode_id(value, parts[0])
    return await reader(info, key) if reader is not None and key is not None else None


@strawberry.type
class NodeQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="the object a global id names; null for one you may not see or that does not exist",
    )
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        return await read_node(info, str(id))

    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description=f"node(id:) for each id, in order; at most {MAX_NODES} ids",
    )
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        if len(ids) > MAX_NODES:
            raise BadInput("ids", f"at most {MAX_NODES} ids")
        return list(await asyncio.gather(*(read_node(info, str(value)) for value in ids)))
