"""A worker process's webhook attempts: each runs as an asyncio task of its own, so the Dramatiq thread
that received its message is free again at once (a receiver holds no thread the chain needs), within a
bound per process, per owner and per destination host, and within one deadline per attempt.

Up to ADMIT_BACKLOG times the process's bound of deliveries wait in memory for an attempt slot (their rows
stay owed: a crash loses nothing the pump does not resend). A delivery that finds its owner's or host's
lanes busy waits for one briefly (LANE_WAIT_SECONDS, at most
as many waiting per host as the host has lanes, so one host never holds more than twice its lanes of the
process's slots): a push gateway that answers in milliseconds takes a burst at its lanes' pace. Past that
wait, and whenever the process is full, a delivery is put off (owed again shortly, with a new link), not
queued in memory; no failure of any kind leaves an attempt unrecorded or raises out of it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

from models import DeliveryStatus, Transport, Webhook, WebhookDelivery
from observability.metrics import count_webhook_delivery
from services.kit import NameLookups, signature
from services.webhooks.addresses import RefusedAddress, Target, parse_target, resolve_checked
from services.webhooks.client import Answer, UnsendableUrl, post_pinned
from services.webhooks.native_push import NativePush
from services.webhooks.outbox import (
    DeliveryTiming,
    finish,
    owed_delivery,
    put_off,
    retry_later,
    take_for_attempt,
)
from services.webhooks.web_push import BrowserKeys, VapidIdentity, push_request
from services.webhooks.webhooks import DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER

log = logging.getLogger("proofloop.webhooks")

# a delivery over a bound is owed again this much later (slots free within one attempt's deadline),
# doubling each time it finds none, up to the longest wait
BUSY_FIRST_WAIT_SECONDS = 1.0
BUSY_LONGEST_WAIT_SECONDS = 30.0
# how long a delivery holding a process slot waits for its owner's or host's lane before it is put off
LANE_WAIT_SECONDS = 2.0
# deliveries admitted beyond those attempting, as a multiple of the per-process bound: a burst (a herd's
# notices) waits its turn in memory instead of being put off and linked again row by row
ADMIT_BACKLOG = 64
# what a phone should show at once, even in power saving (Web Push Urgency: high)
URGENT_KINDS = frozenset({"REVIEW_REQUESTED", "APPEAL_REQUESTED", "DUE_SOON"})
# what each push service answers for a subscription or device it no longer knows: it is removed
GONE: dict[Transport, tuple[int, ...]] = {
    Transport.WEB_PUSH: (404, 410),
    Transport.APNS: (410,),  # Unregistered
    Transport.FCM: (404,),  # UNREGISTERED
}


@dataclass(frozen=True)
class DeliveryLimits:
    per_process: int
    per_user: int
    per_host: int
    allow_insecure: bool
    web_push: VapidIdentity | None = None  # how Web Push deliveries identify this deployment
    native: NativePush = field(default_factory=NativePush)  # APNs and FCM, where set up


class DeliverySlots:
    """Counts of attempts in flight: in the process, per owner, per host."""

    def __init__(self, limits: DeliveryLimits) -> None:
        self.limits = limits
        self.in_process = 0
        self.per_user: Counter[str] = Counter()
        self.per_host: Counter[str] = Counter()
        self.waiting: Counter[str] = Counter()  # deliveries waiting for a lane, per host
        self._freed: asyncio.Event | None = None  # made on the loop that first waits

    def take_process(self) -> bool:
        """Admit one more delivery: up to `per_process` attempting and ADMIT_BACKLOG times that waiting
        for an attempt slot (ids held in memory; their rows stay owed in the database, so a crash loses
        nothing the pump does not resend)."""
        if self.in_process >= self.limits.per_process * (1 + ADMIT_BACKLOG):
            return False
        self.in_process += 1
        return True

    def release_process(self) -> None:
        self.in_process -= 1

    def take_lane(self, user: str, host: str) -> bool:
        if self.per_user[user] >= self.limits.per_user or self.per_host[host] >= self.limits.per_host:
            return False
        self.per_user[user] += 1
        self.per_host[host] += 1
        return True

    def release_lane(self, user: str, host: str) -> None:
        self.per_user[user] -= 1
        self.per_host[host] -= 1
        if not self.per_user[user]:
            del self.per_user[user]
        if not self.per_host[host]:
            del self.per_host[host]
        if self._freed is not None:
            self._freed.set()  # every waiter looks again

    async def wait_lane(self, user: str, host: str, within: float) -> bool:
        """take_lane, waiting up to `within` seconds for one to free; False when none did, or when the
        host already has as many deliveries waiting as it has lanes."""
        if self.take_lane(user, host):
            return True
        if self.waiting[host] >= self.limits.per_host:
            return False
        if self._freed is None:
            self._freed = asyncio.Event()
        self.waiting[host] += 1
        try:
            async with asyncio.timeout(within):
                while True:
                    self._freed.clear()  # before the look: a lane freed after it sets the event again
                    if self.take_lane(user, host):
                        return True
                    await self._freed.wait()
        except TimeoutError:
            return False
        finally:
            self.waiting[host] -= 1
            if not self.waiting[host]:
                del self.waiting[host]


class WebhookSender:
    def __init__(self, limits: DeliveryLimits, timing: DeliveryTiming) -> None:
        self.slots = DeliverySlots(limits)
        self.timing = timing
        self.allow_insecure = limits.allow_insecure
        self.web_push = limits.web_push
        self.native = limits.native
        self.tls = ssl.create_default_context()  # loading the CA store costs milliseconds: once per process
        self.lookups = NameLookups()  # threads of their own: a slow resolver holds none the chain uses
        self.tasks: set[asyncio.Task[None]] = set()
        self.attempting = asyncio.Semaphore(limits.per_process)

    async def admit(self, delivery_id: str, link_no: int) -> None:
        """The actor's whole work: start the attempt in the background, or put it off when the process is
        full. Never raises: the row stays owed and the pump resends it."""
        try:
            if not self.slots.take_process():
                await put_off(delivery_id, link_no, BUSY_FIRST_WAIT_SECONDS, BUSY_LONGEST_WAIT_SECONDS)
                return
            task = asyncio.create_task(self._deliver(delivery_id, link_no))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        except Exception:
            log.exception("webhook delivery %s could not start; the pump resends it", delivery_id)

    async def close(self) -> None:
        """At shutdown: attempts still in flight stop; their rows stay owed and are resent by the pump."""
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=2)
        self.lookups.close()

    async def _deliver(self, delivery_id: str, link_no: int) -> None:
        try:
            async with self.attempting:
                delivery = await owed_delivery(delivery_id, link_no)
                if delivery is not None:
                    await self._deliver_owed(delivery)
        except Exception:
            log.exception("webhook delivery %s failed unexpectedly; the pump resends it", delivery_id)
        finally:
            self.slots.release_process()

    async def _deliver_owed(self, delivery: WebhookDelivery) -> None:
        hook = delivery.webhook
        try:
            target = parse_target(self._destination(hook), allow_insecure=self.allow_insecure)
        except RefusedAddress as exc:
            if await take_for_attempt(delivery, self.timing):
                await self._refused(delivery, str(exc))
            return
        user, host = str(hook.owner_id), target.host.lower()
        if not await self.slots.wait_lane(user, host, LANE_WAIT_SECONDS):
            await put_off(
                str(delivery.id), delivery.link_no, BUSY_FIRST_WAIT_SECONDS, BUSY_LONGEST_WAIT_SECONDS
            )
            return
        try:
            if await take_for_attempt(delivery, self.timing):
                await self._attempt(delivery, target)
        finally:
            self.slots.release_lane(user, host)

    async def _attempt(self, delivery: WebhookDelivery, target: Target) -> None:
        """One attempt, recorded whatever happens: delivered, retried later, given up or refused."""
        hook = delivery.webhook
        deadline = self.timing.attempt_seconds
        try:
            async with asyncio.timeout(deadline):  # lookup, connect, TLS, headers and body, all in one
                # resolved and checked again now: the name may point elsewhere than at registration
                body, headers = await self._request(delivery)
                address = await resolve_checked(
                    target, self.lookups, allow_insecure=self.allow_insecure, within_seconds=deadline
                )
                http2 = hook.transport is Transport.APNS  # Apple speaks nothing else
                answer = await post_pinned(target, address, body, headers, tls=self.tls, http2=http2)
        except RefusedAddress as exc:
            await self._refused(delivery, str(exc))
            return
        except UnsendableUrl as exc:
            await self._given_up(delivery, f"the URL cannot be sent: {exc}")
            return
        except TimeoutError:
            answer, error = Answer(0), f"no complete answer within {deadline:g} s"
        except (httpx.HTTPError, OSError) as exc:
            answer, error = Answer(0), type(exc).__name__
        except Exception as exc:  # whatever it was, the attempt counts: retried, then given up
            log.exception("webhook attempt failed unexpectedly", extra={"delivery_id": str(delivery.id)})
            answer, error = Answer(0), type(exc).__name__
        else:
            error = f"HTTP {answer.status}"
        if answer.status in GONE.get(hook.transport, ()):
            # the browser unsubscribed (or its subscription expired): the push service will never take it
            await Webhook.filter(id=hook.id).delete()  # its deliveries go with it
            count_webhook_delivery("gone")
            log.info(
                "push subscription gone (HTTP %d): removed", answer.status, extra={"webhook_id": str(hook.id)}
            )
            return
        if answer.delivered:
            await finish(delivery, DeliveryStatus.DELIVERED, None)
            count_webhook_delivery("delivered")
        elif delivery.attempts >= self.timing.max_attempts:
            await self._given_up(delivery, error)
        else:
            wait = await retry_later(delivery, self.timing, error)
            count_webhook_delivery("failed")
            log.info(
                "webhook attempt %d failed (%s); next in %s",
                delivery.attempts,
                error,
                wait,
                extra={"webhook_id": str(hook.id), "delivery_id": str(delivery.id)},
            )

    def _destination(self, hook: Webhook) -> str:
        """Where an attempt is POSTed: the webhook's URL or the browser's push endpoint; for a device,
        its platform's API (set up by the operator: a device of one that is not is never sent to)."""
        if hook.transport is Transport.APNS:
            if self.native.apns is None:
                raise RefusedAddress("APNs is not set up on this deployment (PROOFLOOP_APNS_KEY)")
            return self.native.apns.endpoint(hook.url)
        if hook.transport is Transport.FCM:
            if self.native.fcm is None:
                raise RefusedAddress("FCM is not set up on this deployment (PROOFLOOP_FCM_SERVICE_ACCOUNT)")
            return self.native.fcm.endpoint()
        return hook.url

    async def _request(self, delivery: WebhookDelivery) -> tuple[bytes, dict[str, str]]:
        """The body and headers of an attempt: signed JSON for a webhook, an encrypted message for a
        browser's push service, a notification for a device."""
        hook, body = delivery.webhook, delivery.body.encode()
        urgent = delivery.kind in URGENT_KINDS
        if hook.transport is Transport.APNS and self.native.apns is not None:
            _, message, headers = self.native.apns.request(hook.url, body, str(delivery.id), urgent)
            return message, headers
        if hook.transport is Transport.FCM and self.native.fcm is not None:
            _, message, headers = await self.native.fcm.request(hook.url, body, urgent)
            return message, headers
        if hook.transport is Transport.WEB_PUSH:
            if self.web_push is None:
                raise RuntimeError("a Web Push delivery needs the worker's VAPID identity (DeliveryLimits)")
            return push_request(body, BrowserKeys.read(hook.secret), hook.url, self.web_push, urgent)
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Proofloop-Webhook/1",
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: signature(hook.secret, timestamp, body),
            DELIVERY_HEADER: str(delivery.id),
        }
        return body, headers

    async def _refused(self, delivery: WebhookDelivery, why: str) -> None:
        await finish(delivery, DeliveryStatus.REFUSED, why[:200])
        count_webhook_delivery("refused")
        log.warning("webhook refused: %s", why, extra={"webhook_id": str(delivery.webhook.id)})

    async def _given_up(self, delivery: WebhookDelivery, why: str) -> None:
        await finish(delivery, DeliveryStatus.GIVEN_UP, why[:200])
        count_webhook_delivery("given_up")
        log.warning(
            "webhook given up after %d attempts (%s)",
            delivery.attempts,
            why,
            extra={"webhook_id": str(delivery.webhook.id), "delivery_id": str(delivery.id)},
        )
