"""Prometheus metrics: the API's /metrics, the worker's own endpoint, and `serve --workers 2` summing both."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator

import httpx
import pytest
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from prometheus_client.parser import text_string_to_metric_families

from harness.chain_support import create_short_task, eventually
from harness.mailbox import Mailbox
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port

API_METRICS = (
    "proofloop_graphql_operation_duration_seconds",
    "proofloop_open_subscriptions",
    "proofloop_events_published",
    "proofloop_settlements",
    "proofloop_link_lateness_seconds",
)


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


def family_names(text: str) -> set[str]:
    return {family.name for family in text_string_to_metric_families(text)}


def scrape(url: str) -> str:
    response = httpx.get(url, timeout=5)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


@pytest.fixture
def fresh_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    """An API process of its own: the run's may have labelled its 200 operation names already, after
    which every new name counts as "other"."""
    with ServerProcess(service_env, port=free_port()) as proc:
        yield proc


async def test_api_metrics_name_every_signal_after_a_request(
    fresh_server: ServerProcess, mailbox: Mailbox
) -> None:
    async with ApiClient(fresh_server.url, mailbox) as api:
        token, _ = await api.register()
        await api.execute("query MetricsProbe { me { id } }", token=token)

    text = scrape(f"{fresh_server.url}/metrics")

    assert set(API_METRICS) <= family_names(text)
    probe = {"operation_name": "MetricsProbe", "operation_type": "query"}
    assert value(text, "proofloop_graphql_operation_duration_seconds_count", **probe) >= 1


async def test_worker_metrics_count_a_chain_settlement(
    worker: WorkerProcess, api: ApiClient, service_env: dict[str, str]
) -> None:
    url = f"http://127.0.0.1:{service_env['PROOFLOOP_WORKER_METRICS_PORT']}/metrics"
    before = scrape(url)
    token, _ = await api.register()

    await create_short_task(api, token, title="Metrics")

    def grew(now: str, name: str, **labels: str) -> bool:
        return value(now, name, **labels) > value(before, name, **labels)

    async def settled_timed_and_planned() -> bool:
        # the worker is the run's: another test's task may settle meanwhile, so all three must grow, the
        # last only by this recurring task's next instance, planned by the settlement that missed it
        now = scrape(url)
        return (
            grew(now, "proofloop_settlements_total", outcome="missed")
            and grew(now, "proofloop_link_lateness_seconds_count")
            and grew(now, "proofloop_links_sent_total", source="chain")
        )

    await eventually(
        settled_timed_and_planned,
        timeout=30,
        what="a MISSED settlement and its next link in the worker's metrics",
    )
    assert "proofloop_pump_backlog" in family_names(scrape(url))


def test_serve_with_two_workers_answers_sums_metrics_and_stops(service_env: dict[str, str]) -> None:
    with ServerProcess(service_env, port=free_port(), workers=2) as server:
        assert httpx.get(f"{server.url}/healthz", timeout=5).json() == {"status": "ok"}
        name = f"Probe{uuid.uuid4().hex[:8]}"
        for _ in range(12):
            response = httpx.post(
                f"{server.url}/graphql", json={"query": f"query {name} {{ __typename }}"}, timeout=5
            )
            assert response.json() == {"data": {"__typename": "Query"}}

        text = scrape(f"{server.url}/metrics")

        # each request was timed by whichever process took it; the exposition sums the processes' files
        probe = {"operation_name": name, "operation_type": "query"}
        assert value(text, "proofloop_graphql_operation_duration_seconds_count", **probe) == 12

    # a SIGTERM stops the supervisor and both workers, within its bound, without the harness's SIGKILL
    assert server.proc is not None and server.proc.returncode == 0, server.log()


async def test_open_subscriptions_are_counted(service_env: dict[str, str]) -> None:
    with ServerProcess(service_env, port=free_port()) as server:  # its own: no other test's sockets
        async with ApiClient(server.url) as api:
            token, _ = await api.register()
        assert value(scrape(f"{server.url}/metrics"), "proofloop_open_subscriptions") == 0
        transport = WebsocketsTransport(
            url=server.url.replace("http", "ws") + "/graphql",
            init_payload={"Authorization": f"Bearer {token}"},
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        )
        async with Client(transport=transport) as session:
            stream = session.subscribe(gql("subscription { verificationEvents { id } }"))
            pending = asyncio.ensure_future(stream.__anext__())

            async def counted() -> bool:
                return value(scrape(f"{server.url}/metrics"), "proofloop_open_subscriptions") == 1

            await eventually(counted, timeout=10, what="the open subscription counted")
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await pending

        async def released() -> bool:
            return value(scrape(f"{server.url}/metrics"), "proofloop_open_subscriptions") == 0

        await eventually(released, timeout=10, what="the closed subscription released")


async def test_settled_subscriptions_are_frozen_out_of_full_collections(service_env: dict[str, str]) -> None:
    """web/heap.py: once a burst of subscriptions settles, the API freezes them (the gauge says how many
    objects full collections now skip); without it, a full collection at 10,000 subscriptions stops the
    loop for most of a second."""
    env = {**service_env, "PROOFLOOP_GC_FREEZE_AFTER_SUBSCRIPTIONS": "5"}
    with ServerProcess(env, port=free_port()) as server:
        async with ApiClient(server.url) as client:
            token, _ = await client.register()
        start_up = value(scrape(f"{server.url}/metrics"), "proofloop_gc_frozen_objects")
        assert start_up > 0  # start-up's objects, frozen once
        url = server.url.replace("http://", "ws://") + "/graphql"
        transport = WebsocketsTransport(url=url, init_payload={"Authorization": f"Bearer {token}"})
        async with Client(transport=transport) as session:
            feeds = [session.subscribe(gql("subscription { verificationEvents { id } }")) for _ in range(6)]
            readers = [asyncio.create_task(anext(feed)) for feed in feeds]
            try:

                async def gauge(name: str) -> float:
                    return value(await asyncio.to_thread(scrape, f"{server.url}/metrics"), name)

                async def subscribed() -> bool:
                    return await gauge("proofloop_open_subscriptions") == 6

                async def frozen() -> bool:
                    return await gauge("proofloop_gc_frozen_objects") > start_up

                await eventually(subscribed, 20, "6 subscriptions registered")
                await eventually(frozen, 10, "the settled subscriptions frozen")
            finally:
                for reader in readers:
                    reader.cancel()
