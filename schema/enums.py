"""The contract's enums: the domain enums themselves, registered with Strawberry (one list of values)."""

from __future__ import annotations

import strawberry

from models.enums import (
    EventType,
    InstanceStatus,
    PartnershipStatus,
    RejectionReason,
    ReminderAnchor,
    ReviewTimeoutPolicy,
    TaskState,
    VerificationMethod,
    VerificationStatus,
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
    ReminderAnchor, description="what a reminder counts back from: the window's opening or the due time"
)

__all__ = [
    "EventType",
    "InstanceStatus",
    "PartnershipStatus",
    "RejectionReason",
    "ReminderAnchor",
    "ReviewTimeoutPolicy",
    "TaskState",
    "VerificationMethod",
    "VerificationStatus",
]
