"""Proofs: the steps every proof runs (pipeline.py), what each kind adds (gps.py, media.py, review.py,
integration.py for activities other services report), the decode gate media go through
(decode_gate.py) and appeals of a decision. The media a proof keeps are services/media/'s."""

from __future__ import annotations

from services.proofs.appeals import appealable_until
from services.proofs.avoid import LocationReport, report_locations
from services.proofs.decode_gate import DecodeGate
from services.proofs.gps import CheckIn, check_in
from services.proofs.integration import (
    ActivityRecord,
    DuplicateEvent,
    IntegrationPolicy,
    connect_integration,
    endpoint_path,
    parse_event,
    record_activity,
    signed_task,
)
from services.proofs.media import MediaPolicy, MediaUpload, submit_media
from services.proofs.review import (
    REVIEW_ORDER,
    decide_review,
    decisions_waiting,
    request_review,
    review_queue,
    reviewable,
)

__all__ = [
    "REVIEW_ORDER",
    "ActivityRecord",
    "CheckIn",
    "DecodeGate",
    "DuplicateEvent",
    "IntegrationPolicy",
    "LocationReport",
    "MediaPolicy",
    "MediaUpload",
    "appealable_until",
    "check_in",
    "connect_integration",
    "decide_review",
    "decisions_waiting",
    "endpoint_path",
    "parse_event",
    "record_activity",
    "report_locations",
    "request_review",
    "review_queue",
    "reviewable",
    "signed_task",
    "submit_media",
]
