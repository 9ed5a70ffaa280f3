from __future__ import annotations

import importlib
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from zoneinfo import ZoneInfo

from PIL import Image, ImageFile

from rules.errors import InvalidInput
from rules.media import (
    HASH_INPUT_SIDE,
    hamming,
    has_alpha,
    jpeg_bytes,
    perceptual_hash,
    png_bytes,
    shrink,
    thumbnail_jpeg,
)

__all__ = [
    "CLEAN_MAX_SIDE",
    "DECODE_BYTES_PER_PIXEL",
    "REUSE_CROPS",
    "REUSE_THRESHOLD",
    "InvalidInput",
    "PhotoFacts",
    "capture_in_window",
    "capture_time",
    "decode_cost",
    "hamming",
    "inspect_photo",
    "is_reused",
    "reuse_fingerprints",
    "reuse_probes",
]

# Max Hamming distance between 64-bit pHashes counted as the same picture. Measured with
# bench/photo_reuse_threshold.py on 40 generated 640x480 photos: a new photo is compared turned and mirrored
# every way and centre-cropped, against an earlier proof's whole and centre-cropped hashes. Everyday edits
# (resize, JPEG q40-70, 2-5 % crop, brightness) and hostile ones (mirror, 90/180/270 turns, 20 % crop) came
# within 4 bits; distinct photos no closer than 12 (1,560 ordered pairs). 8 sits in the gap, kept low since
# daily photos of one gym are near each other too.
REUSE_THRESHOLD = 8
# Served copies are capped at this long side: plenty on a phone, and a 12 MP JPEG then decodes at half scale.
CLEAN_MAX_SIDE = 2000
# Peak bytes a decode costs per pixel it decodes (measured, tests/rules/test_photo.py): WebP's decoder holds
# several full copies; JPEG counts the pixels left after DCT scaling.
DECODE_BYTES_PER_PIXEL = {"JPEG": 24, "PNG": 9, "WEBP": 17, "HEIF": 11}
_EXIF_IFD = 0x8769
_ORIENTATION = 0x0112
_DATETIME_ORIGINAL = 36867
_OFFSET_TIME_ORIGINAL = 36881
_TRANSPOSE_FOR_ORIENTATION = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_EXIF_DATETIME_FORMATS = ("%Y:%m:%d %H:%M:%S", "%Y-%m-%d %H:%M:%S")
_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})")


# Centre crops (share of each side kept) fingerprinted beside the whole picture, so a cropped copy of an
# earlier proof meets that proof's own crop.
REUSE_CROPS = (0.9, 0.8)
# The eight ways to turn or mirror a picture; a new photo is compared in each of them.
_DIHEDRAL: tuple[tuple[Image.Transpose, ...], ...] = (
    (),
    (Image.Transpose.ROTATE_90,),
    (Image.Transpose.ROTATE_180,),
    (Image.Transpose.ROTATE_270,),
    (Image.Transpose.FLIP_LEFT_RIGHT,),
    (Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.ROTATE_90),
    (Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.ROTATE_180),
    (Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.ROTATE_270),
)


# How a capture time was read (the values of models.enums.CaptureTimeSource)
CAPTURE_FROM_OFFSET = "EXIF_OFFSET"  # DateTimeOriginal with OffsetTimeOriginal
CAPTURE_IN_ZONE = "EXIF_TASK_ZONE"  # DateTimeOriginal alone, read as wall time in the task's zone


@dataclass(frozen=True)
class PhotoFacts:
    width: int
    height: int
    format: str
    captured_at: datetime | None
    capture_source: str | None  # CAPTURE_FROM_OFFSET or CAPTURE_IN_ZONE; None without a capture time
    phash: int
    fingerprints: tuple[int, ...]  # kept: the whole upright picture's pHash, then its centre crops'
    probes: tuple[int, ...]  # compared: the picture turned and mirrored every way, and its centre crops
    clean: bytes
    clean_mime: str
    thumbnail: bytes


@cache
def accepted_formats() -> tuple[str, ...]:
    """JPEG, PNG and WebP; HEIF too when pillow-heif happens to be installed."""
    try:
        importlib.import_module("pillow_heif").register_heif_opener()
    except ImportError:
        return ("JPEG", "PNG", "WEBP")
    return ("JPEG", "PNG", "WEBP", "HEIF")


def inspect_photo(
    data: bytes,
    *,
    zone: str,
    field: str = "photo",
    max_pixels: int = 40_000_000,
    max_decode_bytes: int = 256 * 1024 * 1024,
) -> PhotoFacts:
    """Decode a photo for real and return what the rules need plus a metadata-free copy to serve.

    Both budgets are checked from the header, before a pixel is allocated: the dimensions, and the
    memory the decode would take (a 1.6 KB lossless 6400x6250 WebP decodes into ~650 MB).
    """
    if not data:
        raise InvalidInput(field, "the file is empty")
    image = _open(data, field=field, max_pixels=max_pixels)
    with image:
        width, height = image.size
        if image.format == "JPEG":
            # Let libjpeg scale down while decoding (DCT scaling): less time and memory, still a full decode.
            scale = CLEAN_MAX_SIDE / max(image.size)
            image.draft("RGB", (max(1, int(image.width * scale)), max(1, int(image.height * scale))))
        if decode_cost(image) > max_decode_bytes:
            raise InvalidInput(field, "the image would take too much memory to decode")
        _decode(image, field=field)
        exif = _read_exif(image)  # after decoding: a PNG may keep its EXIF chunk after the pixels
        captured_at, with_offset = capture_time(exif, zone)
        if exif.get(_ORIENTATION) in (5, 6, 7, 8):
            width, height = height, width
        upright = _upright(image, exif.get(_ORIENTATION))
        served = shrink(upright, CLEAN_MAX_SIDE)
        alpha = has_alpha(upright)
        fingerprints = reuse_fingerprints(served)
        return PhotoFacts(
            width=width,
            height=height,
            format=str(image.format),
            captured_at=captured_at,
            capture_source=None
            if captured_at is None
            else CAPTURE_FROM_OFFSET
            if with_offset
            else CAPTURE_IN_ZONE,
            phash=fingerprints[0],
            fingerprints=fingerprints,
            probes=reuse_probes(served),
            clean=png_bytes(served) if alpha else jpeg_bytes(served, quality=85),
            clean_mime="image/png" if alpha else "image/jpeg",
            thumbnail=thumbnail_jpeg(served),
        )


