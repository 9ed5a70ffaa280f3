"""Partnerships and access: who watches or vouches for whom, and what a viewer may read."""

from __future__ import annotations

from services.partners.access import (
    Access,
    access_for,
    access_of,
    has_deciding_partner,
    is_active_partner,
    pushed_to,
    readers_of,
    require_own_task,
    require_visible_task,
    visible_instance,
    vouching,
)
from services.partners.partners import counterpart_ids, readable_partnerships, status_at

__all__ = [
    "Access",
    "access_for",
    "access_of",
    "counterpart_ids",
    "has_deciding_partner",
    "is_active_partner",
    "pushed_to",
    "readable_partnerships",
    "readers_of",
    "require_own_task",
    "require_visible_task",
    "status_at",
    "visible_instance",
    "vouching",
]
