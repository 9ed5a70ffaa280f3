"""Accounts: registration, login, bearer tokens, passwords, email verification, password reset, the
profile (display name, zone), and a user's commitment horizon."""

from __future__ import annotations

from services.accounts.accounts import (
    AccountRules,
    Session,
    SessionDevice,
    authenticate,
    bearer_token,
    live_sessions_among,
    normalize_email,
    token_digest,
    token_is_live,
)
from services.accounts.commitment_horizon import (
    MAX_HORIZON_DAYS,
    horizon_days,
    horizon_of,
    set_commitment_horizon,
)
from services.accounts.deletion_request import schedule_deletion
from services.accounts.passwords import PasswordHashing
from services.accounts.profile import KEEP, ProfileChange, QuietHours, update_profile

__all__ = [
    "KEEP",
    "MAX_HORIZON_DAYS",
    "AccountRules",
    "PasswordHashing",
    "ProfileChange",
    "QuietHours",
    "Session",
    "SessionDevice",
    "authenticate",
    "bearer_token",
    "horizon_days",
    "horizon_of",
    "live_sessions_among",
    "normalize_email",
    "schedule_deletion",
    "set_commitment_horizon",
    "token_digest",
    "token_is_live",
    "update_profile",
]
