from __future__ import annotations


class InvalidInput(ValueError):
    """Input the caller must refuse as BAD_USER_INPUT, naming the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
