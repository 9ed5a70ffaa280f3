"""Who may see whose tasks, instances, proofs and events: the one home of "owner or active partner".

A viewer sees everything of their own. Of a user they ACTIVELY partner for they see only what a partner
needs: the user's live tasks (never a deleted one), and history (instances, proofs, events) from the moment
the partnership began (its acceptance), not before. Everyone else sees nothing and gets NOT_FOUND, so
existence never leaks. Other users' details beyond a display name are schema/types/user.py's rule.

`Access` is read once per request (schema/context.Context.access, through a DataLoader); services take it
instead of re-asking the database, like polar's readable-statement functions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tortoise.expressions import Q

from models import Event, EventType, Partnership, PartnershipStatus, Task, TaskInstance
from services.kit import Forbidden, NotFound, parse_id

# the history start of a user the viewer does not partner for: nothing of it is theirs
NEVER = datetime.max.replace(tzinfo=UTC)
# events for the owner alone: a reminder is a nudge to them, not news for their partners
OWNER_ONLY_EVENTS = (EventType.DUE_SOON,)


def watching(now: datetime) -> Q:
    """Partnerships whose partner watches at `now`: ACTIVE, and a removal waiting out the owner's
    commitment horizon has not come yet (until then the partner keeps watching and deciding)."""
    removal_to_come = Q(removal_effective_at=None) | Q(removal_effective_at__gt=now)
    return Q(status=PartnershipStatus.ACTIVE) & removal_to_come


def deciding(now: datetime) -> Q:
    """Partnerships whose partner may decide reviews and appeals at `now`: watching, and not a new
    partner still held back by the owner's horizon."""
    return watching(now) & (Q(decides_from=None) | Q(decides_from__lte=now))


def vouching(now: datetime) -> Q:
    """Partnerships that let a review's timeout approve: deciding, and not being removed by the owner
    (a default approval stands in for a partner's trust; one the owner is removing no longer gives it)."""
    return deciding(now) & Q(removal_effective_at=None)


async def has_deciding_partner(user_id: object, now: datetime) -> bool:
    return await Partnership.filter(deciding(now), user_id=user_id).exists()


@dataclass(frozen=True)
class Access:
    """What one viewer may read: their own, and each watched user's from `since[user_id]` on."""

    viewer_id: str
    since: Mapping[str, datetime] = field(default_factory=dict)
    deciding: frozenset[str] = frozenset()  # of the watched users, those whose reviews the viewer decides

    @property
    def partnered_user_ids(self) -> frozenset[str]:
        """The users the viewer actively partners for."""
        return frozenset(self.since)

    @property
    def user_ids(self) -> frozenset[str]:
        """Whose tasks, proofs and events the viewer may see at all: their own and their partnered users'."""
        return self.partnered_user_ids | {self.viewer_id}

    def owns(self, user_id: object) -> bool:
        return str(user_id) == self.viewer_id

    def partners(self, user_id: object) -> bool:
        """Whether the viewer actively partners for `user_id`."""
        return str(user_id) in self.since

    def decides_for(self, user_id: object) -> bool:
        """Whether the viewer may decide `user_id`'s reviews and appeals now."""
        return str(user_id) in self.deciding

    def sees_user(self, user_id: object) -> bool:
        return self.owns(user_id) or self.partners(user_id)

    def sees_task(self, task: Task) -> bool:
        return task.deleted_at is None and self.sees_user(task.owner_id)

    def history_start(self, user_id: object) -> datetime | None:
        """From when the viewer may read `user_id`'s history: None for all of it (their own)."""
        return None if self.owns(user_id) else self.since.get(str(user_id), NEVER)

    def sees_history(self, user_id: object, at: datetime) -> bool:
        """Whether something of `user_id`'s that happened (or was open) at `at` is the viewer's to read."""
        if self.owns(user_id):
            return True
        start = self.since.get(str(user_id))
        return start is not None and at >= start

    def sees_instance(self, instance: TaskInstance, task: Task) -> bool:
        # an instance still open when the partnership began is the partner's to follow
        return self.sees_task(task) and self.sees_history(task.owner_id, instance.closes_at)

    def history_filter(self, user_ids: Collection[str]) -> Q:
        """The events of `user_ids` the viewer may read (each a visible user): partners' from the start,
        of tasks not deleted."""
        clauses = [
            Q(user_id=user_id)
            if self.owns(user_id)
            else Q(
                Q(user_id=user_id, occurred_at__gte=self.since[user_id], task__deleted_at=None),
                ~Q(type__in=OWNER_ONLY_EVENTS),
            )
            for user_id in sorted(user_ids)
        ]
        return Q(*clauses, join_type=Q.OR) if clauses else Q(user_id__in=[])


