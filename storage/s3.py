"""The S3 backend: blobs as objects `<prefix>/ab/cd/<sha256>` in any S3-compatible bucket (AWS S3, MinIO,
Cloudflare R2), through obstore (the Rust `object_store` crate), whose requests run on its own runtime and
never on the event loop.

A PUT is atomic (an object appears whole or not at all) and is sent with `If-None-Match: *`, so a put
says whether it created the object. Each call is bounded: obstore's own request timeout and retry budget,
and around them one overall deadline; a store that does not answer within it is StoreUnavailable.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from obstore.exceptions import AlreadyExistsError, GenericError, JoinError, PreconditionError
from obstore.store import S3Store

from storage.blobs import BlobBody, Leftover, Stored, StoreUnavailable, blob_key, digest_in, digest_of

if TYPE_CHECKING:
    from obstore.store import S3Config

__all__ = ["S3BlobStore", "answered_within", "chunks_of", "s3_store", "said"]

T = TypeVar("T")
CHUNK_BYTES = 64 * 1024
LIST_PAGE = 1000  # S3's largest page
# a served body follows the client's pace (50 MB to a slow phone takes minutes): as long as a signed link
# lives, while each read from the store stays bounded by the store's timeout
BODY_SECONDS = 600.0


def s3_store(
    bucket: str,
    prefix: str,
    *,
    endpoint: str | None,
    region: str | None,
    timeout: float,
    body_seconds: float | None = None,
) -> S3Store:
    """obstore's client; credentials come from the standard AWS variables (AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, web identity, container or instance credentials).
    `body_seconds`: a client for streamed bodies, whose whole request may take that long."""
    limit = timedelta(seconds=timeout)
    config: S3Config = {}
    if endpoint is not None:
        config["endpoint"] = endpoint
    if region is not None:
        config["region"] = region
    return S3Store(
        bucket,
        prefix=prefix or None,
        config=config,
        client_options={
            "timeout": limit if body_seconds is None else timedelta(seconds=max(timeout, body_seconds)),
            "read_timeout": limit,
            "connect_timeout": min(limit, timedelta(seconds=3)),
            "allow_http": endpoint is not None and endpoint.startswith("http://"),
        },
        retry_config={
            "max_retries": 2,
            "retry_timeout": limit,
            "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=1)},
        },
    )


def said(error: BaseException) -> str:
    return str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__


async def answered_within(
    seconds: float, operation: str, call: Awaitable[T], on_answer: Callable[[], None]
) -> T:
    """`call`'s result within `seconds`, else StoreUnavailable; a missing object or a failed precondition
    is an answer (raised as it is), as is a result: both call `on_answer`."""
    try:
        async with asyncio.timeout(seconds):
            result = await call
    except (FileNotFoundError, AlreadyExistsError, PreconditionError):
        on_answer()  # an answer, if not the one hoped for
        raise
    except TimeoutError as exc:
        raise StoreUnavailable(f"the media store did not answer a {operation} within {seconds:g} s") from exc
    except (GenericError, JoinError) as exc:  # connection errors, timeouts, 5xx once retries ran out
        raise StoreUnavailable(f"the media store failed a {operation}: {said(exc)}") from exc
    on_answer()
    return result


class S3BlobStore:
    """`bodies` streams what `open` serves (its requests may last as long as a slow client reads);
    `on_answer` is called whenever the store answered (the composition root ends an outage with it)."""

    def __init__(
        self,
        store: S3Store,
        timeout: float,
        on_answer: Callable[[], None] = lambda: None,
        bodies: S3Store | None = None,
    ) -> None:
        self.store = store
        self.bodies = bodies or store
        self.timeout = timeout
        self.on_answer = on_answer

    async def _bounded(self, operation: str, call: Awaitable[T]) -> T:
        return await answered_within(self.timeout, operation, call, self.on_answer)

    async def put(self, data: bytes) -> Stored:
        digest = digest_of(data)
        try:
            await self._bounded(
                "put", self.store.put_async(blob_key(digest), data, mode="create", use_multipart=False)
            )
        except (AlreadyExistsError, PreconditionError):
            return Stored(digest, False)
        return Stored(digest, True)

    async def exists(self, digest: str) -> bool:
        try:
            await self._bounded("head", self.store.head_async(blob_key(digest)))
        except FileNotFoundError:
            return False
        return True

    async def read(self, digest: str) -> bytes:
        key = blob_key(digest)

        async def whole() -> bytes:
            return bytes(await (await self.store.get_async(key)).bytes_async())

        return await self._bounded("get", whole())

    async def open(self, digest: str) -> BlobBody | None:
        try:
            result = await self._bounded("get", self.bodies.get_async(blob_key(digest)))
        except FileNotFoundError:
            return None
        # the headers came within the bound; a stream that stalls ends at the client's read timeout
        return BlobBody(result.meta["size"], chunks_of(result.stream(min_chunk_size=CHUNK_BYTES)))

    async def remove(self, digest: str) -> None:
        await self._bounded("delete", self.store.delete_async(blob_key(digest)))

    async def older_than(self, cutoff: float) -> AsyncIterator[Leftover]:
        pages = self.store.list(chunk_size=LIST_PAGE)
        while True:
            try:
                page = await self._bounded("list", anext(pages))
            except StopAsyncIteration:
                return
            for meta in page:
                digest = digest_in(meta["path"])
                # only blobs: S3 has no half-written objects, and anything else under the prefix is not ours
                if digest is not None and meta["last_modified"].timestamp() < cutoff:
                    yield Leftover(meta["path"], digest)

    async def remove_leftover(self, name: str) -> None:
        digest = digest_in(name)
        if digest is None:
            raise ValueError(f"{name!r} is not a blob of this store")
        await self.remove(digest)


async def chunks_of(stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    async for chunk in stream:
        yield bytes(chunk)
