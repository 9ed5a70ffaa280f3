"""The per-request (per-socket for subscriptions) context: settings, the caller, fresh DataLoaders."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.dataloader import DataLoader
from strawberry.types import Info as StrawberryInfo

from models import Task, TaskInstance, User, Verification
from services.accounts import Session, authenticate, bearer_token
from services.db import db_now
from services.decode_gate import DecodeGate
from services.errors import BadInput, Unauthenticated
from services.passwords import PasswordHashing
from settings import Settings

# request.state key: time.monotonic() when the request started (set by web/uploads.UploadLimits)
ARRIVED_MONOTONIC = "arrived_monotonic"


async def _by_id(model: Any, keys: Sequence[str]) -> list[Any]:
    rows = {str(row.id): row for row in await model.filter(id__in=list(keys))}
    return [rows.get(key) for key in keys]


async def _load_users(keys: list[str]) -> list[User | None]:
    return await _by_id(User, keys)


async def _load_tasks(keys: list[str]) -> list[Task | None]:
    return await _by_id(Task, keys)


async def _load_instances(keys: list[str]) -> list[TaskInstance | None]:
    return await _by_id(TaskInstance, keys)


async def _load_verifications(keys: list[str]) -> list[Verification | None]:
    return await _by_id(Verification, keys)


async def _load_verifications_of_instances(keys: list[str]) -> list[list[Verification]]:
    grouped: dict[str, list[Verification]] = defaultdict(list)
    for row in await Verification.filter(instance_id__in=keys).order_by("submitted_at", "id"):
        grouped[str(row.instance_id)].append(row)
    return [grouped[key] for key in keys]


@dataclass
class Loaders:
    user: DataLoader[str, User | None] = field(default_factory=lambda: DataLoader(load_fn=_load_users))
    task: DataLoader[str, Task | None] = field(default_factory=lambda: DataLoader(load_fn=_load_tasks))
    instance: DataLoader[str, TaskInstance | None] = field(
        default_factory=lambda: DataLoader(load_fn=_load_instances)
    )
    verification: DataLoader[str, Verification | None] = field(
        default_factory=lambda: DataLoader(load_fn=_load_verifications)
    )
    verifications_of_instance: DataLoader[str, list[Verification]] = field(
        default_factory=lambda: DataLoader(load_fn=_load_verifications_of_instances)
    )


@dataclass
class Context:
    request: Request | WebSocket
    response: Response | WebSocket | None
    settings: Settings
    passwords: PasswordHashing
    decode_gate: DecodeGate
    loaders: Loaders = field(default_factory=Loaders)
    connection_params: dict[str, Any] | None = None
    session: Session | None = None
    _now: datetime | None = None
    upcoming_spent: int = 0  # due times `upcoming` computed for this request (PROOFLOOP_UPCOMING_PER_REQUEST)

    def token(self) -> str | None:
        if self.connection_params is not None:
            params = self.connection_params
            return bearer_token(params.get("Authorization") or params.get("authorization"))
        return bearer_token(self.request.headers.get("authorization"))

    async def authenticate(self) -> Session:
        """The caller's session (cached for the request); UNAUTHENTICATED without a valid token."""
        if self.session is None:
            # the upload guard authenticates multipart requests before they are read: no second lookup
            self.session = getattr(self.request.state, "session", None)
        if self.session is None:
            token = self.token()
            if token is None:
                raise Unauthenticated("an Authorization: Bearer <token> header is required")
            self.session = await authenticate(token, token_ttl_seconds=self.settings.token_ttl_seconds)
        return self.session

    async def session_or_none(self) -> Session | None:
        """The caller's session, or None for an anonymous caller (a public field asking who reads it)."""
        if (
            self.session is None
            and self.token() is None
            and getattr(self.request.state, "session", None) is None
        ):
            return None
        return await self.authenticate()

    def client_address(self) -> str:
        """The caller's address (uvicorn has already applied X-Forwarded-For from trusted proxies only)."""
        client = self.request.client
        return client.host if client is not None else "unknown"

    async def viewer(self) -> User:
        return (await self.authenticate()).user

    async def now(self) -> datetime:
        """The database clock, read once per request (isOpen of a page of instances asks it many times)."""
        if self._now is None:
            self._now = await db_now()
        return self._now

    async def arrival(self) -> datetime:
        """When this request arrived, on the database clock: a proof is judged then, not after its body.

        web/uploads.UploadLimits stamps the monotonic clock as the request starts; the database clock read
        now, less the time since, is the database's time at arrival (without a query per request).
        """
        started = getattr(self.request.state, ARRIVED_MONOTONIC, None)
        if not isinstance(started, float):
            return await self.now()
        before = time.monotonic()
        now = await db_now()
        elapsed = (before + time.monotonic()) / 2 - started
        return now - timedelta(seconds=max(0.0, elapsed))

    def spend_upcoming(self, count: int) -> None:
        """Charge `count` due times to this request; BAD_USER_INPUT past the per-request cap."""
        cap = self.settings.upcoming_per_request
        if self.upcoming_spent + count > cap:
            raise BadInput("first", f"upcoming: at most {cap} due times per request, over all tasks")
        self.upcoming_spent += count

    def refresh_loaders(self) -> None:
        """Subscriptions live long: each pushed event reads fresh rows (and the clock anew)."""
        self.loaders = Loaders()
        self._now = None
        self.upcoming_spent = 0


Info = StrawberryInfo[Context, None]
