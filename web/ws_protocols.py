"""Strawberry's two websocket protocols, hardened: a malformed frame closes the socket with 4400 and a
reason (Strawberry 0.341 crashes on a JSON array or a `start` without a query, and the legacy protocol
silently ignores non-JSON frames), persisted documents resolve as on HTTP, and the legacy protocol runs
queries and mutations as subscriptions-transport-ws clients expect.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from cross_web import HTTPException
from graphql import GraphQLFormattedError
from strawberry.http.exceptions import NonJsonMessageReceived, NonTextMessageReceived, WebSocketDisconnected
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
    _OperationStreamClosed,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import Message
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import ErrorMessage, OperationMessage
from strawberry.types.execution import ExecutionResult, PreExecutionError

from observability.outages import outage, report_failure
from schema.context import Context
from schema.errors import unavailable, unavailable_after
from schema.live_subscriptions import HandedOff
from schema.parse_cache import is_subscription, mutation_fields
from services.idempotency import (
    Answer,
    Busy,
    Claimed,
    Mismatch,
    claim_key,
    finish_key,
    release_key,
)
from web import idempotency
from web.live_sender import LiveSender, StreamKey, next_payload
from web.persisted_documents import DocumentRefused, TrustedDocuments, apollo_hash, persisted_id

log = logging.getLogger("proofloop.graphql")

MALFORMED = 4400

# per protocol: message type -> (needs an id, what its payload must be)
TRANSPORT_WS_FRAMES = {
    "connection_init": (False, "object?"),
    "ping": (False, "object?"),
    "pong": (False, "object?"),
    "subscribe": (True, "operation"),
    "complete": (True, None),
}
LEGACY_FRAMES = {
    "connection_init": (False, "object?"),
    "connection_terminate": (False, None),
    "start": (True, "operation"),
    "stop": (True, None),
}


def _operation_problem(payload: object) -> str | None:
    if not isinstance(payload, Mapping):
        return "the payload must be an object"
    query = payload.get("query")
    if not isinstance(query, str) and persisted_id(payload) is None:
        return "the payload needs a `query` string (or a persisted document id)"
    if not isinstance(payload.get("variables"), Mapping | None):
        return "`variables` must be an object or null"
    if not isinstance(payload.get("operationName"), str | None):
        return "`operationName` must be a string or null"
    if not isinstance(payload.get("extensions"), Mapping | None):
        return "`extensions` must be an object or null"
    return None


def frame_problem(frame: object, frames: Mapping[str, tuple[bool, str | None]]) -> str | None:
    """Why a decoded frame is not a message of the protocol, or None when it is one."""
    if not isinstance(frame, Mapping):
        return "a message must be a JSON object"
    kind = frame.get("type")
    if not isinstance(kind, str) or kind not in frames:
        return f"unknown message type {kind!r}"[:120]
    needs_id, payload = frames[kind]
    if needs_id and not (isinstance(frame.get("id"), str) and frame["id"]):
        return f"`{kind}` needs a non-empty string `id`"
    if payload == "object?" and not isinstance(frame.get("payload"), Mapping | None):
        return f"the payload of `{kind}` must be an object"
    if payload == "operation":
        return _operation_problem(frame.get("payload"))
    return None


def _with_document(frame: Any, handler: Any) -> None:
    """Replace a persisted document id by its text (or raise DocumentRefused), in place. An Apollo hash
    finds what HTTP requests taught this process; a query sent with its hash runs once the hash is checked."""
    payload = frame["payload"]
    trusted: TrustedDocuments = handler.view.trusted_documents
    document_id = payload.get("documentId")
    # a socket is signed in from its connection_init on: the signed-in limits apply
    payload["query"] = trusted.document(
        payload.get("query"),
        document_id if isinstance(document_id, str) else None,
        anonymous=False,
        apollo=apollo_hash(payload.get("extensions")),
        learned=handler.context.resources.documents,
    )


def _refusal(refused: DocumentRefused) -> GraphQLFormattedError:
    return {"message": refused.message, "extensions": {"code": refused.code}}


def _unavailable() -> GraphQLFormattedError | None:
    """SERVICE_UNAVAILABLE while the database does not answer: the operation is refused, the socket stays."""
    if not outage("database").down:
        return None
    refused = unavailable("database")
    return {
        "message": refused.message,
        "extensions": {"code": refused.code, "retryAfterSeconds": refused.retry_after_seconds},
    }


Release = Callable[[], None]


async def _admit(handler: Any, payload: Mapping[str, Any]) -> GraphQLFormattedError | Release | None:
    """Count a subscription against its user's quota from its frame on, before it is validated or run: a
    burst of frames must not cost a whole operation each before the first of them is registered (the
    resolver checks again, exactly). An error past the quota; else what to call once the operation ends
    (None: nothing counted, e.g. a query)."""
    context: Context = handler.context
    hub = context.hub
    if context.session is None:
        return None
    query, operation_name = payload.get("query"), payload.get("operationName")
    if not await is_subscription(query, operation_name, context.resources.documents):
        return None
    viewer_id = str(context.session.user.id)
    refusal = hub.admit_subscription(viewer_id, context.settings.max_subscriptions_per_user)
    if refusal is None:
        return partial(hub.release_subscription, viewer_id)
    if not handler.quota_refusal_logged:  # a flood of refusals writes one line per socket, not one each
        handler.quota_refusal_logged = True
        log.info(
            "client error RATE_LIMITED %s", {"operation": "subscription quota", "logged": "once per socket"}
        )
    return {"message": refusal, "extensions": {"code": "RATE_LIMITED"}}


def _release_when_done(task: asyncio.Task[Any] | None, release: Release) -> None:
    """Release an admission when its operation's task ends; at once when no task was started for it
    (a duplicate id's release goes with the earlier task: the counts still balance)."""
    if task is None:
        release()
    else:
        task.add_done_callback(lambda _: release())


def _nothing() -> None:
    pass


@dataclass
class _KeyedRun:
    """A mutation run under its Idempotency-Key: the claim, and the answer it sent (kept once it ends)."""

    claim: Claimed
    keep_body: bool
    answer: dict[str, Any] | None = None  # the `next` payload, once sent: the mutation ran


# _claim_key's answer for an operation the key does not apply to (a query, an anonymous socket)
_UNKEYED = object()


def _key_error(operation_id: str, code: str, message: str, **extensions: object) -> Any:
    return {
        "id": operation_id,
        "type": "error",
        "payload": [{"message": message, "extensions": {"code": code, **extensions}}],
    }


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    quota_refusal_logged = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._keys: dict[str, tuple[str, str]] = {}  # operation id -> (its Idempotency-Key, the digest)
        self._keyed: dict[str, _KeyedRun] = {}
        self._admissions: dict[Operation[Context, None], Release] = {}
        self._sender: LiveSender | None = None  # made when the first subscription is handed off
        self.context.hands_off_live = self.context.settings.subscription_path == "socket"

    def _hold_admission(self, operation: Operation[Context, None] | None, release: Release) -> None:
        """Give an admission back when its operation ends: with its task, or, handed off, with the
        subscription; at once when no task was started for it or it is a duplicate id's."""
        if operation is None or operation.task is None or operation in self._admissions:
            release()
            return
        self._admissions[operation] = release
        operation.task.add_done_callback(lambda _: self._admissions.pop(operation, _nothing)())

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        """Strawberry's, but a subscription handed off by its resolver goes on in the socket's sender, and a
        mutation with an Idempotency-Key (payload.extensions.idempotencyKey) runs once (web/idempotency.py):
        a retry gets the first answer, marked `extensions.idempotentReplayed`."""
        keyed: _KeyedRun | None = None
        if (asked := self._keys.pop(operation.id, None)) is not None:
            claimed = await self._claim_key(operation, *asked)
            if claimed is None:
                return  # answered from the key: a replay or a refusal
            if isinstance(claimed, _KeyedRun):
                keyed = self._keyed[operation.id] = claimed
        try:
            await self._run_operation(operation)
        finally:
            if keyed is not None:
                self._keyed.pop(operation.id, None)
                await self._keep_answer(keyed)

    async def _claim_key(self, operation: Operation[Context, None], key: str, digest: str) -> Any:
        """Claim the key for this mutation: a _KeyedRun to run it under, None when the key answered (the
        first answer replayed, or a refusal sent), _UNKEYED when the key does not apply."""
        session = self.context.session
        documents = self.context.resources.documents
        fields = await mutation_fields(operation.query, operation.operation_name, documents)
        if session is None or fields is None:
            return _UNKEYED
        policy = idempotency.key_policy(self.context.settings)
        try:
            claim = await claim_key(str(session.user.id), key, digest, policy)
        except Exception as exc:
            if (refused := unavailable_after(exc, "idempotency key")) is None:
                raise
            await operation.send_operation_message(
                _key_error(
                    operation.id, refused.code, refused.message, retryAfterSeconds=refused.retry_after_seconds
                )
            )
            return None
        if isinstance(claim, Claimed):
            return _KeyedRun(claim, keep_body=not fields & idempotency.SHOWN_ONCE)
        if isinstance(claim, Mismatch):
            refusal = _key_error(
                operation.id, "BAD_USER_INPUT", idempotency.REUSED, field=idempotency.WS_EXTENSION
            )
        elif isinstance(claim, Busy):
            retry = max(1, round(policy.wait_seconds))
            message = f"a request with this Idempotency-Key is still running; retry in {retry} s"
            refusal = _key_error(operation.id, "CONFLICT", message, retryAfterSeconds=retry)
        elif claim.body is None:
            refusal = _key_error(operation.id, "CONFLICT", idempotency.NOT_KEPT)
        else:
            replayed = json.loads(claim.body)
            replayed["extensions"] = {**(replayed.get("extensions") or {}), "idempotentReplayed": True}
            await operation.send_operation_message({"id": operation.id, "type": "next", "payload": replayed})
            await operation.send_operation_message({"id": operation.id, "type": "complete"})
            return None
        await operation.send_operation_message(refusal)
        return None

    async def _keep_answer(self, keyed: _KeyedRun) -> None:
        """The first answer kept for the key; the key given back when nothing ran (refused before the
        mutation started: a retry must run)."""
        policy = idempotency.key_policy(self.context.settings)
        try:
            if keyed.answer is None:
                await release_key(keyed.claim)
                return
            body = json.dumps(keyed.answer).encode()
            kept = Answer(200, "application/json", None, body if keyed.keep_body else None)
            await finish_key(keyed.claim, kept, policy)
        except Exception as exc:
            # the answer sent is still the truth; a retry after the lease runs again (docs/api.md)
            report_failure(log, "idempotency key", exc, "keeping the answer of an Idempotency-Key failed")

    async def _run_operation(self, operation: Operation[Context, None]) -> None:
        try:
            result_source = await self.schema.stream(
                operation.query,
                variable_values=operation.variables,
                context_value=self.context,
                root_value=self.root_value,
                operation_name=operation.operation_name,
            )
            handed: list[HandedOff] = []
            try:
                await self._send_results(operation, result_source, handed)
            finally:
                try:
                    await result_source.aclose()
                finally:
                    if handed:
                        self._park(operation, handed[0])
            if not handed:
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
        except _OperationStreamClosed:
            return
        except Exception as error:
            await self.handle_task_exception(error)
            with contextlib.suppress(Exception):
                await operation.send_operation_message({"id": operation.id, "type": "complete"})
            self.operations.pop(operation.id, None)
            raise

    async def _send_results(
        self, operation: Operation[Context, None], results: Any, handed: list[HandedOff]
    ) -> None:
        first = True
        async for result in results:
            if isinstance(result, HandedOff):
                handed.append(result)
                return
            if first and isinstance(result, PreExecutionError):
                await self._handle_pre_execution_error(operation, result)
                return
            if not isinstance(result, ExecutionResult):
                await self._reject_incremental_delivery(operation)
                return
            if first and (keyed := self._keyed.get(operation.id)) is not None:
                keyed.answer = next_payload(result)
            await operation.send_next(result)
            first = False

    def _park(self, operation: Operation[Context, None], handed: HandedOff) -> None:
        if self.operations.get(operation.id) is not operation:  # completed by the client meanwhile
            self.context.hub.remove(handed.subscriber)
            return
        if self._sender is None:
            self._sender = LiveSender(self.context.hub, self.send_message, self._forget_operation)
        key: StreamKey = (
            operation.query,
            operation.operation_name,
            json.dumps(operation.variables, sort_keys=True, default=str),
        )
        self._sender.park(operation.id, handed, key, self._admissions.pop(operation, None))
        operation.task = None  # the finished task, its coroutines and generators go with it

    def _key_of(self, message: Any) -> tuple[str, str] | str | None:
        """(the key, the request's digest) of a subscribe frame carrying payload.extensions.idempotencyKey;
        the refusal's message for a key that is no key; None without one."""
        payload = message["payload"]
        extensions = payload.get("extensions")
        if not isinstance(extensions, dict) or idempotency.WS_EXTENSION not in extensions:
            return None
        try:
            key = idempotency.parse_key(extensions[idempotency.WS_EXTENSION])
        except HTTPException as bad:
            return str(bad.reason)
        return key, idempotency.asked_digest(payload)

    def _forget_operation(self, operation_id: str) -> None:
        self.operations.pop(operation_id, None)

    async def cleanup_operation(self, operation_id: str) -> None:
        if self._sender is not None and self._sender.unpark(operation_id):
            self.operations.pop(operation_id, None)
            return
        await super().cleanup_operation(operation_id)

    async def shutdown(self) -> None:
        await super().shutdown()
        if self._sender is not None:
            await self._sender.close()

    async def handle_task_exception(self, error: Exception) -> None:
        # a client that leaves while its operation sends (a closed tab, a dropped network) is routine:
        # the operation ends with the socket, and an ERROR with four chained tracebacks would bury real ones
        if isinstance(error, WebSocketDisconnected):
            log.debug("client left while an operation was sending")
            return
        await super().handle_task_exception(error)

    async def handle_invalid_message(self, error_message: str) -> None:
        log.info("client error: malformed websocket frame (%s)", error_message)
        await super().handle_invalid_message(error_message)

    async def handle_message(self, message: Message) -> None:
        frame: object = message
        if problem := frame_problem(frame, TRANSPORT_WS_FRAMES):
            await self.handle_invalid_message(problem)
            return
        if message["type"] == "subscribe" and self.connection_acknowledged:
            try:
                _with_document(message, self)
            except DocumentRefused as refused:
                await self.send_message(
                    {"id": message["id"], "type": "error", "payload": [_refusal(refused)]}
                )
                return
            if refusal := _unavailable():
                await self.send_message({"id": message["id"], "type": "error", "payload": [refusal]})
                return
            if (keyed := self._key_of(message)) is not None:
                if isinstance(keyed, str):
                    bad_key = _key_error(
                        message["id"], "BAD_USER_INPUT", keyed, field=idempotency.WS_EXTENSION
                    )
                    await self.send_message(bad_key)
                    return
                self._keys[message["id"]] = keyed
            admitted = await _admit(self, message["payload"])
            if isinstance(admitted, dict):
                self._keys.pop(message["id"], None)
                await self.send_message({"id": message["id"], "type": "error", "payload": [admitted]})
                await asyncio.sleep(0)  # a flood of refused frames lets the loop serve others in between
                return
            try:
                await super().handle_message(message)
            finally:  # also when the socket goes mid-frame: an admission must never outlive its operation
                if admitted is not None:
                    self._hold_admission(self.operations.get(message["id"]), admitted)
            return
        await super().handle_message(message)


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    quota_refusal_logged = False

    async def handle(self) -> None:
        try:
            async for message in self.websocket.iter_json():
                await self.handle_message(message)  # type: ignore[arg-type]
        except NonTextMessageReceived:
            await self.refuse_frame("a message must be a text frame")
        except NonJsonMessageReceived:
            await self.refuse_frame("a message must be valid JSON")
        except WebSocketDisconnected:
            pass
        finally:
            if self.keep_alive_task:
                self.keep_alive_task.cancel()
                await asyncio.gather(self.keep_alive_task, return_exceptions=True)
            await self.cleanup()

    async def handle_message(self, message: OperationMessage) -> None:
        frame: object = message
        if problem := frame_problem(frame, LEGACY_FRAMES):
            await self.refuse_frame(problem)
            return
        if message["type"] == "start" and self.connection_acknowledged:
            try:
                _with_document(message, self)
            except DocumentRefused as refused:
                error = ErrorMessage(type="error", id=message["id"], payload=_refusal(refused))
                await self.send_message(error)
                return
            if refusal := _unavailable():
                await self.send_message(ErrorMessage(type="error", id=message["id"], payload=refusal))
                return
            admitted = await _admit(self, message["payload"])
            if isinstance(admitted, dict):
                await self.send_message(ErrorMessage(type="error", id=message["id"], payload=admitted))
                await asyncio.sleep(0)  # a flood of refused frames lets the loop serve others in between
                return
            try:
                await super().handle_message(message)
            finally:
                if admitted is not None:
                    _release_when_done(self.tasks.get(message["id"]), admitted)
            return
        await super().handle_message(message)

    async def refuse_frame(self, reason: str) -> None:
        log.info("client error: malformed websocket frame (%s)", reason)
        await self.websocket.close(MALFORMED, reason)

    async def handle_async_results(
        self, operation_id: str, query: str, operation_name: str | None, variables: dict[str, object] | None
    ) -> None:
        # Strawberry's runs only subscriptions; the legacy protocol carries queries and mutations too
        try:
            result_source = await self.schema.stream(
                query=query,
                variable_values=variables,
                operation_name=operation_name,
                context_value=self.context,
                root_value=self.root_value,
            )
            self.subscriptions[operation_id] = result_source
            first = True
            async for result in result_source:
                if first and isinstance(result, PreExecutionError) and result.errors:
                    payload = result.errors[0].formatted
                    await self.send_message(ErrorMessage(type="error", id=operation_id, payload=payload))
                    return
                first = False
                await self.send_data_message(result, operation_id)  # type: ignore[arg-type]
            await self.send_message({"type": "complete", "id": operation_id})
        except asyncio.CancelledError:
            await self.send_message({"type": "complete", "id": operation_id})
        finally:
            self.subscriptions.pop(operation_id, None)
            self.tasks.pop(operation_id, None)
