from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.indexes import Index
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0017_quiet_hours")]

    initial = False

    operations = [
        ops.AddField(model_name="Task", name="activity_rule", field=fields.JSONField(null=True)),
        ops.AddField(model_name="Task", name="integration_key", field=fields.CharField(null=True, max_length=43)),
        ops.AddField(
            model_name="Task", name="integration_secret", field=fields.CharField(null=True, max_length=64)
        ),
        # SQLite cannot add a UNIQUE column; a unique index (NULLs distinct on both) is the same rule
        ops.RunSQL(
            "CREATE UNIQUE INDEX uid_tasks_integration_key ON tasks (integration_key)",
            reverse_sql="DROP INDEX uid_tasks_integration_key",
        ),
        ops.AddField(model_name="Verification", name="activity", field=fields.JSONField(null=True)),
        ops.CreateModel(
            name="IntegrationEvent",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "task",
                    fields.ForeignKeyField(
                        "models.Task",
                        source_field="task_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="integration_events",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("external_id", fields.CharField(max_length=200)),
                ("received_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                (
                    "verification",
                    fields.ForeignKeyField(
                        "models.Verification",
                        source_field="verification_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="integration_events",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
            ],
            options={
                "table": "integration_events",
                "app": "models",
                "unique_together": (("task_id", "external_id"),),
                "indexes": [Index(fields=["task_id", "received_at"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
