"""Domain enums, shared by rows, services and the GraphQL schema (values are the contract's names)."""

from __future__ import annotations

from enum import StrEnum


class VerificationMethod(StrEnum):
    GPS = "GPS"
    PHOTO = "PHOTO"
    PARTNER = "PARTNER"
    VIDEO = "VIDEO"
    INTEGRATION = "INTEGRATION"  # an activity another service reports, signed with the task's secret


class TaskState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    ENDED = "ENDED"


class InstanceStatus(StrEnum):
    PENDING = "PENDING"
    PENDING_REVIEW = "PENDING_REVIEW"
    VERIFIED = "VERIFIED"
    MISSED = "MISSED"
    REJECTED = "REJECTED"
    CANCELED = "CANCELED"
    # the service could not plan it in time (an outage): never counted, charged or appealed
    EXCUSED = "EXCUSED"


class VerdictReason(StrEnum):
    """Why a settled instance has its status (TaskInstance.verdict_reason): what disputes and stakes read."""

    PROOF_ACCEPTED = "PROOF_ACCEPTED"  # an accepted proof, or the one that made a quota's count
    NO_PROOF = "NO_PROOF"  # the window closed without the proofs it needed (MISSED)
    LOCATION_SAMPLES = "LOCATION_SAMPLES"  # avoid-a-place: the samples of its window decided
    PARTNER_APPROVED = "PARTNER_APPROVED"
    PARTNER_REJECTED = "PARTNER_REJECTED"
    REVIEW_TIMED_OUT = "REVIEW_TIMED_OUT"  # the task's onTimeout at the review deadline
    APPEAL_UPHELD = "APPEAL_UPHELD"
    APPEAL_DENIED = "APPEAL_DENIED"
    SERVICE_OUTAGE = "SERVICE_OUTAGE"  # EXCUSED: due while the service could not plan it
    TASK_CHANGED = "TASK_CHANGED"  # CANCELED: paused, edited or deleted before it settled


class VerificationStatus(StrEnum):
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"
    PENDING_REVIEW = "PENDING_REVIEW"


class RejectionReason(StrEnum):
    OUTSIDE_WINDOW = "OUTSIDE_WINDOW"
    OUTSIDE_GEOFENCE = "OUTSIDE_GEOFENCE"
    LOW_ACCURACY = "LOW_ACCURACY"
    IMPLAUSIBLE_LOCATION = "IMPLAUSIBLE_LOCATION"
    CAPTURED_OUTSIDE_WINDOW = "CAPTURED_OUTSIDE_WINDOW"
    REUSED_MEDIA = "REUSED_MEDIA"
    TOO_SHORT = "TOO_SHORT"
    PARTNER_REJECTED = "PARTNER_REJECTED"
    REVIEW_TIMED_OUT = "REVIEW_TIMED_OUT"
    OCCURRED_OUTSIDE_WINDOW = "OCCURRED_OUTSIDE_WINDOW"  # an activity completed outside the window
    ACTIVITY_MISMATCH = "ACTIVITY_MISMATCH"  # an activity of a type the rule does not list
    BELOW_MIN_DISTANCE = "BELOW_MIN_DISTANCE"  # an activity that covered less than the rule's distance
    NO_CAPTURE_TIME = "NO_CAPTURE_TIME"  # a photo or video without one, for a task that requires it
    ENTERED_AVOIDED_PLACE = "ENTERED_AVOIDED_PLACE"  # avoid-a-place: a sample inside the geofence
    NOT_ENOUGH_SAMPLES = "NOT_ENOUGH_SAMPLES"  # avoid-a-place: a gap between samples longer than allowed
    WITHIN_MIN_GAP = "WITHIN_MIN_GAP"  # a quota goal: too soon after the last counted proof to count


class CaptureTimeSource(StrEnum):
    """Where a photo's or video's capture time was read (rules/photo.py, rules/video.py)."""

    EXIF_OFFSET = "EXIF_OFFSET"  # EXIF DateTimeOriginal with its OffsetTimeOriginal: an instant
    EXIF_TASK_ZONE = "EXIF_TASK_ZONE"  # DateTimeOriginal without an offset, read in the task's zone
    CONTAINER = "CONTAINER"  # a video container's creation_time (or Apple's creationdate)
    ABSENT = "ABSENT"  # the file carried none (stripped, a PNG, a screenshot)


class QuotaPeriod(StrEnum):
    """A quota goal's period (rules/quota.py has the same values)."""

    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"


class Weekday(StrEnum):
    """Values are RFC 5545's day codes."""

    MONDAY = "MO"
    TUESDAY = "TU"
    WEDNESDAY = "WE"
    THURSDAY = "TH"
    FRIDAY = "FR"
    SATURDAY = "SA"
    SUNDAY = "SU"


class ReviewTimeoutPolicy(StrEnum):
    APPROVE = "APPROVE"
    REJECT = "REJECT"


class PartnershipStatus(StrEnum):
    INVITED = "INVITED"
    ACTIVE = "ACTIVE"
    DECLINED = "DECLINED"
    REMOVED = "REMOVED"


class EventType(StrEnum):
    PROOF_SUBMITTED = "PROOF_SUBMITTED"
    REVIEW_REQUESTED = "REVIEW_REQUESTED"
    VERIFIED = "VERIFIED"
    REJECTED = "REJECTED"
    MISSED = "MISSED"
    APPEAL_REQUESTED = "APPEAL_REQUESTED"
    APPEAL_DECIDED = "APPEAL_DECIDED"
    DUE_SOON = "DUE_SOON"
    EXCUSED = "EXCUSED"


class ReminderAnchor(StrEnum):
    OPENS = "OPENS"
    DUE = "DUE"


class DeliveryStatus(StrEnum):
    PENDING = "PENDING"  # owed at fire_at (the first attempt, or the next one after a failure)
    SENDING = "SENDING"  # an attempt holds it until fire_at (its deadline); past that it was lost
    DELIVERED = "DELIVERED"
    GIVEN_UP = "GIVEN_UP"  # out of attempts, or a URL that can never be sent
    REFUSED = "REFUSED"  # the address is not one a webhook may reach


class Transport(StrEnum):
    """How a subscription to events is reached (one outbox, one set of rules for both)."""

    WEBHOOK = "WEBHOOK"  # a signed POST to the owner's URL
    WEB_PUSH = "WEB_PUSH"  # an encrypted Web Push message to a browser's push service (RFC 8030/8291/8292)
    APNS = "APNS"  # an iOS device, through Apple's HTTP/2 API
    FCM = "FCM"  # an Android (or any Firebase) device, through FCM's HTTP v1 API


PUSH_TRANSPORTS = frozenset({Transport.WEB_PUSH, Transport.APNS, Transport.FCM})


class ExportStatus(StrEnum):
    PENDING = "PENDING"  # asked for: a worker builds the archive
    READY = "READY"  # built, its link mailed; downloadable until expires_at
    EXPIRED = "EXPIRED"  # past expires_at: the archive is removed
