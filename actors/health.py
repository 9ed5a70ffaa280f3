"""Worker health reports: each worker process writes its own; `proofloop worker` answers /readyz from them.

A report is a small JSON file beside the process group's metric files, rewritten every watchdog pass.
A stale report (its process hung or died) counts as not ready.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPORT_PREFIX = "health-"
# several watchdog passes: a report older than this comes from a process that stopped looking
STALE_AFTER_SECONDS = 5.0


@dataclass(frozen=True)
class HealthReport:
    pid: int
    at: float
    checks: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(value == "ok" for value in self.checks.values())


def write_report(directory: str, report: HealthReport) -> None:
    path = Path(directory) / f"{REPORT_PREFIX}{report.pid}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(report)))
    os.replace(tmp, path)  # readers never see half a report


def remove_report(directory: str, pid: int) -> None:
    (Path(directory) / f"{REPORT_PREFIX}{pid}.json").unlink(missing_ok=True)


def read_reports(directory: str) -> list[HealthReport]:
    reports = []
    for path in Path(directory).glob(f"{REPORT_PREFIX}*.json"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # removed or replaced while listing
        reports.append(HealthReport(pid=int(data["pid"]), at=float(data["at"]), checks=dict(data["checks"])))
    return reports


def readiness(directory: str, now: float | None = None) -> tuple[bool, dict[str, object]]:
    """Ready when at least one worker process reported, and every report is fresh and all ok."""
    now = time.time() if now is None else now
    reports = read_reports(directory)
    processes: dict[str, object] = {}
    ready = bool(reports)
    for report in reports:
        fresh = now - report.at <= STALE_AFTER_SECONDS
        ready = ready and fresh and report.ok
        processes[str(report.pid)] = {
            "checks": report.checks,
            "age_seconds": round(now - report.at, 1),
            "ready": fresh and report.ok,
        }
    return ready, {"ready": ready, "processes": processes}
