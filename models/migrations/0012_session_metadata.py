from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0011_verification_retry_after")]

    initial = False

    # NULL on every earlier session: nothing was recorded about its device or its use
    operations = [
        ops.AddField(
            model_name="AuthToken",
            name="device_name",
            field=fields.CharField(max_length=100, null=True),
        ),
        ops.AddField(
            model_name="AuthToken",
            name="user_agent",
            field=fields.CharField(max_length=256, null=True),
        ),
        ops.AddField(
            model_name="AuthToken",
            name="last_used_at",
            field=fields.DatetimeField(null=True),
        ),
    ]
