"""The process-wide limit on media decodes: a few run at once, a short queue waits, the rest are refused.

Decoding is the most expensive thing a request can ask for (CPU and, for a photo, up to
PROOFLOOP_MAX_DECODE_BYTES of memory each), so the API holds a bounded number at a time whatever the
number of clients; a request that finds the queue full gets RATE_LIMITED at once instead of waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from services.kit import RateLimited


class DecodeGate:
    def __init__(self, concurrency: int, queue: int) -> None:
        self.concurrency = max(1, concurrency)
        self.queue = max(0, queue)
        self._slots = asyncio.Semaphore(self.concurrency)
        self._holding = 0  # running plus waiting

    @property
    def busy(self) -> int:
        return self._holding

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a decode slot for the block, waiting in the queue if need be; RATE_LIMITED when it is full."""
        if self._holding >= self.concurrency + self.queue:
            raise RateLimited(
                f"too many media uploads are being processed ({self.concurrency} at once, "
                f"{self.queue} waiting); try again shortly"
            )
        self._holding += 1
        try:
            async with self._slots:
                yield
        finally:
            self._holding -= 1
