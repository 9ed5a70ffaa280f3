"""The per-request (per-socket for subscriptions) context: settings, the caller, fresh DataLoaders."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.types import Info as StrawberryInfo

from models import User
from schema.dataloaders import Loaders
from services.accounts import Session, authenticate, bearer_token
from services.db import db_now
from services.errors import Unauthenticated
from settings import Settings


@dataclass
class Context:
    request: Request | WebSocket
    response: Response | WebSocket | None
    settings: Settings
    loaders: Loaders = field(default_factory=Loaders)
    connection_params: dict[str, Any] | None = None
    session: Session | None = None
    _now: asyncio.Future[datetime] | None = None

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

    async def viewer(self) -> User:
        return (await self.authenticate()).user

    async def partnered_user_ids(self) -> frozenset[str]:
        """The users the viewer actively partners for, read once per request."""
        return await self.loaders.partnered_users.load(str((await self.viewer()).id))

    async def visible_user_ids(self) -> frozenset[str]:
        """Whose events and media the viewer may see: their own and those they partner for."""
        viewer_id = str((await self.viewer()).id)
        return await self.partnered_user_ids() | {viewer_id}

    async def now(self) -> datetime:
        """The database clock, read once per request (isOpen of a page of instances asks it many times)."""
        if self._now is None:  # a future, so the resolvers of a page asking at once share one read
            self._now = asyncio.ensure_future(db_now())
        return await self._now

    def refresh_loaders(self) -> None:
        """Subscriptions live long: each pushed event reads fresh rows (and the clock anew)."""
        self.loaders = Loaders()
        self._now = None


Info = StrawberryInfo[Context, None]
