from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import av
from av.bitstream import BitStreamFilterContext
from av.container import InputContainer
from av.stream import Stream
from av.video.stream import VideoStream
from PIL import Image

from rules.errors import InvalidInput
from rules.media import hamming, perceptual_hash, thumbnail_jpeg

__all__ = [
    "FRAME_MATCH_THRESHOLD",
    "SAMPLE_COUNT",
    "SAMPLE_DECODE_FRAMES",
    "InvalidInput",
    "PacketScan",
    "VideoFacts",
    "clean_copy",
    "inspect_video",
    "is_reused_video",
    "scan_packets",
]

SAMPLE_COUNT = 8
# Max Hamming distance between two sampled frames' pHashes counted as the same picture. Measured on
# generated 160x120 clips (tests/rules/test_video.py): re-encoded at 20-50 kbps (from ~50), frames sat 0-20
# bits from the original's, at least 6 of 8 within 16; other clips' frames were never closer than 20.
# Video frames sit higher than photos (REUSE_THRESHOLD 12): low-bitrate P/B frames smear.
FRAME_MATCH_THRESHOLD = 16
# Only real video containers: a probing demuxer such as HLS could be steered into opening other files.
_DEMUXERS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm"
_APPLE_CREATION_DATE = "com.apple.quicktime.creationdate"
# Codecs copied as they are; every other one is refused rather than re-encoded (a decode of every frame).
_MP4_CODECS = frozenset({"h264", "hevc", "vp9", "av1", "aac", "mp3", "opus"})
_WEBM_CODECS = frozenset({"vp8", "vp9", "av1", "opus", "vorbis"})
# NAL unit types that carry free-form user data (a GPS string in an H.264 SEI): dropped from served copies.
_SEI_NAL_TYPES = {"h264": frozenset({6}), "hevc": frozenset({39, 40})}
# AV1 metadata OBUs, removed by FFmpeg's own filter.
_USER_DATA_FILTERS = {"av1": "filter_units=remove_types=5"}
# Frames decoded in all to reach the sample points (forward from the keyframe each seek lands on).
SAMPLE_DECODE_FRAMES = 240
# 4K UHD: a decoder holds up to ~16 reference frames of this size, and each frame thread its own copies.
MAX_VIDEO_PIXELS = 3840 * 2160
# Frame threading keeps a frame per thread in flight (+25 MB each at 4K) whatever the core count: one
# thread slicing; the decode gate already runs uploads side by side.
DECODE_THREADS = 1
# Index space reserved ahead of the media: about twice what H.264 + AAC samples need.
MOOV_BASE_BYTES = 4_096
MOOV_BYTES_PER_PACKET = 24


@dataclass(frozen=True)
class VideoFacts:
    duration_seconds: float
    created_at: datetime | None
    keyframe_hashes: tuple[int, ...]
    clean: bytes
    clean_mime: str
    thumbnail: bytes


@dataclass(frozen=True)
class PacketScan:
    """What the packets say without decoding any: the true length and how much there is to decode."""

    duration_seconds: float
    video_packets: int
    packets: int


