"""Password rules and argon2, run on an executor of its own with a bounded queue.

A login flood then occupies at most PROOFLOOP_PASSWORD_HASH_THREADS cores (each hash uses one lane), and
anything beyond the queue is refused with RATE_LIMITED instead of slowing every other request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from services.accounts.common_passwords import COMMON_PASSWORDS
from services.kit import BadInput, RateLimited

MAX_PASSWORD_LENGTH = 1024  # long passphrases are welcome; beyond this only the hash cost grows
T = TypeVar("T")


def check_password_policy(password: str, min_length: int, field: str = "password") -> None:
    """At least `min_length` characters, not only whitespace, not one of the most common passwords."""
    if len(password) < min_length:
        raise BadInput(field, f"must be at least {min_length} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise BadInput(field, f"must be at most {MAX_PASSWORD_LENGTH} characters")
    if not password.strip():
        raise BadInput(field, "must not be only whitespace")
    if password.lower() in COMMON_PASSWORDS or password.strip().lower() in COMMON_PASSWORDS:
        raise BadInput(field, "is one of the most common passwords; choose another")


class PasswordHashing:
    """argon2id off the event loop, on `threads` threads, with at most `queue` hashes waiting; each hash
    costs `time_cost` passes over `memory_kib` KiB, on one lane."""

    def __init__(self, threads: int, queue: int, *, time_cost: int, memory_kib: int) -> None:
        self._hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=1)
        self._executor = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="argon2")
        self._capacity = max(1, threads) + max(0, queue)
        self._in_flight = 0
        # unknown emails are checked against this, so a login spends the same argon2 time either way
        self.dummy_hash = self._hasher.hash("proofloop-timing-equaliser")

    async def _run(self, work: Callable[[], T]) -> T:
        if self._in_flight >= self._capacity:
            raise RateLimited("too many password checks at once; try again in a moment", 1)
        self._in_flight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, work)
        finally:
            self._in_flight -= 1

    async def hash(self, password: str) -> str:
        return await self._run(lambda: self._hasher.hash(password))

    async def verify(self, password_hash: str, password: str) -> bool:
        def matches() -> bool:
            try:
                return self._hasher.verify(password_hash, password)
            except (VerificationError, InvalidHashError):
                return False

        return await self._run(matches)

    def needs_rehash(self, password_hash: str) -> bool:
        """Whether a stored hash was made at other costs than this process's (the settings changed)."""
        try:
            return self._hasher.check_needs_rehash(password_hash)
        except InvalidHashError:
            return True

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
