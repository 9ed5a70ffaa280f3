from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.migrations import operations as ops

from models.enums import ExportStatus


class Migration(migrations.Migration):
    dependencies = [("models", "0014_webhook_event_types")]

    initial = False

    operations = [
        ops.CreateModel(
            name="DataExport",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "user",
                    fields.ForeignKeyField(
                        "models.User",
                        source_field="user_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="exports",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "status",
                    fields.CharEnumField(
                        default=ExportStatus.PENDING,
                        description="PENDING: PENDING\nREADY: READY\nEXPIRED: EXPIRED",
                        enum_type=ExportStatus,
                        max_length=16,
                    ),
                ),
                ("requested_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("sent_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("ready_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("expires_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("size_bytes", fields.BigIntField(null=True)),
                ("token_digest", fields.CharField(null=True, max_length=64)),
            ],
            options={
                "table": "data_exports",
                "app": "models",
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        # the per-day budget counts a user's recent requests
        ops.RunSQL(
            "CREATE INDEX idx_data_exports_user ON data_exports (user_id, requested_at)",
            reverse_sql="DROP INDEX idx_data_exports_user",
        ),
    ]
