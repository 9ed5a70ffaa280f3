from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.migrations import operations as ops

from models.enums import EventType, ReminderAnchor


class Migration(migrations.Migration):
    dependencies = [("models", "0007_verification_appeal_of")]

    initial = False

    operations = [
        # NULL on every earlier task: no reminders
        ops.AddField(model_name="Task", name="reminders", field=fields.JSONField(null=True)),
        ops.CreateModel(
            name="InstanceReminder",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "instance",
                    fields.ForeignKeyField(
                        "models.TaskInstance",
                        source_field="instance_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="reminders",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "anchor",
                    fields.CharEnumField(
                        description="OPENS: OPENS\nDUE: DUE", enum_type=ReminderAnchor, max_length=8
                    ),
                ),
                ("offset_seconds", fields.IntField()),
                ("remind_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("fired_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("fire_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("link_no", fields.IntField(default=0)),
                ("link_for", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("linked_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={"table": "instance_reminders", "app": "models", "pk_attr": "id"},
            bases=["Model"],
        ),
        ops.CreateModel(
            name="Webhook",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "owner",
                    fields.ForeignKeyField(
                        "models.User",
                        source_field="owner_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="webhooks",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("url", fields.CharField(max_length=2000)),
                ("secret", fields.CharField(max_length=200)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={"table": "webhooks", "app": "models", "pk_attr": "id"},
            bases=["Model"],
        ),
        # the pump's reads touch only reminders still owed; a settled instance's reminders by instance
        ops.RunSQL(
            "CREATE INDEX idx_instance_reminders_fire_at ON instance_reminders (fire_at)"
            " WHERE fire_at IS NOT NULL",
            reverse_sql="DROP INDEX idx_instance_reminders_fire_at",
        ),
        ops.RunSQL(
            "CREATE INDEX idx_instance_reminders_instance ON instance_reminders (instance_id)",
            reverse_sql="DROP INDEX idx_instance_reminders_instance",
        ),
        ops.RunSQL(
            "CREATE INDEX idx_webhooks_owner ON webhooks (owner_id)",
            reverse_sql="DROP INDEX idx_webhooks_owner",
        ),
        # one event type more (DUE_SOON): the column's description lists them
        ops.AlterField(
            model_name="Event",
            name="type",
            field=fields.CharEnumField(
                description="PROOF_SUBMITTED: PROOF_SUBMITTED\nREVIEW_REQUESTED: REVIEW_REQUESTED\nVERIFIED:"
                " VERIFIED\nREJECTED: REJECTED\nMISSED: MISSED\nAPPEAL_REQUESTED: APPEAL_REQUESTED\n"
                "APPEAL_DECIDED: APPEAL_DECIDED\nDUE_SOON: DUE_SOON",
                enum_type=EventType,
                max_length=32,
            ),
        ),
    ]
