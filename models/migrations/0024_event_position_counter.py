from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [("models", "0023_column_defaults")]

    initial = False

    operations = [
        ops.CreateModel(
            name="EventPositionCounter",
            fields=[
                ("id", fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ("position", fields.BigIntField(default=0)),
            ],
            options={
                "table": "event_position_counter",
                "app": "models",
                "pk_attr": "id",
                "table_description": "One row: the last position given to an event.",
            },
            bases=["Model"],
        ),
        # positions go on from the highest ever given (events kept their positions until now)
        ops.RunSQL(
            "INSERT INTO event_position_counter (id, position) SELECT 1, COALESCE(MAX(position), 0) FROM events",
            reverse_sql="DELETE FROM event_position_counter",
        ),
    ]
