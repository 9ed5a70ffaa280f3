from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from storage import BlobStore


def test_put_is_content_addressed_and_idempotent(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    digest = store.put(b"proof")
    assert digest == hashlib.sha256(b"proof").hexdigest()
    assert store.path(digest) == tmp_path / digest[:2] / digest[2:4] / digest
    assert store.put(b"proof") == digest
    assert store.read(digest) == b"proof"
    assert store.exists(digest)
    assert [p.name for p in store.path(digest).parent.iterdir()] == [digest]  # no temp files left


def test_empty_blob_round_trips(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    assert store.read(store.put(b"")) == b""


def test_missing_blob(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    digest = hashlib.sha256(b"never stored").hexdigest()
    assert not store.exists(digest)
    with pytest.raises(FileNotFoundError):
        store.read(digest)


@pytest.mark.parametrize(
    "digest",
    ["", "../" + "a" * 61, "A" * 64, "a" * 63, "a" * 65, "g" * 64, "a" * 63 + "/", "a" * 64 + "\n"],
)
def test_malformed_digests_are_refused(tmp_path: Path, digest: str) -> None:
    store = BlobStore(tmp_path)
    with pytest.raises(ValueError, match="64 lowercase hex"):
        store.path(digest)
    with pytest.raises(ValueError, match="64 lowercase hex"):
        store.read(digest)


def test_failed_write_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = BlobStore(tmp_path)

    def broken_replace(src: str, dst: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("storage.blobs.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        store.put(b"proof")
    digest = hashlib.sha256(b"proof").hexdigest()
    assert not store.exists(digest)
    assert list(store.path(digest).parent.iterdir()) == []


def test_put_new_says_who_created_the_file_and_remove_is_idempotent(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    digest, created = store.put_new(b"once")
    assert created
    assert store.put_new(b"once") == (digest, False)
    store.remove(digest)
    store.remove(digest)
    assert not store.exists(digest)
    assert store.put_new(b"once") == (digest, True)
