from tortoise import migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0001_initial")]

    # Partial indexes (same syntax on PostgreSQL and SQLite): every scheduling read and the
    # position backstop touch only the rows that still owe work.
    operations = [
        ops.RunSQL(
            "CREATE INDEX idx_task_instances_fire_at ON task_instances (fire_at) WHERE fire_at IS NOT NULL",
            reverse_sql="DROP INDEX idx_task_instances_fire_at",
        ),
        ops.RunSQL(
            "CREATE INDEX idx_events_unpositioned ON events (id) WHERE position IS NULL",
            reverse_sql="DROP INDEX idx_events_unpositioned",
        ),
    ]
