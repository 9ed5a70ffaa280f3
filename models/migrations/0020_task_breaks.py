from uuid import uuid4

from tortoise import fields, migrations
from tortoise.fields.base import OnDelete
from tortoise.indexes import Index
from tortoise.migrations import operations as ops

from models.enums import RejectionReason, VerificationMethod

# the enum columns' descriptions as of this migration (a later value gets a migration of its own)
_METHODS = "GPS: GPS\nPHOTO: PHOTO\nPARTNER: PARTNER\nVIDEO: VIDEO\nINTEGRATION: INTEGRATION"
_REASONS = (
    "OUTSIDE_WINDOW: OUTSIDE_WINDOW\nOUTSIDE_GEOFENCE: OUTSIDE_GEOFENCE\n"
    "LOW_ACCURACY: LOW_ACCURACY\nIMPLAUSIBLE_LOCATION: IMPLAUSIBLE_LOCATION\n"
    "CAPTURED_OUTSIDE_WINDOW: CAPTURED_OUTSIDE_WINDOW\nREUSED_MEDIA: REUSED_MEDIA\n"
    "TOO_SHORT: TOO_SHORT\nPARTNER_REJECTED: PARTNER_REJECTED\n"
    "REVIEW_TIMED_OUT: REVIEW_TIMED_OUT\nOCCURRED_OUTSIDE_WINDOW: OCCURRED_OUTSIDE_WINDOW\n"
    "ACTIVITY_MISMATCH: ACTIVITY_MISMATCH\nBELOW_MIN_DISTANCE: BELOW_MIN_DISTANCE\n"
    "NO_CAPTURE_TIME: NO_CAPTURE_TIME"
)


class Migration(migrations.Migration):
    dependencies = [("models", "0019_capture_time")]

    initial = False

    operations = [
        # INTEGRATION and the new rejection reasons (0018, 0019) in the enum columns' descriptions
        ops.AlterField(
            model_name="Task",
            name="method",
            field=fields.CharEnumField(description=_METHODS, enum_type=VerificationMethod, max_length=16),
        ),
        ops.AlterField(
            model_name="Verification",
            name="method",
            field=fields.CharEnumField(description=_METHODS, enum_type=VerificationMethod, max_length=16),
        ),
        ops.AlterField(
            model_name="Verification",
            name="reason",
            field=fields.CharEnumField(
                null=True, description=_REASONS, enum_type=RejectionReason, max_length=32
            ),
        ),
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
