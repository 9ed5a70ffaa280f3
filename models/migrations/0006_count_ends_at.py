from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0003_link_sent_time")]

    initial = False

    # Rows written before this column keep NULL: their COUNT end is found on first use instead.
    operations = [
        ops.AddField(
            model_name="Task",
            name="count_ends_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
