from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.indexes import Index
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0019_capture_time")]

    initial = False

    operations = [
        ops.AddField(
            model_name="Task",
            name="break_until",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.CreateModel(
            name="TaskBreak",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "task",
                    fields.ForeignKeyField(
                        "models.Task",
                        source_field="task_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="breaks",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("starts_on", fields.DateField()),
                ("ends_on", fields.DateField()),
                ("applies_from", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("ends_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("ended_early_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={
                "table": "task_breaks",
                "app": "models",
                "indexes": [Index(fields=["task_id", "ends_at"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
