"""How large a document may be: its text and tokens, checked before it is parsed on every transport, and
its shape (schema/document_shape.py), checked before any other rule reads it.

Signed-in callers get the settings' limits; anonymous ones (no credentials presented) the tighter
`PROOFLOOP_ANONYMOUS_*` ones: what they may run (sign-up, login, introspection) is small.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphql import GraphQLError, Source, TokenKind
from graphql.language.lexer import Lexer

from settings import Settings

MAX_DEPTH = 10
MAX_ALIASES = 30
# the spec's overlapping-fields rule compares every pair of same-named fields and of fragments in a set
MAX_DUPLICATES = 20  # one response name in one selection set, fragments expanded
MAX_SPREADS = 30  # distinct fragments spread in one selection set


@dataclass(frozen=True)
class DocumentLimits:
    max_bytes: int
    max_tokens: int
    max_fields: int
    max_depth: int = MAX_DEPTH
    max_aliases: int = MAX_ALIASES
    max_duplicates: int = MAX_DUPLICATES
    max_spreads: int = MAX_SPREADS

    @classmethod
    def for_caller(cls, settings: Settings, *, anonymous: bool) -> DocumentLimits:
        if anonymous:
            return cls(
                settings.anonymous_max_document_bytes,
                settings.anonymous_max_document_tokens,
                settings.anonymous_max_document_fields,
            )
        return cls(settings.max_document_bytes, settings.max_document_tokens, settings.max_document_fields)

    def setting(self, name: str, *, anonymous: bool) -> str:
        return f"PROOFLOOP_{'ANONYMOUS_' if anonymous else ''}MAX_DOCUMENT_{name}"


def size_refusal(query: str, limits: DocumentLimits, *, anonymous: bool) -> str | None:
    """Why a document's text is too large to parse (PAYLOAD_TOO_LARGE), or None."""
    size = len(query.encode())
    if size <= limits.max_bytes:
        return None
    return (
        f"the document is {size} bytes, over the limit of {limits.max_bytes} "
        f"({limits.setting('BYTES', anonymous=anonymous)}); use a persisted document or a smaller one"
    )


def token_refusal(query: str, limits: DocumentLimits, *, anonymous: bool) -> str | None:
    """Why a document has too many tokens to parse (GRAPHQL_VALIDATION_FAILED), or None.

    Lexed only (no tree is built), and stopped at the limit; a lexical error is left to the parser."""
    lexer = Lexer(Source(query))
    try:
        for _ in range(limits.max_tokens + 1):
            if lexer.advance().kind is TokenKind.EOF:
                return None
    except GraphQLError:
        return None
    return (
        f"the document has more than {limits.max_tokens} tokens "
        f"({limits.setting('TOKENS', anonymous=anonymous)}); use a persisted document or a smaller one"
    )
