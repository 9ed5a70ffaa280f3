"""Tortoise models, one aggregate per file."""

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
from models.event import Event
from models.instance import TaskInstance
from models.mail import OutgoingMail
from models.partnership import Partnership
from models.task import Task
from models.user import AuthToken, MailedToken, MailedTokenPurpose, User
from models.verification import Verification

__all__ = [
    "AuthToken",
    "Event",
    "EventType",
    "InstanceStatus",
    "MailedToken",
    "MailedTokenPurpose",
    "OutgoingMail",
    "Partnership",
    "PartnershipStatus",
    "RejectionReason",
    "ReviewTimeoutPolicy",
    "Task",
    "TaskInstance",
    "TaskState",
    "User",
    "Verification",
    "VerificationMethod",
    "VerificationStatus",
]
