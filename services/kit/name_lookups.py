"""Host name lookups off the event loop, on threads of their own.

getaddrinfo blocks a thread for as long as the resolver takes; a slow or hostile name must never hold a
shared executor (recurrence expansion, message sends), so lookups get a small pool, a cap on how many may
wait for it and a time limit each. The API opens one in its lifespan state.
"""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor


class LookupFailed(Exception):
    """The name has no address we could learn; the message says why, for the user."""


class NameLookups:
    def __init__(self, threads: int = 4, waiting: int = 32) -> None:
        self._executor = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="name-lookup")
        self._capacity = max(1, threads) + max(0, waiting)
        self._in_flight = 0

    async def addresses(self, host: str, port: int, within_seconds: float) -> list[str]:
        """Every address `host` resolves to for a TCP connection to `port`, sorted, without duplicates."""
        if self._in_flight >= self._capacity:
            raise LookupFailed("cannot be checked now: too many lookups at once, try again shortly")
        self._in_flight += 1
        try:
            async with asyncio.timeout(within_seconds):
                infos = await asyncio.get_running_loop().run_in_executor(
                    self._executor, lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                )
        except TimeoutError:
            raise LookupFailed("does not resolve in time") from None
        except (OSError, UnicodeError):
            raise LookupFailed("does not resolve") from None
        finally:
            self._in_flight -= 1
        return sorted({str(info[4][0]) for info in infos})

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
