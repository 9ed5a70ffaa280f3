from tortoise.migrations import operations as ops
from tortoise import migrations

# 0019 and 0021 once added these NOT NULL columns without a database default; where they were applied so,
# the default is set now (an older process of a rolling deploy inserts rows without naming them). SQLite
# files got their columns from the migrations as they are now, with the default.
_DEFAULTS = (
    "ALTER TABLE tasks ALTER COLUMN require_capture_time SET DEFAULT false",
    "ALTER TABLE tasks ALTER COLUMN gps_avoid SET DEFAULT false",
)


async def _set_defaults(apps, schema_editor) -> None:
    if schema_editor.DIALECT == "sqlite":
        return
    for statement in _DEFAULTS:
        await schema_editor.client.execute_script(statement)


class Migration(migrations.Migration):
    dependencies = [("models", "0022_quota_goals")]

    initial = False

    operations = [ops.RunPython(_set_defaults, ops.RunPython.noop)]
