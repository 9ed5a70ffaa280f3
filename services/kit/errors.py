"""Domain errors; the GraphQL layer maps each to its contract code (extensions.code)."""

from __future__ import annotations


class ProofloopError(Exception):
    code = "INTERNAL_SERVER_ERROR"
    # a stable name for why, where a client acts on more than the code (extensions.reason, UserError.reason)
    reason: str | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Unauthenticated(ProofloopError):
    code = "UNAUTHENTICATED"


class Forbidden(ProofloopError):
    code = "FORBIDDEN"


class NotFound(ProofloopError):
    code = "NOT_FOUND"


class Conflict(ProofloopError):
    code = "CONFLICT"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class PayloadTooLarge(ProofloopError):
    code = "PAYLOAD_TOO_LARGE"


class RateLimited(ProofloopError):
    code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class BadInput(ProofloopError):
    code = "BAD_USER_INPUT"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message if message.startswith(field) else f"{field}: {message}")
        self.field = field


class ServiceUnavailable(ProofloopError):
    """The database (or Redis) does not answer: nothing was done, the same request may be retried."""

    code = "SERVICE_UNAVAILABLE"

    def __init__(self, message: str, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds
