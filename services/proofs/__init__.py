"""Proofs: the steps every proof runs (pipeline.py), what each kind adds (gps.py, media.py, review.py,
integration.py for activities other services report), the media they keep (media_storage.py,
media_links.py, decode_gate.py) and appeals of a decision."""

from __future__ import annotations

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
from services.proofs.media_links import MEDIA_EXTENSIONS, link_is_valid, media_url
from services.proofs.media_storage import remove_unreferenced, sweep_orphans_forever
from services.proofs.review import (
    REVIEW_ORDER,
    decide_review,
    decisions_waiting,
    request_review,
    review_queue,
    reviewable,
)

__all__ = [
    "MEDIA_EXTENSIONS",
    "REVIEW_ORDER",
    "ActivityRecord",
    "CheckIn",
    "DecodeGate",
    "DuplicateEvent",
    "IntegrationPolicy",
    "LocationReport",
    "MediaPolicy",
    "MediaUpload",
    "check_in",
    "connect_integration",
    "decide_review",
    "decisions_waiting",
    "endpoint_path",
    "link_is_valid",
    "media_url",
    "parse_event",
    "record_activity",
    "remove_unreferenced",
    "report_locations",
    "request_review",
    "review_queue",
    "reviewable",
    "signed_task",
    "submit_media",
    "sweep_orphans_forever",
]
