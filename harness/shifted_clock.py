"""A clock moved for the processes under test (libfaketime), so a test can live through a week's end.

Every process started with `environment` runs `offset` seconds ahead, all of them alike: PostgreSQL's
now(), the API's and the workers' clocks (monotonic ones too, by the same offset, so timeouts and
asyncio keep real durations). The offset is fixed when the processes start, never changed under them.

One thing does not keep its duration: a thread's timed wait (a join, a lock taken with a timeout) sets its
deadline on the moved monotonic clock and the kernel waits for it on the real one, which is months
behind, so it never ends. Dramatiq's graceful stop joins its threads that way and hangs until its
supervisor kills it after its grace; tests on a moved clock kill their worker instead of waiting that out.
"""

from __future__ import annotations

import glob
import time
from datetime import UTC, datetime

LIBRARY = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), None)


class ShiftedClock:
    """Clocks that read `moment` now (give the processes time to start before the moment that matters)."""

    def __init__(self, moment: datetime) -> None:
        self.offset = round((moment - datetime.now(UTC)).total_seconds())

    @property
    def environment(self) -> dict[str, str]:
        if LIBRARY is None:
            raise RuntimeError("libfaketime is not installed (apt-get install faketime)")
        return {"LD_PRELOAD": LIBRARY, "FAKETIME": f"{self.offset:+d}"}

    def now(self) -> datetime:
        """What the shifted processes' clocks read now."""
        return datetime.fromtimestamp(time.time() + self.offset, UTC)

    def seconds_until(self, moment: datetime) -> float:
        return (moment - self.now()).total_seconds()
