from __future__ import annotations

import io
from datetime import UTC, datetime

import av
import pytest
from PIL import Image

from tests import media_factory as mf
from verification.errors import InvalidInput
from verification.video import SAMPLE_COUNT, creation_time, inspect_video, is_reused_video

PRIVATE_TAGS = {"title": "Morning run", "location": "+52.5200+013.4050/", "comment": "secret"}


@pytest.fixture(scope="module")
def original() -> bytes:
    return mf.clip(3, seed=11, creation_time="2024-05-01T07:00:00.000000Z", metadata=PRIVATE_TAGS)


def test_duration_and_creation_time(original: bytes) -> None:
    facts = inspect_video(original)
    assert facts.duration_seconds == pytest.approx(3, abs=0.1)
    assert facts.created_at == datetime(2024, 5, 1, 7, 0, tzinfo=UTC)
    assert len(facts.keyframe_hashes) == SAMPLE_COUNT


def test_clip_without_creation_time() -> None:
    facts = inspect_video(mf.clip(1.5, seed=12))
    assert facts.created_at is None
    assert facts.duration_seconds == pytest.approx(1.5, abs=0.1)  # judging TOO_SHORT is the caller's


def test_creation_time_variants() -> None:
    assert creation_time({"com.apple.quicktime.creationdate": "2024-05-01T09:00:00+0200"}) == datetime(
        2024, 5, 1, 7, 0, tzinfo=UTC
    )
    assert creation_time({"creation_time": "2024-05-01 07:00:00"}) == datetime(2024, 5, 1, 7, 0, tzinfo=UTC)
    assert creation_time({"creation_time": "yesterday"}) is None
    assert creation_time({}) is None


def test_clean_copy_has_no_metadata_tags(original: bytes) -> None:
    facts = inspect_video(original)
    assert facts.clean_mime == "video/mp4"
    with av.open(io.BytesIO(facts.clean), "r") as clean:
        assert set(clean.metadata) <= {"major_brand", "minor_version", "compatible_brands"}
        for stream in clean.streams:
            assert set(stream.metadata) <= {"language", "handler_name", "vendor_id"}
        assert clean.streams.video[0].frames == 30
    for secret in (b"Morning run", b"+52.5200", b"secret", b"Lavf"):
        assert secret not in facts.clean
    assert facts.clean.find(b"moov") < facts.clean.find(b"mdat")  # index first: plays while loading


def test_thumbnail_is_a_small_jpeg(original: bytes) -> None:
    thumb = Image.open(io.BytesIO(inspect_video(original).thumbnail))
    assert thumb.format == "JPEG"
    assert max(thumb.size) <= 320


def test_reencoded_copy_is_reused_and_a_different_clip_is_not(original: bytes) -> None:
    first = inspect_video(original).keyframe_hashes
    copy = inspect_video(mf.reencoded(original, bit_rate=20_000, size=(96, 72))).keyframe_hashes
    other = inspect_video(mf.clip(3, seed=13)).keyframe_hashes
    assert is_reused_video(copy, [other, first])
    assert not is_reused_video(other, [first])
    assert not is_reused_video((), [first])


def test_sampling_within_a_zero_decode_budget_still_hashes() -> None:
    facts = inspect_video(mf.clip(4, seed=14, gop=20), max_seconds_decoded=0)
    assert 1 <= len(facts.keyframe_hashes) <= SAMPLE_COUNT


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 200, "not a readable video"),
        (mf.photo(1), "not a readable video"),
        (mf.audio_only(), "no video stream"),
    ],
    ids=["empty", "garbage", "jpeg", "audio-only"],
)
def test_unusable_files_are_invalid_input(data: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as raised:
        inspect_video(data, field="input.video")
    assert raised.value.field == "input.video"


def test_truncated_clip_is_invalid_input(original: bytes) -> None:
    with pytest.raises(InvalidInput):
        inspect_video(mf.truncated(original, 0.4))


def test_frame_threshold_separates_reencodes_from_other_clips() -> None:
    originals = {seed: mf.clip(3, seed=seed) for seed in (21, 22, 23, 24)}
    hashes = {seed: inspect_video(data).keyframe_hashes for seed, data in originals.items()}
    for seed, data in originals.items():
        others = [h for other, h in hashes.items() if other != seed]
        for bit_rate, size in ((20_000, None), (30_000, (96, 72))):
            copy = inspect_video(mf.reencoded(data, bit_rate=bit_rate, size=size)).keyframe_hashes
            assert is_reused_video(copy, [hashes[seed]]), (seed, bit_rate)
            assert not is_reused_video(copy, others), (seed, bit_rate)


def test_clean_copy_falls_back_to_fragmented_mp4_when_the_index_outgrows_its_space(
    original: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("verification.video.MOOV_BASE_BYTES", 16)
    monkeypatch.setattr("verification.video.MOOV_BYTES_PER_PACKET", 0)
    clean = inspect_video(original).clean
    assert b"moof" in clean
    with av.open(io.BytesIO(clean), "r") as copy:
        assert len(list(copy.decode(video=0))) == 30
        assert "title" not in copy.metadata
