"""Forgotten passwords: a single-use token (1 h) mailed to the address; using it ends every session."""

from __future__ import annotations

import logging

from models import MailedTokenPurpose, User
from services.accounts.accounts import AccountRules, Session, normalize_email, set_password
from services.accounts.mailed_tokens import live_token, new_token, use_token_of_address
from services.accounts.passwords import check_password_policy
from services.kit import RateLimited, remember_owner_address, write_transaction
from services.mail import messages, queue_mail

log = logging.getLogger("proofloop.accounts")


async def request_password_reset(email: str, *, rules: AccountRules, address: str) -> None:
    """Mail a reset link, or (unknown address) a note that no account uses it: the same work either way."""
    await rules.per_address.count(address)
    email = normalize_email(email)
    try:
        await rules.mail_requests.count(email)
    except RateLimited:
        # the answer stays the same: an error here would tell which addresses were just asked about
        log.info("password reset mail not sent: this address was sent too many lately")
        return
    async with write_transaction():
        user = await User.get_or_none(email=email)
        if user is None:
            await queue_mail(email, messages.reset_without_account())
            return
        token = await new_token(user, MailedTokenPurpose.RESET_PASSWORD)
        await queue_mail(email, messages.reset_password(rules.public_url, token))


async def reset_password(
    token: str, new_password: str, *, rules: AccountRules, address: str
) -> tuple[Session, str]:
    """Set the password from a mailed token: every token of the account is revoked, a new one returned.

    The mailed token proves the address too, so an unverified account becomes verified."""
    check_password_policy(new_password, rules.min_password_length, "newPassword")
    await live_token(token, MailedTokenPurpose.RESET_PASSWORD)  # before argon2: a wrong token costs nothing
    password_hash = await rules.passwords.hash(new_password)
    async with write_transaction():
        row, user = await live_token(token, MailedTokenPurpose.RESET_PASSWORD, lock=True)
        await use_token_of_address(row, user)
        issued = await set_password(user, password_hash, rules.token_ttl_seconds)
    await remember_owner_address(user.email, address)
    return issued
