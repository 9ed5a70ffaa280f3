"""Events become webhook deliveries, for everyone who may read them.

Every committed event has a position (services/feed/events.py), given in commit order in one serialized
step. A single cursor row (`webhook_fanout`) records the position up to which events have been turned into
deliveries; each pass locks it, reads the next events, writes one delivery per event and subscribed webhook
of each reader (`partners.readers_of`: the `events` access rule, so a partner's webhook never carries an
event the partner could not read through the API), and moves the cursor, in one transaction: an event is
fanned out exactly once, whichever worker's pump gets there first. A reader inside their quiet hours gets
the delivery at the hours' end (services/webhooks/quiet.py). DUE_SOON is the exception: a reminder
writes its deliveries with its own event (services/webhooks/webhooks.py), so they leave at its moment.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from datetime import datetime

from models import Event, EventType, Webhook, WebhookFanout
from services.kit import EventIds, db_now, format_instant, global_id, is_sqlite, write_transaction
from services.partners import readers_of
from services.webhooks.outbox import NewDelivery, queue_deliveries
from services.webhooks.quiet import quiet_ends
from services.webhooks.subscriptions import subscribed_types

# events a pass reads at most; a longer backlog takes several passes of one transaction each
FANOUT_BATCH = 500
CURSOR_ID = 1


async def fan_out_events(ids: EventIds) -> int:
    """Fan out every event positioned after the cursor; how many events were passed."""
    total = 0
    while (passed := await _fan_out_batch(ids)) == FANOUT_BATCH:
        total += passed
    return total + passed


async def _fan_out_batch(ids: EventIds) -> int:
    async with write_transaction():
        cursor_rows = WebhookFanout.filter(id=CURSOR_ID)
        # another process mid-pass holds it: that pass covers these events (SQLite has one writer anyway)
        locked = cursor_rows if is_sqlite() else cursor_rows.select_for_update(skip_locked=True)
        cursor = await locked.first()
        if cursor is None:
            return 0
        events = (
            await Event.filter(position__gt=cursor.position)
            .order_by("position")
            .limit(FANOUT_BATCH)
            .select_related("task", "instance", "user")
        )
        if not events:
            return 0
        wanted = [e for e in events if e.type is not EventType.DUE_SOON]
        readers = await readers_of(wanted)
        hooks = await _hooks_of({reader for ids_ in readers.values() for reader in ids_})
        now = await db_now()
        quiet = await quiet_ends(set(hooks), now)
        deliveries = [
            _delivery(event, hook_id, reader, ids, now, quiet.get(reader))
            for event in wanted
            for reader in sorted(readers[str(event.id)])
            for hook_id, types in hooks.get(reader, [])
            if event.type in types
        ]
        await queue_deliveries(deliveries, now)
        cursor.position = events[-1].position or cursor.position
        await cursor.save(update_fields=["position"])
    return len(events)


async def _hooks_of(user_ids: set[str]) -> dict[str, list[tuple[str, frozenset[EventType]]]]:
    hooks: dict[str, list[tuple[str, frozenset[EventType]]]] = defaultdict(list)
    if not user_ids:
        return hooks
    rows = await Webhook.filter(owner_id__in=sorted(user_ids)).values_list("owner_id", "id", "event_types")
    for owner_id, hook_id, types in rows:
        hooks[str(owner_id)].append((str(hook_id), subscribed_types(types)))
    return hooks


def _delivery(
    event: Event, hook_id: str, reader: str, ids: EventIds, now: datetime, quiet_until: datetime | None
) -> NewDelivery:
    delivery_id = str(uuid.uuid4())  # in the payload too, so it is signed with it
    owner = str(event.user_id)
    payload = {
        "type": event.type.value,
        "deliveryId": delivery_id,
        "occurredAt": format_instant(event.occurred_at),
        "sentFor": format_instant(now),
        # who this delivery is for: a push gateway serving many users routes on it
        "recipient": {"id": global_id("User", reader), "role": "OWNER" if reader == owner else "PARTNER"},
        # the opaque id the API shows: the bare position would tell the platform's volume and order
        "event": {"id": ids.encode(event.position or 0)},
        "user": {"id": global_id("User", owner), "displayName": event.user.display_name},
        "task": {"id": global_id("Task", event.task_id), "title": event.task_title},
        "instance": {
            "id": global_id("TaskInstance", event.instance_id),
            "status": event.instance_status.value,
            "dueAt": format_instant(event.due_at),
        },
        "verification": (
            {"id": global_id("Verification", event.verification_id)} if event.verification_id else None
        ),
    }
    body = json.dumps(payload, separators=(",", ":"))
    return NewDelivery(delivery_id, hook_id, body, event.type.value, fire_at=quiet_until)
