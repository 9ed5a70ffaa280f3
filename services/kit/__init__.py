"""Shared infrastructure every domain uses: transactions and after-commit hooks, messages sent after
commit, errors, ids, instants, keyset paging, rate limits, the address checks for outbound calls, and
state kept per event loop (`PerLoop`)."""

from __future__ import annotations

from services.kit.db import as_utc, connection, db_now, is_sqlite, on_commit, write_transaction
from services.kit.errors import (
    BadInput,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    ProofloopError,
    RateLimited,
    ServiceUnavailable,
    Unauthenticated,
)
from services.kit.ids import (
    EVENT_TYPE,
    EventIds,
    decode_id,
    event_ids,
    global_id,
    is_uuid,
    parse_id,
    split_global_id,
)
from services.kit.instants import format_instant
from services.kit.messaging import CHAIN_QUEUE, MAIL_QUEUE, Outgoing, send, send_after_commit
from services.kit.name_lookups import LookupFailed, NameLookups
from services.kit.numbers import whole_number
from services.kit.paging import (
    MAX_PAGE,
    Keyset,
    Page,
    PageRequest,
    SortKey,
    check_page_size,
    keyset_page,
    page_of_rows,
    parse_instant,
    parse_integer,
    parse_uuid,
)
from services.kit.per_loop import PerLoop
from services.kit.public_addresses import is_public_address
from services.kit.rate_limits import AttemptWindow, LoginBackoff, remember_owner_address
from services.kit.signatures import signature, signature_matches

__all__ = [
    "CHAIN_QUEUE",
    "EVENT_TYPE",
    "MAIL_QUEUE",
    "MAX_PAGE",
    "AttemptWindow",
    "BadInput",
    "Conflict",
    "EventIds",
    "Forbidden",
    "Keyset",
    "LoginBackoff",
    "LookupFailed",
    "NameLookups",
    "NotFound",
    "Outgoing",
    "Page",
    "PageRequest",
    "PayloadTooLarge",
    "PerLoop",
    "ProofloopError",
    "RateLimited",
    "ServiceUnavailable",
    "SortKey",
    "Unauthenticated",
    "as_utc",
    "check_page_size",
    "connection",
    "db_now",
    "decode_id",
    "event_ids",
    "format_instant",
    "global_id",
    "is_public_address",
    "is_sqlite",
    "is_uuid",
    "keyset_page",
    "on_commit",
    "page_of_rows",
    "parse_id",
    "parse_instant",
    "parse_integer",
    "parse_uuid",
    "remember_owner_address",
    "send",
    "send_after_commit",
    "signature",
    "signature_matches",
    "split_global_id",
    "whole_number",
    "write_transaction",
]
