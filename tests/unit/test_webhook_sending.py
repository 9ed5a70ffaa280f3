"""A worker's webhook bounds (per process, per owner, per host), the retry backoff and its cap, and the
request pinned to the checked address with the URL's own host."""

from __future__ import annotations

from datetime import timedelta

from services.webhooks.addresses import parse_target
from services.webhooks.client import pinned_request
from services.webhooks.outbox import DeliveryTiming
from services.webhooks.sender import DeliveryLimits, DeliverySlots


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


def test_the_process_bound_counts_every_attempt() -> None:
    slots = DeliverySlots(DeliveryLimits(per_process=2, per_user=2, per_host=2, allow_insecure=False))
    assert slots.take_process() and slots.take_process()
    assert not slots.take_process()
    slots.release_process()
    assert slots.take_process()


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
