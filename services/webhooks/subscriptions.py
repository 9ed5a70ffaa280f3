"""Which events a webhook receives: EventType names stored comma-separated on the row."""

from __future__ import annotations

from collections.abc import Iterable

from models import EventType
from services.kit import BadInput

# a webhook registered without a choice receives the owner's reminders, as every webhook once did
DEFAULT_TYPES = (EventType.DUE_SOON,)


def stored_types(types: Iterable[EventType] | None, field: str) -> str:
    chosen = sorted({EventType(t) for t in (DEFAULT_TYPES if types is None else types)})
    if not chosen:
        raise BadInput(field, "must name at least one event type")
    return ",".join(t.value for t in chosen)


def subscribed_types(stored: str) -> frozenset[EventType]:
    return frozenset(EventType(name) for name in stored.split(",") if name in EventType.__members__)
