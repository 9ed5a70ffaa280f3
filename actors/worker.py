"""The module `dramatiq` loads in each worker process: the broker with worker resources, then the actors."""

from __future__ import annotations

from actors.broker import configure_broker
from actors.resources import WorkerResources
from actors.watchdog import ConsumerWatchdog
from realtime.redis_options import RedisTimeouts
from runtime import configure_logging
from settings import get_settings

settings = get_settings()
configure_logging(settings)
broker = configure_broker(
    settings.resolved_redis_url,
    [WorkerResources(settings), ConsumerWatchdog(settings.ready_timeout_seconds)],
    RedisTimeouts.of(settings),
)

import actors.chain  # noqa: E402,F401  (actors register on the broker set above)
