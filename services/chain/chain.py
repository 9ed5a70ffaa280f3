"""The per-task chain: plan an instance, settle it at its fire_at, and keep its link alive.

The database row is the durable timer (fire_at); a Dramatiq message `chain.fire(instance_id, link_no)`
is only the delivery. Every step here is idempotent and compare-and-set, so duplicate, stale, early
and late messages are all harmless.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from tortoise.expressions import F

from models import (
    EventType,
    InstanceStatus,
    Partnership,
    RejectionReason,
    ReviewTimeoutPolicy,
    Task,
    TaskInstance,
    TaskState,
    VerdictReason,
    Verification,
    VerificationStatus,
)
from observability.metrics import observe_settlement
from rules.recurrence import DEFAULT_BUDGET, RecurrenceBudget
from services.chain.avoidance import avoidance_verdict, forget_samples, is_avoid, verdict_settlement
from services.chain.breaks import break_spans
from services.chain.catch_up import excused_times
from services.chain.links import FIRE_ACTOR as FIRE_ACTOR
from services.chain.links import FIRE_BATCH_ACTOR as FIRE_BATCH_ACTOR
from services.chain.links import LINK_BATCH as LINK_BATCH
from services.chain.links import Link, send_links_after_commit
from services.chain.links import send_links as send_links
from services.chain.planning import Ask, next_steps
from services.chain.quota import has_reviews_in_period, quota_met, settle_reviews_at_period_end
from services.chain.sql import read_instance_locking_task
from services.feed import record_event, record_events
from services.kit import write_transaction
from services.partners import vouching
from services.reminders import occurrence_of, offsets_of, plan_reminders_of
from services.schedules import DueTimes, prefetch_due_times, schedule_of, window_of

log = logging.getLogger("proofloop.chain")

OPEN_STATUSES = (InstanceStatus.PENDING, InstanceStatus.PENDING_REVIEW)
PROOF = VerdictReason.PROOF_ACCEPTED


@dataclass(frozen=True)
class ChainTiming:
    link_horizon_seconds: float
    recurrence: RecurrenceBudget = DEFAULT_BUDGET
    # occurrences recorded EXCUSED per task when a settlement comes late (PROOFLOOP_CATCH_UP_LIMIT)
    catch_up_limit: int = 1000


class FireOutcome(StrEnum):
    NOTHING_OWED = "nothing_owed"
    EARLY = "early"
    STALE = "stale"
    MISSED = "missed"
    VERIFIED = "verified"
    REJECTED = "rejected"
    # the task's pending change came due before this deadline (e.g. a longer grace): nothing was written;
    # the caller applies the change (services.tasks) and delivers the link again
    CHANGE_DUE = "change_due"


async def lock_task(task_id: str) -> Task:
    """Lock the task row for the rest of the transaction: edits and fires of one task take turns.

    It never edits: a pending change that came due is applied by services.tasks (`lock_with_due_change`)
    before what follows is judged by the new rules."""
    return await Task.filter(id=task_id).select_for_update().get()


def settlement(
    outcome: InstanceStatus, at: datetime, reason: VerdictReason, rule_revision: int | None = None
) -> dict[str, Any]:
    """The columns every settlement writes: the outcome, when, why (the verdict record), and that the
    chain owes the row nothing."""
    return {
        "status": outcome,
        "settled_at": at,
        "verdict_reason": reason,
        "rule_revision": rule_revision,
        "fire_at": None,
        "link_for": None,
    }


async def settle_instance(
    task: Task,
    instance: TaskInstance,
    outcome: InstanceStatus,
    at: datetime,
    *,
    reason: VerdictReason,
    expected: InstanceStatus = InstanceStatus.PENDING,
    events: tuple[EventType, ...] = (),
    verification: Verification | None = None,
    **conditions: Any,
) -> bool:
    """The one settlement of one instance: a compare-and-set from `expected`, only if `conditions` hold
    (the window at arrival, the review deadline, fire_at come); then the metrics count it and `events`
    are written in the caller's transaction. False when someone else settled it first. `reason` and
    the task's rule revision are its verdict record (none for a CANCELED one: no rule judged it).

    A set of instances is settled by services/settle_sql.claim_and_settle, writing the same columns."""
    rows = TaskInstance.filter(id=instance.id, status=expected, **conditions)
    revision = None if outcome is InstanceStatus.CANCELED else task.rule_revision
    if not await rows.update(**settlement(outcome, at, reason, revision)):
        return False
    observe_settlement(outcome.value, instance.fire_at, at)
    instance.status, instance.settled_at, instance.fire_at, instance.link_for = outcome, at, None, None
    for event in events:
        await record_event(event, task, instance, at, verification)
    return True


async def count_proof(
    task: Task,
    instance: TaskInstance,
    verification: Verification,
    at: datetime,
    *,
    timing: ChainTiming,
    due: DueTimes | None,
    met: tuple[EventType, ...],
    counted: tuple[EventType, ...],
) -> bool:
    """Count an accepted proof towards the open period, under the task's lock: `met` are the events when it
    is the count-th (VERIFIED, next period planned), `counted` those otherwise. False when the instance is
    no longer PENDING or its period has closed: nothing is written then."""
    rows = TaskInstance.filter(id=instance.id, status=InstanceStatus.PENDING, closes_at__gte=at)
    if not await rows.update(proofs_counted=F("proofs_counted") + 1):
        return False
    instance.proofs_counted += 1  # the caller read it under the task's lock, which every count takes
    if instance.proofs_counted < (task.quota_count or 1):
        for event in counted:
            await record_event(event, task, instance, at, verification)
        return True
    await settle_instance(
        task, instance, InstanceStatus.VERIFIED, at, reason=PROOF, events=met, verification=verification
    )
    await plan_after_pending(task, instance, now=at, timing=timing, due=due)
    return True


def planned_after(instance: TaskInstance) -> datetime:
    """Where the next instance is planned from: the occurrence this one stands for (its due time, unless
    the dev clock brought it forward: services/tasks/dev_clock.py)."""
    return instance.scheduled_due_at or instance.due_at


async def plan_after_pending(
    task: Task, instance: TaskInstance, *, now: datetime, timing: ChainTiming, due: DueTimes | None
) -> None:
    """The instance left PENDING: plan the next one in the same transaction (one PENDING per task),
    unless the task was paused, ended or deleted meanwhile."""
    if task.state is TaskState.ACTIVE and task.deleted_at is None:
        await plan_after_settlement(task, instance, now=now, timing=timing, due=due)


async def plan_after_settlement(
    task: Task, instance: TaskInstance, *, now: datetime, timing: ChainTiming, due: DueTimes | None
) -> None:
    """Plan the next instance after `instance` settled, recording the occurrences a late settlement
    passed over as EXCUSED."""
    await plan_next_instance(
        task, after=planned_after(instance), now=now, timing=timing, due=due, excuse=True
    )


@dataclass(frozen=True)
class NextPlan:
    """One task whose next instance is planned: the first occurrence due after max(after, now), from
    `due` (prefetch_due_times, computed before the transaction) when it can answer. `excuse`: a
    settlement plans it, so occurrences due in (after, now] are recorded EXCUSED (services/chain/catch_up.py)
    rather than skipped; an edit, a pause or a break passes over them on purpose."""

    task: Task
    after: datetime
    due: DueTimes | None = None
    excuse: bool = False


async def plan_next_instance(
    task: Task,
    *,
    after: datetime,
    now: datetime,
    timing: ChainTiming,
    due: DueTimes | None = None,
    excuse: bool = False,
) -> TaskInstance | None:
    """Plan the first occurrence due after max(after, now); END the task when the rule is exhausted.

    Runs inside the caller's transaction, with the task row locked: `due` (prefetch_due_times, computed
    before the transaction) keeps the expansion outside the lock. Occurrences that fell inside a pause
    are skipped; inside an outage (`excuse`), recorded EXCUSED; never mass-MISSED.
    """
    planned = await plan_next_instances([NextPlan(task, after, due, excuse)], now=now, timing=timing)
    return planned[0] if planned else None


async def plan_next_instances(
    plans: list[NextPlan], *, now: datetime, timing: ChainTiming
) -> list[TaskInstance]:
    """plan_next_instance for a set of locked tasks, in a fixed number of statements: one update of the
    tasks that END, one insert of the new instances, one update of the tasks' counters, one insert of
    their reminders; the links leave after commit. The next instances planned are returned."""
    ended: list[Task] = []
    planned: list[tuple[Task, TaskInstance]] = []
    breaks = await break_spans([plan.task for plan in plans], now)  # no statement when none has any
    asks = [
        Ask(str(p.task.id), schedule_of(p.task), p.after, p.due, p.excuse, breaks.get(str(p.task.id), ()))
        for p in plans
    ]
    steps = await next_steps(asks, now, timing.recurrence, timing.catch_up_limit)
    excused_at = await excused_times(steps, timing.catch_up_limit)
    excused = [
        excused_instance_row(p.task, due_at, now=now)
        for p in plans
        for due_at in excused_at.get(str(p.task.id), ())
    ]
    for p in plans:
        due_at = steps[str(p.task.id)].next_due
        if due_at is None:
            p.task.state = TaskState.ENDED
            ended.append(p.task)
        else:
            planned.append((p.task, next_instance_row(p.task, due_at, now=now, timing=timing)))
    if ended:
        await Task.bulk_update(ended, fields=["state", "last_seq", "updated_at"])
    if excused:
        await TaskInstance.bulk_create(excused)
        await record_events(EventType.EXCUSED, {str(p.task.id): p.task for p in plans}, excused, now)
    if not planned:
        return []
    instances = [instance for _, instance in planned]
    await Task.bulk_update([task for task, _ in planned], fields=["last_seq", "updated_at"])
    await TaskInstance.bulk_create(instances)
    await plan_reminders_of(
        [(occurrence_of(instance), offsets_of(task)) for task, instance in planned],
        now=now,
        link_horizon_seconds=timing.link_horizon_seconds,
    )
    send_links_after_commit(links_of(instances))
    return instances


def _occurrence_row(task: Task, due_at: datetime) -> TaskInstance:
    """The task's next instance row, due at `due_at` with its window, unsaved; moves task.last_seq on
    (unsaved too). What it owes is the caller's to fill in."""
    opens_at, closes_at = window_of(task, due_at)
    task.last_seq += 1
    return TaskInstance(
        task_id=task.id,  # the task may be unsaved yet: a set inserts its tasks and instances together
        seq=task.last_seq,
        chain_version=task.chain_version,
        opens_at=opens_at,
        due_at=due_at,
        closes_at=closes_at,
    )


