from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import av
from av.container import InputContainer
from av.video.stream import VideoStream
from PIL import Image

from verification.errors import InvalidInput
from verification.media import hamming, perceptual_hash, thumbnail_jpeg

__all__ = [
    "FRAME_MATCH_THRESHOLD",
    "SAMPLE_COUNT",
    "InvalidInput",
    "VideoFacts",
    "inspect_video",
    "is_reused_video",
]

SAMPLE_COUNT = 8
# Max Hamming distance between two sampled frames' pHashes counted as the same picture. Measured on
# generated 160x120 clips (tests/unit/test_video.py): re-encoded at 20-50 kbps (from ~50), frames sat 0-20
# bits from the original's, at least 6 of 8 within 16; other clips' frames were never closer than 20.
# Video frames sit higher than photos (REUSE_THRESHOLD 12): low-bitrate P/B frames smear.
FRAME_MATCH_THRESHOLD = 16
# Only real video containers: a probing demuxer such as HLS could be steered into opening other files.
_DEMUXERS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm"
_APPLE_CREATION_DATE = "com.apple.quicktime.creationdate"
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


def inspect_video(
    data: bytes,
    *,
    field: str = "video",
    max_seconds_decoded: float = 10.0,
    max_pixels: int = 40_000_000,
) -> VideoFacts:
    """Probe a video for real; sample frames for hashing without decoding the whole file.

    max_seconds_decoded bounds the media time decoded forward from keyframes to reach the sample points;
    once spent, each remaining sample takes the keyframe its seek lands on.
    """
    if not data:
        raise InvalidInput(field, "the file is empty")
    try:
        with _open(data) as container:
            stream = _video_stream(container, field=field, max_pixels=max_pixels)
            duration = _duration(container, stream)
            created_at = creation_time(container.metadata)
            first = _first_frame(container, stream, field=field)
            frames = _sample_frames(container, stream, duration, budget_seconds=max_seconds_decoded)
        clean = remux_without_metadata(data)
    except av.FFmpegError as exc:
        raise InvalidInput(field, "not a readable video") from exc
    return VideoFacts(
        duration_seconds=duration,
        created_at=created_at,
        keyframe_hashes=tuple(perceptual_hash(frame) for frame in frames),
        clean=clean,
        clean_mime="video/mp4",
        thumbnail=thumbnail_jpeg(first),
    )


def _open(data: bytes) -> InputContainer:
    return av.open(io.BytesIO(data), "r", options={"format_whitelist": _DEMUXERS})


def _video_stream(container: InputContainer, *, field: str, max_pixels: int) -> VideoStream:
    if not container.streams.video:
        raise InvalidInput(field, "the file has no video stream")
    stream = container.streams.video[0]
    if stream.codec_context.width * stream.codec_context.height > max_pixels:
        raise InvalidInput(field, "the video dimensions are too large")
    stream.thread_type = "AUTO"
    return stream


def _duration(container: InputContainer, stream: VideoStream) -> float:
    """Container duration, else the stream's, else the last packet's end (browser WebM often has none)."""
    if container.duration is not None and container.duration > 0:
        return container.duration / av.time_base
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    end = 0.0
    for packet in container.demux(stream):
        if packet.pts is not None and packet.time_base is not None:
            end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
    container.seek(0)
    return end


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


def _sample_frames(
    container: InputContainer, stream: VideoStream, duration: float, *, budget_seconds: float
) -> list[Image.Image]:
    """One frame near each of SAMPLE_COUNT evenly spaced times, reached by seeking, never by a full decode."""
    assert stream.time_base is not None
    start = stream.start_time or 0
    frames: list[Image.Image] = []
    spent = 0.0
    for index in range(SAMPLE_COUNT):
        target = duration * (index + 0.5) / SAMPLE_COUNT
        container.seek(start + int(target / stream.time_base), stream=stream, backward=True)
        decoded, image = _decode_until(container.decode(stream), target, budget_seconds - spent)
        spent += decoded
        if image is not None:
            frames.append(image)
    return frames


