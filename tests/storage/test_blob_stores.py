"""One contract, two backends: files under a directory and a bucket on a real S3-protocol server (moto's,
in a subprocess). Each runs the same checks: content addressing, idempotent puts, whole-or-nothing
writes, reads and streams, removal, the sweep's listing, and bounded calls to a store that never answers."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.object_store import CREDENTIALS, MotoServer
from observability.outages import unreachable
from storage import BlobStore, FileBlobStore, S3BlobStore, StoreUnavailable, blob_key, open_blob_store

pytestmark = pytest.mark.unit

TIMEOUT = 5.0


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(params=["files", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "files":
        return FileBlobStore(tmp_path)
    moto: MotoServer = request.getfixturevalue("moto")
    request.getfixturevalue("aws_credentials")
    return open_blob_store(moto.store_url(moto.new_bucket()), tmp_path, timeout=TIMEOUT)


async def names(store: BlobStore, cutoff: float) -> list[str]:
    return sorted([leftover.name async for leftover in store.older_than(cutoff)])


async def test_put_is_content_addressed_and_idempotent(store: BlobStore) -> None:
    digest, created = await store.put(b"proof")
    assert digest == hashlib.sha256(b"proof").hexdigest()
    assert created
    assert await store.put(b"proof") == (digest, False)
    assert await store.read(digest) == b"proof"
    assert await store.exists(digest)
    assert await names(store, time.time() + 5) == [blob_key(digest)]  # one object, no temp file beside it


async def test_empty_blob_round_trips(store: BlobStore) -> None:
    assert await store.read((await store.put(b"")).digest) == b""


async def test_missing_blob(store: BlobStore) -> None:
    digest = hashlib.sha256(b"never stored").hexdigest()
    assert not await store.exists(digest)
    assert await store.open(digest) is None
    with pytest.raises(FileNotFoundError):
        await store.read(digest)
    await store.remove(digest)  # nothing to remove: no error


@pytest.mark.parametrize(
    "digest",
    ["", "../" + "a" * 61, "A" * 64, "a" * 63, "a" * 65, "g" * 64, "a" * 63 + "/", "a" * 64 + "\n"],
)
async def test_malformed_digests_are_refused(store: BlobStore, digest: str) -> None:
    for call in (store.exists, store.read, store.open, store.remove):
        with pytest.raises(ValueError, match="64 lowercase hex"):
            await call(digest)


async def test_remove_is_idempotent_and_a_later_put_creates_again(store: BlobStore) -> None:
    digest, _ = await store.put(b"once")
    await store.remove(digest)
    await store.remove(digest)
    assert not await store.exists(digest)
    assert await store.put(b"once") == (digest, True)


async def test_open_streams_the_whole_blob(store: BlobStore) -> None:
    data = bytes(range(256)) * 1024  # 256 KiB: several chunks
    digest, _ = await store.put(data)
    body = await store.open(digest)
    assert body is not None
    assert body.size == len(data)
    assert b"".join([chunk async for chunk in body.chunks]) == data


async def test_concurrent_puts_of_one_blob_create_it_once(store: BlobStore) -> None:
    results = await asyncio.gather(*(store.put(b"raced") for _ in range(8)))
    assert {digest for digest, _ in results} == {hashlib.sha256(b"raced").hexdigest()}
    assert sum(created for _, created in results) >= 1  # S3: exactly one; files: whoever renamed first
    assert await store.read(results[0].digest) == b"raced"


async def test_the_sweep_lists_only_what_is_older_than_its_cutoff(store: BlobStore) -> None:
    old, _ = await store.put(b"written before the cutoff")
    assert await names(store, time.time() - 60) == []  # everything is younger than a minute ago
    listed = [leftover async for leftover in store.older_than(time.time() + 5)]
    assert [(leftover.name, leftover.digest) for leftover in listed] == [(blob_key(old), old)]
    await store.remove_leftover(listed[0].name)
    assert not await store.exists(old)
    with pytest.raises(ValueError, match="not"):
        await store.remove_leftover("../../../etc/passwd")


def test_files_leave_nothing_behind_when_a_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileBlobStore(tmp_path)

    def broken_replace(src: str, dst: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("storage.files.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(store.put(b"proof"))
    digest = hashlib.sha256(b"proof").hexdigest()
    assert not store.path(digest).exists()
    assert list(store.path(digest).parent.iterdir()) == []


async def test_files_list_a_temp_file_a_crash_left_for_the_sweep(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    digest, _ = await store.put(b"kept")
    crashed = store.path(digest).parent / ".tmp-crashed"
    crashed.write_bytes(b"half")
    listed = {leftover.name: leftover.digest async for leftover in store.older_than(time.time() + 5)}
    assert listed == {blob_key(digest): digest, f"{digest[:2]}/{digest[2:4]}/.tmp-crashed": None}


class CuttingProxy:
    """A loopback TCP proxy to the S3 server that forwards the first `limit` bytes of each request, then
    drops the connection: a client that dies (or a network that breaks) in the middle of an upload."""

    def __init__(self, port: int, limit: int) -> None:
        self.port, self.limit = port, limit
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        _, upstream_writer = await asyncio.open_connection("127.0.0.1", self.port)
        sent = 0
        while sent < self.limit and (data := await client_reader.read(min(65536, self.limit - sent))):
            upstream_writer.write(data)
            await upstream_writer.drain()
            sent += len(data)
        for writer in (upstream_writer, client_writer):
            writer.transport.abort()


async def test_an_upload_cut_in_the_middle_stores_nothing(
    moto: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    bucket = moto.new_bucket()
    data = b"x" * (2 * 1024 * 1024)
    async with CuttingProxy(moto.port, limit=256 * 1024) as endpoint:
        cut = open_blob_store(f"s3://{bucket}/media?endpoint={endpoint}", Path("/nonexistent"), timeout=3)
        with pytest.raises(StoreUnavailable):
            await cut.put(data)
    assert moto.keys(bucket) == []  # no half object, under any name
    whole = open_blob_store(moto.store_url(bucket), Path("/nonexistent"), timeout=TIMEOUT)
    assert not await whole.exists(hashlib.sha256(data).hexdigest())


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An address that accepts connections and never answers: a stalled store."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.fixture
def stalled(silent_endpoint: str, aws_credentials: None) -> S3BlobStore:
    store = open_blob_store(f"s3://bucket?endpoint={silent_endpoint}", Path("/nonexistent"), timeout=0.5)
    assert isinstance(store, S3BlobStore)
    return store


async def test_a_store_that_never_answers_is_unavailable_within_the_bound(stalled: S3BlobStore) -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    for call in (stalled.put(b"x"), stalled.exists(digest), stalled.read(digest), stalled.open(digest)):
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"did not answer|failed") as failure:
            await call
        assert time.monotonic() - started < 1.5
        assert (
            unreachable(failure.value) == "media store"
        )  # counted as the store's outage, not logged as a bug
    with pytest.raises(StoreUnavailable):
        [leftover async for leftover in stalled.older_than(time.time())]


async def test_an_answer_ends_the_outage(moto: MotoServer, aws_credentials: None) -> None:
    answers: list[None] = []
    store = open_blob_store(
        moto.store_url(moto.new_bucket()), Path("/x"), timeout=TIMEOUT, on_answer=lambda: answers.append(None)
    )
    assert not await store.exists(hashlib.sha256(b"y").hexdigest())  # "not there" is an answer too
    await store.put(b"y")
    assert len(answers) == 2


def test_the_url_names_the_backend(tmp_path: Path) -> None:
    assert isinstance(open_blob_store(None, tmp_path, timeout=1), FileBlobStore)
    chosen = open_blob_store(f"file://{tmp_path}/elsewhere", Path("/unused"), timeout=1)
    assert isinstance(chosen, FileBlobStore) and chosen.root == tmp_path / "elsewhere"
    s3 = open_blob_store("s3://bucket/some/prefix?region=eu-central-1", tmp_path, timeout=1)
    assert isinstance(s3, S3BlobStore) and s3.store.prefix == "some/prefix"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("s3://key:secret@bucket/media", "no credentials"),
        ("s3:///media", "no bucket"),
        ("s3://bucket?endpoint=ftp://host", "http:// or https://"),
        ("s3://bucket?endpoint=http://a&endpoint=http://b", "each once"),
        ("s3://bucket?acl=public-read", "takes endpoint, region"),
        ("gs://bucket", "not gs:"),
        ("file://host/dir", "file:///absolute"),
    ],
)
def test_a_wrong_url_says_what_is_wrong(url: str, says: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=says):
        open_blob_store(url, tmp_path, timeout=1)
