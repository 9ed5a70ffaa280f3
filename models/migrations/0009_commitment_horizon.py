from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0008_reminders")]

    initial = False

    # every existing user starts with no horizon (0 days) and every task with nothing pending
    operations = [
        ops.AddField(
            model_name="User",
            name="commitment_horizon_days",
            field=fields.IntField(default=0, db_default=0),
        ),
        ops.AddField(
            model_name="User",
            name="lowered_horizon_days",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="User",
            name="lowered_horizon_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="Task",
            name="pending_change",
            field=fields.JSONField(null=True),
        ),
        ops.AddField(
            model_name="Task",
            name="pending_effective_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="Task",
            name="pending_linked_for",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        # a partial index (same syntax on PostgreSQL and SQLite): the pump reads only tasks with a change
        ops.RunSQL(
            "CREATE INDEX idx_tasks_pending_effective_at ON tasks (pending_effective_at)"
            " WHERE pending_effective_at IS NOT NULL",
            reverse_sql="DROP INDEX idx_tasks_pending_effective_at",
        ),
    ]
