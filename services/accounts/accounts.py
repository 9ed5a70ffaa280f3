"""Registration, login, bearer tokens, and the password changes that end every other session."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from tortoise.exceptions import IntegrityError
from tortoise.queryset import QuerySet

from models import AuthToken, DataExport, User
from realtime import notices
from rules.errors import InvalidInput
from rules.shown_text import reordering_character
from rules.timezones import zone_of
from services.accounts.email_verification import send_verification
from services.accounts.passwords import PasswordHashing, check_password_policy
from services.kit import (
    AttemptWindow,
    BadInput,
    Conflict,
    Keyset,
    LoginBackoff,
    NotFound,
    RateLimited,
    SortKey,
    Unauthenticated,
    db_now,
    on_commit,
    parse_id,
    parse_instant,
    parse_uuid,
    remember_owner_address,
    write_transaction,
)

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
# Sliding expiry is written at most this often, so a burst of requests is not a burst of writes.
_REFRESH_EVERY = timedelta(minutes=10)
# how fresh a session's last-used time is: written at most this often per token
LAST_USED_EVERY = timedelta(minutes=1)
MAX_DEVICE_NAME = 100
MAX_USER_AGENT = 256


@dataclass(frozen=True)
class Session:
    user: User
    token_id: str
    expires_at: datetime | None = None


@dataclass(frozen=True)
class SessionDevice:
    """What a new session remembers of the device that signed in: the name it gave, its user agent."""

    name: str | None = None
    user_agent: str | None = None

    @classmethod
    def of(cls, name: str | None, user_agent: str | None) -> SessionDevice:
        name = name.strip() if name is not None else None
        if name is not None and len(name) > MAX_DEVICE_NAME:
            raise BadInput("deviceName", f"must be at most {MAX_DEVICE_NAME} characters")
        agent = "".join(c for c in user_agent[:MAX_USER_AGENT] if c.isprintable()) if user_agent else None
        return cls(name or None, agent or None)


@dataclass(frozen=True)
class AccountRules:
    """What the account operations need from settings and the process, gathered once by the caller."""

    passwords: PasswordHashing
    min_password_length: int
    token_ttl_seconds: int
    public_url: str
    login_backoff: LoginBackoff
    per_address: AttemptWindow  # logins, registrations, reset requests from one client address
    mail_requests: AttemptWindow  # verification and reset mails to one address


def normalize_email(email: str, field: str = "email") -> str:
    email = email.strip().lower()
    if len(email) > 254 or not _EMAIL.match(email):
        raise BadInput(field, "must be a valid email address")
    return email


MAX_DISPLAY_NAME = 100


def check_display_name(name: str, field: str = "displayName") -> str:
    name = name.strip()
    if not 1 <= len(name) <= MAX_DISPLAY_NAME:
        raise BadInput(field, f"must be 1 to {MAX_DISPLAY_NAME} characters")
    if (control := reordering_character(name)) is not None:
        raise BadInput(field, f"must not hold {control}, which reorders the text others see")
    return name


def validate_timezone(name: str, field: str) -> str:
    try:
        zone_of(name, field)
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None
    return name


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def issue_token(
    user: User, ttl_seconds: int, device: SessionDevice = SessionDevice()
) -> tuple[Session, str]:
    token = secrets.token_urlsafe(32)
    now = await db_now()
    expires_at = now + timedelta(seconds=ttl_seconds)
    row = await AuthToken.create(
        user=user,
        digest=token_digest(token),
        expires_at=expires_at,
        device_name=device.name,
        user_agent=device.user_agent,
        last_used_at=now,
    )
    return Session(user=user, token_id=str(row.id), expires_at=expires_at), token


async def register(
    email: str,
    password: str,
    display_name: str,
    timezone: str,
    *,
    rules: AccountRules,
    address: str,
    device: SessionDevice = SessionDevice(),
) -> tuple[Session, str]:
    """A new account, signed in at once; a verification token goes to its address in the same commit."""
    await rules.per_address.count(address)
    email = normalize_email(email)
    check_password_policy(password, rules.min_password_length)
    display_name = check_display_name(display_name)
    validate_timezone(timezone, "timezone")
    password_hash = await rules.passwords.hash(password)
    try:
        async with write_transaction():
            user = await User.create(
                email=email, display_name=display_name, timezone=timezone, password_hash=password_hash
            )
            issued = await issue_token(user, rules.token_ttl_seconds, device)
            await send_verification(user, rules.public_url)
    except IntegrityError:
        raise Conflict("an account with this email already exists") from None
    await remember_owner_address(email, address)
    return issued


async def login(
    email: str,
    password: str,
    *,
    rules: AccountRules,
    address: str,
    device: SessionDevice = SessionDevice(),
) -> tuple[Session, str]:
    """A new token for the right password. Every try is counted before argon2 runs (per address, and per
    email with a doubling wait), so concurrent guesses cannot outrun the count."""
    await rules.per_address.count(address)
    email = email.strip().lower()
    reserved = await rules.login_backoff.reserve(email, address)
    user = await User.get_or_none(email=email)
    matches = await rules.passwords.verify(
        user.password_hash if user else rules.passwords.dummy_hash, password
    )
    if user is None or not matches:
        raise Unauthenticated("wrong email or password")
    await remember_owner_address(email, address, reserved)
    await _rehash_at_current_cost(user, password, rules.passwords)
    async with write_transaction():
        if user.deletion_due_at is not None:
            # signing in within the grace period keeps the account; once it has passed the account is
            # gone, whether or not the sweep has reached it yet (the same answer as for no account)
            kept = await User.filter(id=user.id, deletion_due_at__gt=await db_now()).update(
                deletion_due_at=None
            )
            if not kept:
                raise Unauthenticated("wrong email or password")
            user.deletion_due_at = None
        return await issue_token(user, rules.token_ttl_seconds, device)


async def _rehash_at_current_cost(user: User, password: str, passwords: PasswordHashing) -> None:
    """A hash made at other argon2 costs is remade at the configured ones while the password is at hand
    (raising the cost reaches every account that signs in). Best effort: with argon2's queue full the
    sign-in goes on and a later one rehashes; a password changed meanwhile is never overwritten."""
    if not passwords.needs_rehash(user.password_hash):
        return
    try:
        new_hash = await passwords.hash(password)
    except RateLimited:
        return
    await User.filter(id=user.id, password_hash=user.password_hash).update(password_hash=new_hash)
    user.password_hash = new_hash


async def authenticate(token: str, *, token_ttl_seconds: int) -> Session:
    """The session a bearer token opens, extending its sliding expiry; Unauthenticated otherwise."""
    row = await AuthToken.filter(digest=token_digest(token), revoked_at=None).select_related("user").first()
    now = await db_now()
    if row is None or row.expires_at <= now:
        raise Unauthenticated("missing, expired or revoked token")
    expires_at = row.expires_at
    new_expiry = now + timedelta(seconds=token_ttl_seconds)
    changes: dict[str, datetime] = {}
    if new_expiry - row.expires_at > _REFRESH_EVERY:
        changes["expires_at"] = expires_at = new_expiry
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_EVERY:
        changes["last_used_at"] = now
    if changes:
        await AuthToken.filter(id=row.id, revoked_at=None).update(**changes)
    return Session(user=row.user, token_id=str(row.id), expires_at=expires_at)


async def token_expiry(token_id: str) -> datetime | None:
    """When a token stops working (its sliding expiry as last written); None once revoked or gone."""
    row = await AuthToken.filter(id=token_id, revoked_at=None).first()
    return row.expires_at if row is not None else None


async def token_is_live(token_id: str) -> bool:
    expires = await token_expiry(token_id)
    return expires is not None and expires > await db_now()


async def revoke_tokens(user_id: str, *, token_id: str | None = None) -> list[str]:
    """Revoke one token of the user (or all); their sockets close in every API process after commit."""
    async with write_transaction():
        query = AuthToken.filter(user_id=user_id, revoked_at=None)
        if token_id is not None:
            query = query.filter(id=token_id)
        ids = [str(i) for i in await query.values_list("id", flat=True)]
        if ids:
            await AuthToken.filter(id__in=ids, revoked_at=None).update(revoked_at=await db_now())

        async def announce() -> None:
            for revoked in ids:
                await notices.publish_control("token_revoked", token_id=revoked)

        on_commit(announce)
    return ids


async def logout(session: Session) -> None:
    await revoke_tokens(str(session.user.id), token_id=session.token_id)


# a user's sessions, newest first
SESSION_ORDER = Keyset(
    "session", (SortKey("created_at", parse_instant, True), SortKey("id", parse_uuid, True))
)


async def live_sessions_query(user: User) -> QuerySet[AuthToken]:
    """The user's tokens that still work."""
    return AuthToken.filter(user_id=user.id, revoked_at=None, expires_at__gt=await db_now())


