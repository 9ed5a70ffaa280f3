from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0003_link_sent_time')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Verification',
            name='media_bytes',
            field=fields.BigIntField(null=True),
        ),
    ]
