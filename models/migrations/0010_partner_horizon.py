from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0009_commitment_horizon")]

    initial = False

    # every existing partnership is neither being removed nor held back
    operations = [
        ops.AddField(
            model_name="Partnership",
            name="removal_effective_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="Partnership",
            name="decides_from",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
