"""Registration, login and bearer tokens."""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from tortoise.exceptions import IntegrityError

from models import AuthToken, User
from services.db import db_now, write_transaction
from services.errors import BadInput, Conflict, Unauthenticated
from services.rate_limits import FailureLimit, check_failures, record_failure
from verification.errors import InvalidInput
from verification.timezones import zone_of

_hasher = PasswordHasher()
# Unknown emails are checked against this hash, so a login spends the same argon2 time either way.
_DUMMY_HASH = _hasher.hash("proofloop-timing-equaliser")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
# Sliding expiry is written at most this often, so a burst of requests is not a burst of writes.
_REFRESH_EVERY = timedelta(minutes=10)


@dataclass(frozen=True)
class Session:
    user: User
    token_id: str


def normalize_email(email: str, field: str = "email") -> str:
    email = email.strip().lower()
    if len(email) > 254 or not _EMAIL.match(email):
        raise BadInput(field, "must be a valid email address")
    return email


def validate_timezone(name: str, field: str) -> str:
    try:
        zone_of(name, field)
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None
    return name


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def _issue_token(user: User, ttl_seconds: int) -> tuple[Session, str]:
    token = secrets.token_urlsafe(32)
    now = await db_now()
    row = await AuthToken.create(
        user=user, digest=token_digest(token), expires_at=now + timedelta(seconds=ttl_seconds)
    )
    return Session(user=user, token_id=str(row.id)), token


async def register(
    email: str,
    password: str,
    display_name: str,
    timezone: str,
    *,
    min_password_length: int,
    token_ttl_seconds: int,
) -> tuple[Session, str]:
    email = normalize_email(email)
    if len(password) < min_password_length:
        raise BadInput("password", f"must be at least {min_password_length} characters")
    if len(password) > 1024:
        raise BadInput("password", "must be at most 1024 characters")
    display_name = display_name.strip()
    if not 1 <= len(display_name) <= 100:
        raise BadInput("displayName", "must be 1 to 100 characters")
    validate_timezone(timezone, "timezone")
    password_hash = await asyncio.to_thread(_hasher.hash, password)
    try:
        async with write_transaction():
            user = await User.create(
                email=email, display_name=display_name, timezone=timezone, password_hash=password_hash
            )
            return await _issue_token(user, token_ttl_seconds)
    except IntegrityError:
        raise Conflict("an account with this email already exists") from None


def _password_matches(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def login(
    email: str, password: str, *, token_ttl_seconds: int, failures: FailureLimit
) -> tuple[Session, str]:
    """A new token for the right password; failures per email (known or not) are limited."""
    email = email.strip().lower()
    await check_failures(failures, email)
    user = await User.get_or_none(email=email)
    matches = await asyncio.to_thread(
        _password_matches, user.password_hash if user else _DUMMY_HASH, password
    )
    if user is None or not matches:
        await record_failure(failures, email)
        raise Unauthenticated("wrong email or password")
    async with write_transaction():
        return await _issue_token(user, token_ttl_seconds)


async def authenticate(token: str, *, token_ttl_seconds: int) -> Session:
    """The session a bearer token opens, extending its sliding expiry; Unauthenticated otherwise."""
    row = await AuthToken.filter(digest=token_digest(token), revoked_at=None).select_related("user").first()
    now = await db_now()
    if row is None or row.expires_at <= now:
        raise Unauthenticated("missing, expired or revoked token")
    new_expiry = now + timedelta(seconds=token_ttl_seconds)
    if new_expiry - row.expires_at > _REFRESH_EVERY:
        await AuthToken.filter(id=row.id, revoked_at=None).update(expires_at=new_expiry)
    return Session(user=row.user, token_id=str(row.id))


async def logout(token_id: str) -> None:
    await AuthToken.filter(id=token_id, revoked_at=None).update(revoked_at=await db_now())


def bearer_token(header: object) -> str | None:
    """The token of an `Authorization: Bearer <token>` value, or None."""
    if not isinstance(header, str):
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
