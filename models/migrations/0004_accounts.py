from tortoise import migrations
from tortoise.migrations import operations as ops
from models.user import MailedTokenPurpose
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('models', '0003_link_sent_time')]

    initial = False

    operations = [
        ops.CreateModel(
            name='MailedToken',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('user', fields.ForeignKeyField('models.User', source_field='user_id', db_constraint=True, to_field='id', related_name='mailed_tokens', on_delete=OnDelete.CASCADE)),
                ('purpose', fields.CharEnumField(description='VERIFY_EMAIL: VERIFY_EMAIL\nRESET_PASSWORD: RESET_PASSWORD', enum_type=MailedTokenPurpose, max_length=16)),
                ('digest', fields.CharField(unique=True, max_length=64)),
                ('email', fields.CharField(max_length=254)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ('expires_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('used_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'mailed_tokens', 'app': 'models', 'indexes': [Index(fields=['user_id', 'purpose'])], 'pk_attr': 'id', 'table_description': 'A single-use token sent to an address (verification, password reset), kept as a digest only.'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='OutgoingMail',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('recipient', fields.CharField(max_length=254)),
                ('subject', fields.CharField(max_length=200)),
                ('text_body', fields.TextField(unique=False)),
                ('html_body', fields.TextField(unique=False)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ('sent_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ('attempts', fields.IntField(default=0)),
            ],
            options={'table': 'outgoing_mail', 'app': 'models', 'pk_attr': 'id'},
            bases=['Model'],
        ),
        ops.AddField(
            model_name='User',
            name='email_verified_at',
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
