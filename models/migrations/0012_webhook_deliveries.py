from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.migrations import operations as ops

from models.enums import DeliveryStatus


class Migration(migrations.Migration):
    dependencies = [("models", "0011_verification_retry_after")]

    initial = False

    operations = [
        ops.CreateModel(
            name="WebhookDelivery",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "webhook",
                    fields.ForeignKeyField(
                        "models.Webhook",
                        source_field="webhook_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="deliveries",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("body", fields.TextField(unique=False)),
                (
                    "status",
                    fields.CharEnumField(
                        default=DeliveryStatus.PENDING,
                        description="PENDING: PENDING\nSENDING: SENDING\nDELIVERED: DELIVERED\n"
                        "GIVEN_UP: GIVEN_UP\nREFUSED: REFUSED",
                        enum_type=DeliveryStatus,
                        max_length=16,
                    ),
                ),
                ("attempts", fields.IntField(default=0)),
                ("put_offs", fields.IntField(default=0)),
                ("last_error", fields.CharField(null=True, max_length=200)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("finished_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("fire_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("link_no", fields.IntField(default=0)),
                ("link_for", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("linked_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "webhook_deliveries",
                "app": "models",
                "pk_attr": "id",
                "table_description": "One event for one webhook: its id is the delivery id every attempt carries.",
            },
            bases=["Model"],
        ),
        # the pump reads only deliveries still owed; deleting a webhook finds its deliveries by webhook
        ops.RunSQL(
            "CREATE INDEX idx_webhook_deliveries_fire_at ON webhook_deliveries (fire_at)"
            " WHERE fire_at IS NOT NULL",
            reverse_sql="DROP INDEX idx_webhook_deliveries_fire_at",
        ),
        ops.RunSQL(
            "CREATE INDEX idx_webhook_deliveries_webhook ON webhook_deliveries (webhook_id)",
            reverse_sql="DROP INDEX idx_webhook_deliveries_webhook",
        ),
        # finished deliveries are forgotten after a while, oldest first
        ops.RunSQL(
            "CREATE INDEX idx_webhook_deliveries_finished_at ON webhook_deliveries (finished_at)"
            " WHERE finished_at IS NOT NULL",
            reverse_sql="DROP INDEX idx_webhook_deliveries_finished_at",
        ),
    ]
