"""Strawberry's ASGI view with our context, websocket authentication and the GraphQL-over-HTTP contract.

- Every refusal before execution (bad JSON, a multipart body without `map`, a mutation over GET, an unknown
  persisted document) is a GraphQL-shaped JSON error with a contract code, never text/plain.
- `Accept: application/graphql-response+json` gets the spec's status codes (400 on parse, validation and
  variable errors, without `data`); `application/json` (and */*, or no Accept) keeps 200.
- Subscriptions also run over HTTP: GraphQL over SSE (`Accept: text/event-stream`) and Apollo's multipart
  subscriptions (`Accept: multipart/mixed;subscriptionSpec=1.0`), with heartbeats.
- GET with `Accept: text/html` always serves GraphiQL; the page reads `?query=` itself, nothing executes.
- While this process knows its database does not answer, an operation is refused at once with
  SERVICE_UNAVAILABLE (503 under graphql-response+json, 200 with `data: null` under application/json) and
  a Retry-After header. A query that meets the outage mid-flight gets the same code and header at once; a
  mutation that has started is answered with its own outcome, whatever it is, since it may have committed
  (an answer is the truth: a client retrying a mutation answered "unavailable" would apply it twice).
"""

from __future__ import annotations

import asyncio
import json
import logging
from functools import cached_property
from typing import Any

import strawberry
from cross_web import AsyncHTTPRequestAdapter, HTTPException, StarletteRequestAdapter
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError, MissingQueryError
from strawberry.file_uploads.utils import replace_placeholders_with_files
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.base import BaseRequestProtocol
from strawberry.http.streaming import HTTPStreamTransport
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UnsetType

from observability.outages import outage
from schema.context import Context, mutation_started
from schema.errors import UNAVAILABLE, unavailable, unavailable_after
from schema.parse_cache import is_subscription, mutation_fields
from services.accounts import bearer_token
from services.kit import Conflict, ServiceUnavailable, Unauthenticated
from settings import Settings
from web import idempotency
from web.event_stream import LineFeedSSETransport
from web.graphiql import graphiql_response
from web.http_streams import MultipartSubscriptions
from web.origins import AllowedOrigins
from web.persisted_documents import DocumentRefused, TrustedDocuments, apollo_hash, persisted_id
from web.request_json import RefusedJSON, body_kind, decode_request_json, json_kind, refuse_non_object
from web.state import ApiResources, resources_of
from web.ws_protocols import LegacyWSHandler, TransportWSHandler

# graphql-transport-ws has no code for "too many": 4429 is its "too many requests", with our reason
SOCKET_QUOTA_CLOSE_CODE = 4429
# how often a running request looks whether the database's outage has become known meanwhile
OUTAGE_LOOK_SECONDS = 0.25
# RFC 6455's "Try Again Later": the database did not answer while the socket authenticated
TRY_AGAIN_LATER_CLOSE_CODE = 1013
_COUNTED_SOCKET = "proofloop_counted_socket"


class _ClosingOnceAdapter(ASGIWebSocketAdapter):
    async def close(self, code: int, reason: str) -> None:
        # a socket refused over its quota was closed with its own code: Strawberry's 4403 must not follow
        if self.ws.application_state is not WebSocketState.DISCONNECTED:
            await super().close(code, reason)


log = logging.getLogger("proofloop.graphql")

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
SUBSCRIPTIONS_OVER_HTTP = (
    "subscriptions need `Accept: text/event-stream` (GraphQL over SSE), "
    "`Accept: multipart/mixed;subscriptionSpec=1.0` (multipart subscriptions) or a websocket"
)


def response_media_type(accept: str) -> str:
    """application/graphql-response+json when the client prefers it; application/json otherwise."""
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        ranked.append((-quality, index, media.lower()))
    for _, _, media in sorted(ranked):
        if media in (GRAPHQL_RESPONSE_JSON, "application/json"):
            return media
    return "application/json"


def takes_json(accept: str) -> bool:
    return any(
        part.split(";", 1)[0].strip().lower() in (GRAPHQL_RESPONSE_JSON, "application/json")
        for part in accept.split(",")
    )


