from __future__ import annotations

from datetime import datetime


def in_window(at: datetime, opens_at: datetime, closes_at: datetime) -> bool:
    """True when `at` lies in [opens_at, closes_at], both ends included."""
    return opens_at <= at <= closes_at