def excused_instance_row(task: Task, due_at: datetime, *, now: datetime) -> TaskInstance:
    """An occurrence an outage kept from being planned, settled EXCUSED as it is recorded."""
    row = _occurrence_row(task, due_at)
    row.status, row.settled_at, row.verdict_reason = InstanceStatus.EXCUSED, now, VerdictReason.SERVICE_OUTAGE
    row.fire_at, row.link_no = None, 0
    return row


def next_instance_row(task: Task, due_at: datetime, *, now: datetime, timing: ChainTiming) -> TaskInstance:
    """The task's next PENDING instance, due at `due_at`, unsaved; moves task.last_seq on (unsaved too).

    Its durable timer is its close; inside the link horizon it is linked now (link 1, sent by the caller
    after commit: links_of), farther ones are the pump's to hand over."""
    row = _occurrence_row(task, due_at)
    linked = (row.closes_at - now).total_seconds() <= timing.link_horizon_seconds
    row.status, row.fire_at = InstanceStatus.PENDING, row.closes_at
    row.link_no = 1 if linked else 0
    row.link_for = row.closes_at if linked else None
    row.linked_at = now if linked else None
    return row


def links_of(instances: list[TaskInstance]) -> list[Link]:
    """The first links of newly planned instances that next_instance_row linked."""
    return [(str(i.id), i.link_no, i.link_for) for i in instances if i.link_for is not None]


