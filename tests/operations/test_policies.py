"""Settings become policies in policies/ alone, once per process: the chain timing every path uses carries
the configured recurrence budget, and no production module builds a policy of its own (the pump once built
a ChainTiming, and changes it applied ignored PROOFLOOP_RECURRENCE_*)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from policies import archive_store, blob_store, chain_timing, pump_settings
from policies.api import api_policies
from policies.worker import worker_policies
from services.accounts import PasswordHashing
from services.proofs import DecodeGate
from settings import Settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("actors", "resolvers", "schema", "services", "realtime", "web", "observability", "storage")


def test_the_chain_timing_carries_the_configured_budget() -> None:
    settings = Settings(
        recurrence_max_steps=1234,
        recurrence_max_seconds=7.5,
        recurrence_max_per_period=99,
        recurrence_max_skipped_periods=4321,
        link_horizon_seconds=42,
    )
    timing = chain_timing(settings)
    assert timing.link_horizon_seconds == 42
    budget = timing.recurrence
    assert (budget.max_steps, budget.max_seconds, budget.max_per_period, budget.max_skipped_periods) == (
        1234,
        7.5,
        99,
        4321,
    )


def test_the_pump_takes_its_bounds_from_settings() -> None:
    settings = Settings(link_horizon_seconds=42, link_overdue_seconds=3, max_outstanding_links=77)
    pump = pump_settings(settings)
    assert (pump.link_horizon_seconds, pump.link_overdue_seconds, pump.max_outstanding_links) == (42, 3, 77)


def test_no_production_module_builds_a_policy_but_the_composition_root() -> None:
    built = re.compile(
        r"\b(ChainTiming|PumpSettings|RecurrenceBudget|AccountRules|MediaPolicy|DeliveryLimits|DeliveryTiming"
        r"|LoginBackoff|AttemptWindow|ExportRules)\("
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for package in PRODUCTION
        for path in (ROOT / package).rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if built.search(line) and not line.lstrip().startswith("class ")
    ]
    assert offenders == []


def test_each_process_builds_its_policies_from_its_settings() -> None:
    settings = Settings(
        link_horizon_seconds=42,
        commitment_horizon_day_seconds=60,
        password_min_length=17,
        max_image_pixels=1234,
        webhook_concurrency=3,
        webhook_timeout_seconds=2.5,
    )
    store = blob_store(settings)
    api = api_policies(
        settings,
        passwords=PasswordHashing(1, 1, time_cost=1, memory_kib=8),
        decode_gate=DecodeGate(1, 1),
        media_store=store,
    )
    assert (api.chain, api.horizon_day) == (chain_timing(settings), timedelta(seconds=60))
    assert (api.accounts.min_password_length, api.media.max_image_pixels) == (17, 1234)
    assert api.media.store is store
    archives = archive_store(settings)
    worker = worker_policies(settings, store, archives)
    assert (worker.media_store, worker.archives) == (store, archives)
    assert (worker.chain, worker.pump) == (chain_timing(settings), pump_settings(settings))
    assert (worker.webhook_limits.per_process, worker.webhook_timing.attempt_seconds) == (3, 2.5)
