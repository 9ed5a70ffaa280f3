"""Strawberry's ASGI view with our context and websocket authentication."""

from __future__ import annotations

from typing import Any

import strawberry
from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.types.unset import UnsetType

from realtime.hub import running_hub
from schema.context import Context
from services.errors import Unauthenticated
from settings import Settings
from web.graphiql import graphiql_page
from web.request_json import RefusedJSON, decode_request_json

# graphql-transport-ws has no code for "too many": 4429 is its "too many requests", with our reason
SOCKET_QUOTA_CLOSE_CODE = 4429
_COUNTED_SOCKET = "proofloop_counted_socket"


class _ClosingOnceAdapter(ASGIWebSocketAdapter):
    async def close(self, code: int, reason: str) -> None:
        # a socket refused over its quota was closed with its own code: Strawberry's 4403 must not follow
        if self.ws.application_state is not WebSocketState.DISCONNECTED:
            await super().close(code, reason)


class ProofloopGraphQL(GraphQL[Context, None]):
    websocket_adapter_class = _ClosingOnceAdapter

    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings

    @property
    def graphql_ide_html(self) -> str:
        """Our GraphiQL page, whose assets this API serves (Strawberry's loads them from a CDN)."""
        return graphiql_page()

    def decode_json(self, data: str | bytes) -> object:
        return decode_request_json(data)

    async def run(
        self, request: Any, context: Any = strawberry.UNSET, root_value: Any = strawberry.UNSET
    ) -> Any:
        try:
            return await super().run(request, context, root_value)
        except HTTPException as exc:
            refused = exc.__cause__
            if not isinstance(refused, RefusedJSON):
                raise
            error = {
                "message": refused.reason,
                "extensions": {"code": "BAD_USER_INPUT", "field": refused.field},
            }
            return JSONResponse({"errors": [error]}, status_code=400)

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        return Context(request=request, response=response, settings=self.settings)

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
            socket, viewer_id, limit = (
                context.request,
                str(session.user.id),
                self.settings.max_sockets_per_user,
            )
            if not hub.open_socket(viewer_id, socket, max_per_viewer=limit):
                await socket.close(
                    code=SOCKET_QUOTA_CLOSE_CODE, reason=f"RATE_LIMITED: at most {limit} sockets"
                )
                raise ConnectionRejectionError({"message": f"at most {limit} open connections per user"})
            socket.scope.setdefault("state", {})[_COUNTED_SOCKET] = (viewer_id, socket)
            hub.track_socket(session.token_id, socket)  # logout closes it
        return await super().on_ws_connect(context)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            counted = (
                scope.get("state", {}).pop(_COUNTED_SOCKET, None) if scope["type"] == "websocket" else None
            )
            hub = running_hub()
            if counted is not None and hub is not None:
                hub.close_socket(*counted)
