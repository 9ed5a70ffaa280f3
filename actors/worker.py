"""The module `dramatiq` loads in each worker process: the broker with worker resources, then the actors."""

from __future__ import annotations

import signal

from actors.broker import configure_broker
from actors.mail_sweep import MailSweep
from actors.resources import WorkerResources
from actors.watchdog import ConsumerWatchdog
from realtime.redis_options import RedisTimeouts
from runtime import configure_logging, die_with_parent, pass_first_signal_only
from settings import get_settings

# Dramatiq's main process asks its worker processes to stop; if it dies without asking, they die too
die_with_parent(signal.SIGKILL)
pass_first_signal_only()  # a stop asked more than once still stops gracefully
settings = get_settings()
configure_logging(settings)
broker = configure_broker(
    settings.resolved_redis_url,
    [WorkerResources(settings), MailSweep(settings), ConsumerWatchdog(settings.ready_timeout_seconds)],
    RedisTimeouts.of(settings),
)

import actors.chain  # noqa: E402  (actors register on the broker set above)
import actors.mail  # noqa: E402
import actors.reminders  # noqa: E402
import actors.webhooks  # noqa: E402,F401
