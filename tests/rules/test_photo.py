from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pillow_heif
import pytest
from PIL import Image

from harness import media_factory as mf
from harness.proofloop import long_form
from rules.errors import InvalidInput
from rules.photo import (
    REUSE_THRESHOLD,
    capture_in_window,
    hamming,
    inspect_photo,
    is_reused,
)

pytestmark = pytest.mark.unit

BERLIN = "Europe/Berlin"


def test_copies_match_and_different_photos_do_not_at_reuse_threshold() -> None:
    # every edit and hostile copy of each photo, and every ordered pair of photos; the long form's 40 photos
    # (PROOFLOOP_TEST_LONG=1) are also bench/photo_reuse_threshold.py's tuning set, with its histograms
    tuning = mf.reuse_tuning_set(long_form(12, 40))
    originals = [inspect_photo(o, zone="UTC") for o, _ in tuning]
    for (original, edits), kept in zip(tuning, originals, strict=True):
        copies = [*edits, *mf.hostile_copies(original).values()]  # incl. mirror, 90/180/270, 20 % crop
        for copy in copies:
            assert is_reused(inspect_photo(copy, zone="UTC").probes, kept.fingerprints)
    distinct = [
        min(hamming(probe, other) for probe in a.probes for other in b.fingerprints)
        for a in originals
        for b in originals
        if a is not b
    ]
    assert min(distinct) > REUSE_THRESHOLD, "two different photos would be called the same"


def test_is_reused_compares_against_every_earlier_hash() -> None:
    assert is_reused(0b1011, [1 << 63, 0b1000])
    assert not is_reused(0, [(1 << 20) - 1])
    assert not is_reused(0, [])


def test_exif_time_with_offset_is_read_as_that_offset() -> None:
    data = mf.photo_with_exif(1, taken=datetime(2024, 5, 1, 7, 0), offset="+02:00")
    facts = inspect_photo(data, zone="America/New_York")
    assert facts.captured_at == datetime(2024, 5, 1, 5, 0, tzinfo=UTC)


def test_exif_time_without_offset_is_read_in_the_owners_zone() -> None:
    data = mf.photo_with_exif(1, taken=datetime(2024, 1, 15, 7, 0))
    facts = inspect_photo(data, zone=BERLIN)
    assert facts.captured_at == datetime(2024, 1, 15, 6, 0, tzinfo=UTC)


def test_capture_time_inside_and_outside_the_window() -> None:
    opens = datetime(2024, 5, 1, 4, 0, tzinfo=UTC)
    closes = datetime(2024, 5, 1, 5, 0, tzinfo=UTC)
    inside = inspect_photo(
        mf.photo_with_exif(1, taken=datetime(2024, 5, 1, 6, 30), offset="+02:00"), zone="UTC"
    )
    before = inspect_photo(
        mf.photo_with_exif(1, taken=datetime(2024, 5, 1, 5, 30), offset="+02:00"), zone="UTC"
    )
    after = inspect_photo(
        mf.photo_with_exif(1, taken=datetime(2024, 5, 1, 7, 10), offset="+02:00"), zone="UTC"
    )
    assert capture_in_window(inside.captured_at, opens, closes)
    assert not capture_in_window(before.captured_at, opens, closes)
    assert not capture_in_window(after.captured_at, opens, closes)


def test_capture_window_allows_clock_drift_and_missing_times() -> None:
    opens = datetime(2024, 5, 1, 4, 0, tzinfo=UTC)
    closes = opens + timedelta(hours=1)
    assert capture_in_window(None, opens, closes)
    assert capture_in_window(closes + timedelta(seconds=119), opens, closes)
    assert not capture_in_window(closes + timedelta(seconds=121), opens, closes)
    assert capture_in_window(opens - timedelta(seconds=60), opens, closes, slack_seconds=60)


def test_missing_or_garbled_exif_time_is_none() -> None:
    assert inspect_photo(mf.photo(1), zone="UTC").captured_at is None
    exif = mf.exif_block()
    exif.get_ifd(mf.EXIF_IFD)[36867] = "0000:00:00 00:00:00"
    data = mf.encode(mf.photo_image(1), "JPEG", exif=exif)
    assert inspect_photo(data, zone="UTC").captured_at is None


def test_clean_copy_of_a_gps_tagged_photo_carries_no_metadata() -> None:
    data = mf.photo_with_exif(2, taken=datetime(2024, 5, 1, 7), offset="+02:00", gps=(52.52, 13.405))
    assert Image.open(io.BytesIO(data)).getexif().get_ifd(mf.GPS_IFD)
    facts = inspect_photo(data, zone="UTC")
    assert facts.clean_mime == "image/jpeg"
    for served in (facts.clean, facts.thumbnail):
        image = Image.open(io.BytesIO(served))
        assert image.format == "JPEG"
        assert not image.getexif()
        assert not {"exif", "xmp", "comment", "icc_profile"} & image.info.keys()
        assert b"Exif\x00\x00" not in served
        assert b"secret" not in served
        assert b"FactoryCam" not in served


