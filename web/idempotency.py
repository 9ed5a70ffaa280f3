"""The `Idempotency-Key` request header (IETF draft "The Idempotency-Key HTTP Header Field", as Stripe's API):
a signed-in client that sends a mutation with a key of its choosing may send it again with the same key (its
answer lost, or "try again" said) and the mutation runs once; every retry gets the first answer again, with
`Idempotent-Replayed: true`.

- The key is the user's: another user's same key is another key. Anonymous requests (register, login) and
  queries ignore it: the first two are idempotent by their own rules, and a query changes nothing.
- A key names one request: its fingerprint is the sha256 of the document, operation name, variables and
  extensions (as JSON with sorted keys) and of every uploaded file's bytes. The same key with another request
  is refused (HTTP 422, BAD_USER_INPUT on the field `idempotency-key`).
- Concurrent requests with one key run once: the later ones wait (PROOFLOOP_IDEMPOTENCY_WAIT_SECONDS) for
  the first's answer, then are told CONFLICT with a Retry-After (HTTP 409).
- An answer is kept for PROOFLOOP_IDEMPOTENCY_KEY_SECONDS, whatever it says (errors included, as the first
  request got them), unless nothing ran: a request refused before its mutation started (the outage known,
  bad JSON, a document that does not parse or validate) gives its key back, so its retry runs.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cross_web import HTTPException
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from observability.outages import report_failure
from schema.context import mutation_started
from services.accounts import authenticate, bearer_token
from services.idempotency import (
    Answer,
    Busy,
    Claimed,
    KeyPolicy,
    Mismatch,
    claim_key,
    finish_key,
    release_key,
)
from services.kit import Conflict, Unauthenticated
from settings import Settings

log = logging.getLogger("proofloop.graphql")

HEADER = "idempotency-key"
WS_EXTENSION = "idempotencyKey"  # a websocket's subscribe frame carries the key in payload.extensions
REPLAYED = "idempotent-replayed"
MAX_KEY_LENGTH = 255
KEY_FIELD = "idempotency-key"


class KeyReused(Exception):
    """The key was first used with another request."""


class KeyBusy(Conflict):
    """The first request with this key still runs."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"a request with this Idempotency-Key is still running; retry in {retry_after} s")
        self.retry_after = retry_after


def key_policy(settings: Settings) -> KeyPolicy:
    """How long keys and answers are kept and how long a copy waits for the first (HTTP and websockets)."""
    return KeyPolicy(
        keep_seconds=settings.idempotency_key_seconds,
        lease_seconds=settings.idempotency_lease_seconds,
        wait_seconds=settings.idempotency_wait_seconds,
        max_answer_bytes=settings.idempotency_max_answer_bytes,
    )


def parse_key(header: str) -> str:
    """The key of an `Idempotency-Key` value: 1 to 255 visible ASCII characters, bare or as a quoted string
    (the draft's structured-field form)."""
    if not isinstance(header, str):
        raise HTTPException(400, f"an idempotency key is a string of 1 to {MAX_KEY_LENGTH} characters")
    key = header.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all("!" <= c <= "~" for c in key):
        raise HTTPException(
            400, f"the Idempotency-Key header takes 1 to {MAX_KEY_LENGTH} visible ASCII characters"
        )
    return key


async def fingerprint(request: Request) -> tuple[str, dict[str, object]] | None:
    """(sha256 of what the request asks, its operation's JSON fields), or None for a body that is no
    GraphQL request (the view answers that as usual)."""
    content_type = request.headers.get("content-type", "").lower()
    digest = hashlib.sha256()
    if content_type.startswith("multipart/"):
        form = await request.form()
        operations = form.get("operations")
        if not isinstance(operations, str):
            return None
        fields = _object(operations)
        for name, part in sorted(form.multi_items(), key=lambda item: item[0]):
            if isinstance(part, UploadFile):
                digest.update(name.encode() + b"\0" + await _file_digest(part))
    elif "json" in content_type:
        fields = _object(await request.body())
    else:
        return None
    if fields is None:
        return None
    return asked_digest(fields, digest), fields


