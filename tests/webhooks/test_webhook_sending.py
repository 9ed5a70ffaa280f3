"""A worker's webhook bounds (per process, per owner, per host), the retry backoff and its cap, and the
request pinned to the checked address with the URL's own host."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from services.webhooks.addresses import parse_target
from services.webhooks.client import pinned_request
from services.webhooks.outbox import DeliveryTiming
from services.webhooks.sender import ADMIT_BACKLOG, DeliveryLimits, DeliverySlots

pytestmark = pytest.mark.unit


def test_an_owner_or_a_host_at_its_bound_waits_while_others_go_on() -> None:
    slots = DeliverySlots(DeliveryLimits(per_process=3, per_user=2, per_host=2, allow_insecure=False))
    assert slots.take_lane("ann", "a.example") and slots.take_lane("ann", "b.example")
    assert not slots.take_lane("ann", "c.example")  # ann's two are in flight
    assert slots.take_lane("bob", "a.example")
    assert not slots.take_lane("carol", "a.example")  # a.example's two are in flight, whoever the owner
    assert slots.take_lane("bob", "c.example")
    slots.release_lane("ann", "b.example")
    assert slots.take_lane("ann", "c.example")
    assert slots.per_user["ann"] == 2 and "b.example" not in slots.per_host


def test_the_process_admits_its_bound_and_a_backlog_then_refuses() -> None:
    slots = DeliverySlots(DeliveryLimits(per_process=2, per_user=2, per_host=2, allow_insecure=False))
    admitted = 2 * (1 + ADMIT_BACKLOG)  # two attempting, the rest waiting for a slot
    assert all(slots.take_process() for _ in range(admitted))
    assert not slots.take_process()
    slots.release_process()
    assert slots.take_process()


async def test_a_busy_lane_is_waited_for_briefly_by_as_many_as_the_host_has_lanes() -> None:
    slots = DeliverySlots(DeliveryLimits(per_process=8, per_user=4, per_host=2, allow_insecure=False))
    assert slots.take_lane("ann", "a.example") and slots.take_lane("bob", "a.example")
    first = asyncio.create_task(slots.wait_lane("carol", "a.example", within=5))
    second = asyncio.create_task(slots.wait_lane("dave", "a.example", within=0.2))
    await asyncio.sleep(0.05)
    # a third waiter for the host is refused at once: one host holds at most twice its lanes
    assert await slots.wait_lane("erin", "a.example", within=5) is False
    assert await second is False  # nothing freed within its wait
    slots.release_lane("ann", "a.example")
    assert await asyncio.wait_for(first, 1) is True
    assert slots.per_user["carol"] == 1 and slots.per_host["a.example"] == 2 and not slots.waiting


def test_retries_double_up_to_the_cap() -> None:
    timing = DeliveryTiming(
        attempt_seconds=5,
        max_attempts=8,
        backoff_seconds=10,
        backoff_max_seconds=60,
        link_horizon_seconds=300,
    )
    assert [timing.backoff(n) for n in (1, 2, 3, 4, 5)] == [
        timedelta(seconds=s) for s in (10, 20, 40, 60, 60)
    ]


def test_the_request_goes_to_the_checked_address_under_the_urls_own_host() -> None:
    target = parse_target("https://hooks.example.com:8443/in/tâche?x=1", allow_insecure=False)
    url, host = pinned_request(target, "2001:4860:4860::8888")
    assert str(url) == "https://[2001:4860:4860::8888]:8443/in/t%C3%A2che?x=1"
    assert host == "hooks.example.com:8443"
    url, host = pinned_request(parse_target("https://hooks.example.com/", allow_insecure=False), "8.8.8.8")
    assert (str(url), host) == ("https://8.8.8.8/", "hooks.example.com")
