"""Proofs: the steps every proof runs (pipeline.py) and what each kind adds (gps.py, media.py, review.py)."""

from __future__ import annotations

from services.proofs.gps import CheckIn, check_in
from services.proofs.media import MediaPolicy, MediaUpload, submit_photo, submit_video
from services.proofs.review import decide_review, request_review, review_queue

__all__ = [
    "CheckIn",
    "MediaPolicy",
    "MediaUpload",
    "check_in",
    "decide_review",
    "request_review",
    "review_queue",
    "submit_photo",
    "submit_video",
]
