"""The per-request (per-socket for subscriptions) context: the process's resources (from the request's
state, opened by app.py's lifespan), the caller, fresh DataLoaders."""

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
from policies.api import ApiPolicies
from realtime.hub import Hub
from schema.dataloaders import Loaders
from services.accounts import PasswordHashing, Session, authenticate, bearer_token
from services.kit import BadInput, EventIds, Unauthenticated, db_now, event_ids
from services.partners import Access
from services.proofs import DecodeGate
from settings import Settings
from web.arrival import arrival_of
from web.state import ApiResources, resources_of


@dataclass
class Context:
    request: Request | WebSocket
    response: Response | WebSocket | None
    resources: ApiResources
    loaders: Loaders = field(default_factory=Loaders)
    connection_params: dict[str, Any] | None = None
    session: Session | None = None
    _now: asyncio.Future[datetime] | None = None
    upcoming_spent: int = 0  # due times `upcoming` computed for this request (PROOFLOOP_UPCOMING_PER_REQUEST)
    # a socket whose one sender carries its replayed subscriptions' events (web/live_sender.py)
    hands_off_live: bool = False

    @classmethod
    def for_request(cls, request: Request | WebSocket, response: Response | WebSocket | None) -> Context:
        return cls(request=request, response=response, resources=resources_of(request))

    def mutation_starts(self) -> None:
        """The request's mutation passed validation and its fields start to run: from here it may commit,
        so its answer must be its outcome (web/graphql_view.py, web/idempotency.py)."""
        self.request.state.mutation_started = True

    @property
    def settings(self) -> Settings:
        return self.resources.settings

    @property
    def policies(self) -> ApiPolicies:
        return self.resources.policies

    @property
    def passwords(self) -> PasswordHashing:
        return self.resources.passwords

    @property
    def decode_gate(self) -> DecodeGate:
        return self.resources.decode_gate

    @property
    def hub(self) -> Hub:
        return self.resources.hub

    @property
    def event_ids(self) -> EventIds:
        """The cipher of event ids (services/kit/ids.py), keyed by the server secret."""
        return event_ids(self.settings.resolved_secret_key)

    def token(self) -> str | None:
        if self.connection_params is not None:
            params = self.connection_params
            return bearer_token(params.get("Authorization") or params.get("authorization"))
        return bearer_token(self.request.headers.get("authorization"))

    def is_anonymous(self) -> bool:
        """No credentials presented (a socket always has them): the tightest document limits apply."""
        return self.session is None and self.token() is None

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

    async def access(self) -> Access:
        """What the viewer may read (services/partners/access.py), read once per request."""
        return await self.loaders.access.load(str((await self.viewer()).id))

    async def partnered_user_ids(self) -> frozenset[str]:
        """The users the viewer actively partners for."""
        return (await self.access()).partnered_user_ids

    async def now(self) -> datetime:
        """The database clock, read once per request (isOpen of a page of instances asks it many times)."""
        if self._now is None:  # a future, so the resolvers of a page asking at once share one read
            self._now = asyncio.ensure_future(db_now())
        # shielded: a resolver cancelled as the sibling of a failed field must not cancel the others' read
        return await asyncio.shield(self._now)

    async def arrival(self) -> datetime:
        """When this request arrived, on the database clock (web/arrival.py)."""
        return await arrival_of(self.request.state)

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


def mutation_started(request: Request) -> bool:
    """Whether the request's mutation has started to run (Context.mutation_starts)."""
    return bool(getattr(request.state, "mutation_started", False))
