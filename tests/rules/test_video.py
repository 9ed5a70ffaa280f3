from __future__ import annotations

import io
from datetime import UTC, datetime

import av
import numpy as np
import pytest
from PIL import Image

from harness import media_factory as mf
from rules.errors import InvalidInput
from rules.video import SAMPLE_COUNT, creation_time, inspect_video, is_reused_video

pytestmark = pytest.mark.unit

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
    facts = inspect_video(mf.clip(4, seed=14, gop=20), max_frames_decoded=0)
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
    monkeypatch.setattr("rules.video.MOOV_BASE_BYTES", 16)
    monkeypatch.setattr("rules.video.MOOV_BYTES_PER_PACKET", 0)
    clean = inspect_video(original).clean
    assert b"moof" in clean
    with av.open(io.BytesIO(clean), "r") as copy:
        assert len(list(copy.decode(video=0))) == 30
        assert "title" not in copy.metadata


def test_duration_is_measured_from_packets_not_the_header() -> None:
    patched = mf.matroska_with_duration(mf.clip(2, seed=31), claimed_seconds=1800)
    with av.open(io.BytesIO(patched), "r") as container:
        assert container.duration is not None and container.duration / av.time_base > 1000  # the lie
    assert inspect_video(patched).duration_seconds == pytest.approx(2, abs=0.15)


def test_sei_user_data_does_not_reach_the_clean_copy() -> None:
    tagged = mf.with_sei(mf.clip(2, seed=32), "GPS 52.5200N 13.4050E")
    assert b"GPS 52.5200N" in tagged
    clean = inspect_video(tagged).clean
    assert b"GPS 52.5200N" not in clean
    assert b"x264 - core" not in clean  # the encoder's own SEI goes too
    with av.open(io.BytesIO(clean), "r") as copy:
        assert len(list(copy.decode(video=0))) == 20


def test_vp8_webm_is_copied_into_webm_without_reencoding() -> None:
    facts = inspect_video(mf.vp8_webm(2, seed=33))
    assert facts.clean_mime == "video/webm"
    assert facts.duration_seconds == pytest.approx(2, abs=0.15)
    with av.open(io.BytesIO(facts.clean), "r") as copy:
        assert copy.streams.video[0].codec_context.name == "vp8"


def test_more_frames_than_the_budget_is_refused_before_decoding() -> None:
    with pytest.raises(InvalidInput, match="more than 19 frames"):
        inspect_video(mf.clip(2, seed=34), max_frames=19)
    assert inspect_video(mf.clip(2, seed=34), max_frames=20).duration_seconds == pytest.approx(2, abs=0.15)


def test_a_codec_that_would_need_reencoding_is_refused() -> None:
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index in range(10):
            frame = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), "rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    with pytest.raises(InvalidInput, match="unsupported codec"):
        inspect_video(out.getvalue())


@pytest.mark.parametrize(("encoder", "tag"), [("libx265", b"x265 (build"), ("libsvtav1", None)])
def test_hevc_and_av1_are_copied_without_the_encoders_user_data(encoder: str, tag: bytes | None) -> None:
    data = mf.encoded_clip(encoder)
    if tag is not None:
        assert tag in data  # x265 writes its settings as an SEI in the decoder configuration record
    facts = inspect_video(data)
    assert facts.clean_mime == "video/mp4"
    if tag is not None:
        assert tag not in facts.clean
    with av.open(io.BytesIO(facts.clean), "r") as copy:
        assert len(list(copy.decode(video=0))) == 10
