"""Automatic proofs: an activity another service reports (a watch's run, a CI job, a meditation app's
session), signed with the task's integration secret and recorded as an INTEGRATION Verification.

An event reaches `POST /integrations/{key}/events` (web/integrations.py). Who sent it is proved by the
signature alone: `sha256=` HMAC-SHA256(secret, "<timestamp>." + body), the same scheme our webhooks sign
with (services/kit/signatures.py), compared in constant time, the timestamp within the replay window of
the database clock. An unknown key, a wrong signature and a stale timestamp get the same code, so the
endpoint tells a stranger nothing about which keys exist. An event then proves the task's current PENDING
instance through the same pipeline as every other proof (window at arrival, attempts quota, one
transaction that settles and plans the next instance); its external id is recorded in that transaction,
so a resent event is a CONFLICT naming the Verification it already made, never a second proof.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from models import (
    InstanceStatus,
    IntegrationEvent,
    RejectionReason,
    Task,
    TaskInstance,
    User,
    Verification,
    VerificationMethod,
)
from rules.activity import (
    MAX_ACTIVITY_TYPE,
    MAX_DISTANCE_METERS,
    MAX_DURATION_SECONDS,
    Activity,
    activity_type,
    judge_activity,
)
from services.chain import ChainTiming
from services.kit import (
    AttemptWindow,
    BadInput,
    Conflict,
    RateLimited,
    Unauthenticated,
    parse_id,
    signature_matches,
    whole_number,
)
from services.partners import require_own_task
from services.proofs.pipeline import Judgement, ProofKind, ProofTarget, prove, settle_verified
from services.tasks import activity_rule_of

MAX_EXTERNAL_ID = 200
MAX_SOURCE = 64
MAX_SIGNATURE_HEADER = 100  # "sha256=" and 64 hex digits, with room: a longer one costs no HMAC
DEFAULT_SOURCE = "integration"
# A sender's clock may run a little ahead of the database's; an activity further ahead has not happened.
OCCURRED_AT_SLACK = timedelta(seconds=60)
# Older than any window can be: a sender replaying its history, or a date no instance could hold.
OLDEST_ACTIVITY = timedelta(days=366)
EVENTS_WINDOW = timedelta(days=1)
ENDPOINT = "/integrations/{key}/events"
BODY = "body"


@dataclass(frozen=True)
class IntegrationPolicy:
    """The endpoint's budgets (policies.py builds it from the settings)."""

    max_body_bytes: int  # PROOFLOOP_INTEGRATION_MAX_BODY_BYTES
    events_per_day: int  # PROOFLOOP_INTEGRATION_EVENTS_PER_DAY: recorded events per task, any 24 hours
    replay_seconds: int  # PROOFLOOP_INTEGRATION_REPLAY_SECONDS: how old (or new) a timestamp may be
    per_address: AttemptWindow  # PROOFLOOP_INTEGRATION_REQUESTS_PER_MINUTE, per client address


@dataclass(frozen=True)
class ActivityEvent:
    """An event's body, checked: what the sender says happened."""

    external_id: str
    source: str
    activity: Activity


@dataclass(frozen=True)
class ActivityRecord:
    """What an INTEGRATION Verification keeps of its event (verifications.activity; keys spelled here)."""

    source: str
    external_id: str
    occurred_at: datetime
    activity_type: str | None
    duration_seconds: float | None
    distance_meters: float | None

    def stored(self) -> dict[str, object]:
        return {
            "source": self.source,
            "external_id": self.external_id,
            "occurred_at": self.occurred_at.isoformat(),
            "type": self.activity_type,
            "duration_seconds": self.duration_seconds,
            "distance_meters": self.distance_meters,
        }

    @classmethod
    def read(cls, stored: Mapping[str, object]) -> ActivityRecord:
        duration, distance = stored.get("duration_seconds"), stored.get("distance_meters")
        kind = stored.get("type")
        return cls(
            source=str(stored.get("source", DEFAULT_SOURCE)),
            external_id=str(stored.get("external_id", "")),
            occurred_at=datetime.fromisoformat(str(stored["occurred_at"])),
            activity_type=str(kind) if kind is not None else None,
            duration_seconds=float(duration) if isinstance(duration, int | float) else None,
            distance_meters=float(distance) if isinstance(distance, int | float) else None,
        )


