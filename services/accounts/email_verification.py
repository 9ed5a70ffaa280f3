"""An address counts once a token mailed to it comes back."""

from __future__ import annotations

from models import MailedTokenPurpose, User
from services.accounts.mailed_tokens import live_token, new_token, use_token_of_address
from services.kit import AttemptWindow, Conflict, write_transaction
from services.mail import messages, queue_mail


async def send_verification(user: User, public_url: str) -> None:
    """Mail a verification token to the user's address, in the caller's transaction."""
    async with write_transaction():
        token = await new_token(user, MailedTokenPurpose.VERIFY_EMAIL)
        await queue_mail(user.email, messages.verify_email(public_url, user.display_name, token))


async def request_email_verification(user: User, *, public_url: str, mail_requests: AttemptWindow) -> None:
    if user.email_verified_at is not None:
        raise Conflict("this address is already verified")
    await mail_requests.count(user.email)
    await send_verification(user, public_url)


async def verify_email(token: str) -> User:
    """Mark the token's account verified; BAD_USER_INPUT for an unknown, used or expired token."""
    async with write_transaction():
        row, user = await live_token(token, MailedTokenPurpose.VERIFY_EMAIL, lock=True)
        await use_token_of_address(row, user)
    return user
