"""Persisted (trusted) documents: a manifest of the documents a frontend was built with.

A request names one by `documentId` (GraphQL-over-HTTP persisted documents, Relay) or by
`extensions.persistedQuery.sha256Hash` (Apollo); an id may carry a `sha256:` prefix. The manifest is a JSON
object `{id: document}` (Relay) or Apollo's `{"format": "apollo-persisted-query-manifest", "operations":
[{"id", "body"}]}`; every document is also found by the SHA-256 of its text. With
PROOFLOOP_PERSISTED_DOCUMENTS_ONLY, a document that is not in the manifest is refused on every transport
(but for the readiness probe `{ __typename }`).

Without it, Apollo's automatic persisted queries work over HTTP: a hash the server does not know is answered
as Apollo's servers answer it (HTTP 200, `PersistedQueryNotFound`, never cached), the client sends the query
with its hash, and once that document has passed validation its hash finds it (schema/parse_cache.py, within
the same byte budget). Every document that is not in the manifest is bounded here, before anything parses
it (schema/document_limits.py), whether it came as text or by a learned hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from schema.document_limits import DocumentLimits, size_refusal, token_refusal
from settings import Settings

if TYPE_CHECKING:
    from schema.parse_cache import ValidDocuments

APOLLO_PERSISTED_QUERY_VERSION = 1
# a readiness check (Apollo's, urql's) runs this; it reads nothing, so it runs in persisted-only mode too
READINESS_PROBES = frozenset({"{__typename}", "query{__typename}"})
_PROBE_MAX_CHARS = 64


class DocumentRefused(Exception):
    def __init__(self, code: str, message: str, field: str | None = None, *, apollo: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.apollo = apollo  # answered as Apollo's servers do, for its clients: HTTP 200, not cached


def _persisted_query_not_found() -> DocumentRefused:
    # Apollo's links (web, Kotlin, iOS) match this message or code, then send the query with its hash
    return DocumentRefused("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound", apollo=True)


def _persisted_query_not_supported() -> DocumentRefused:
    # Apollo's link stops hashing for good on this, and sends the query text (run if it is in the manifest)
    return DocumentRefused("PERSISTED_QUERY_NOT_SUPPORTED", "PersistedQueryNotSupported", apollo=True)


def sha256_of(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def _manifest_entries(manifest: object) -> dict[str, str]:
    if isinstance(manifest, dict) and isinstance(manifest.get("operations"), list):
        return {str(op["id"]): str(op["body"]) for op in manifest["operations"]}
    if isinstance(manifest, dict):
        return {str(key): str(value) for key, value in manifest.items()}
    raise ValueError("a persisted-documents manifest is a JSON object")


def persisted_id(body: Mapping[str, object]) -> str | None:
    """The persisted document a request names, if any (documentId, or Apollo's persistedQuery hash)."""
    document_id = body.get("documentId")
    if isinstance(document_id, str):
        return document_id
    extensions = body.get("extensions")
    persisted = extensions.get("persistedQuery") if isinstance(extensions, Mapping) else None
    digest = persisted.get("sha256Hash") if isinstance(persisted, Mapping) else None
    return digest if isinstance(digest, str) else None


def apollo_hash(extensions: object) -> str | None:
    """The SHA-256 an Apollo automatic persisted query names (BAD_USER_INPUT for another version)."""
    persisted = extensions.get("persistedQuery") if isinstance(extensions, Mapping) else None
    if not isinstance(persisted, Mapping):
        return None
    digest = persisted.get("sha256Hash")
    if persisted.get("version") != APOLLO_PERSISTED_QUERY_VERSION or not isinstance(digest, str):
        raise DocumentRefused(
            "BAD_USER_INPUT",
            "extensions.persistedQuery needs version 1 and a sha256Hash string",
            "extensions",
        )
    return digest.lower()


def is_readiness_probe(query: str) -> bool:
    return len(query) <= _PROBE_MAX_CHARS and "".join(query.split()) in READINESS_PROBES


@dataclass(frozen=True)
class TrustedDocuments:
    signed_in: DocumentLimits
    anonymous: DocumentLimits
    by_id: Mapping[str, str] = field(default_factory=dict)
    only: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> TrustedDocuments:
        signed_in = DocumentLimits.for_caller(settings, anonymous=False)
        anonymous = DocumentLimits.for_caller(settings, anonymous=True)
        if settings.persisted_documents is None:
            return cls(signed_in, anonymous, only=settings.persisted_documents_only)
        entries = _manifest_entries(json.loads(Path(settings.persisted_documents).read_text()))
        by_id = {**{sha256_of(doc): doc for doc in entries.values()}, **entries}
        return cls(signed_in, anonymous, by_id, only=settings.persisted_documents_only)

    def document(
        self,
        query: str | None,
        document_id: str | None,
        *,
        anonymous: bool,
        apollo: str | None = None,
        learned: ValidDocuments | None = None,
    ) -> str | None:
        """The document to run: PERSISTED_QUERY_NOT_FOUND for an unknown id, FORBIDDEN for untrusted text,
        PAYLOAD_TOO_LARGE or GRAPHQL_VALIDATION_FAILED for text over the caller's size or token limit.
        `apollo` is an automatic persisted query's hash, looked up in `learned` past the manifest."""
        if apollo is not None and apollo not in self.by_id:
            return self._automatic(query, apollo, anonymous=anonymous, learned=learned)
        document_id = document_id if document_id is not None else apollo
        if document_id is not None:
            key = document_id.removeprefix("sha256:")
            known = self.by_id.get(key)
            if known is None:
                raise DocumentRefused("PERSISTED_QUERY_NOT_FOUND", f"no persisted document {document_id!r}")
            if query is not None and query != known:
                raise DocumentRefused(
                    "BAD_USER_INPUT", "the query does not match the persisted document", "query"
                )
            return known
        if query is None or (self.by_id and self.by_id.get(sha256_of(query)) == query):
            return query  # a persisted document is known: no limit of size
        if self.only and not is_readiness_probe(query):
            raise DocumentRefused("FORBIDDEN", "this server runs only persisted documents")
        return self._bounded(query, anonymous=anonymous)

    def _automatic(
        self, query: str | None, digest: str, *, anonymous: bool, learned: ValidDocuments | None
    ) -> str:
        """An automatic persisted query: learned from the query sent with its hash, never in persisted-only
        mode (the manifest is the allow-list there)."""
        if self.only or learned is None:
            raise _persisted_query_not_supported()
        if query is None:
            query = learned.text_by_hash(digest)
            if query is None:
                raise _persisted_query_not_found()
        elif sha256_of(query) != digest:
            raise DocumentRefused(
                "BAD_USER_INPUT",
                "extensions.persistedQuery.sha256Hash is not the SHA-256 of the query",
                "extensions",
            )
        return self._bounded(query, anonymous=anonymous)

    def _bounded(self, query: str, *, anonymous: bool) -> str:
        limits = self.anonymous if anonymous else self.signed_in
        if too_large := size_refusal(query, limits, anonymous=anonymous):
            raise DocumentRefused("PAYLOAD_TOO_LARGE", too_large, "query")
        if too_many := token_refusal(query, limits, anonymous=anonymous):
            raise DocumentRefused("GRAPHQL_VALIDATION_FAILED", too_many)
        return query
