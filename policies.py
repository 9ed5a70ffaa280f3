"""Settings turned into the policies the services take, in one place: every path that plans, fires or
pumps gets the configured limits (the recurrence budget above all), never a default built on the spot."""

from __future__ import annotations

from services.chain import ChainTiming
from services.schedules import recurrence_budget
from services.timers import PumpSettings
from settings import Settings


def chain_timing(settings: Settings) -> ChainTiming:
    """How far ahead links are sent, and how much work one recurrence call may do."""
    return ChainTiming(settings.link_horizon_seconds, recurrence_budget(settings))


def pump_settings(settings: Settings) -> PumpSettings:
    return PumpSettings(
        link_horizon_seconds=settings.link_horizon_seconds,
        link_overdue_seconds=settings.link_overdue_seconds,
        max_outstanding_links=settings.max_outstanding_links,
    )
