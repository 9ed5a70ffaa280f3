"""The contract's enums: the domain enums themselves, registered with Strawberry (one list of values)."""

from __future__ import annotations

import strawberry

from models.enums import (
    CaptureTimeSource,
    EventType,
    InstanceStatus,
    PartnershipStatus,
    QuotaPeriod,
    RejectionReason,
    ReminderAnchor,
    ReviewTimeoutPolicy,
    TaskState,
    VerdictReason,
    VerificationMethod,
    VerificationStatus,
    Weekday,
)

for _enum in (
    EventType,
    InstanceStatus,
    PartnershipStatus,
    RejectionReason,
    ReviewTimeoutPolicy,
    TaskState,
    VerificationMethod,
    VerificationStatus,
):
    strawberry.enum(_enum)
strawberry.enum(
    CaptureTimeSource,
    description="where a photo's or video's capture time was read; ABSENT: the file carried none",
)
strawberry.enum(
    QuotaPeriod, description="a quota goal's period, its bounds at local midnight in the task's zone"
)
strawberry.enum(Weekday)
strawberry.enum(VerdictReason, description="why a settled instance has its status (Verdict.reason)")
strawberry.enum(
    ReminderAnchor, description="what a reminder counts back from: the window's opening or the due time"
)

__all__ = [
    "CaptureTimeSource",
    "EventType",
    "InstanceStatus",
    "PartnershipStatus",
    "QuotaPeriod",
    "RejectionReason",
    "ReminderAnchor",
    "ReviewTimeoutPolicy",
    "TaskState",
    "VerdictReason",
    "VerificationMethod",
    "VerificationStatus",
    "Weekday",
]