def _open(data: bytes, *, field: str, max_pixels: int) -> ImageFile.ImageFile:
    """Read the header only, and refuse oversized images before any pixel is allocated."""
    try:
        image = Image.open(io.BytesIO(data), formats=accepted_formats())
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise InvalidInput(field, "the image dimensions are too large") from exc
    except Exception as exc:  # Pillow raises many types on hostile headers
        raise InvalidInput(field, "not a supported image (JPEG, PNG or WebP)") from exc
    if image.width * image.height > max_pixels:
        image.close()
        raise InvalidInput(field, "the image dimensions are too large")
    return image


def decode_cost(image: Image.Image) -> int:
    """Estimated peak bytes to decode `image` at its current (possibly drafted) size."""
    return image.width * image.height * DECODE_BYTES_PER_PIXEL.get(str(image.format), 24)


def _decode(image: Image.Image, *, field: str) -> None:
    try:
        image.load()
    except Exception as exc:  # truncated data raises OSError, corrupt streams anything from SyntaxError on
        raise InvalidInput(field, "the image is truncated or corrupt") from exc


def _upright(image: Image.Image, orientation: object) -> Image.Image:
    """Apply the EXIF Orientation tag, since the served copy carries no EXIF to say it."""
    method = _TRANSPOSE_FOR_ORIENTATION.get(orientation) if isinstance(orientation, int) else None
    return image if method is None else image.transpose(method)


def _read_exif(image: Image.Image) -> Image.Exif:
    try:
        return image.getexif()
    except Exception:  # a malformed EXIF block only costs us the capture time and orientation
        return Image.Exif()


def capture_time(exif: Image.Exif, zone: str) -> tuple[datetime | None, bool]:
    """EXIF DateTimeOriginal as an aware UTC datetime, read with OffsetTimeOriginal or else in `zone` (the
    task's: where the photo was meant to be taken), and whether the offset tag said it."""
    try:
        tags = exif.get_ifd(_EXIF_IFD)
    except Exception:  # a malformed EXIF block only costs us the capture time
        return None, False
    local = _parse_exif_datetime(tags.get(_DATETIME_ORIGINAL))
    if local is None:
        return None, False
    offset = _parse_offset(tags.get(_OFFSET_TIME_ORIGINAL))
    wall_zone = offset if offset is not None else ZoneInfo(zone)
    return local.replace(tzinfo=wall_zone).astimezone(UTC), offset is not None


def _text(value: object) -> str:
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    return value.strip("\x00 ") if isinstance(value, str) else ""


def _parse_exif_datetime(value: object) -> datetime | None:
    text = _text(value)
    for fmt in _EXIF_DATETIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def _parse_offset(value: object) -> timezone | None:
    match = _OFFSET.fullmatch(_text(value))
    if match is None:
        return None
    sign, hours, minutes = match.groups()
    delta = timedelta(hours=int(hours), minutes=int(minutes))
    if delta >= timedelta(hours=24):
        return None
    return timezone(-delta if sign == "-" else delta)


def capture_in_window(
    captured_at: datetime | None,
    opens_at: datetime,
    closes_at: datetime,
    *,
    slack_seconds: float = 120,
) -> bool:
    """No capture time passes; otherwise it must fall in the window, give or take camera clock drift."""
    if captured_at is None:
        return True
    slack = timedelta(seconds=slack_seconds)
    return opens_at - slack <= captured_at <= closes_at + slack


def _centre_crop(image: Image.Image, keep: float) -> Image.Image:
    dx, dy = round(image.width * (1 - keep) / 2), round(image.height * (1 - keep) / 2)
    return image.crop((dx, dy, image.width - dx, image.height - dy))


def reuse_fingerprints(image: Image.Image) -> tuple[int, ...]:
    """What a proof keeps for later reuse checks: the pHash of the picture and of its centre crops."""
    small = shrink(image, HASH_INPUT_SIDE)
    return (perceptual_hash(small), *(perceptual_hash(_centre_crop(small, keep)) for keep in REUSE_CROPS))


def reuse_probes(image: Image.Image) -> tuple[int, ...]:
    """What a new photo is compared with: itself turned and mirrored every way, and its centre crops."""
    small = shrink(image, HASH_INPUT_SIDE)
    turned = []
    for steps in _DIHEDRAL:
        copy = small
        for step in steps:
            copy = copy.transpose(step)
        turned.append(perceptual_hash(copy))
    return (*turned, *(perceptual_hash(_centre_crop(small, keep)) for keep in REUSE_CROPS))


def is_reused(probes: int | Sequence[int], earlier: Iterable[int], threshold: int = REUSE_THRESHOLD) -> bool:
    """True when any earlier hash is within `threshold` bits of a probe: the same picture, edited."""
    mine = (probes,) if isinstance(probes, int) else tuple(probes)
    return any(hamming(probe, other) <= threshold for other in earlier for probe in mine)
