"""When a request arrived, on the database clock: a proof is judged then, not after its body was read.

web/uploads.UploadLimits stamps the monotonic clock as every HTTP request starts; the database clock read
later, less the time since, is the database's time at arrival (without a query per request).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from services.kit import db_now

ARRIVED_MONOTONIC = "arrived_monotonic"  # the key in the request's state


async def arrival_of(state: object) -> datetime:
    """The arrival of the request whose `state` this is (the database clock now, if it was not stamped)."""
    started = getattr(state, ARRIVED_MONOTONIC, None)
    if not isinstance(started, float):
        return await db_now()
    before = time.monotonic()
    now = await db_now()
    elapsed = (before + time.monotonic()) / 2 - started
    return now - timedelta(seconds=max(0.0, elapsed))