def inspect_video(
    data: bytes,
    *,
    field: str = "video",
    max_frames_decoded: int = SAMPLE_DECODE_FRAMES,
    max_pixels: int = MAX_VIDEO_PIXELS,
    max_frames: int = 54_000,
) -> VideoFacts:
    """Probe a video for real; sample frames for hashing without decoding the whole file.

    Dimensions and the frame count are checked before any frame is decoded; the duration is measured
    from the packets' timestamps (a container's Duration field is whatever the sender wrote).
    max_frames_decoded bounds the frames decoded forward from keyframes to reach the sample points;
    once spent, each remaining sample takes the keyframe its seek lands on. One decoded frame at a time
    is kept (hashed or shrunk to a thumbnail at once), and the decoder itself refuses a frame over
    max_pixels (a stream may change its size after the header).
    """
    if not data:
        raise InvalidInput(field, "the file is empty")
    try:
        with _open(data, max_pixels=max_pixels) as container:
            stream = _video_stream(container, field=field, max_pixels=max_pixels)
            scan = scan_packets(container, stream, field=field, max_frames=max_frames)
            created_at = creation_time(container.metadata)
            thumbnail = thumbnail_jpeg(_first_frame(container, stream, field=field))
            duration = scan.duration_seconds
            hashes = _sample_hashes(container, stream, duration, budget_frames=max_frames_decoded)
        clean, clean_mime = clean_copy(data, field=field, packets=scan.packets, max_pixels=max_pixels)
    except av.FFmpegError as exc:
        raise InvalidInput(field, "not a readable video") from exc
    return VideoFacts(
        duration_seconds=scan.duration_seconds,
        created_at=created_at,
        keyframe_hashes=tuple(hashes),
        clean=clean,
        clean_mime=clean_mime,
        thumbnail=thumbnail,
    )


def _open(data: bytes, *, max_pixels: int = MAX_VIDEO_PIXELS) -> InputContainer:
    # opening probes the streams by decoding a frame: the decoder's pixel cap holds from that first frame
    options = {"format_whitelist": _DEMUXERS, "max_pixels": str(max_pixels)}
    return av.open(io.BytesIO(data), "r", options=options)


def _video_stream(container: InputContainer, *, field: str, max_pixels: int) -> VideoStream:
    if not container.streams.video:
        raise InvalidInput(field, "the file has no video stream")
    stream = container.streams.video[0]
    width, height = stream.codec_context.width, stream.codec_context.height
    if width * height > max_pixels:
        raise InvalidInput(
            field, f"the video is {width}x{height}: frames may hold at most {max_pixels} pixels"
        )
    stream.codec_context.options = {"max_pixels": str(max_pixels)}  # a stream may change size later
    stream.codec_context.thread_type = "SLICE"
    stream.codec_context.thread_count = DECODE_THREADS
    return stream


def scan_packets(
    container: InputContainer, stream: VideoStream, *, field: str, max_frames: int
) -> PacketScan:
    """Read every packet (no decoding): the video's span from its timestamps, and the frame budget."""
    start: float | None = None
    end = 0.0
    video_packets = packets = 0
    for packet in container.demux():
        if not packet.size:  # demuxers flush with empty packets
            continue
        packets += 1
        if packet.stream_index != stream.index:
            continue
        video_packets += 1
        if video_packets > max_frames:
            raise InvalidInput(field, f"the video has more than {max_frames} frames")
        if packet.pts is None or packet.time_base is None:
            continue
        begins = float(packet.pts * packet.time_base)
        start = begins if start is None else min(start, begins)
        end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
    container.seek(0)
    return PacketScan(max(0.0, end - (start or 0.0)), video_packets, packets)


