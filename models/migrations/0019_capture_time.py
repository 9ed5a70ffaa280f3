from tortoise import fields, migrations
from tortoise.migrations import operations as ops

from models.enums import CaptureTimeSource


class Migration(migrations.Migration):
    dependencies = [("models", "0018_integrations")]

    initial = False

    operations = [
        ops.AddField(
            model_name="Task",
            name="require_capture_time",
            field=fields.BooleanField(default=False, db_default=False),  # a table with rows takes it too
        ),
        ops.AddField(
            model_name="Verification",
            name="captured_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="Verification",
            name="capture_source",
            field=fields.CharEnumField(
                null=True,
                description="EXIF_OFFSET: EXIF_OFFSET\nEXIF_TASK_ZONE: EXIF_TASK_ZONE\nCONTAINER: CONTAINER\n"
                "ABSENT: ABSENT",
                enum_type=CaptureTimeSource,
                max_length=16,
            ),
        ),
    ]