class DuplicateEvent(Conflict):
    """The event's external id was recorded before: the Verification it made stands."""

    def __init__(self, verification_id: str) -> None:
        super().__init__("this event's id was recorded before; its verification stands")
        self.verification_id = verification_id


def endpoint_path(key: str) -> str:
    return ENDPOINT.format(key=key)


async def connect_integration(owner: User, task_id: str) -> tuple[Task, str]:
    """A new endpoint key and secret for the owner's INTEGRATION task (the old pair stops working at
    once); the caller shows the secret once."""
    found = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    task = await require_own_task(str(owner.id), found, "only the task's owner may connect an integration")
    if task.method is not VerificationMethod.INTEGRATION:
        raise BadInput("taskId", f"this task is proved by {task.method.value}, not INTEGRATION")
    task.integration_key, task.integration_secret = secrets.token_urlsafe(24), secrets.token_urlsafe(32)
    await task.save(update_fields=["integration_key", "integration_secret", "updated_at"])
    return task, task.integration_secret


async def signed_task(
    key: str, timestamp: str | None, given: str | None, body: bytes, *, arrival: datetime, replay_seconds: int
) -> Task:
    """The INTEGRATION task whose secret signed `body` at `timestamp`, with its owner; UNAUTHENTICATED
    otherwise, one code for every reason (the message says which header to look at)."""
    if timestamp is None or given is None or len(given) > MAX_SIGNATURE_HEADER:
        raise Unauthenticated("sign the event: X-Proofloop-Timestamp and X-Proofloop-Signature are required")
    signed_at = whole_number(timestamp)
    if not 0 < len(key) <= 64 or signed_at is None or len(timestamp) > 12:
        raise Unauthenticated("the event's signature does not match")
    task = (
        await Task.filter(integration_key=key, deleted_at=None, method=VerificationMethod.INTEGRATION)
        .select_related("owner")
        .first()
    )
    secret = task.integration_secret if task is not None else None
    if task is None or secret is None or not signature_matches(secret, timestamp, body, given):
        raise Unauthenticated("the event's signature does not match")
    if abs(arrival.timestamp() - signed_at) > replay_seconds:
        raise Unauthenticated(
            f"X-Proofloop-Timestamp is more than {replay_seconds} s from now: sign each event when it is sent"
        )
    return task


def is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(body: Mapping[str, object], key: str, limit: int) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not 1 <= len(value.strip()) <= limit or "\x00" in value:
        raise BadInput(f"{BODY}.{key}", f"must be a string of 1 to {limit} characters")
    if not is_unicode(value):  # JSON may escape a lone surrogate ("\ud800"), which no database stores
        raise BadInput(f"{BODY}.{key}", "must be valid Unicode (it holds an unpaired surrogate)")
    return value.strip()


def _optional_text(body: Mapping[str, object], key: str, limit: int) -> str | None:
    return None if body.get(key) is None else _text(body, key, limit)


