"""The durable-timer layer: rows with fire_at/link_no, links sent after commit in batches, the gatherer
that turns concurrent links into sets, and the claim that hands rows over as they enter the horizon."""

from __future__ import annotations

from services.timers.claims import PumpSettings, TimerKind, take_pump_turn, timer_statements
from services.timers.link_batches import LINK_BATCH, Link, batched_messages
from services.timers.set_gatherer import LinkArgs, SetGatherer, Waiter, hand_back

__all__ = [
    "LINK_BATCH",
    "Link",
    "LinkArgs",
    "PumpSettings",
    "SetGatherer",
    "TimerKind",
    "Waiter",
    "batched_messages",
    "hand_back",
    "take_pump_turn",
    "timer_statements",
]
