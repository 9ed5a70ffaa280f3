from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0016_account_deletion")]

    initial = False

    operations = [
        ops.AddField(model_name="User", name="quiet_start_minute", field=fields.IntField(null=True)),
        ops.AddField(model_name="User", name="quiet_end_minute", field=fields.IntField(null=True)),
    ]
