"""Mutation payloads: a mutation's result and the user errors that stopped it, in one answer.

Every mutation of the current shape takes one `input:` object and returns a `…Payload` whose fields are
its results (null when it was refused) and `userErrors`, as GitHub's and Shopify's APIs do. An expected
refusal (a field's value breaks a rule, the object is not there or not yours to change, the state forbids
the change) is a user error: a form shows it beside the field it names. What a client cannot fix by
changing its input stays a GraphQL error with its `extensions.code`: no or a revoked token, a rate limit,
an outage (SERVICE_UNAVAILABLE), a document the schema refuses, a fault inside.

A refused mutation changes nothing, as before: the services raise before they commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TypeVar

import strawberry

from services.kit import (
    BadInput,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    ProofloopError,
    Unauthenticated,
)


@strawberry.enum(description="why a mutation was refused; the same codes as errors' extensions.code")
class UserErrorCode(Enum):
    BAD_USER_INPUT = "BAD_USER_INPUT"
    NOT_FOUND = "NOT_FOUND"
    FORBIDDEN = "FORBIDDEN"
    CONFLICT = "CONFLICT"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    UNAUTHENTICATED = "UNAUTHENTICATED"  # only where the input is a credential (signing in, a reset token)


@strawberry.type(description="an expected refusal: what to show, and beside which input field")
class UserError:
    field: list[str] | None = strawberry.field(
        description='the input path the error is about, e.g. ["input", "schedule", "rrule"]; null when it '
        "is about no one field"
    )
    code: UserErrorCode
    message: str
    reason: str | None = strawberry.field(
        default=None,
        description="a stable name for why, where the code alone does not say (e.g. JUDGED_BY_METHOD)",
    )

    @staticmethod
    def of(refusal: ProofloopError) -> UserError:
        field = getattr(refusal, "field", None) if isinstance(refusal, BadInput) else None
        code = UserErrorCode(refusal.code)
        return UserError(field=_input_path(field), code=code, message=refusal.message, reason=refusal.reason)


def _input_path(field: str | None) -> list[str] | None:
    # the services name the argument of the first shape ("instanceId", "input.title"); every argument of
    # a payload mutation is a field of its one `input`
    if not field:
        return None
    parts = field.split(".")
    return parts if parts[0] == "input" else ["input", *parts]


# what an input can cause; the rest (rate limits, outages, faults) stay errors
EXPECTED: tuple[type[ProofloopError], ...] = (BadInput, NotFound, Forbidden, Conflict, PayloadTooLarge)
WITH_CREDENTIALS = (*EXPECTED, Unauthenticated)


MAX_CLIENT_MUTATION_ID = 100


@strawberry.type
class MutationPayload:
    user_errors: list[UserError] = strawberry.field(
        default_factory=list, description="empty when the mutation was done; otherwise nothing was changed"
    )
    client_mutation_id: str | None = strawberry.field(
        default=None, description="the input's clientMutationId, unchanged"
    )


Payload = TypeVar("Payload", bound=MutationPayload)


@strawberry.input
class MutationInput:
    client_mutation_id: str | None = strawberry.field(
        default=None,
        description=f"optional; echoed in the payload (at most {MAX_CLIENT_MUTATION_ID} characters)",
    )


def fits_client_mutation_id(input: MutationInput) -> bool:
    return input.client_mutation_id is None or len(input.client_mutation_id) <= MAX_CLIENT_MUTATION_ID


async def settle(
    payload: type[Payload],
    input: MutationInput | None,
    work: Callable[[], Awaitable[Payload]],
    *,
    expected: tuple[type[ProofloopError], ...] = EXPECTED,
) -> Payload:
    """`work`'s payload, or the payload of its expected refusal; clientMutationId echoed either way."""
    echoed = input.client_mutation_id if input is not None else None
    try:
        if input is not None and not fits_client_mutation_id(input):
            raise BadInput("clientMutationId", f"must be at most {MAX_CLIENT_MUTATION_ID} characters")
        done = await work()
    except expected as refusal:
        done = payload(user_errors=[UserError.of(refusal)])
    done.client_mutation_id = echoed
    return done
