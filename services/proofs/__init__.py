"""Proofs: the steps every proof runs (pipeline.py) and what each kind adds (gps.py, media.py, review.py)."""

from __future__ import annotations

from services.proofs.gps import CheckIn, check_in
from services.proofs.media import MediaPolicy, MediaUpload, submit_photo, submit_video
from services.proofs.review import REVIEW_ORDER, decide_review, request_review, review_queue, reviewable

__all__ = [
    "REVIEW_ORDER",
    "CheckIn",
    "MediaPolicy",
    "MediaUpload",
    "check_in",
    "decide_review",
    "request_review",
    "review_queue",
    "reviewable",
    "submit_photo",
    "submit_video",
]
