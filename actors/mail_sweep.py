"""A worker middleware that, every PROOFLOOP_MAIL_SWEEP_SECONDS, resends mail whose message never left,
sends again the build of a data export whose message was lost, removes expired export archives, deletes
the accounts whose deletion has come, and forgets Idempotency-Keys past their keeping time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware

from observability.outages import report_failure
from services.deletion import delete_due_accounts
from services.exports import sweep_exports
from services.idempotency import delete_expired_keys
from services.mail import resend_stranded_mail
from settings import Settings
from storage import ArchiveStore, BlobStore

log = logging.getLogger("proofloop.mail")


class MailSweep(Middleware):
    """Runs on the worker's event loop, after the database is open (added after WorkerDatabase)."""

    def __init__(self, settings: Settings, media: BlobStore, archives: ArchiveStore) -> None:
        self.interval = settings.mail_sweep_seconds
        self.media = media
        self.archives = archives
        self.sweeping: concurrent.futures.Future[None] | None = None

    def after_worker_boot(self, broker: Any, worker: Any) -> None:
        loop_thread = get_event_loop_thread()
        if loop_thread is not None:
            self.sweeping = asyncio.run_coroutine_threadsafe(self._sweep(), loop_thread.loop)

    async def _sweep(self) -> None:
        while True:
            try:
                if resent := await resend_stranded_mail():
                    log.info("resent %d mail messages that never left", resent)
                rebuilt, removed = await sweep_exports(self.archives)
                if rebuilt or removed:
                    log.info("exports: %d builds sent again, %d expired archives removed", rebuilt, removed)
                await delete_due_accounts(self.media, self.archives)
                await delete_expired_keys()
            except Exception as exc:
                report_failure(log, "mail sweep", exc, "mail sweep failed; retrying on the next one")
            await asyncio.sleep(self.interval)

    def before_worker_shutdown(self, broker: Any, worker: Any) -> None:
        if self.sweeping is not None:
            self.sweeping.cancel()
            concurrent.futures.wait([self.sweeping], timeout=5)
