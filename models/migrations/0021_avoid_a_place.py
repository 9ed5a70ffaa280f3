from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.indexes import Index
from tortoise.migrations import operations as ops

from models.enums import RejectionReason

# the reason column's description as of this migration (a later value gets a migration of its own)
_REASONS = (
    "OUTSIDE_WINDOW: OUTSIDE_WINDOW\nOUTSIDE_GEOFENCE: OUTSIDE_GEOFENCE\n"
    "LOW_ACCURACY: LOW_ACCURACY\nIMPLAUSIBLE_LOCATION: IMPLAUSIBLE_LOCATION\n"
    "CAPTURED_OUTSIDE_WINDOW: CAPTURED_OUTSIDE_WINDOW\nREUSED_MEDIA: REUSED_MEDIA\n"
    "TOO_SHORT: TOO_SHORT\nPARTNER_REJECTED: PARTNER_REJECTED\n"
    "REVIEW_TIMED_OUT: REVIEW_TIMED_OUT\nOCCURRED_OUTSIDE_WINDOW: OCCURRED_OUTSIDE_WINDOW\n"
    "ACTIVITY_MISMATCH: ACTIVITY_MISMATCH\nBELOW_MIN_DISTANCE: BELOW_MIN_DISTANCE\n"
    "NO_CAPTURE_TIME: NO_CAPTURE_TIME\nENTERED_AVOIDED_PLACE: ENTERED_AVOIDED_PLACE\n"
    "NOT_ENOUGH_SAMPLES: NOT_ENOUGH_SAMPLES"
)


class Migration(migrations.Migration):
    dependencies = [("models", "0020_task_breaks")]

    initial = False

    operations = [
        ops.AddField(
            model_name="Task",
            name="gps_avoid",
            field=fields.BooleanField(default=False, db_default=False),  # a table with rows takes it too
        ),
        ops.AddField(model_name="Task", name="gps_max_sample_gap_seconds", field=fields.IntField(null=True)),
        ops.AlterField(
            model_name="Verification",
            name="reason",
            field=fields.CharEnumField(
                null=True, description=_REASONS, enum_type=RejectionReason, max_length=32
            ),
        ),
        ops.CreateModel(
            name="LocationSample",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "instance",
                    fields.ForeignKeyField(
                        "models.TaskInstance",
                        source_field="instance_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="location_samples",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("recorded_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("inside", fields.BooleanField()),
            ],
            options={
                "table": "location_samples",
                "app": "models",
                "indexes": [Index(fields=["instance_id", "recorded_at"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