def _decode_until(
    frames: Iterator[av.VideoFrame], target: float, budget: float
) -> tuple[float, Image.Image | None]:
    """Decode forward to the frame at `target` seconds, or stop once `budget` seconds of media are decoded.

    Returns the media time decoded past the seek point and the frame reached.
    """
    first_time: float | None = None
    for frame in frames:
        time = frame.time if frame.time is not None else target
        first_time = time if first_time is None else first_time
        if time >= target or time - first_time >= budget:
            return time - first_time, to_image(frame)
    return 0.0, None


def to_image(frame: av.VideoFrame) -> Image.Image:
    image: Image.Image = frame.to_image()  # type: ignore[no-untyped-call]  # PyAV's stub leaves it untyped
    return image


def remux_without_metadata(data: bytes) -> bytes:
    """Copy the audio and video packets into a fresh MP4 carrying no container or stream tags.

    The index goes first (space reserved up front, as +faststart would, which needs a real file); a
    fragmented MP4 is the fallback when the reservation falls short, and codecs MP4 cannot hold are
    re-encoded.
    """
    with _open(data) as source:
        packets = sum(1 for packet in source.demux() if packet.size)
    try:
        return _copy_streams(data, {"moov_size": str(MOOV_BASE_BYTES + MOOV_BYTES_PER_PACKET * packets)})
    except av.FFmpegError:  # the reserved index space fell short (PyAV's errors are ValueErrors too)
        pass
    except ValueError:  # PyAV refuses a codec the mp4 muxer cannot take
        return reencode_without_metadata(data)
    return _copy_streams(data, {"movflags": "+frag_keyframe+empty_moov+default_base_moof"})


def _copy_streams(data: bytes, mux_options: dict[str, str]) -> bytes:
    out_buf = io.BytesIO()
    options = {"fflags": "+bitexact", **mux_options}  # bitexact: no "encoder" tag
    with _open(data) as source, av.open(out_buf, "w", format="mp4", options=options) as out:
        kept = [stream for stream in source.streams if stream.type in ("video", "audio")]
        mapping = {stream.index: out.add_stream_from_template(stream) for stream in kept}
        for packet in source.demux(kept):
            if packet.dts is None:  # demuxers flush with empty packets
                continue
            packet.stream = mapping[packet.stream_index]
            out.mux(packet)
    return out_buf.getvalue()


def reencode_without_metadata(data: bytes) -> bytes:
    """Decode and encode again as H.264 (+ AAC): for codecs an MP4 cannot carry as they are."""
    out_buf = io.BytesIO()
    options = {"fflags": "+bitexact", "movflags": "+frag_keyframe+empty_moov+default_base_moof"}
    with _open(data) as source, av.open(out_buf, "w", format="mp4", options=options) as out:
        video_in = source.streams.video[0]
        video_out = out.add_stream("libx264", rate=video_in.guessed_rate or 30)
        video_out.width, video_out.height = video_in.width // 2 * 2, video_in.height // 2 * 2
        video_out.pix_fmt = "yuv420p"
        audio_in = source.streams.audio[0] if source.streams.audio else None
        audio_out = out.add_stream("aac", rate=audio_in.rate) if audio_in is not None else None
        for frame in source.decode(*[s for s in (video_in, audio_in) if s is not None]):
            if isinstance(frame, av.VideoFrame):
                picture = frame.reformat(video_out.width, video_out.height, "yuv420p")
                picture.pts, picture.time_base = frame.pts, frame.time_base
                out.mux(video_out.encode(picture))
            elif isinstance(frame, av.AudioFrame) and audio_out is not None:
                out.mux(audio_out.encode(frame))
        out.mux(video_out.encode(None))
        if audio_out is not None:
            out.mux(audio_out.encode(None))
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