def creation_time(metadata: dict[str, str]) -> datetime | None:
    """The container's creation_time (ISO 8601, UTC unless it says otherwise), or Apple's creationdate."""
    for key in ("creation_time", _APPLE_CREATION_DATE):
        value = metadata.get(key)
        if value is None:
            continue
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            continue
        return (parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    return None


def _first_frame(container: InputContainer, stream: VideoStream, *, field: str) -> Image.Image:
    for frame in container.decode(stream):
        return to_image(frame)
    raise InvalidInput(field, "the video stream has no decodable frame")


def _sample_hashes(
    container: InputContainer, stream: VideoStream, duration: float, *, budget_frames: int
) -> list[int]:
    """The hash of one frame near each of SAMPLE_COUNT evenly spaced times, reached by seeking."""
    assert stream.time_base is not None
    start = stream.start_time or 0
    hashes: list[int] = []
    spent = 0
    for index in range(SAMPLE_COUNT):
        target = duration * (index + 0.5) / SAMPLE_COUNT
        container.seek(start + int(target / stream.time_base), stream=stream, backward=True)
        decoded, image = _decode_until(container.decode(stream), target, budget_frames - spent)
        spent += decoded
        if image is not None:
            hashes.append(perceptual_hash(image))
    return hashes


def _decode_until(
    frames: Iterator[av.VideoFrame], target: float, budget: int
) -> tuple[int, Image.Image | None]:
    """Decode forward to the frame at `target` seconds, or stop once `budget` more frames are decoded.

    Returns the frames decoded past the seek point and the frame reached.
    """
    for decoded, frame in enumerate(frames):
        time = frame.time if frame.time is not None else target
        if time >= target or decoded >= budget:
            return decoded, to_image(frame)
    return 0, None


def to_image(frame: av.VideoFrame) -> Image.Image:
    image: Image.Image = frame.to_image()  # type: ignore[no-untyped-call]  # PyAV's stub leaves it untyped
    return image


def clean_copy(
    data: bytes, *, field: str, packets: int, max_pixels: int = MAX_VIDEO_PIXELS
) -> tuple[bytes, str]:
    """The packets copied into a fresh MP4 (else WebM) with no tags and no SEI/user-data units.

    Nothing is re-encoded: a codec neither container takes as it is, or whose user data we cannot strip,
    is refused. MP4's index goes first (space reserved up front, as +faststart would, which needs a real
    file); a fragmented MP4 is the fallback when the reservation falls short.
    """
    with _open(data, max_pixels=max_pixels) as source:
        codecs = {_codec_name(stream) for stream in _kept(source)}
    if codecs <= _MP4_CODECS:
        reserve = {"moov_size": str(MOOV_BASE_BYTES + MOOV_BYTES_PER_PACKET * packets)}
        try:
            return _copy_streams(data, "mp4", reserve, field, max_pixels), "video/mp4"
        except av.FFmpegError:  # the reserved index space fell short
            fragmented = {"movflags": "+frag_keyframe+empty_moov+default_base_moof"}
            return _copy_streams(data, "mp4", fragmented, field, max_pixels), "video/mp4"
    if codecs <= _WEBM_CODECS:
        return _copy_streams(data, "webm", {}, field, max_pixels), "video/webm"
    raise InvalidInput(field, "unsupported codec (H.264, HEVC, VP8, VP9 or AV1 video; AAC, MP3, Opus audio)")


def _codec_name(stream: Stream) -> str:
    """The format's name (av1), not the decoder's (libdav1d)."""
    return str(stream.codec_context.codec.canonical_name)


@dataclass(frozen=True)
class _SeiStripper:
    """Drops SEI NAL units from H.264/HEVC packets in MP4/Matroska form (each unit led by its length).

    FFmpeg's filter_units breaks some HEVC streams (x265's), so the few lines of NAL framing are ours.
    """

    dropped: frozenset[int]
    length_size: int
    hevc: bool
    header: bytes | None  # the decoder configuration record without SEI, when it carried any

    @classmethod
    def of(cls, stream: Stream, field: str) -> _SeiStripper | None:
        name = _codec_name(stream)
        if name not in _SEI_NAL_TYPES:
            return None
        record = bytes(stream.codec_context.extradata or b"")
        hevc = name == "hevc"
        # avcC and hvcC both start with version 1; Annex B extradata starts 00 00 (01)
        if len(record) < (23 if hevc else 7) or record[0] != 1:
            raise InvalidInput(field, "unsupported H.264/HEVC framing (Annex B)")
        length_size = (record[21 if hevc else 4] & 0x3) + 1
        header = _hvcc_without_sei(record) if hevc else None
        return cls(_SEI_NAL_TYPES[name], length_size, hevc, header if header != record else None)

    def nal_type(self, first_byte: int) -> int:
        return (first_byte >> 1) & 0x3F if self.hevc else first_byte & 0x1F

    def strip(self, packet: av.Packet[Stream]) -> av.Packet[Stream]:
        data = bytes(packet)
        kept, at, size = bytearray(), 0, self.length_size
        while at + size <= len(data):
            end = at + size + int.from_bytes(data[at : at + size], "big")
            if end > len(data) or end == at + size:
                break
            if self.nal_type(data[at + size]) not in self.dropped:
                kept += data[at:end]
            at = end
        if len(kept) == len(data):
            return packet
        stripped = av.Packet(bytes(kept))
        stripped.pts, stripped.dts, stripped.duration = packet.pts, packet.dts, packet.duration
        stripped.time_base, stripped.is_keyframe = packet.time_base, packet.is_keyframe
        stripped.stream = packet.stream
        return stripped


def _hvcc_without_sei(extradata: bytes) -> bytes:
    """An HEVC decoder configuration record (hvcC) without its SEI arrays (encoders put tags there too)."""
    kept = bytearray(extradata[:22])
    at, arrays = 23, 0
    for _ in range(extradata[22]):
        if at + 3 > len(extradata):
            return extradata
        nal_type = extradata[at] & 0x3F
        end = at + 3
        for _ in range(int.from_bytes(extradata[at + 1 : at + 3], "big")):
            if end + 2 > len(extradata):
                return extradata
            end += 2 + int.from_bytes(extradata[end : end + 2], "big")
        if end > len(extradata):
            return extradata
        if nal_type not in _SEI_NAL_TYPES["hevc"]:
            kept += extradata[at:end]
            arrays += 1
        at = end
    return bytes(kept)[:22] + bytes([arrays]) + bytes(kept[22:])


def _kept(source: InputContainer) -> list[Stream]:
    return [stream for stream in source.streams if stream.type in ("video", "audio")]


def _copy_streams(data: bytes, fmt: str, mux_options: dict[str, str], field: str, max_pixels: int) -> bytes:
    out_buf = io.BytesIO()
    options = {"fflags": "+bitexact", **mux_options}  # bitexact: no "encoder" tag
    with (
        _open(data, max_pixels=max_pixels) as source,
        av.open(out_buf, "w", format=fmt, options=options) as out,
    ):
        kept = _kept(source)
        # opaque: take the codec from the template as it is (a decoder such as libdav1d has no encoder twin)
        mapping = {stream.index: out.add_stream_from_template(stream, opaque=True) for stream in kept}
        filters = {
            stream.index: BitStreamFilterContext(_USER_DATA_FILTERS[name], stream, mapping[stream.index])
            for stream in kept
            if (name := _codec_name(stream)) in _USER_DATA_FILTERS
        }
        sei_strippers = {stream.index: _SeiStripper.of(stream, field) for stream in kept}
        for index, stripper in sei_strippers.items():
            if stripper is not None and stripper.header is not None:
                mapping[index].codec_context.extradata = stripper.header
        for packet in source.demux(kept):
            if packet.dts is None:  # demuxers flush with empty packets
                continue
            index = packet.stream_index
            unit_filter, stripper = filters.get(index), sei_strippers[index]
            if stripper is not None:
                packet = stripper.strip(packet)
            for kept_packet in unit_filter.filter(packet) if unit_filter is not None else [packet]:
                kept_packet.stream = mapping[index]
                out.mux(kept_packet)
        for index, unit_filter in filters.items():
            for kept_packet in unit_filter.filter(None):
                kept_packet.stream = mapping[index]
                out.mux(kept_packet)
    return out_buf.getvalue()


def is_reused_video(
    hashes: Sequence[int], earlier: Iterable[Sequence[int]], threshold: int = FRAME_MATCH_THRESHOLD
) -> bool:
    """Reused when, against one earlier video, at least two thirds of our sampled frames have a match.

    A copy matches nearly every sample (a seek may land a frame or two apart); two thirds rather than a
    bare majority keeps a new clip that merely opens on the same view as an old one from being refused.
    """
    if not hashes:
        return False
    for other in earlier:
        matched = sum(1 for mine in hashes if any(hamming(mine, theirs) <= threshold for theirs in other))
        if 3 * matched >= 2 * len(hashes):
            return True
    return False
