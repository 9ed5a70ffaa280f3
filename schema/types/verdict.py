"""The verdict record of a settled instance: why it has its status, under which rule, on which proofs,
decided by whom, and until when it may still be appealed. Read by the owner and the task's partners
(whoever may read the instance); the base for disputes and for stakes."""

from __future__ import annotations

from datetime import datetime

import strawberry

from models import InstanceStatus as InstanceStatusRow
from models import TaskInstance as TaskInstanceRow
from models import Verification as VerificationRow
from models import VerificationStatus as VerificationStatusRow
from schema.context import Info
from schema.enums import InstanceStatus, VerdictReason
from schema.types.user import User, load_user
from schema.types.verification import Verification
from services.proofs import appealable_until

# Decided by a partner: the reviewer is named.
_DECIDED_BY_PARTNER = (
    VerdictReason.PARTNER_APPROVED,
    VerdictReason.PARTNER_REJECTED,
    VerdictReason.APPEAL_UPHELD,
    VerdictReason.APPEAL_DENIED,
)
_APPEALS = (VerdictReason.APPEAL_UPHELD, VerdictReason.APPEAL_DENIED)
# What no proof decided: nothing to show.
_WITHOUT_PROOFS = (VerdictReason.NO_PROOF, VerdictReason.SERVICE_OUTAGE, VerdictReason.TASK_CHANGED)


def deciding(rows: list[VerificationRow], instance: TaskInstanceRow) -> list[VerificationRow]:
    """The proofs a verdict rests on, oldest first: the accepted ones of a VERIFIED instance; the
    decided rejection of a REJECTED one (a partner's, a review's timeout, an avoid-a-place verdict);
    the appeal of an appeal's outcome; none for a deadline, an outage or a change of the task."""
    reason = instance.verdict_reason
    if reason in _WITHOUT_PROOFS:
        return []
    if reason in _APPEALS:
        return [r for r in rows if r.appeal_of is not None][-1:]
    if instance.status is InstanceStatusRow.VERIFIED:
        return [r for r in rows if r.status is VerificationStatusRow.ACCEPTED and r.appeal_of is None]
    rejected = [r for r in rows if r.status is VerificationStatusRow.REJECTED and r.decided_at is not None]
    return sorted(rejected, key=lambda r: r.decided_at or r.submitted_at)[-1:]


@strawberry.type(
    description=(
        "why a settled instance has its status, recorded as it settled: the base for disputes and stakes"
    )
)
class Verdict:
    row: strawberry.Private[TaskInstanceRow]

    @strawberry.field(description="the instance's status as settled (an appeal may change it later)")
    def outcome(self) -> InstanceStatus:
        return self.row.status

    @strawberry.field(description="why; null for an instance settled before verdicts were recorded")
    def reason(self) -> VerdictReason | None:
        return self.row.verdict_reason

    @strawberry.field
    def settled_at(self) -> datetime:
        assert self.row.settled_at is not None  # a verdict exists only once settled
        return self.row.settled_at

    @strawberry.field(
        description=(
            "the revision of the task's rule that judged it (Task.ruleRevision then); null when no rule "
            "did (CANCELED, EXCUSED) or before revisions were recorded"
        )
    )
    def rule_revision(self) -> int | None:
        return self.row.rule_revision

    @strawberry.field(
        description=(
            "the proofs it rests on, oldest first: the accepted ones of a VERIFIED instance, the decided "
            "rejection of a REJECTED one, the appeal of an appeal's outcome; empty for NO_PROOF, "
            "SERVICE_OUTAGE and TASK_CHANGED"
        )
    )
    async def proofs(self, info: Info) -> list[Verification]:
        rows = await info.context.loaders.verifications_of_instance.load(str(self.row.id))
        return [Verification(row=r, instance_row=self.row) for r in deciding(list(rows), self.row)]

    @strawberry.field(description="the partner who decided it (a review or an appeal); null otherwise")
    async def reviewer(self, info: Info) -> User | None:
        if self.row.verdict_reason not in _DECIDED_BY_PARTNER:
            return None
        rows = await info.context.loaders.verifications_of_instance.load(str(self.row.id))
        decided = [r for r in deciding(list(rows), self.row) if r.reviewer_id is not None]
        if not decided:
            return None
        return await load_user(info, str(decided[-1].reviewer_id))

    @strawberry.field(
        description=(
            "until when its owner may appeal it (a MISSED instance not appealed yet, for "
            "PROOFLOOP_APPEAL_WINDOW_SECONDS); null when it cannot be appealed"
        )
    )
    def appealable_until(self, info: Info) -> datetime | None:
        return self._appealable_until(info)

    @strawberry.field(description="true once nothing can change it: no appeal is possible any more")
    async def is_final(self, info: Info) -> bool:
        until = self._appealable_until(info)
        return until is None or until < await info.context.now()

    def _appealable_until(self, info: Info) -> datetime | None:
        return appealable_until(self.row, info.context.settings.appeal_window_seconds)
