"""The contract's enums: the domain enums themselves, registered with Strawberry (one list of values)."""

from __future__ import annotations

import strawberry

from models.enums import (
    EventType,
    InstanceStatus,
    PartnershipStatus,
    RejectionReason,
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

__all__ = [
    "EventType",
    "InstanceStatus",
    "PartnershipStatus",
    "RejectionReason",
    "ReviewTimeoutPolicy",
    "TaskState",
    "VerificationMethod",
    "VerificationStatus",
]
