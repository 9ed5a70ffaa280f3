"""Media attacks against one API process: CPU seconds, RSS peak and max /healthz latency for each,
beside an ordinary photo proof measured in the same run (the non-media attacks are in bench/abuse.py).

Run: .venv/bin/python -m bench.abuse_media
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import psutil
from PIL import Image

from bench.chain_support import BenchEnv, run_main, say
from harness import media_factory
from harness.ports import free_port
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    file_var,
    open_schedule,
    upload,
)

SUBMIT_PHOTO = "mutation($id: ID!, $p: Upload!) { submitPhoto(instanceId: $id, photo: $p) { status reason } }"
SUBMIT_VIDEO = "mutation($id: ID!, $v: Upload!) { submitVideo(instanceId: $id, video: $v) { status reason } }"


@dataclass
class Figures:
    outcome: str
    cpu_seconds: float
    rss_peak_mb: float
    healthz_max_ms: float


async def measure(server: ServerProcess, attack: Callable[[], Awaitable[str]]) -> Figures:
    assert server.proc is not None
    process = psutil.Process(server.proc.pid)
    cpu_before = sum(process.cpu_times()[:2])
    peak = process.memory_info().rss
    healthz_max = 0.0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal peak, healthz_max
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            while not done.is_set():
                started = time.perf_counter()
                await client.get("/healthz")
                healthz_max = max(healthz_max, time.perf_counter() - started)
                peak = max(peak, process.memory_info().rss)
                await asyncio.sleep(0.02)

    watcher = asyncio.create_task(watch())
    try:
        outcome = await attack()
    finally:
        done.set()
        await watcher
    cpu = sum(process.cpu_times()[:2]) - cpu_before
    return Figures(outcome, cpu, peak / 2**20, healthz_max * 1000)


def webp_bomb() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (6400, 6250), (10, 20, 30)).save(out, "WEBP", lossless=True)
    return out.getvalue()


async def attempt(api: ApiClient, document: str, variables: dict[str, object], token: str) -> str:
    try:
        result = await upload(api, document, variables, token=token)
    except GraphQLFailure as failure:
        return failure.code
    proof = next(iter(result.values()))
    return f"{proof['status']} {proof['reason'] or ''}".strip()


def open_for_an_hour() -> dict[str, object]:
    """A window open from half an hour ago to half an hour from now: setting up the attacks takes minutes."""
    return open_schedule(starts_in_seconds=1800, window_seconds=3600)


async def scenario(env: BenchEnv) -> None:
    with ServerProcess(env.child_env({"PROOFLOOP_MIN_INTERVAL_SECONDS": "1"}), port=free_port()) as server:
        api = ApiClient(server.url)
        token, _ = await api.register()

        async def photo_task() -> str:
            return (await create_open_task(api, token, "PHOTO", schedule=open_for_an_hour()))[1]

        async def ordinary() -> str:
            instance = await photo_task()
            return await attempt(
                api, SUBMIT_PHOTO, {"id": instance, "p": file_var(media_factory.photo(1))}, token
            )

        bomb = webp_bomb()
        bomb_instances = [await photo_task() for _ in range(4)]

        async def bombs() -> str:
            outcomes = await asyncio.gather(
                *(attempt(api, SUBMIT_PHOTO, {"id": i, "p": file_var(bomb)}, token) for i in bomb_instances)
            )
            return ", ".join(sorted(set(outcomes)))

        alias_instance = await photo_task()
        aliases = " ".join(f"a{i}: submitPhoto(instanceId: $id, photo: $p) {{ status }}" for i in range(10))

        async def ten_aliases() -> str:
            photo = file_var(media_factory.photo(2))
            return await attempt(
                api,
                f"mutation($id: ID!, $p: Upload!) {{ {aliases} }}",
                {"id": alias_instance, "p": photo},
                token,
            )

        heavy = media_factory.clip(60, fps=50, size=(640, 480), seed=3)  # 3,000 frames
        late = (
            await create_open_task(
                api, token, "VIDEO", schedule=open_schedule(starts_in_seconds=7200, window_seconds=600)
            )
        )[1]

        async def heavy_outside_window() -> str:
            return await attempt(api, SUBMIT_VIDEO, {"id": late, "v": file_var(heavy)}, token)

        patched = media_factory.matroska_with_duration(media_factory.clip(2, seed=4), claimed_seconds=1800)
        long_task = (
            await create_open_task(
                api, token, "VIDEO", schedule=open_for_an_hour(), video={"minDurationSeconds": 1200}
            )
        )[1]

        async def patched_duration() -> str:
            return await attempt(api, SUBMIT_VIDEO, {"id": long_task, "v": file_var(patched, "c.mkv")}, token)

        gate_instances = [await photo_task() for _ in range(8)]
        gate_photos = [media_factory.photo(10 + i, fmt="PNG", size=(1600, 1200)) for i in range(8)]

        async def eight_at_once() -> str:
            outcomes = await asyncio.gather(
                *(
                    attempt(api, SUBMIT_PHOTO, {"id": i, "p": file_var(p)}, token)
                    for i, p in zip(gate_instances, gate_photos, strict=True)
                )
            )
            return ", ".join(f"{o} x{outcomes.count(o)}" for o in sorted(set(outcomes)))

        rows = [
            ("ordinary 640x480 photo (baseline)", ordinary),
            ("4 WebP bombs at once", bombs),
            ("document with 10 submitPhoto aliases", ten_aliases),
            ("heavy video outside the window", heavy_outside_window),
            ("2 s clip claiming 1800 s (min 1200 s)", patched_duration),
            ("8 large PNG proofs at once (2 decode slots + 4 queued)", eight_at_once),
        ]
        say(f"API process {server.proc.pid if server.proc else '?'}; each row measured in this run")
        print(f"{'attack':56} {'outcome':44} {'CPU s':>6} {'RSS peak MB':>11} {'max /healthz ms':>15}")
        for label, attack in rows:
            figures = await measure(server, attack)
            print(
                f"{label:56} {figures.outcome[:44]:44} {figures.cpu_seconds:6.2f} {figures.rss_peak_mb:11.0f}"
                f" {figures.healthz_max_ms:15.0f}"
            )


if __name__ == "__main__":
    run_main("abuse_media", scenario, time_limit=220)