def asked_digest(fields: Mapping[str, object], digest: Any = None) -> str:
    """The sha256 of what a GraphQL request asks (after its files' digests, on HTTP): the same request gives
    the same digest on HTTP and on a websocket, whose `extensions` carry the key itself (left out here)."""
    digest = digest if digest is not None else hashlib.sha256()
    extensions = fields.get("extensions")
    if isinstance(extensions, dict):
        extensions = {k: v for k, v in extensions.items() if k != WS_EXTENSION} or None
    asked = {k: fields.get(k) for k in ("query", "operationName", "variables", "documentId")}
    asked["extensions"] = extensions
    digest.update(json.dumps(asked, sort_keys=True, separators=(",", ":")).encode())
    return str(digest.hexdigest())


def _object(text: str | bytes) -> dict[str, object] | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


async def _file_digest(part: UploadFile) -> bytes:
    digest = hashlib.sha256()
    while chunk := await part.read(1 << 16):
        digest.update(chunk)
    await part.seek(0)
    return digest.digest()


# mutations whose answer holds a secret shown only once (a bearer token, a signing secret): their answers
# are never kept at rest, so a retry is told the mutation ran instead of being shown the secret again (the
# sign-ins are listed too: a signed-in client may send one with its key)
SHOWN_ONCE = frozenset(
    {
        *("accountRegister", "sessionCreate", "passwordReset", "passwordChange"),
        *("integrationConnect", "webhookRegister"),
        # the first shape of the same mutations
        *("register", "login", "resetPassword", "changePassword", "connectIntegration", "registerWebhook"),
    }
)


async def once_by_key(
    request: Request,
    key: str,
    policy: KeyPolicy,
    token_ttl_seconds: int,
    mutation_fields: Callable[[dict[str, object]], Awaitable[frozenset[str] | None]],
    answer: Callable[[], Awaitable[Response]],
) -> Response:
    """`answer()` run at most once for this user's `key`; a retry gets the first answer. `mutation_fields`
    names the root fields of a request's mutation (None for anything else)."""
    user_id = await _user_of(request, token_ttl_seconds)  # the cheap check first: an anonymous key is ignored
    asked = await fingerprint(request) if user_id is not None else None
    fields = await mutation_fields(asked[1]) if asked is not None else None
    if user_id is None or asked is None or fields is None:
        return await answer()
    claim = await claim_key(user_id, key, asked[0], policy)
    if isinstance(claim, Mismatch):
        raise KeyReused
    if isinstance(claim, Busy):
        raise KeyBusy(max(1, round(policy.wait_seconds)))
    if isinstance(claim, Answer):
        return _replayed(claim)
    return await _run_claimed(request, claim, policy, answer, keep_body=not fields & SHOWN_ONCE)


async def _run_claimed(
    request: Request,
    claim: Claimed,
    policy: KeyPolicy,
    answer: Callable[[], Awaitable[Response]],
    *,
    keep_body: bool,
) -> Response:
    try:
        response = await answer()
    except BaseException:
        if not mutation_started(request):
            await release_key(claim)
        raise
    if not mutation_started(request):  # refused before it ran (invalid included): a retry must run
        await release_key(claim)
        return response
    body = response.body if isinstance(response.body, bytes) else bytes(response.body)
    headers = response.headers
    kept = Answer(
        response.status_code,
        headers.get("content-type"),
        headers.get("retry-after"),
        body if keep_body else None,
    )
    try:
        await finish_key(claim, kept, policy)
    except Exception as exc:
        # the answer is still the truth; a retry after the lease runs again (docs/api.md says when)
        report_failure(log, "idempotency key", exc, "keeping the answer of an Idempotency-Key failed")
    return response


NOT_KEPT = (
    "the answer to this Idempotency-Key was not kept (it was larger than "
    "PROOFLOOP_IDEMPOTENCY_MAX_ANSWER_BYTES, or held a secret shown only once); the mutation ran once: read "
    "its outcome"
)
REUSED = "this Idempotency-Key was first used with another request: send a new key"


def _replayed(kept: Answer) -> Response:
    if kept.body is None:
        raise Conflict(NOT_KEPT)
    response = Response(kept.body, status_code=kept.status_code, media_type=kept.media_type)
    if kept.retry_after is not None:
        response.headers["retry-after"] = kept.retry_after
    response.headers[REPLAYED] = "true"
    return response


async def _user_of(request: Request, token_ttl_seconds: int) -> str | None:
    """The signed-in user's id (the session kept on request.state for the GraphQL context), or None."""
    session = getattr(request.state, "session", None)
    if session is None:
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            return None
        try:
            session = await authenticate(token, token_ttl_seconds=token_ttl_seconds)
        except Unauthenticated:
            return None
        request.state.session = session
    return str(session.user.id)
