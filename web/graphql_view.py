"""Strawberry's ASGI view with our context and websocket authentication."""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.types.unset import UnsetType

from realtime.hub import running_hub
from schema.context import Context
from schema.errors import ErrorLogLines
from services.errors import Unauthenticated
from services.passwords import PasswordHashing
from settings import Settings
from web.graphiql import graphiql_page


class ProofloopGraphQL(GraphQL[Context, None]):
    def __init__(self, settings: Settings, passwords: PasswordHashing, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        self.passwords = passwords
        failing = logging.getLogger("strawberry.execution")
        if not any(isinstance(f, ErrorLogLines) for f in failing.filters):
            failing.addFilter(ErrorLogLines())  # no document source in the log

    @property
    def graphql_ide_html(self) -> str:
        """Our GraphiQL page, whose assets this API serves (Strawberry's loads them from a CDN)."""
        return graphiql_page()

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        return Context(request=request, response=response, settings=self.settings, passwords=self.passwords)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """Authenticate the socket from connection_init {"Authorization": "Bearer <token>"}: 4403 if not."""
        if context.connection_params is None:
            context.connection_params = {}
        try:
            session = await context.authenticate()
        except Unauthenticated:
            raise ConnectionRejectionError({"message": "a valid bearer token is required"}) from None
        hub = running_hub()
        if hub is not None and isinstance(context.request, WebSocket):
            hub.track_socket(session.token_id, context.request, session.expires_at)  # logout/expiry close it
        return await super().on_ws_connect(context)
