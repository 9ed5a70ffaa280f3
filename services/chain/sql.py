"""Hand-written statements on the fire's hot path: the one read and the MISSED compare-and-set.

A Tortoise select_related builds a LEFT JOIN, which PostgreSQL cannot lock, and building queries costs
more Python per fire than the database spends on them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Any
from uuid import UUID

from tortoise.models import Model

from models import Task, TaskInstance
from services.kit import connection, is_sqlite


def _projection(model: type[Model], alias: str) -> str:
    return ", ".join(f'{alias}."{column}" AS "{alias}.{column}"' for column in sorted(model._meta.db_fields))


def _columns_of(row: dict[str, Any], alias: str) -> dict[str, Any]:
    prefix = f"{alias}."
    return {key[len(prefix) :]: value for key, value in row.items() if key.startswith(prefix)}


@cache
def _read_sql(sqlite: bool) -> str:
    clock = "" if sqlite else ", clock_timestamp() AS db_now"
    lock = "" if sqlite else " FOR UPDATE OF t"  # SQLite: BEGIN IMMEDIATE already holds the write lock
    return (
        f"SELECT {_projection(TaskInstance, 'i')}, {_projection(Task, 't')}{clock}"
        f" FROM task_instances i JOIN tasks t ON t.id = i.task_id"
        f" WHERE i.id = {'?' if sqlite else '$1'}{lock}"
    )


async def read_instance_locking_task(instance_id: str) -> tuple[TaskInstance, Task, datetime] | None:
    """Inside a write transaction: the instance, its task (row locked until commit), and now."""
    try:
        key = str(UUID(instance_id))
    except ValueError:
        return None  # a malformed link names nothing
    sqlite = is_sqlite()
    rows = await connection().execute_query_dict(_read_sql(sqlite), [key])
    if not rows:
        return None
    row = rows[0]
    instance = TaskInstance._init_from_db(**_columns_of(row, "i"))
    task = Task._init_from_db(**_columns_of(row, "t"))
    now: datetime = datetime.now(UTC) if sqlite else row["db_now"]  # SQLite's clock is this host's
    return instance, task, now.astimezone(UTC)
