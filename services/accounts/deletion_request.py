"""Asking for an account's deletion, and a sign-in that cancels it.

The deletion waits a grace period (PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS): every device is signed out
now, the address is told when, and signing in before then keeps the account (`login` drops the request).
The deletion itself is the workers' (services/deletion/), once `deletion_due_at` has come.
"""

from __future__ import annotations

from datetime import timedelta

from models import User
from services.accounts.accounts import AccountRules, revoke_tokens
from services.kit import BadInput, db_now, remember_owner_address, write_transaction
from services.mail import queue_mail
from services.mail.messages import deletion_scheduled


async def schedule_deletion(
    user: User, password: str, *, rules: AccountRules, grace_seconds: int, address: str
) -> User:
    # a stolen token must not delete the account, nor become a way to guess its password
    reserved = await rules.login_backoff.reserve(user.email, address)
    if not await rules.passwords.verify(user.password_hash, password):
        raise BadInput("password", "is not your password")
    await remember_owner_address(user.email, address, reserved)
    async with write_transaction():
        row = await User.filter(id=user.id).select_for_update().get()
        if row.deletion_due_at is None:
            row.deletion_due_at = await db_now() + timedelta(seconds=grace_seconds)
            await row.save(update_fields=["deletion_due_at"])
            await queue_mail(row.email, deletion_scheduled(rules.public_url, row.deletion_due_at))
        await revoke_tokens(str(row.id))
    return row
