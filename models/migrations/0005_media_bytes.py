from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0004_accounts')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Verification',
            name='media_bytes',
            field=fields.BigIntField(null=True),
        ),
    ]