async def move_fire_at(
    instance: TaskInstance, fire_at: datetime, *, now: datetime, timing: ChainTiming
) -> None:
    """Point the instance's durable timer at a new time (e.g. its review deadline), linking it if near.

    Runs inside the caller's transaction; the old link, if any, finds fire_at moved and resends or drops.
    """
    linked = (fire_at - now).total_seconds() <= timing.link_horizon_seconds
    link_no = instance.link_no + 1 if linked else instance.link_no
    await TaskInstance.filter(id=instance.id).update(
        fire_at=fire_at,
        link_no=link_no,
        link_for=fire_at if linked else None,
        linked_at=now if linked else None,
    )
    instance.fire_at, instance.link_no, instance.link_for = fire_at, link_no, fire_at if linked else None
    if linked:
        send_links_after_commit([(str(instance.id), link_no, fire_at)])


async def cancel_open_instances(
    tasks: list[Task], now: datetime, statuses: tuple[InstanceStatus, ...] = (InstanceStatus.PENDING,)
) -> int:
    """Cancel the tasks' PENDING instances (by default a requested review runs on beside the schedule), in
    one statement."""
    if not tasks:
        return 0
    rows = TaskInstance.filter(task_id__in=[task.id for task in tasks], status__in=statuses)
    return await rows.update(**settlement(InstanceStatus.CANCELED, now, VerdictReason.TASK_CHANGED))


