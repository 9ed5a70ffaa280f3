"""Hamming distances between pHashes of copies vs different photos, and the cost of one photo check.

Run: .venv/bin/python bench/photo_reuse_threshold.py
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PIL import Image, ImageChops  # noqa: E402

from harness.media_factory import hostile_copies, photo_image, reuse_tuning_set  # noqa: E402
from rules.photo import REUSE_THRESHOLD, PhotoFacts, hamming, inspect_photo  # noqa: E402

# The rule before mirrored, turned and cropped copies were caught: one pHash each, 12 bits.
PLAIN_THRESHOLD = 12


def histogram(values: list[int]) -> str:
    counts = Counter(values)
    return " ".join(f"{distance}:{counts[distance]}" for distance in sorted(counts))


def plain_distance(new: PhotoFacts, old: PhotoFacts) -> int:
    return hamming(new.phash, old.phash)


def turned_distance(new: PhotoFacts, old: PhotoFacts) -> int:
    return min(hamming(probe, kept) for probe in new.probes for kept in old.fingerprints)


def report(
    label: str,
    distance: object,
    threshold: int,
    copies: dict[str, list[tuple[PhotoFacts, PhotoFacts]]],
    originals: list[PhotoFacts],
) -> None:
    assert callable(distance)
    print(f"{label} (threshold {threshold}):")
    for kind, pairs in copies.items():
        distances = [distance(new, old) for new, old in pairs]
        missed = sum(d > threshold for d in distances)
        print(
            f"  {kind:9} copies missed {missed:3}/{len(pairs)}  max {max(distances):2}  {histogram(distances)}"
        )
    different = [distance(a, b) for a in originals for b in originals if a is not b]
    flagged = sum(d <= threshold for d in different)
    print(
        f"  distinct flagged {flagged}/{len(different)} ordered pairs  min {min(different)}  {histogram(different)}"
    )


def main() -> None:
    tuning = reuse_tuning_set()
    started = time.perf_counter()
    originals = [inspect_photo(original, zone="UTC") for original, _ in tuning]
    copies: dict[str, list[tuple[PhotoFacts, PhotoFacts]]] = {"everyday": []}
    for (original, edits), kept in zip(tuning, originals, strict=True):
        copies["everyday"] += [(inspect_photo(c, zone="UTC"), kept) for c in edits]
        for kind, data in hostile_copies(original).items():
            copies.setdefault(kind, []).append((inspect_photo(data, zone="UTC"), kept))
    hashed = len(originals) + sum(len(p) for p in copies.values())
    print(f"hashed {hashed} photos in {time.perf_counter() - started:.1f} s")
    report("before: one pHash each", plain_distance, PLAIN_THRESHOLD, copies, originals)
    report("after: turned/mirrored/cropped probes", turned_distance, REUSE_THRESHOLD, copies, originals)

    big = twelve_megapixel_jpeg()
    with tempfile.NamedTemporaryFile(suffix=".jpg") as file:
        file.write(big)
        file.flush()
        # A fresh process, so the high-water RSS is the check's and not this script's photo generation.
        subprocess.run([sys.executable, __file__, "--measure", file.name], check=True)


def twelve_megapixel_jpeg() -> bytes:
    """A 4000x3000 photo built cheaply: an upscaled generated scene plus sensor-like noise."""
    scene = photo_image(7, (1000, 750)).resize((4000, 3000), Image.Resampling.BICUBIC)
    noise = Image.merge("RGB", [Image.effect_noise((4000, 3000), 10) for _ in range(3)])
    out = io.BytesIO()
    ImageChops.add(scene, noise, scale=1.0, offset=-128).save(out, format="JPEG", quality=92)
    return out.getvalue()


def peak_rss_mb() -> tuple[float, float]:
    """ru_maxrss (Linux carries it across exec, so it may be the parent's) and VmHWM (this process only)."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    status = Path("/proc/self/status")
    lines = status.read_text().splitlines() if status.exists() else []
    hwm = next((int(line.split()[1]) / 1024 for line in lines if line.startswith("VmHWM:")), float("nan"))
    return maxrss, hwm


def measure(path: str) -> None:
    data = Path(path).read_bytes()
    before_first = peak_rss_mb()
    inspect_photo(data, zone="UTC")  # warm imports and caches
    rss_before = peak_rss_mb()
    tracemalloc.start()
    started = time.perf_counter()
    facts = inspect_photo(data, zone="UTC")
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = peak_rss_mb()
    clean = Image.open(io.BytesIO(facts.clean))
    print(f"12 MP JPEG ({facts.width}x{facts.height}, {len(data) / 1e6:.1f} MB): {elapsed * 1000:.0f} ms")
    print(f"  tracemalloc peak {peak / 1e6:.1f} MB (Python objects; Pillow's pixel buffers are not traced)")
    for label, (maxrss, hwm) in (
        ("before any check", before_first),
        ("after a warm-up check", rss_before),
        ("after the timed check", rss_after),
    ):
        print(f"  {label}: ru_maxrss {maxrss:.0f} MB, VmHWM {hwm:.0f} MB")
    print(f"  clean copy {clean.width}x{clean.height}, {len(facts.clean) / 1e3:.0f} kB")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        measure(sys.argv[2])
    else:
        main()
