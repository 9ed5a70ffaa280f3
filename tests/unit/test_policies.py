"""Settings become policies in policies.py alone: the chain timing every path uses carries the configured
recurrence budget, and no production module builds a ChainTiming of its own (the pump once did, and
changes it applied ignored PROOFLOOP_RECURRENCE_*)."""

from __future__ import annotations

import re
from pathlib import Path

from policies import chain_timing, pump_settings
from settings import Settings

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


def test_no_production_module_builds_a_chain_timing_from_settings() -> None:
    built = re.compile(r"\bChainTiming\(\s*(get_)?settings\b")
    offenders = [
        str(path.relative_to(ROOT))
        for package in PRODUCTION
        for path in (ROOT / package).rglob("*.py")
        if built.search(path.read_text())
    ]
    assert offenders == []