def _amount(body: Mapping[str, object], key: str, limit: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= limit:
        raise BadInput(f"{BODY}.{key}", f"must be a number from 0 to {limit:.0f}")
    return float(value)


def parse_event(decoded: object, arrival: datetime) -> ActivityEvent:
    """The event a body holds, or BAD_USER_INPUT naming the field (`body.occurredAt`)."""
    if not isinstance(decoded, dict):
        raise BadInput(BODY, "must be a JSON object")
    external_id = _text(decoded, "id", MAX_EXTERNAL_ID)
    occurred = _text(decoded, "occurredAt", 64)
    try:
        occurred_at = datetime.fromisoformat(occurred)
        if occurred_at.utcoffset() is not None:
            occurred_at.astimezone(UTC)  # 0001-01-01T00:00+14:00 is in the year 0
    except (ValueError, OverflowError):
        occurred_at = None
    if occurred_at is None or occurred_at.tzinfo is None or occurred_at.utcoffset() is None:
        raise BadInput(f"{BODY}.occurredAt", "must be an ISO 8601 date-time with an offset")
    if occurred_at > arrival + OCCURRED_AT_SLACK:
        raise BadInput(f"{BODY}.occurredAt", "must not be in the future")
    if occurred_at < arrival - OLDEST_ACTIVITY:
        raise BadInput(f"{BODY}.occurredAt", f"must be within the last {OLDEST_ACTIVITY.days} days")
    kind = _optional_text(decoded, "type", MAX_ACTIVITY_TYPE)
    duration = _amount(decoded, "durationSeconds", MAX_DURATION_SECONDS)
    distance = _amount(decoded, "distanceMeters", MAX_DISTANCE_METERS)
    source = _optional_text(decoded, "source", MAX_SOURCE) or DEFAULT_SOURCE
    activity = Activity(
        occurred_at=occurred_at,
        activity_type=activity_type(kind) if kind is not None else None,
        duration_seconds=duration,
        distance_meters=distance,
    )
    return ActivityEvent(external_id=external_id, source=source, activity=activity)


async def _recorded(task_id: str, external_id: str) -> IntegrationEvent | None:
    return await IntegrationEvent.filter(task_id=task_id, external_id=external_id).first()


async def record_activity(
    task: Task,
    event: ActivityEvent,
    *,
    arrival: datetime,
    timing: ChainTiming,
    max_attempts: int,
    events_per_day: int,
) -> Verification:
    """Prove the task's current instance with the event; a resent event is a DuplicateEvent."""
    earlier = await _recorded(str(task.id), event.external_id)
    if earlier is not None:  # the cheap answer; the journal below decides under the task's lock
        raise DuplicateEvent(str(earlier.verification_id))
    instance = await TaskInstance.filter(task_id=task.id, status=InstanceStatus.PENDING).first()
    if instance is None:
        raise Conflict(f"the task is {task.state.value} with no instance open for proof")
    activity = event.activity
    record = ActivityRecord(
        source=event.source,
        external_id=event.external_id,
        occurred_at=activity.occurred_at,
        activity_type=activity.activity_type,
        duration_seconds=activity.duration_seconds,
        distance_meters=activity.distance_meters,
    )

    async def judge(target: ProofTarget) -> Judgement:
        rule = activity_rule_of(target.task)
        if rule is None:  # not an INTEGRATION task (proof_target refused it already)
            raise Conflict("the task has no activity rule")
        reason = judge_activity(rule, activity, target.instance.opens_at, target.instance.closes_at)
        return Judgement(reason=RejectionReason(reason) if reason is not None else None)

    async def journal(locked: Task, verification: Verification) -> None:
        # under the task's lock: concurrent copies of one event, and of a day's events, are serialized
        earlier = await _recorded(str(locked.id), event.external_id)
        if earlier is not None:
            raise DuplicateEvent(str(earlier.verification_id))
        recent = await IntegrationEvent.filter(
            task_id=locked.id, received_at__gt=arrival - EVENTS_WINDOW
        ).count()
        if recent >= events_per_day:
            raise RateLimited(
                f"this task has recorded {events_per_day} integration events in 24 hours, the most allowed "
                "(PROOFLOOP_INTEGRATION_EVENTS_PER_DAY)"
            )
        await IntegrationEvent.create(
            task_id=locked.id,
            external_id=event.external_id,
            received_at=arrival,
            verification_id=verification.id,
        )

    kind = ProofKind(
        VerificationMethod.INTEGRATION,
        accept=settle_verified,
        judge=judge,
        evidence={"activity": record.stored()},
        journal=journal,
    )
    try:
        return await prove(
            task.owner, str(instance.id), kind, arrival=arrival, timing=timing, max_attempts=max_attempts
        )
    except Conflict as refused:
        # a copy of this event that committed while this one waited settled the instance: say which
        earlier = await _recorded(str(task.id), event.external_id)
        if earlier is not None and not isinstance(refused, DuplicateEvent):
            raise DuplicateEvent(str(earlier.verification_id)) from None
        raise
