"""Strawberry's ASGI view with our context and websocket authentication."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.types.unset import UnsetType

from realtime.hub import running_hub
from schema.context import Context
from services.decode_gate import DecodeGate
from services.errors import Unauthenticated
from settings import Settings
from web.graphiql import graphiql_page


class ProofloopGraphQL(GraphQL[Context, None]):
    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings
        # one per process: every request's media decodes share it
        self.decode_gate = DecodeGate(settings.media_decode_concurrency, settings.media_decode_queue)

    @property
    def graphql_ide_html(self) -> str:
        """Our GraphiQL page, whose assets this API serves (Strawberry's loads them from a CDN)."""
        return graphiql_page()

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        return Context(
            request=request, response=response, settings=self.settings, decode_gate=self.decode_gate
        )

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
            hub.track_socket(session.token_id, context.request)  # logout closes it
        return await super().on_ws_connect(context)