async def live_sessions(user: User) -> list[AuthToken]:
    return await (await live_sessions_query(user)).order_by(*SESSION_ORDER.order())


async def live_sessions_among(user: User, ids: Collection[str]) -> list[AuthToken]:
    """Of the sessions `ids`, the user's that still work (what `live_sessions` lists)."""
    return await AuthToken.filter(
        user_id=user.id, revoked_at=None, expires_at__gt=await db_now(), id__in=list(ids)
    )


async def revoke_session(user: User, token_id: str) -> None:
    """End one of the user's own sessions (NOT_FOUND for anyone else's or one already ended)."""
    if not await revoke_tokens(str(user.id), token_id=parse_id(token_id, "session")):
        raise NotFound("no such session")


async def change_password(
    session: Session, current_password: str, new_password: str, *, rules: AccountRules, address: str
) -> tuple[Session, str]:
    """Set a new password (the current one proven first); every token of the account ends but the new one."""
    user = session.user
    check_password_policy(new_password, rules.min_password_length, "newPassword")
    # a stolen token must not become a way to guess the password: the login backoff counts these too
    reserved = await rules.login_backoff.reserve(user.email, address)
    if not await rules.passwords.verify(user.password_hash, current_password):
        raise BadInput("currentPassword", "is not your current password")
    await remember_owner_address(user.email, address, reserved)
    return await set_password(user, await rules.passwords.hash(new_password), rules.token_ttl_seconds)


async def set_password(user: User, password_hash: str, token_ttl_seconds: int) -> tuple[Session, str]:
    async with write_transaction():
        await User.filter(id=user.id).update(password_hash=password_hash)
        await revoke_tokens(str(user.id))
        # every credential of the account dies with the old password, the exports' mailed links included
        await DataExport.filter(user_id=user.id, token_digest__not_isnull=True).update(token_digest=None)
        user.password_hash = password_hash
        return await issue_token(user, token_ttl_seconds)


def bearer_token(header: object) -> str | None:
    """The token of an `Authorization: Bearer <token>` value, or None."""
    if not isinstance(header, str):
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