async def access_of(viewer_ids: Collection[str]) -> dict[str, Access]:
    """Each viewer's Access, in one statement for any number of viewers."""
    now = datetime.now(UTC)
    since: dict[str, dict[str, datetime]] = {viewer_id: {} for viewer_id in viewer_ids}
    decides: dict[str, set[str]] = {viewer_id: set() for viewer_id in viewer_ids}
    rows = await Partnership.filter(watching(now), partner_id__in=list(viewer_ids)).values_list(
        "partner_id", "user_id", "responded_at", "created_at", "decides_from"
    )
    for partner_id, user_id, responded_at, created_at, decides_from in rows:
        since[str(partner_id)][str(user_id)] = responded_at or created_at
        if decides_from is None or decides_from <= now:
            decides[str(partner_id)].add(str(user_id))
    return {
        viewer_id: Access(viewer_id, since[viewer_id], frozenset(decides[viewer_id]))
        for viewer_id in viewer_ids
    }


async def access_for(viewer_id: str) -> Access:
    """One viewer's Access, outside a GraphQL request (the media endpoint)."""
    return (await access_of([viewer_id]))[viewer_id]


async def watched_by(viewer_ids: Collection[str]) -> dict[str, frozenset[str]]:
    """For each viewer, the users they actively partner for right now (whose channels the live tier
    subscribes to for them)."""
    return {viewer: access.partnered_user_ids for viewer, access in (await access_of(viewer_ids)).items()}


async def watchers_of(user_ids: Collection[str]) -> dict[str, set[str]]:
    """For each user, the partners actively watching them right now (the truth fan-out checks against)."""
    watchers: dict[str, set[str]] = defaultdict(set)
    if not user_ids:
        return watchers
    rows = await Partnership.filter(watching(datetime.now(UTC)), user_id__in=list(user_ids)).values_list(
        "user_id", "partner_id"
    )
    for user_id, partner_id in rows:
        if partner_id is not None:
            watchers[str(user_id)].add(str(partner_id))
    return watchers


def pushed_to(event: Event, watchers: Collection[str]) -> set[str]:
    """Who a new event goes live to: its user, and the partners watching them unless the task is deleted
    or the event is the owner's alone."""
    owner = str(event.user_id)
    if event.task.deleted_at is not None or event.type in OWNER_ONLY_EVENTS:
        return {owner}
    return {owner, *watchers}


async def readers_of(events: Sequence[Event]) -> dict[str, set[str]]:
    """Who may read each event (by event id) through `events` right now: its user, and each partner
    watching them since before it happened, unless its task is deleted or the event is the owner's
    alone; the rule of `Access.history_filter`, for events instead of a viewer."""
    users = {str(e.user_id) for e in events}
    since: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
    if users:
        rows = await Partnership.filter(watching(datetime.now(UTC)), user_id__in=sorted(users)).values_list(
            "user_id", "partner_id", "responded_at", "created_at"
        )
        for user_id, partner_id, responded_at, created_at in rows:
            if partner_id is not None:
                since[str(user_id)].append((str(partner_id), responded_at or created_at))
    readers: dict[str, set[str]] = {}
    for event in events:
        owner = str(event.user_id)
        readers[str(event.id)] = {owner}
        if event.task.deleted_at is None and event.type not in OWNER_ONLY_EVENTS:
            readers[str(event.id)] |= {p for p, start in since[owner] if event.occurred_at >= start}
    return readers


async def is_active_partner(partner_id: str, user_id: str) -> bool:
    return await Partnership.filter(
        watching(datetime.now(UTC)), user_id=user_id, partner_id=partner_id
    ).exists()


async def require_own_task(
    viewer_id: str, task: Task | None, forbidden: str, missing: str = "no such task"
) -> Task:
    """`task` when it is the viewer's own; FORBIDDEN (`forbidden` says why) for an active partner of its
    owner, who may see it but not act on it; NOT_FOUND for everyone else, as for no task at all."""
    if task is None or str(task.owner_id) != viewer_id:
        if task is not None and await is_active_partner(viewer_id, str(task.owner_id)):
            raise Forbidden(forbidden)
        raise NotFound(missing)
    return task


async def require_visible_task(access: Access, task_id: str) -> Task:
    """A task the viewer may see; NOT_FOUND for everyone else and for a deleted task."""
    task = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    if task is None or not access.sees_task(task):
        raise NotFound("no such task")
    return task


async def visible_instance(access: Access, instance_id: str) -> tuple[TaskInstance, Task] | None:
    """An instance (with its task) the viewer may see, else None."""
    instance = await TaskInstance.filter(id=parse_id(instance_id, "instance")).select_related("task").first()
    if instance is None or not access.sees_instance(instance, instance.task):
        return None
    return instance, instance.task
