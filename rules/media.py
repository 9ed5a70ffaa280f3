from __future__ import annotations

import io

import imagehash
from PIL import Image

from rules.errors import InvalidInput

__all__ = [
    "HASH_INPUT_SIDE",
    "THUMBNAIL_MAX_SIDE",
    "InvalidInput",
    "bare_copy",
    "flatten_to_rgb",
    "hamming",
    "has_alpha",
    "jpeg_bytes",
    "perceptual_hash",
    "png_bytes",
    "shrink",
    "thumbnail_jpeg",
]

THUMBNAIL_MAX_SIDE = 320
# pHash shrinks to 32x32 anyway; hashing a small copy keeps big photos cheap.
HASH_INPUT_SIDE = 256


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two hashes."""
    return (a ^ b).bit_count()


def shrink(image: Image.Image, max_side: int) -> Image.Image:
    """A new image fitting in max_side x max_side (never enlarged), aspect ratio kept."""
    scale = min(1.0, max_side / max(image.size))
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def perceptual_hash(image: Image.Image) -> int:
    """64-bit DCT perceptual hash of an image, as an int."""
    return int(str(imagehash.phash(shrink(image, HASH_INPUT_SIDE))), 16)


def has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode == "P" and "transparency" in image.info
    )


def bare_copy(image: Image.Image, mode: str) -> Image.Image:
    """A copy in `mode` with an empty info dict, so no encoder can pick up EXIF, XMP or comments."""
    copy = image.convert(mode)
    copy.info = {}
    return copy


def flatten_to_rgb(image: Image.Image) -> Image.Image:
    """RGB copy; transparent areas become white rather than whatever colour hides under alpha=0."""
    if not has_alpha(image):
        return bare_copy(image, "RGB")
    rgba = image.convert("RGBA")
    canvas = Image.new("RGB", rgba.size, (255, 255, 255))
    canvas.paste(rgba, mask=rgba.getchannel("A"))
    return canvas


def jpeg_bytes(image: Image.Image, *, quality: int) -> bytes:
    """Encode as JPEG with no metadata at all."""
    out = io.BytesIO()
    flatten_to_rgb(image).save(out, format="JPEG", quality=quality)
    return out.getvalue()


def png_bytes(image: Image.Image) -> bytes:
    """Encode as RGBA PNG with no metadata at all."""
    out = io.BytesIO()
    bare_copy(image, "RGBA").save(out, format="PNG")
    return out.getvalue()


def thumbnail_jpeg(image: Image.Image) -> bytes:
    """A JPEG no larger than THUMBNAIL_MAX_SIDE on either side."""
    return jpeg_bytes(shrink(image, THUMBNAIL_MAX_SIDE), quality=80)
