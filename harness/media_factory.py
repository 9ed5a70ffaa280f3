"""Real media bytes for tests: generated photos and clips, with and without metadata, and broken files."""

from __future__ import annotations

import io
import random
import struct
import zlib
from datetime import datetime
from fractions import Fraction

import av
import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

EXIF_IFD = 0x8769
GPS_IFD = 0x8825


def _encoder(out: av.container.OutputContainer, codec: str, rate: Fraction | int | None) -> av.VideoStream:
    """A video encoder on one thread: encoders split work by core count, so threads would make the same
    clip's bytes, and the hashes tests compare, differ from one machine to the next."""
    stream = out.add_stream(codec, rate=rate)
    assert isinstance(stream, av.VideoStream)
    stream.codec_context.thread_count = 1
    return stream


def photo_image(seed: int, size: tuple[int, int] = (640, 480)) -> Image.Image:
    """A distinct, photo-like scene: a gradient sky, blurred shapes, then sensor-ish noise."""
    rng = random.Random(seed)
    width, height = size
    top = np.array([rng.randrange(256) for _ in range(3)], dtype=np.float32)
    bottom = np.array([rng.randrange(256) for _ in range(3)], dtype=np.float32)
    ramp = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    pixels = np.broadcast_to(top + (bottom - top) * ramp, (height, width, 3))
    image = Image.fromarray(pixels.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(rng.randrange(6, 14)):
        x0, y0 = rng.randrange(-width // 4, width), rng.randrange(-height // 4, height)
        x1 = x0 + rng.randrange(width // 10, width // 2)
        y1 = y0 + rng.randrange(height // 10, height // 2)
        colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        shape = rng.choice(("ellipse", "rectangle", "polygon"))
        if shape == "ellipse":
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        elif shape == "rectangle":
            draw.rectangle((x0, y0, x1, y1), fill=colour)
        else:
            points = [(rng.randrange(x0, x1), rng.randrange(y0, y1)) for _ in range(5)]
            draw.polygon(points, fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(radius=max(1, width // 320)))
    noise = np.random.default_rng(seed).normal(0.0, 6.0, (height, width, 3))
    noisy = np.clip(np.asarray(image, dtype=np.float32) + noise, 0, 255).astype(np.uint8)
    return Image.fromarray(noisy, "RGB")


def encode(image: Image.Image, fmt: str = "JPEG", **params: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **params)
    return out.getvalue()


def photo(seed: int, fmt: str = "JPEG", size: tuple[int, int] = (640, 480), quality: int = 90) -> bytes:
    image = photo_image(seed, size)
    if fmt == "PNG":
        return encode(image, "PNG")
    return encode(image, fmt, quality=quality)


def transparent_png(seed: int, size: tuple[int, int] = (200, 150)) -> bytes:
    image = photo_image(seed, size).convert("RGBA")
    image.putalpha(Image.linear_gradient("L").resize(size))
    return encode(image, "PNG")


def _gps_degrees(value: float) -> tuple[float, float, float]:
    value = abs(value)
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    seconds = round(((value - degrees) * 60 - minutes) * 60, 4)
    return (float(degrees), float(minutes), seconds)


def exif_block(
    *,
    taken: datetime | None = None,
    offset: str | None = None,
    gps: tuple[float, float] | None = None,
    orientation: int | None = None,
) -> Image.Exif:
    """EXIF with DateTimeOriginal (local wall time), OffsetTimeOriginal, GPS and Orientation as asked."""
    exif = Image.Exif()
    exif[0x010F] = "FactoryCam"  # Make
    exif[0x0110] = "Model 1"  # Model
    if orientation is not None:
        exif[0x0112] = orientation
    if taken is not None or offset is not None:
        ifd = exif.get_ifd(EXIF_IFD)
        if taken is not None:
            ifd[36867] = taken.strftime("%Y:%m:%d %H:%M:%S")
        if offset is not None:
            ifd[36881] = offset
    if gps is not None:
        latitude, longitude = gps
        ifd = exif.get_ifd(GPS_IFD)
        ifd[1] = "N" if latitude >= 0 else "S"
        ifd[2] = _gps_degrees(latitude)
        ifd[3] = "E" if longitude >= 0 else "W"
        ifd[4] = _gps_degrees(longitude)
    return exif


def photo_with_exif(
    seed: int,
    *,
    taken: datetime | None = None,
    offset: str | None = None,
    gps: tuple[float, float] | None = None,
    orientation: int | None = None,
    fmt: str = "JPEG",
    size: tuple[int, int] = (640, 480),
) -> bytes:
    exif = exif_block(taken=taken, offset=offset, gps=gps, orientation=orientation)
    image = photo_image(seed, size)
    xmp = b'<x:xmpmeta xmlns:x="adobe:ns:meta/">secret-xmp</x:xmpmeta>'
    if fmt == "JPEG":
        return encode(image, "JPEG", quality=90, exif=exif, comment=b"secret-comment", xmp=xmp)
    return encode(image, fmt, exif=exif)


def resized(data: bytes, factor: float) -> bytes:
    image = Image.open(io.BytesIO(data))
    size = (round(image.width * factor), round(image.height * factor))
    return encode(image.resize(size, Image.Resampling.BICUBIC), "JPEG", quality=85)


def recompressed(data: bytes, quality: int) -> bytes:
    return encode(Image.open(io.BytesIO(data)).convert("RGB"), "JPEG", quality=quality)


def cropped(data: bytes, fraction: float) -> bytes:
    """Cut `fraction` of the width and height, split around the edges like a casual crop."""
    image = Image.open(io.BytesIO(data))
    dx, dy = round(image.width * fraction / 2), round(image.height * fraction / 2)
    return encode(image.crop((dx, dy, image.width - dx, image.height - dy)), "JPEG", quality=90)


def brightened(data: bytes, factor: float) -> bytes:
    image = Image.open(io.BytesIO(data)).convert("RGB")
    return encode(ImageEnhance.Brightness(image).enhance(factor), "JPEG", quality=90)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def bomb_png(width: int = 100_000, height: int = 100_000) -> bytes:
    """A PNG whose header claims huge dimensions while the file stays tiny."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    scanline = zlib.compress(b"\x00" * (1 + 3 * 16))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", scanline)
        + _png_chunk(b"IEND", b"")
    )


def truncated(data: bytes, keep: float = 0.5) -> bytes:
    return data[: int(len(data) * keep)]


def _scene(seed: int, size: tuple[int, int]) -> np.ndarray:
    return np.asarray(photo_image(seed, size), dtype=np.uint8)


def clip(
    seconds: float,
    *,
    seed: int = 1,
    fps: int = 10,
    size: tuple[int, int] = (160, 120),
    creation_time: str | None = None,
    metadata: dict[str, str] | None = None,
    bit_rate: int | None = None,
    gop: int | None = None,
) -> bytes:
    """An H.264 MP4 whose picture pans across a seeded scene, so each moment looks different."""
    width, height = size
    scene = _scene(seed, (width * 3, height))
    frames = round(seconds * fps)
    out_buf = io.BytesIO()
    with av.open(out_buf, "w", format="mp4") as out:
        for key, value in (metadata or {}).items():
            out.metadata[key] = value
        if creation_time is not None:
            out.metadata["creation_time"] = creation_time
        stream = _encoder(out, "libx264", fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if bit_rate is not None:
            stream.bit_rate = bit_rate
        if gop is not None:
            stream.gop_size = gop
        for index in range(frames):
            left = (2 * width * index) // max(1, frames - 1)
            picture = np.ascontiguousarray(scene[:, left : left + width])
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = index
            frame.time_base = Fraction(1, fps)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return out_buf.getvalue()


def reencoded(data: bytes, *, bit_rate: int, size: tuple[int, int] | None = None) -> bytes:
    """The same clip decoded and encoded again, smaller: what a reposted copy looks like."""
    out_buf = io.BytesIO()
    with av.open(io.BytesIO(data), "r") as source, av.open(out_buf, "w", format="mp4") as out:
        video = source.streams.video[0]
        stream = _encoder(out, "libx264", video.average_rate)
        stream.width, stream.height = size or (video.width, video.height)
        stream.pix_fmt, stream.bit_rate = "yuv420p", bit_rate
        for frame in source.decode(video):
            picture = frame.reformat(width=stream.width, height=stream.height, format="yuv420p")
            picture.pts, picture.time_base = frame.pts, frame.time_base
            out.mux(stream.encode(picture))
        out.mux(stream.encode(None))
    return out_buf.getvalue()


def audio_only(seconds: float = 1.0) -> bytes:
    """An MP4 holding just an AAC tone."""
    rate = 44_100
    out_buf = io.BytesIO()
    with av.open(out_buf, "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=rate)
        t = np.arange(int(rate * seconds), dtype=np.float32) / rate
        tone = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None, :]
        for start in range(0, tone.shape[1], 1024):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(tone[:, start : start + 1024]), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = rate, start
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return out_buf.getvalue()


def edited_copies(original: bytes, seed: int) -> list[bytes]:
    """The four everyday edits of a photo: downsized, recompressed, cropped, brightened (seeded amounts)."""
    rng = random.Random(seed)
    return [
        resized(original, rng.uniform(0.5, 0.8)),
        recompressed(original, rng.randrange(40, 71)),
        cropped(original, rng.uniform(0.02, 0.05)),
        brightened(original, rng.choice((rng.uniform(0.85, 0.92), rng.uniform(1.08, 1.15)))),
    ]


def reuse_tuning_set(count: int = 40, size: tuple[int, int] = (640, 480)) -> list[tuple[bytes, list[bytes]]]:
    """`count` distinct photos, each with its edited copies."""
    originals = [photo(1000 + seed, size=size) for seed in range(count)]
    return [(original, edited_copies(original, seed)) for seed, original in enumerate(originals)]


def with_sei(data: bytes, text: str) -> bytes:
    """The same H.264 MP4 with `text` added as SEI unregistered user data (how some cameras carry GPS)."""
    from av.bitstream import BitStreamFilterContext

    sei = f"h264_metadata=sei_user_data=086f3693-b7b3-4f2c-9653-21492feee5b8+{text}"
    out_buf = io.BytesIO()
    with av.open(io.BytesIO(data), "r") as source, av.open(out_buf, "w", format="mp4") as out:
        video = source.streams.video[0]
        stream = out.add_stream_from_template(video)
        inject = BitStreamFilterContext(sei, video, stream)
        packets = [p for p in source.demux(video) if p.dts is not None]
        for packet in [*(q for p in packets for q in inject.filter(p)), *inject.filter(None)]:
            packet.stream = stream
            out.mux(packet)
    return out_buf.getvalue()


def matroska_with_duration(data: bytes, claimed_seconds: float) -> bytes:
    """The clip remuxed into Matroska, its header's Duration (an 8-byte float, in ms) then overwritten."""
    out_buf = io.BytesIO()
    with av.open(io.BytesIO(data), "r") as source, av.open(out_buf, "w", format="matroska") as out:
        video = source.streams.video[0]
        stream = out.add_stream_from_template(video)
        for packet in source.demux(video):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    mkv = bytearray(out_buf.getvalue())
    at = mkv.find(b"\x44\x89\x88")  # Duration element id, then a one-byte size of 8
    assert at >= 0, "no 8-byte Duration element to patch"
    mkv[at + 3 : at + 11] = struct.pack(">d", claimed_seconds * 1000.0)
    return bytes(mkv)


def vp8_webm(seconds: float, *, seed: int = 1, fps: int = 10, size: tuple[int, int] = (160, 120)) -> bytes:
    """A VP8 WebM, as Firefox's MediaRecorder makes."""
    width, height = size
    scene = _scene(seed, (width * 3, height))
    frames = round(seconds * fps)
    out_buf = io.BytesIO()
    with av.open(out_buf, "w", format="webm") as out:
        stream = _encoder(out, "libvpx", fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            left = (2 * width * index) // max(1, frames - 1)
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(scene[:, left : left + width]), "rgb24")
            frame.pts, frame.time_base = index, Fraction(1, fps)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return out_buf.getvalue()


def mirrored(data: bytes) -> bytes:
    return encode(Image.open(io.BytesIO(data)).transpose(Image.Transpose.FLIP_LEFT_RIGHT), "JPEG", quality=90)


def rotated(data: bytes, degrees: int) -> bytes:
    """Turned by a multiple of 90 degrees, as a phone's editor does (the pixels, not an EXIF tag)."""
    steps = {90: Image.Transpose.ROTATE_90, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_270}
    return encode(Image.open(io.BytesIO(data)).transpose(steps[degrees]), "JPEG", quality=90)


def hostile_copies(original: bytes) -> dict[str, bytes]:
    """The edits a user might try to pass an old proof off as new: mirror, turns, a 20 % crop."""
    return {
        "mirror": mirrored(original),
        "rotate90": rotated(original, 90),
        "rotate180": rotated(original, 180),
        "rotate270": rotated(original, 270),
        "crop20": cropped(original, 0.2),
    }


def encoded_clip(codec: str, frames: int = 10, size: tuple[int, int] = (64, 64), fps: int = 10) -> bytes:
    """A short MP4 from the named encoder (libx265, libsvtav1, ...): noise frames, the encoder's own tags."""
    width, height = size
    out_buf = io.BytesIO()
    with av.open(out_buf, "w", format="mp4") as out:
        stream = _encoder(out, codec, fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        rng = np.random.default_rng(frames)
        for index in range(frames):
            picture = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, fps)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return out_buf.getvalue()


def large_frame_clip(size: tuple[int, int], frames: int = 4, fps: int = 2) -> bytes:
    """An H.264 MP4 of a few large frames of smooth gradients: little to send, much to decode."""
    width, height = size
    ramp = np.add.outer(np.arange(height) // 16, np.arange(width) // 16).astype(np.uint8)
    out_buf = io.BytesIO()
    with av.open(out_buf, "w", format="mp4") as out:
        stream = _encoder(out, "libx264", fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        for index in range(frames):
            picture = np.ascontiguousarray(
                np.stack([ramp + np.uint8(40 * index % 256), ramp, 255 - ramp], axis=-1)
            )
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, fps)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return out_buf.getvalue()
