"""Where data exports are kept, one contract on two backends: a directory, and a bucket on a real
S3-protocol server (moto's, in a subprocess). Each keeps a built file whole, serves it, removes it, and
refuses any name but `<uuid>.zip`."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from harness.object_store import CREDENTIALS, MotoServer
from storage import ArchiveStore, FileArchiveStore, S3ArchiveStore, open_archive_store, open_blob_store

pytestmark = pytest.mark.unit

TIMEOUT = 5.0
SOME_ID = "0b5f8a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"


@pytest.fixture(params=["files", "s3"])
def archives(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ArchiveStore:
    if request.param == "files":
        return FileArchiveStore(tmp_path / "exports")
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    moto: MotoServer = request.getfixturevalue("moto")
    return open_archive_store(moto.store_url(moto.new_bucket()), tmp_path / "exports", timeout=TIMEOUT)


def built(store: ArchiveStore, data: bytes) -> Path:
    store.scratch.mkdir(parents=True, exist_ok=True)
    path = store.scratch / f".tmp-{uuid.uuid4().hex}.zip"
    path.write_bytes(data)
    return path


async def read_all(store: ArchiveStore, name: str) -> bytes | None:
    body = await store.open(name)
    if body is None:
        return None
    data = b"".join([chunk async for chunk in body.chunks])
    assert len(data) == body.size
    return data


async def test_a_kept_archive_is_served_whole_and_its_built_file_is_gone(archives: ArchiveStore) -> None:
    name = f"{uuid.uuid4()}.zip"
    data = os.urandom(6 * 1024 * 1024 + 17)  # over one 5 MB part: a multipart upload on S3
    local = built(archives, data)
    await archives.keep(name, local)
    assert await read_all(archives, name) == data
    assert not local.exists()
    assert sorted(p.name for p in archives.scratch.iterdir() if p.name.startswith(".tmp-")) == []


async def test_a_missing_archive_is_none_and_removing_it_is_no_error(archives: ArchiveStore) -> None:
    name = f"{uuid.uuid4()}.zip"
    assert await archives.open(name) is None
    await archives.remove(name)


async def test_remove_takes_the_archive_away(archives: ArchiveStore) -> None:
    name = f"{uuid.uuid4()}.zip"
    await archives.keep(name, built(archives, b"PK archive"))
    await archives.remove(name)
    assert await archives.open(name) is None


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../x.zip",
        SOME_ID,
        f"{SOME_ID}.zip/..",
        f"../{SOME_ID}.zip",
        f"{SOME_ID.upper()}.zip",
        "a" * 36 + ".zip",
    ],
)
async def test_names_other_than_an_exports_uuid_are_refused(archives: ArchiveStore, name: str) -> None:
    with pytest.raises(ValueError, match="not an archive name"):
        await archives.open(name)
    with pytest.raises(ValueError, match="not an archive name"):
        await archives.remove(name)


async def test_exports_sit_beside_the_media_in_one_bucket_and_the_media_sweep_ignores_them(
    moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in CREDENTIALS.items():
        monkeypatch.setenv(variable, value)
    url = moto.store_url(moto.new_bucket())
    archives = open_archive_store(url, tmp_path, timeout=TIMEOUT)
    media = open_blob_store(url, tmp_path, timeout=TIMEOUT)
    assert isinstance(archives, S3ArchiveStore)
    name = f"{uuid.uuid4()}.zip"
    await archives.keep(name, built(archives, b"PK"))
    await media.put(b"photo")
    swept = [leftover.name async for leftover in media.older_than(float("inf"))]
    assert len(swept) == 1 and "exports" not in swept[0]  # the sweep never lists an archive


def test_without_a_bucket_exports_stay_in_the_data_dir(tmp_path: Path) -> None:
    for url in (None, f"file://{tmp_path / 'media'}"):
        store = open_archive_store(url, tmp_path / "exports", timeout=TIMEOUT)
        assert isinstance(store, FileArchiveStore) and store.scratch == tmp_path / "exports"
