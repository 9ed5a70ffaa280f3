from tortoise import migrations
from tortoise.migrations import operations as ops
from models.enums import Transport
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0026_dev_clock_occurrence')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Webhook',
            name='device_name',
            field=fields.CharField(null=True, max_length=100),
        ),
        ops.AddField(
            model_name='Webhook',
            name='transport',
            field=fields.CharEnumField(default=Transport.WEBHOOK, description='WEBHOOK: WEBHOOK\nWEB_PUSH: WEB_PUSH\nAPNS: APNS\nFCM: FCM', db_default='WEBHOOK', enum_type=Transport, max_length=16),
        ),
    ]
