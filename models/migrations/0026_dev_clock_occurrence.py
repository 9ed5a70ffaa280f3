from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0025_idempotency_keys')]

    initial = False

    operations = [
        ops.AddField(
            model_name='TaskInstance',
            name='scheduled_due_at',
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
