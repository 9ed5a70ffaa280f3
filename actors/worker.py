"""The module `dramatiq` loads in each worker process: the broker, one middleware per resource or loop, then
the actors. Middleware boots in this order and shuts down in the reverse one, so the event loop opens first
and stops last, and the pump and sweeps stop before the database and Redis close."""

from __future__ import annotations

import signal

from dramatiq.middleware.asyncio import AsyncIO

from actors.broker import configure_broker
from actors.database import WorkerDatabase
from actors.mail_sweep import MailSweep
from actors.notices import WorkerNotices
from actors.poll_interval import PollInterval
from actors.pump_loop import PumpLoop
from actors.watchdog import ConsumerWatchdog
from actors.webhook_sending import WebhookSending
from actors.worker_policies import PolicyHolder
from policies import archive_store, blob_store
from policies.worker import worker_policies
from realtime.redis_options import RedisTimeouts
from runtime import configure_logging, die_with_parent, pass_first_signal_only
from settings import get_settings

# Dramatiq's main process asks its worker processes to stop; if it dies without asking, they die too
die_with_parent(signal.SIGKILL)
pass_first_signal_only()  # a stop asked more than once still stops gracefully
settings = get_settings()
configure_logging(settings)
# the settings turned into policies, once
policies = worker_policies(settings, blob_store(settings), archive_store(settings))
broker = configure_broker(
    settings.resolved_redis_url,
    [
        PollInterval(settings.worker_poll_milliseconds),
        PolicyHolder(policies),
        AsyncIO(),  # the one event-loop thread every async actor and resource below runs on
        WorkerDatabase(settings),
        WorkerNotices(settings),
        WebhookSending(policies),  # its attempts stop before the database closes
        PumpLoop(policies),
        MailSweep(settings, policies.media_store, policies.archives),
        ConsumerWatchdog(settings.ready_timeout_seconds),
    ],
    RedisTimeouts.of(settings),
)

import actors.chain  # noqa: E402  (actors register on the broker set above)
import actors.exports  # noqa: E402
import actors.mail  # noqa: E402
import actors.reminders  # noqa: E402
import actors.webhooks  # noqa: E402,F401
