from tortoise import fields, migrations
from tortoise.migrations import operations as ops

from models.enums import EventType, InstanceStatus


class Migration(migrations.Migration):
    dependencies = [("models", "0006_count_ends_at")]

    initial = False

    # NULL on every earlier row: only reviews an appeal opens carry the instance's prior status
    operations = [
        ops.AddField(
            model_name="Verification",
            name="appeal_of",
            field=fields.CharEnumField(InstanceStatus, max_length=16, null=True),
        ),
        # two event types more (APPEAL_REQUESTED, APPEAL_DECIDED): the column's description lists them
        ops.AlterField(
            model_name="Event",
            name="type",
            field=fields.CharEnumField(
                description="PROOF_SUBMITTED: PROOF_SUBMITTED\nREVIEW_REQUESTED: REVIEW_REQUESTED\nVERIFIED:"
                " VERIFIED\nREJECTED: REJECTED\nMISSED: MISSED\nAPPEAL_REQUESTED: APPEAL_REQUESTED\n"
                "APPEAL_DECIDED: APPEAL_DECIDED",
                enum_type=EventType,
                max_length=32,
            ),
        ),
    ]