async def fire(instance_id: str, link_no: int, timing: ChainTiming) -> FireOutcome:
    """Deliver one link: settle the instance if its fire_at has come, else resend the remainder."""
    due = await _prefetch_next_due(instance_id, timing)
    async with write_transaction():
        found = await read_instance_locking_task(instance_id)
        if found is None:
            return FireOutcome.NOTHING_OWED
        instance, task, now = found
        if task.pending_effective_at is not None and task.pending_effective_at <= now:
            return FireOutcome.CHANGE_DUE
        if instance.fire_at is None or instance.status not in OPEN_STATUSES:
            return FireOutcome.NOTHING_OWED
        if instance.status is InstanceStatus.PENDING:
            return await _settle_pending(task, instance, now, link_no, timing, due)
        return await _settle_review(task, instance, now, link_no)


async def _prefetch_next_due(instance_id: str, timing: ChainTiming) -> DueTimes | None:
    """The due times a MISSED settlement will plan from, expanded before the row lock is taken."""
    instance = (
        await TaskInstance.filter(id=instance_id, status=InstanceStatus.PENDING)
        .select_related("task")
        .first()
    )
    if (
        instance is None
        or instance.fire_at is None
        or instance.fire_at > datetime.now(UTC) + timedelta(seconds=5)
    ):
        return None  # nothing to plan, or an early link that will only resend
    return await prefetch_due_times(schedule_of(instance.task), instance.due_at, timing.recurrence)


async def _settle_pending(
    task: Task,
    instance: TaskInstance,
    now: datetime,
    link_no: int,
    timing: ChainTiming,
    due: DueTimes | None = None,
) -> FireOutcome:
    if (
        task.deleted_at is not None
        or task.chain_version != instance.chain_version
        or task.state != TaskState.ACTIVE
    ):
        # a link of a superseded chain: the row must not stay behind owing work
        await settle_instance(task, instance, InstanceStatus.CANCELED, now, reason=VerdictReason.TASK_CHANGED)
        return FireOutcome.STALE
    if is_avoid(task):
        return await _settle_avoidance(task, instance, now, link_no, timing, due)
    if has_reviews_in_period(task) and instance.fire_at is not None and instance.fire_at <= now:
        await settle_reviews_at_period_end(instance, now, approve=await timeout_approves(task, now))
        if quota_met(task, instance):  # the reviews that waited made up the count
            events = (EventType.VERIFIED,)
            await settle_instance(task, instance, InstanceStatus.VERIFIED, now, reason=PROOF, events=events)
            await plan_after_settlement(task, instance, now=now, timing=timing, due=due)
            return FireOutcome.VERIFIED
    missed = (EventType.MISSED,)
    if not await settle_instance(
        task,
        instance,
        InstanceStatus.MISSED,
        now,
        reason=VerdictReason.NO_PROOF,
        events=missed,
        fire_at__lte=now,
    ):
        return await _resend_if_early(instance, now, link_no)
    await plan_after_settlement(task, instance, now=now, timing=timing, due=due)
    log.info("instance settled MISSED", extra={"task_id": str(task.id), "instance_id": str(instance.id)})
    return FireOutcome.MISSED


async def _settle_avoidance(
    task: Task, instance: TaskInstance, now: datetime, link_no: int, timing: ChainTiming, due: DueTimes | None
) -> FireOutcome:
    """An avoid-a-place instance at its close: its samples decide VERIFIED or REJECTED (never MISSED)."""
    if instance.fire_at is not None and instance.fire_at > now:
        return await _resend_if_early(instance, now, link_no)
    verification = await avoidance_verdict(task, instance, now)
    outcome, events = verdict_settlement(verification)
    await verification.save()
    if not await settle_instance(
        task,
        instance,
        outcome,
        now,
        reason=VerdictReason.LOCATION_SAMPLES,
        events=events,
        verification=verification,
        fire_at__lte=now,
    ):
        await verification.delete()
        return await _resend_if_early(instance, now, link_no)
    await forget_samples(instance)
    await plan_after_settlement(task, instance, now=now, timing=timing, due=due)
    log.info(
        "avoid-a-place instance settled",
        extra={"task_id": str(task.id), "instance_id": str(instance.id), "status": outcome.value},
    )
    return FireOutcome.VERIFIED if outcome is InstanceStatus.VERIFIED else FireOutcome.REJECTED