def _request_part(reason: str) -> str:
    """Which part of the HTTP request a refusal of Strawberry's is about (BAD_USER_INPUT's field)."""
    for needle, part in (
        ("`query`", "query"),
        ("No GraphQL query", "query"),
        ("`variables`", "variables"),
        ("`extensions`", "extensions"),
        ("File(s)", "map"),
        ("multipart", "map"),
        ("content type", "content-type"),
        ("not allowed when using", "method"),
        ("GET and POST", "method"),
    ):
        if needle in reason:
            return part
    return "body"


def error_response(
    status: int, code: str, message: str, *, field: str | None = None, media_type: str = "application/json"
) -> Response:
    extensions: dict[str, object] = {"code": code}
    if field is not None:
        extensions["field"] = field
    body = {"errors": [{"message": message, "extensions": extensions}]}
    return JSONResponse(body, status_code=status, media_type=media_type)


def unavailable_response(refused: ServiceUnavailable, media_type: str) -> Response:
    """An operation refused before it ran: as a request error under graphql-response+json (no `data`),
    as the usual `data: null` result under application/json."""
    error = {
        "message": refused.message,
        "extensions": {"code": refused.code, "retryAfterSeconds": refused.retry_after_seconds},
    }
    if media_type == GRAPHQL_RESPONSE_JSON:
        response = JSONResponse({"errors": [error]}, status_code=503, media_type=media_type)
    else:
        response = JSONResponse({"data": None, "errors": [error]}, media_type=media_type)
    response.headers["retry-after"] = str(refused.retry_after_seconds)
    return response


def is_request_error(result: ExecutionResult) -> bool:
    """The request never executed: parse, validation or variable errors (none has a path)."""
    errors = result.errors or []
    return result.data is None and bool(errors) and all(e.path is None for e in errors)


async def _close_for_outage(context: Context, refused: ServiceUnavailable) -> None:
    """Close with "try again later" and the wait, not Strawberry's 4403 (the client did nothing wrong)."""
    if isinstance(context.request, WebSocket):
        reason = f"{refused.code}: retry in {refused.retry_after_seconds} s"
        await context.request.close(code=TRY_AGAIN_LATER_CLOSE_CODE, reason=reason)


class _RequestAdapter(StarletteRequestAdapter):
    @property
    def resources(self) -> ApiResources:
        return resources_of(self._request)


