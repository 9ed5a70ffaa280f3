from tortoise import fields, migrations
from tortoise.migrations import operations as ops

from models.enums import QuotaPeriod, RejectionReason

# the reason column's description as of this migration (a later value gets a migration of its own)
_REASONS = (
    "OUTSIDE_WINDOW: OUTSIDE_WINDOW\nOUTSIDE_GEOFENCE: OUTSIDE_GEOFENCE\n"
    "LOW_ACCURACY: LOW_ACCURACY\nIMPLAUSIBLE_LOCATION: IMPLAUSIBLE_LOCATION\n"
    "CAPTURED_OUTSIDE_WINDOW: CAPTURED_OUTSIDE_WINDOW\nREUSED_MEDIA: REUSED_MEDIA\n"
    "TOO_SHORT: TOO_SHORT\nPARTNER_REJECTED: PARTNER_REJECTED\n"
    "REVIEW_TIMED_OUT: REVIEW_TIMED_OUT\nOCCURRED_OUTSIDE_WINDOW: OCCURRED_OUTSIDE_WINDOW\n"
    "ACTIVITY_MISMATCH: ACTIVITY_MISMATCH\nBELOW_MIN_DISTANCE: BELOW_MIN_DISTANCE\n"
    "NO_CAPTURE_TIME: NO_CAPTURE_TIME\nENTERED_AVOIDED_PLACE: ENTERED_AVOIDED_PLACE\n"
    "NOT_ENOUGH_SAMPLES: NOT_ENOUGH_SAMPLES\nWITHIN_MIN_GAP: WITHIN_MIN_GAP"
)


class Migration(migrations.Migration):
    dependencies = [("models", "0021_avoid_a_place")]

    initial = False

    operations = [
        ops.AddField(model_name="Task", name="quota_count", field=fields.IntField(null=True)),
        ops.AddField(
            model_name="Task",
            name="quota_period",
            field=fields.CharEnumField(
                null=True,
                description="DAY: DAY\nWEEK: WEEK\nMONTH: MONTH",
                enum_type=QuotaPeriod,
                max_length=8,
            ),
        ),
        ops.AddField(model_name="Task", name="quota_week_start", field=fields.CharField(null=True, max_length=2)),
        ops.AddField(model_name="Task", name="quota_min_gap_seconds", field=fields.IntField(null=True)),
        ops.AddField(
            model_name="TaskInstance",
            name="proofs_counted",
            field=fields.IntField(default=0, db_default=0),  # a table with rows takes it too
        ),
        ops.AlterField(
            model_name="Verification",
            name="reason",
            field=fields.CharEnumField(
                null=True, description=_REASONS, enum_type=RejectionReason, max_length=32
            ),
        ),
    ]
