from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0010_partner_horizon")]

    initial = False

    # NULL on every earlier row: only a refusal a later retry can pass says how much later
    operations = [
        ops.AddField(
            model_name="Verification",
            name="retry_after_seconds",
            field=fields.IntField(null=True),
        ),
    ]
