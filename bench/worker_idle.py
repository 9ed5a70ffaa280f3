"""What an idle worker process costs, by poll interval: the precision of delayed links against CPU.

For each PROOFLOOP_WORKER_POLL_MILLISECONDS (100, the default; 250, as the test run uses; 1000), one
`proofloop worker` (1 process x 8 threads) with nothing to do runs on a private redis-server and database for
IDLE_SECONDS; the table gives the CPU its process tree, the redis-server and the PostgreSQL server spent
meanwhile, as a share of one core. Raw Dramatiq (a no-op actor, same threads) at each interval is the
baseline in the same run: what Dramatiq's own polling costs without the pump.

Run: .venv/bin/python -m bench.worker_idle
"""

from __future__ import annotations

import os
import time

import psutil

from bench.chain_support import BenchEnv, Proc, Row, bench_env, print_table, say

IDLE_SECONDS = float(os.environ.get("BENCH_IDLE_SECONDS", "15"))
POLLS_MS = (100, 250, 1000)
SETTLE_SECONDS = 3  # after "ready": the pump's first ticks and the consumers' first backoff


def _process_cpu(pid: int) -> float:
    """A process's CPU with that of its reaped children."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def _postgres_cpu() -> float:
    """Every PostgreSQL process's CPU, the backends that ended meanwhile included (their postmaster's)."""
    total = 0.0
    for process in psutil.process_iter(["name"]):
        if process.info["name"] != "postgres":
            continue
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _idle_share(worker: Proc, redis_pid: int) -> tuple[float, float, float]:
    """(worker tree, redis-server, PostgreSQL) CPU over IDLE_SECONDS, each as a share of one core."""
    time.sleep(SETTLE_SECONDS)
    before = (worker.cpu_seconds(), _process_cpu(redis_pid), _postgres_cpu())
    time.sleep(IDLE_SECONDS)
    after = (worker.cpu_seconds(), _process_cpu(redis_pid), _postgres_cpu())
    return (
        (after[0] - before[0]) / IDLE_SECONDS,
        (after[1] - before[1]) / IDLE_SECONDS,
        (after[2] - before[2]) / IDLE_SECONDS,
    )


def _percent(share: float) -> str:
    return f"{share * 100:.1f} %"


def main() -> None:
    rows: list[Row] = []
    with bench_env("worker_idle", time_limit=len(POLLS_MS) * 2 * (IDLE_SECONDS + 60)) as env:
        redis_pid = _redis_pid(env)
        for poll in POLLS_MS:
            settings = {"PROOFLOOP_WORKER_POLL_MILLISECONDS": str(poll), "dramatiq_worker_timeout": str(poll)}
            say(f"proofloop worker, polling every {poll} ms, idle for {IDLE_SECONDS:.0f} s")
            worker = env.proofloop_worker(settings)
            ours = _idle_share(worker, redis_pid)
            worker.stop()
            say(f"raw Dramatiq, polling every {poll} ms, idle for {IDLE_SECONDS:.0f} s")
            raw_worker = env.raw_worker(extra_env=settings)
            raw = _idle_share(raw_worker, redis_pid)
            raw_worker.stop()
            rows.append(
                Row(
                    f"idle worker at {poll} ms: worker / redis-server / PostgreSQL",
                    " / ".join(_percent(x) for x in ours),
                    " / ".join(_percent(x) for x in raw),
                    "-",
                    None,
                )
            )
    print_table("worker_idle: one idle worker process, share of one core", rows)


def _redis_pid(env: BenchEnv) -> int:
    port = env.redis_url.rsplit(":", 1)[1].split("/", 1)[0]
    for process in psutil.process_iter(["cmdline"]):
        text = " ".join(process.info["cmdline"] or [])
        if "redis-server" in text and f":{port}" in text:  # it shows itself as "redis-server host:port"
            return int(process.pid)
    raise RuntimeError(f"no redis-server runs on the private port {port}")


if __name__ == "__main__":
    main()
