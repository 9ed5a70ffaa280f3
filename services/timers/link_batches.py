"""Timer links as Dramatiq messages: one message per link, but links due at the same instant share
messages (a herd then costs one delivery per batch instead of one per row). The chain's links and the
reminders' links both travel this way."""

from __future__ import annotations

from datetime import datetime

from services.kit import Outgoing

# Links due at the same instant travel together, up to this many a message.
LINK_BATCH = 200

Link = tuple[str, int, datetime]  # (row id, link number, fire_at)


def batched_messages(
    rows: list[Link], *, one: str, many: str, per_message: int = LINK_BATCH
) -> list[Outgoing]:
    """`one(id, link_no)` for a link alone at its fire_at; `many([[id, link_no], ...])` for links that
    share one, up to `per_message` each."""
    by_fire_at: dict[datetime, list[tuple[str, int]]] = {}
    for row_id, link_no, fire_at in rows:
        by_fire_at.setdefault(fire_at, []).append((row_id, link_no))
    messages: list[Outgoing] = []
    for fire_at, links in by_fire_at.items():
        if len(links) == 1:
            messages.append(Outgoing(one, links[0], eta=fire_at))
            continue
        for start in range(0, len(links), per_message):
            batch = [[row_id, link_no] for row_id, link_no in links[start : start + per_message]]
            messages.append(Outgoing(many, (batch,), eta=fire_at))
    return messages
