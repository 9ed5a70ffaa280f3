"""Accounts, the bearer tokens that authenticate them, and single-use tokens mailed to their address."""

from __future__ import annotations

from enum import StrEnum

from tortoise import fields
from tortoise.models import Model


class User(Model):
    id = fields.UUIDField(primary_key=True)
    email = fields.CharField(max_length=254, unique=True)  # stored lower-cased: unique case-insensitively
    display_name = fields.CharField(max_length=100)
    timezone = fields.CharField(max_length=64, default="UTC")
    password_hash = fields.CharField(max_length=255)
    created_at = fields.DatetimeField(auto_now_add=True)
    # set when a token mailed to `email` came back; an address counts only from then on
    email_verified_at = fields.DatetimeField(null=True)
    # days an easier task edit waits before it applies (0: at once); a lowered value waits the old one out
    commitment_horizon_days = fields.IntField(default=0, db_default=0)  # rows written by plain SQL too
    lowered_horizon_days = fields.IntField(null=True)
    lowered_horizon_at = fields.DatetimeField(null=True)
    # asked for with the password: the account and everything of it are deleted then, unless a sign-in
    # before it cancels the deletion
    deletion_due_at = fields.DatetimeField(null=True)
    # quiet hours, minutes after midnight on the user's wall clock (`timezone`): notifications wait them out
    quiet_start_minute = fields.IntField(null=True)
    quiet_end_minute = fields.IntField(null=True)

    class Meta:
        table = "users"


class AuthToken(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="tokens", on_delete=fields.CASCADE
    )
    # sha256 of the token: a leaked table grants nothing
    digest = fields.CharField(max_length=64, unique=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    expires_at = fields.DatetimeField()
    revoked_at = fields.DatetimeField(null=True)
    device_name = fields.CharField(max_length=100, null=True)  # as the client named itself at sign-in
    user_agent = fields.CharField(max_length=256, null=True)  # the sign-in request's, cut to fit
    # written at most once a minute per token (authenticate), so a burst of requests is not a burst of writes
    last_used_at = fields.DatetimeField(null=True)

    user_id: str

    class Meta:
        table = "auth_tokens"


class MailedTokenPurpose(StrEnum):
    VERIFY_EMAIL = "VERIFY_EMAIL"
    RESET_PASSWORD = "RESET_PASSWORD"


class MailedToken(Model):
    """A single-use token sent to an address (verification, password reset), kept as a digest only."""

    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="mailed_tokens", on_delete=fields.CASCADE
    )
    purpose = fields.CharEnumField(MailedTokenPurpose, max_length=16)
    digest = fields.CharField(max_length=64, unique=True)
    # the address it was sent to: a token for an address the account no longer has proves nothing
    email = fields.CharField(max_length=254)
    created_at = fields.DatetimeField(auto_now_add=True)
    expires_at = fields.DatetimeField()
    used_at = fields.DatetimeField(null=True)

    user_id: str

    class Meta:
        table = "mailed_tokens"
        indexes = (("user_id", "purpose"),)
