from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0015_data_exports")]

    initial = False

    operations = [
        ops.AddField(
            model_name="User",
            name="deletion_due_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        # the workers' sweep looks for accounts whose deletion has come
        ops.RunSQL(
            "CREATE INDEX idx_users_deletion_due ON users (deletion_due_at) WHERE deletion_due_at IS NOT NULL",
            reverse_sql="DROP INDEX idx_users_deletion_due",
        ),
    ]
