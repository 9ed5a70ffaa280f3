"""Tortoise models, one aggregate per file."""

from models.enums import (
    PUSH_TRANSPORTS,
    CaptureTimeSource,
    DeliveryStatus,
    EventType,
    ExportStatus,
    InstanceStatus,
    PartnershipStatus,
    QuotaPeriod,
    RejectionReason,
    ReminderAnchor,
    ReviewTimeoutPolicy,
    TaskState,
    Transport,
    VerdictReason,
    VerificationMethod,
    VerificationStatus,
    Weekday,
)
from models.event import Event, EventPositionCounter
from models.export import DataExport
from models.idempotency_key import IdempotencyKey
from models.instance import TaskInstance
from models.integration_event import IntegrationEvent
from models.location_sample import LocationSample
from models.mail import OutgoingMail
from models.partnership import Partnership
from models.reminder import InstanceReminder
from models.task import Task
from models.task_break import TaskBreak
from models.user import AuthToken, MailedToken, MailedTokenPurpose, User
from models.verification import Verification
from models.webhook import Webhook, WebhookDelivery, WebhookFanout

__all__ = [
    "PUSH_TRANSPORTS",
    "AuthToken",
    "CaptureTimeSource",
    "DataExport",
    "DeliveryStatus",
    "Event",
    "EventPositionCounter",
    "EventType",
    "ExportStatus",
    "IdempotencyKey",
    "InstanceReminder",
    "InstanceStatus",
    "IntegrationEvent",
    "LocationSample",
    "MailedToken",
    "MailedTokenPurpose",
    "OutgoingMail",
    "Partnership",
    "PartnershipStatus",
    "QuotaPeriod",
    "RejectionReason",
    "ReminderAnchor",
    "ReviewTimeoutPolicy",
    "Task",
    "TaskBreak",
    "TaskInstance",
    "TaskState",
    "Transport",
    "User",
    "VerdictReason",
    "Verification",
    "VerificationMethod",
    "VerificationStatus",
    "Webhook",
    "WebhookDelivery",
    "WebhookFanout",
    "Weekday",
]
