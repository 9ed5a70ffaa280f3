"""Single-use tokens sent by mail: only a digest is stored, each works once, before it expires, and only
for the address it was sent to."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from models import MailedToken, MailedTokenPurpose, User
from services.kit import BadInput, db_now

TTL = {
    MailedTokenPurpose.VERIFY_EMAIL: timedelta(hours=24),
    MailedTokenPurpose.RESET_PASSWORD: timedelta(hours=1),
}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def new_token(user: User, purpose: MailedTokenPurpose) -> str:
    """A fresh token for the user's current address; older unused ones of the same purpose stop working."""
    now = await db_now()
    await MailedToken.filter(user_id=user.id, purpose=purpose, used_at=None).update(used_at=now)
    token = secrets.token_urlsafe(32)
    await MailedToken.create(
        user=user, purpose=purpose, digest=_digest(token), email=user.email, expires_at=now + TTL[purpose]
    )
    return token


async def live_token(
    token: str, purpose: MailedTokenPurpose, *, lock: bool = False
) -> tuple[MailedToken, User]:
    """The unused, unexpired token and its account (for its current address); else BAD_USER_INPUT."""
    query = MailedToken.filter(digest=_digest(token), purpose=purpose, used_at=None)
    row = await (query.select_for_update() if lock else query).first()
    user = await User.get_or_none(id=row.user_id) if row is not None else None
    if row is None or user is None or row.expires_at <= await db_now() or row.email != user.email:
        raise BadInput("token", "unknown, used or expired token")
    return row, user


async def use_token(row: MailedToken) -> None:
    """Spend the token (compare-and-set: of two requests with one token, one wins)."""
    if not await MailedToken.filter(id=row.id, used_at=None).update(used_at=await db_now()):
        raise BadInput("token", "unknown, used or expired token")


async def use_token_of_address(row: MailedToken, user: User) -> None:
    """Spend a token mailed to the account's address: it reached that address, so the address counts as
    verified from now on."""
    await use_token(row)
    if user.email_verified_at is None:
        user.email_verified_at = await db_now()
        await User.filter(id=user.id).update(email_verified_at=user.email_verified_at)
