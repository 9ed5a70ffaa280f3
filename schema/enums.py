"""The contract's enums, registered from the domain enums so there is one list of values."""

from __future__ import annotations

import strawberry

from models import enums

VerificationMethod = strawberry.enum(enums.VerificationMethod)
TaskState = strawberry.enum(enums.TaskState)
InstanceStatus = strawberry.enum(enums.InstanceStatus)
VerificationStatus = strawberry.enum(enums.VerificationStatus)
RejectionReason = strawberry.enum(enums.RejectionReason)
ReviewTimeoutPolicy = strawberry.enum(enums.ReviewTimeoutPolicy)
PartnershipStatus = strawberry.enum(enums.PartnershipStatus)
EventType = strawberry.enum(enums.EventType)
