from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0024_event_position_counter')]

    initial = False

    operations = [
        ops.CreateModel(
            name='IdempotencyKey',
            fields=[
                ('id', fields.BigIntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user', fields.ForeignKeyField('models.User', source_field='user_id', db_constraint=True, to_field='id', related_name='idempotency_keys', on_delete=OnDelete.CASCADE)),
                ('key', fields.CharField(max_length=255)),
                ('fingerprint', fields.CharField(max_length=64)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('expires_at', fields.DatetimeField(db_index=True, auto_now=False, auto_now_add=False)),
                ('lease_until', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ('answered', fields.BooleanField(default=False)),
                ('status_code', fields.IntField(null=True)),
                ('media_type', fields.CharField(null=True, max_length=100)),
                ('retry_after', fields.CharField(null=True, max_length=16)),
                ('body', fields.BinaryField(null=True)),
            ],
            options={'table': 'idempotency_keys', 'app': 'models', 'unique_together': (('user', 'key'),), 'pk_attr': 'id', 'table_description': 'One key of one user: running (its lease held by the request executing it) or answered.'},
            bases=['Model'],
        ),
    ]