async def timeout_approves(task: Task, now: datetime) -> bool:
    """Whether the task's onTimeout approves a review at its deadline: APPROVE, and only while a partner
    able to decide vouches for it (a review nobody could decide never approves by default)."""
    return (
        task.review_on_timeout == ReviewTimeoutPolicy.APPROVE
        and await Partnership.filter(vouching(now), user_id=task.owner_id).exists()
    )


def decided_status(review: Verification | None, approve: bool) -> InstanceStatus:
    """A review's decision for its instance: an appeal denied returns it to the status it had."""
    if approve:
        return InstanceStatus.VERIFIED
    return review.appeal_of if review is not None and review.appeal_of else InstanceStatus.REJECTED


def decided_reason(review: Verification, approve: bool) -> VerdictReason:
    """A partner's decision as a verdict record's reason: of an appeal, or of a requested review."""
    if review.appeal_of is not None:
        return VerdictReason.APPEAL_UPHELD if approve else VerdictReason.APPEAL_DENIED
    return VerdictReason.PARTNER_APPROVED if approve else VerdictReason.PARTNER_REJECTED


def decided_event(review: Verification | None, approve: bool) -> EventType:
    if review is not None and review.appeal_of is not None:
        return EventType.APPEAL_DECIDED
    return EventType.VERIFIED if approve else EventType.REJECTED


async def _settle_review(task: Task, instance: TaskInstance, now: datetime, link_no: int) -> FireOutcome:
    """At the review deadline the task's onTimeout policy decides the pending review; APPROVE counts only
    while a partner able to decide vouches for it, else the review is REJECTED (REVIEW_TIMED_OUT)."""
    approve = task.deleted_at is None and await timeout_approves(task, now)
    verification = await Verification.filter(
        instance_id=instance.id, status=VerificationStatus.PENDING_REVIEW
    ).first()
    outcome = decided_status(verification, approve)
    if task.deleted_at is not None:
        outcome = InstanceStatus.CANCELED
    events = () if outcome is InstanceStatus.CANCELED else (decided_event(verification, approve),)
    settled = await settle_instance(
        task,
        instance,
        outcome,
        now,
        reason=VerdictReason.TASK_CHANGED if task.deleted_at is not None else VerdictReason.REVIEW_TIMED_OUT,
        expected=InstanceStatus.PENDING_REVIEW,
        events=events,
        verification=verification,
        fire_at__lte=now,
    )
    if not settled:
        return await _resend_if_early(instance, now, link_no)
    if outcome is InstanceStatus.CANCELED:
        return FireOutcome.STALE
    if verification is not None:
        await Verification.filter(id=verification.id).update(
            status=VerificationStatus.ACCEPTED if approve else VerificationStatus.REJECTED,
            reason=None if approve else RejectionReason.REVIEW_TIMED_OUT,
            decided_at=now,
        )
    log.info(
        "review timed out: %s",
        outcome.value,
        extra={"task_id": str(task.id), "instance_id": str(instance.id)},
    )
    return FireOutcome.VERIFIED if approve else FireOutcome.REJECTED


async def _resend_if_early(instance: TaskInstance, now: datetime, link_no: int) -> FireOutcome:
    """An early link is replaced by one for the remainder; only the current link number may do it."""
    current = await TaskInstance.filter(id=instance.id).only("fire_at", "status", "link_no").first()
    if current is None or current.fire_at is None or current.status not in OPEN_STATUSES:
        return FireOutcome.NOTHING_OWED
    if current.fire_at <= now:
        return FireOutcome.NOTHING_OWED  # settled meanwhile by someone else's transaction
    claimed = await TaskInstance.filter(id=instance.id, link_no=link_no, fire_at=current.fire_at).update(
        link_no=F("link_no") + 1, link_for=current.fire_at, linked_at=now
    )
    if claimed:
        send_links_after_commit([(str(instance.id), link_no + 1, current.fire_at)])
    return FireOutcome.EARLY
