"""POST /integrations/{key}/events: an automatic proof from another service (services/proofs/integration.py).

The cheap refusals come first, before anything is read or looked up: the client address's request budget
(Redis), then the declared and the real body size. Only then the database clock (the proof's arrival), the
signature (one indexed read, one HMAC) and the body's JSON, under the same bounds as GraphQL requests.
Answers are JSON shaped like GraphQL's: `{"data": {"verification": …}}` or `{"errors": [{"message",
"extensions": {"code"}}]}` with the HTTP status of the code.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from models import Verification
from observability.outages import unreachable
from services.kit import (
    BadInput,
    PayloadTooLarge,
    ProofloopError,
    RateLimited,
    ServiceUnavailable,
    global_id,
    whole_number,
)
from services.proofs import DuplicateEvent, parse_event, record_activity, signed_task
from settings import Settings
from web.arrival import arrival_of
from web.request_json import RefusedJSON, decode_request_json
from web.state import resources_of

log = logging.getLogger("proofloop.integrations")

TIMESTAMP_HEADER = "x-proofloop-timestamp"
SIGNATURE_HEADER = "x-proofloop-signature"
_STATUS = {
    "BAD_USER_INPUT": 400,
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "CONFLICT": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "RATE_LIMITED": 429,
    "SERVICE_UNAVAILABLE": 503,
}
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def _refusal(error: ProofloopError) -> Response:
    extensions: dict[str, object] = {"code": error.code}
    headers = dict(_HEADERS)
    if isinstance(error, BadInput):
        extensions["field"] = error.field
    if isinstance(error, DuplicateEvent):
        extensions["verificationId"] = global_id("Verification", error.verification_id)
    retry = getattr(error, "retry_after_seconds", None)
    if isinstance(error, RateLimited | ServiceUnavailable) and retry:
        extensions["retryAfterSeconds"] = retry
        headers["Retry-After"] = str(retry)
    body = {"errors": [{"message": error.message, "extensions": extensions}]}
    return JSONResponse(body, status_code=_STATUS.get(error.code, 500), headers=headers)


def _answer(row: Verification) -> Response:
    verification = {
        "id": global_id("Verification", row.id),
        "instanceId": global_id("TaskInstance", row.instance_id),
        "status": row.status.value,
        "reason": row.reason.value if row.reason is not None else None,
    }
    return JSONResponse({"data": {"verification": verification}}, headers=_HEADERS)


async def _bounded_body(request: Request, limit: int) -> bytes:
    """The body, refused unread when it says it is too large, and as soon as it grows too large."""
    too_large = PayloadTooLarge(
        f"the event is larger than {limit} bytes (PROOFLOOP_INTEGRATION_MAX_BODY_BYTES)"
    )
    declared = whole_number(request.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


def integrations_endpoint(settings: Settings) -> Callable[[Request], Awaitable[Response]]:
    async def receive_event(request: Request) -> Response:
        resources = resources_of(request)
        policy = resources.policies.integrations
        try:
            client = request.client
            await policy.per_address.count(client.host if client is not None else "unknown")
            body = await _bounded_body(request, policy.max_body_bytes)
            arrival = await arrival_of(request.state)
            task = await signed_task(
                request.path_params["key"],
                request.headers.get(TIMESTAMP_HEADER),
                request.headers.get(SIGNATURE_HEADER),
                body,
                arrival=arrival,
                replay_seconds=policy.replay_seconds,
            )
            try:
                decoded = decode_request_json(body)
            except RefusedJSON as exc:  # its field is a path in GraphQL's terms: here, in the body's
                field = "body" if exc.field in ("body", "variables") else f"body.{exc.field}"
                raise BadInput(field, exc.reason.removeprefix(f"{exc.field}: ")) from None
            except (json.JSONDecodeError, RecursionError):
                raise BadInput("body", "must be one JSON object") from None
            event = parse_event(decoded, arrival)
            row = await record_activity(
                task,
                event,
                arrival=arrival,
                timing=resources.policies.chain,
                max_attempts=settings.max_proof_attempts,
                events_per_day=policy.events_per_day,
            )
        except ClientDisconnect:
            return Response(status_code=400)
        except ProofloopError as exc:
            log.info("integration event refused: %s %s", exc.code, exc.message)
            return _refusal(exc)
        except Exception as exc:
            dependency = unreachable(exc)
            if dependency is None:
                raise
            return _refusal(ServiceUnavailable(f"the {dependency} does not answer; retry shortly", 5))
        return _answer(row)

    return receive_event
