from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0013_session_metadata")]

    initial = False

    operations = [
        ops.CreateModel(
            name="WebhookFanout",
            fields=[
                ("id", fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ("position", fields.BigIntField(default=0)),
            ],
            options={
                "table": "webhook_fanout",
                "app": "models",
                "pk_attr": "id",
                "table_description": "One row: the position up to which committed events have been turned"
                " into deliveries.",
            },
            bases=["Model"],
        ),
        # the events already committed were never meant for webhooks: fan-out starts after them
        ops.RunSQL(
            "INSERT INTO webhook_fanout (id, position) SELECT 1, COALESCE(MAX(position), 0) FROM events",
            reverse_sql="DELETE FROM webhook_fanout",
        ),
        # webhooks from before event types were chosen received reminders only, and keep doing so
        ops.AddField(
            model_name="Webhook",
            name="event_types",
            field=fields.CharField(default="DUE_SOON", db_default="DUE_SOON", max_length=300),
        ),
        ops.AddField(
            model_name="WebhookDelivery",
            name="kind",
            field=fields.CharField(default="DUE_SOON", db_default="DUE_SOON", max_length=32),
        ),
        # the agenda reads a user's instances by due time, task by task
        ops.RunSQL(
            "CREATE INDEX idx_task_instances_task_due ON task_instances (task_id, due_at)",
            reverse_sql="DROP INDEX idx_task_instances_task_due",
        ),
    ]