class ProofloopGraphQL(GraphQL[Context, None]):
    request_adapter_class = _RequestAdapter
    graphql_transport_ws_handler_class = TransportWSHandler
    graphql_ws_handler_class = LegacyWSHandler
    websocket_adapter_class = _ClosingOnceAdapter

    def __init__(
        self,
        settings: Settings,
        *,
        origins: AllowedOrigins,
        trusted_documents: TrustedDocuments,
        **kwargs: Any,
    ) -> None:
        super().__init__(keep_alive=True, keep_alive_interval=settings.stream_heartbeat_seconds, **kwargs)
        self.settings = settings
        self.origins = origins
        self.trusted_documents = trusted_documents
        self._abandoned: set[asyncio.Future[Response]] = set()  # runs answered for, held until they end
        self.idempotency = idempotency.key_policy(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            try:
                await super().__call__(scope, receive, send)
            finally:
                counted = scope.get("state", {}).pop(_COUNTED_SOCKET, None)
                if counted is not None:
                    resources_of(HTTPConnection(scope)).hub.close_socket(*counted)
            return
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope=scope, receive=receive)
        media_type = response_media_type(request.headers.get("accept", ""))
        key = request.headers.get(idempotency.HEADER)
        if key is None or request.method != "POST":
            response = await self._answer(request, media_type)
        else:
            response = await self._answer_once(request, key, media_type)
        await response(scope, receive, send)

    async def _answer_once(self, request: Request, header: str, media_type: str) -> Response:
        """The answer to a request carrying an Idempotency-Key (web/idempotency.py)."""
        try:
            key = idempotency.parse_key(header)
            return await idempotency.once_by_key(
                request,
                key,
                self.idempotency,
                self.settings.token_ttl_seconds,
                lambda fields: self._mutation_fields(request, fields),
                lambda: self._answer(request, media_type),
            )
        except HTTPException as e:
            log.info(
                "client error BAD_USER_INPUT %s", {"field": idempotency.KEY_FIELD, "status": e.status_code}
            )
            return error_response(
                e.status_code, "BAD_USER_INPUT", e.reason, field=idempotency.KEY_FIELD, media_type=media_type
            )
        except idempotency.KeyReused:
            log.info("client error BAD_USER_INPUT %s", {"field": idempotency.KEY_FIELD, "status": 422})
            return error_response(
                422, "BAD_USER_INPUT", idempotency.REUSED, field=idempotency.KEY_FIELD, media_type=media_type
            )
        except Conflict as busy:
            log.info("client error CONFLICT %s", {"field": idempotency.KEY_FIELD, "status": 409})
            response = error_response(409, busy.code, busy.message, media_type=media_type)
            if isinstance(busy, idempotency.KeyBusy):
                response.headers["retry-after"] = str(busy.retry_after)
            return response
        except ServiceUnavailable as refused:
            return unavailable_response(refused, media_type)
        except Exception as exc:
            if (unreachable := unavailable_after(exc, "idempotency key")) is None:
                raise
            return unavailable_response(unreachable, media_type)

    async def _mutation_fields(self, request: Request, fields: dict[str, object]) -> frozenset[str] | None:
        """The root fields of a request's chosen operation if it is a mutation; None for anything else
        (a query, or a request the view will refuse)."""
        documents = resources_of(request).documents
        query = fields.get("query")
        if not isinstance(query, str):
            document_id = fields.get("documentId")
            try:
                query = self.trusted_documents.document(
                    None,
                    document_id if isinstance(document_id, str) else None,
                    anonymous=False,
                    apollo=apollo_hash(fields.get("extensions")),
                    learned=documents,
                )
            except DocumentRefused:
                return None
        return await mutation_fields(query, fields.get("operationName"), documents)

    async def _answer(self, request: Request, media_type: str) -> Response:
        """The request's answer: its result, or the GraphQL-shaped refusal of what went wrong."""
        try:
            response = await self._run_unless_outage(request)
        except HTTPException as e:
            field = "accept" if e.reason == SUBSCRIPTIONS_OVER_HTTP else _request_part(e.reason)
            response = error_response(
                e.status_code, "BAD_USER_INPUT", e.reason, field=field, media_type=media_type
            )
            if e.status_code == 405:
                response.headers["allow"] = "POST"
            log.info("client error BAD_USER_INPUT %s", {"field": field, "status": e.status_code})
        except DocumentRefused as refused:
            status = {"PERSISTED_QUERY_NOT_FOUND": 404, "PAYLOAD_TOO_LARGE": 413}.get(refused.code, 400)
            if refused.apollo or (
                refused.code == "GRAPHQL_VALIDATION_FAILED" and media_type != GRAPHQL_RESPONSE_JSON
            ):
                status = 200  # as every validation error under application/json; as Apollo's servers
            response = error_response(
                status, refused.code, refused.message, field=refused.field, media_type=media_type
            )
            if refused.apollo:  # a cache must not keep a miss the next request fills
                response.headers["cache-control"] = "private, no-cache, must-revalidate"
            log.info("client error %s %s", refused.code, {"status": status})
        except ServiceUnavailable as refused:  # counted by its outage: no line per request
            response = unavailable_response(refused, media_type)
        else:
            if response.media_type == "application/json" and media_type == GRAPHQL_RESPONSE_JSON:
                response.headers["content-type"] = GRAPHQL_RESPONSE_JSON
                response.status_code = getattr(request.state, "graphql_status", response.status_code)
            if (retry_after := getattr(request.state, "retry_after", None)) is not None:
                response.headers["retry-after"] = str(retry_after)
        return response

    async def _run_unless_outage(self, request: Request) -> Response:
        """Strawberry's run; a read is answered SERVICE_UNAVAILABLE as soon as the database's outage is
        known (from another request or the probe) rather than after this request's own timeouts, and goes
        on unseen until those end it. A mutation, once it executes, waits for its own outcome."""
        running = asyncio.ensure_future(self.run(request))
        while True:
            done, _ = await asyncio.wait({running}, timeout=OUTAGE_LOOK_SECONDS)
            if done:
                response: Response = running.result()
                return response
            if outage("database").down and not mutation_started(request):
                self._abandoned.add(running)
                running.add_done_callback(self._forget)
                raise unavailable("database")

    def _forget(self, running: asyncio.Future[Response]) -> None:
        self._abandoned.discard(running)
        if not running.cancelled():
            running.exception()  # its errors were logged (counted) by the schema

    async def render_graphql_ide(self, request: Request) -> Response:
        # our page, whose assets this API serves (Strawberry's loads them from a CDN), with its CSP
        return graphiql_response()

    def should_render_graphql_ide(self, request: BaseRequestProtocol) -> bool:
        # a browser's address bar asks for text/html: GraphiQL (prefilled from ?query=), never a result
        accept = request.headers.get("accept", "")
        if request.method != "GET":
            return False
        return "text/html" in accept or (
            "*/*" in accept
            and not request.query_params.get("query")
            and not persisted_id(request.query_params)
            and "extensions" not in request.query_params  # Apollo's hashed GET
        )

    @cached_property
    def _stream_transport_map(self) -> dict[str, HTTPStreamTransport]:
        # Strawberry's transports with our heartbeat interval (proxies drop idle streams)
        multipart = MultipartSubscriptions()
        multipart.heartbeat_interval = self.settings.stream_heartbeat_seconds
        sse = LineFeedSSETransport(heartbeat_interval=self.settings.stream_heartbeat_seconds)
        wanted = {
            self.stream_transport_classes_by_protocol[p].protocol
            for p in self.protocols
            if p in self.stream_transport_classes_by_protocol
        }
        return {t.protocol: t for t in (multipart, sse) if t.protocol in wanted}

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        # Strawberry 0.341 calls .get() on any JSON body: a string, number, null or true was an HTTP 500
        if request.method == "POST" and "application/json" in (request.content_type or ""):
            refuse_non_object(body_kind(await request.get_body()), "body")
        data = await super().parse_http_body(request)
        if isinstance(data, GraphQLRequestData):
            document_id = (await self._raw_body(request)).get("documentId")
            anonymous = bearer_token(request.headers.get("authorization")) is None
            data.query = self.trusted_documents.document(
                data.query,
                document_id if isinstance(document_id, str) else None,
                anonymous=anonymous,
                apollo=apollo_hash(data.extensions),
                learned=request.resources.documents if isinstance(request, _RequestAdapter) else None,
            )
            if data.protocol != "http" and isinstance(request, _RequestAdapter):
                await self._answer_json_when_taken(request, data)
        return data

    async def _answer_json_when_taken(self, request: _RequestAdapter, data: GraphQLRequestData) -> None:
        # urql lists text/event-stream beside JSON for every operation: a query or mutation gets JSON then
        # (status codes, automatic persisted queries learned); graphql-sse, asking for SSE alone, streams
        if takes_json(request.headers.get("accept", "")) and not await is_subscription(
            data.query, data.operation_name, request.resources.documents
        ):
            data.protocol = "http"

    async def _raw_body(self, request: AsyncHTTPRequestAdapter) -> dict[str, object]:
        # documentId is a top-level member Strawberry does not keep; the body is cached, parsed again here
        if request.method == "GET":
            return dict(request.query_params)
        if "json" not in (request.content_type or ""):
            return {}
        raw = await request.get_body()
        if ("documentId" if isinstance(raw, str) else b"documentId") not in raw:
            return {}  # most requests: no second parse of the body on the hot path
        body = json.loads(raw)
        return body if isinstance(body, dict) else {}

    async def parse_multipart(self, request: AsyncHTTPRequestAdapter) -> dict[str, str]:
        try:
            form = (await request.get_form_data()).form
        except ValueError as e:
            raise HTTPException(400, "Unable to parse the multipart body") from e
        if "operations" not in form or "map" not in form:
            raise HTTPException(
                400,
                "a multipart request needs `operations` and `map` fields (GraphQL multipart request spec)",
            )
        operations = self.parse_json(str(form["operations"]))
        refuse_non_object(json_kind(operations), "operations")
        files_map = self.parse_json(str(form["map"]))
        if not isinstance(files_map, dict) or not all(
            isinstance(paths, list) and all(isinstance(p, str) for p in paths) for paths in files_map.values()
        ):
            raise HTTPException(400, "the multipart `map` must map file names to lists of paths")
        try:
            return replace_placeholders_with_files(
                operations, files_map, (await request.get_form_data()).files
            )
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise HTTPException(
                400, "File(s) missing in form data, or a `map` path that does not exist"
            ) from e

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        # Strawberry's would run a subscription as a query over plain HTTP (and fail on its generator)
        method = request_adapter.method
        allowed = OperationType.from_http(method) - {OperationType.SUBSCRIPTION}
        if outage("database").down:  # the probe ends it; every operation needs the database
            raise unavailable("database")
        try:
            result = await self.schema.execute(
                request_data.query,
                root_value=root_value,
                variable_values=request_data.variables,
                context_value=context,
                operation_name=request_data.operation_name,
                allowed_operation_types=allowed,
                operation_extensions=request_data.extensions,
            )
        except CannotGetOperationTypeError as e:
            raise HTTPException(400, e.as_http_error_reason()) from e
        except InvalidOperationTypeError as e:
            if e.operation_type is OperationType.SUBSCRIPTION:
                raise HTTPException(400, SUBSCRIPTIONS_OVER_HTTP) from e
            raise HTTPException(405 if method == "GET" else 400, e.as_http_error_reason(method)) from e
        except MissingQueryError as e:
            raise HTTPException(400, "No GraphQL query found in the request") from e
        self._learn_automatic_persisted_query(request_data, context)
        return result

    def _learn_automatic_persisted_query(self, request_data: GraphQLRequestData, context: Context) -> None:
        """A query sent with its Apollo hash (checked while parsing) is found by that hash from now on, if
        it passed validation (only such documents are kept)."""
        digest = apollo_hash(request_data.extensions)
        if digest is not None and request_data.query and digest not in self.trusted_documents.by_id:
            context.resources.documents.learn_hash(digest, request_data.query)

    async def process_result(self, request: Request, result: ExecutionResult) -> GraphQLHTTPResponse:
        processed = await super().process_result(request, result)
        retry_after = [
            int(str((e.extensions or {}).get("retryAfterSeconds", 1)))
            for e in result.errors or ()
            if (e.extensions or {}).get("code") == UNAVAILABLE
        ]
        if retry_after:
            request.state.retry_after = max(retry_after)
        if retry_after and result.data is None and len(retry_after) == len(result.errors or ()):
            request.state.graphql_status = 503  # met the outage mid-flight: nothing to show
            if response_media_type(request.headers.get("accept", "")) == GRAPHQL_RESPONSE_JSON:
                processed.pop("data", None)
        elif is_request_error(result):
            codes = {(e.extensions or {}).get("code") for e in result.errors or ()}
            request.state.graphql_status = 500 if "INTERNAL_SERVER_ERROR" in codes else 400
            if response_media_type(request.headers.get("accept", "")) == GRAPHQL_RESPONSE_JSON:
                processed.pop("data", None)  # the spec: a request error has no `data` entry
        return processed

    def is_websocket_origin_allowed(self, request: WebSocket, origin: str) -> bool:
        return self.origins.allows(origin)

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
            log.info("client error BAD_USER_INPUT %s", {"field": refused.field, "status": 400})
            return error_response(400, "BAD_USER_INPUT", refused.reason, field=refused.field)

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        return Context.for_request(request, response)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """Authenticate the socket from connection_init {"Authorization": "Bearer <token>"}: 4403 if not."""
        if context.connection_params is None:
            context.connection_params = {}
        try:
            if outage("database").down:
                raise unavailable("database")
            session = await context.authenticate()
        except Unauthenticated:
            raise ConnectionRejectionError({"message": "a valid bearer token is required"}) from None
        except Exception as exc:
            refused = (
                exc if isinstance(exc, ServiceUnavailable) else unavailable_after(exc, "websocket connect")
            )
            if refused is None:
                raise
            await _close_for_outage(context, refused)
            raise ConnectionRejectionError({"message": refused.message}) from None
        hub = context.hub
        if isinstance(context.request, WebSocket):
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
            hub.track_socket(session.token_id, socket, session.expires_at)  # logout/expiry close it
        return await super().on_ws_connect(context)
