"""Accounts and the bearer tokens that authenticate them."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model


class User(Model):
    id = fields.UUIDField(primary_key=True)
    email = fields.CharField(max_length=254, unique=True)  # stored lower-cased: unique case-insensitively
    display_name = fields.CharField(max_length=100)
    timezone = fields.CharField(max_length=64, default="UTC")
    password_hash = fields.CharField(max_length=255)
    created_at = fields.DatetimeField(auto_now_add=True)

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

    user_id: str

    class Meta:
        table = "auth_tokens"