def test_orientation_is_applied_to_the_served_copy() -> None:
    data = mf.photo_with_exif(3, orientation=6, size=(400, 200))
    facts = inspect_photo(data, zone="UTC")
    assert (facts.width, facts.height) == (200, 400)
    assert Image.open(io.BytesIO(facts.clean)).size == (200, 400)


def test_png_and_webp_are_accepted() -> None:
    png = inspect_photo(mf.photo(4, "PNG"), zone="UTC")
    webp = inspect_photo(mf.photo(4, "WEBP"), zone="UTC")
    assert (png.format, webp.format) == ("PNG", "WEBP")
    assert hamming(png.phash, webp.phash) <= REUSE_THRESHOLD
    assert png.clean_mime == webp.clean_mime == "image/jpeg"


def test_transparent_png_is_served_as_png() -> None:
    facts = inspect_photo(mf.transparent_png(5), zone="UTC")
    assert facts.clean_mime == "image/png"
    assert Image.open(io.BytesIO(facts.clean)).mode == "RGBA"


def test_thumbnail_fits_in_320_pixels() -> None:
    facts = inspect_photo(mf.photo(6, size=(1280, 720)), zone="UTC")
    thumb = Image.open(io.BytesIO(facts.thumbnail))
    assert thumb.format == "JPEG"
    assert max(thumb.size) == 320


@pytest.mark.parametrize(
    "bomb",
    [mf.bomb_png(), mf.bomb_png(8_000, 8_000)],
    ids=["beyond-pillow-limit", "beyond-our-limit"],
)
def test_decompression_bomb_is_refused_without_decoding(bomb: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_decoding(self: Image.Image) -> None:
        raise AssertionError("the bomb's pixels were decoded")

    monkeypatch.setattr(Image.Image, "load", no_decoding)  # refused from the header alone
    with pytest.raises(InvalidInput, match="too large") as raised:
        inspect_photo(bomb, zone="UTC", field="input.photo")
    assert raised.value.field == "input.photo"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"definitely not an image",
        mf.truncated(mf.photo(7)),
        mf.truncated(mf.photo(7, "PNG")),
        mf.truncated(mf.photo(7, "WEBP", quality=80), 0.6),
        mf.encode(mf.photo_image(7), "GIF"),
        mf.encode(mf.photo_image(7), "BMP"),
    ],
    ids=["empty", "text", "truncated-jpeg", "truncated-png", "truncated-webp", "gif", "bmp"],
)
def test_unusable_files_are_invalid_input(data: bytes) -> None:
    with pytest.raises(InvalidInput) as raised:
        inspect_photo(data, zone="UTC")
    assert raised.value.field == "photo"


def test_heic_photos_from_phones_are_accepted() -> None:
    pillow_heif.register_heif_opener()  # a dependency: its wheel carries libheif
    exif = mf.exif_block(taken=datetime(2024, 5, 1, 7, 0), offset="+02:00")
    heic = io.BytesIO()
    mf.photo_image(5).save(heic, format="HEIF", exif=exif)
    facts = inspect_photo(heic.getvalue(), zone="UTC")
    assert facts.format == "HEIF"
    assert facts.captured_at == datetime(2024, 5, 1, 5, 0, tzinfo=UTC)
    assert facts.clean_mime == "image/jpeg"
    assert not Image.open(io.BytesIO(facts.clean)).getexif()


def _solid(fmt: str, size: tuple[int, int], **params: object) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(out, fmt, **params)
    return out.getvalue()


def test_a_tiny_webp_that_would_decode_into_hundreds_of_megabytes_is_refused_from_its_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bomb = _solid("WEBP", (6400, 6250), lossless=True)  # 40 M pixels: within the pixel limit
    assert len(bomb) < 4096

    def no_decoding(self: Image.Image) -> None:
        raise AssertionError("the bomb's pixels were decoded")

    monkeypatch.setattr(Image.Image, "load", no_decoding)
    with pytest.raises(InvalidInput, match="too much memory"):
        inspect_photo(bomb, zone="UTC")


def test_a_large_jpeg_is_budgeted_at_the_size_it_is_drafted_to() -> None:
    big = _solid("JPEG", (8000, 6000), quality=80)  # 48 MP: over the budget at full size, not drafted
    facts = inspect_photo(big, zone="UTC", max_pixels=50_000_000)
    assert (facts.width, facts.height) == (8000, 6000)
    with pytest.raises(InvalidInput, match="too much memory"):
        inspect_photo(_solid("PNG", (4000, 3000)), zone="UTC", max_decode_bytes=12_000_000 * 8)
