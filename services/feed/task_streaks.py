"""Streaks: consecutive VERIFIED instances, counted back from the latest settled one.

A task's streak is the number of its VERIFIED instances after its latest MISSED or REJECTED one, so
one grouped statement answers it for any number of tasks, however long their histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from models import InstanceStatus
from services.kit import connection, is_sqlite

# Canceled instances (a pause, an edit) neither extend nor break a streak; open ones are not settled yet.
_BREAKS = (InstanceStatus.MISSED.value, InstanceStatus.REJECTED.value)


@lru_cache(maxsize=256)
def _streaks_sql(sqlite: bool, tasks: int) -> str:
    ids = ", ".join("?" if sqlite else f"${n}" for n in range(1, tasks + 1))
    breaks = ", ".join(f"'{status}'" for status in _BREAKS)
    return (
        "WITH last_break AS ("
        f" SELECT task_id, MAX(seq) AS seq FROM task_instances WHERE task_id IN ({ids})"
        f" AND status IN ({breaks}) GROUP BY task_id)"
        " SELECT v.task_id AS task_id, COUNT(*) AS streak FROM task_instances v"
        " LEFT JOIN last_break b ON b.task_id = v.task_id"
        f" WHERE v.task_id IN ({ids}) AND v.status = '{InstanceStatus.VERIFIED.value}'"
        " AND v.seq > COALESCE(b.seq, -1) GROUP BY v.task_id"
    )


async def streaks_of(task_ids: Sequence[str]) -> dict[str, int]:
    """Each task's streak (tasks without one are absent: 0)."""
    if not task_ids:
        return {}
    sqlite = is_sqlite()
    # SQLite numbers `?` in order of appearance: the id list appears twice there
    values: list[Any] = [*task_ids, *task_ids] if sqlite else list(task_ids)
    rows = await connection().execute_query_dict(_streaks_sql(sqlite, len(task_ids)), values)
    return {str(row["task_id"]): int(row["streak"]) for row in rows}
