from tortoise import migrations
from tortoise.migrations import operations as ops
from models.enums import EventType, InstanceStatus, VerdictReason
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0027_web_push')]

    initial = False

    operations = [
        ops.AlterField(
            model_name='Event',
            name='instance_status',
            field=fields.CharEnumField(description='PENDING: PENDING\nPENDING_REVIEW: PENDING_REVIEW\nVERIFIED: VERIFIED\nMISSED: MISSED\nREJECTED: REJECTED\nCANCELED: CANCELED\nEXCUSED: EXCUSED', enum_type=InstanceStatus, max_length=16),
        ),
        ops.AlterField(
            model_name='Event',
            name='type',
            field=fields.CharEnumField(description='PROOF_SUBMITTED: PROOF_SUBMITTED\nREVIEW_REQUESTED: REVIEW_REQUESTED\nVERIFIED: VERIFIED\nREJECTED: REJECTED\nMISSED: MISSED\nAPPEAL_REQUESTED: APPEAL_REQUESTED\nAPPEAL_DECIDED: APPEAL_DECIDED\nDUE_SOON: DUE_SOON\nEXCUSED: EXCUSED', enum_type=EventType, max_length=32),
        ),
        ops.AddField(
            model_name='Task',
            name='rule_revision',
            field=fields.IntField(default=1, db_default=1),
        ),
        ops.AlterField(
            model_name='TaskInstance',
            name='status',
            field=fields.CharEnumField(default=InstanceStatus.PENDING, description='PENDING: PENDING\nPENDING_REVIEW: PENDING_REVIEW\nVERIFIED: VERIFIED\nMISSED: MISSED\nREJECTED: REJECTED\nCANCELED: CANCELED\nEXCUSED: EXCUSED', enum_type=InstanceStatus, max_length=16),
        ),
        ops.AddField(
            model_name='TaskInstance',
            name='rule_revision',
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name='TaskInstance',
            name='verdict_reason',
            field=fields.CharEnumField(null=True, description='PROOF_ACCEPTED: PROOF_ACCEPTED\nNO_PROOF: NO_PROOF\nLOCATION_SAMPLES: LOCATION_SAMPLES\nPARTNER_APPROVED: PARTNER_APPROVED\nPARTNER_REJECTED: PARTNER_REJECTED\nREVIEW_TIMED_OUT: REVIEW_TIMED_OUT\nAPPEAL_UPHELD: APPEAL_UPHELD\nAPPEAL_DENIED: APPEAL_DENIED\nSERVICE_OUTAGE: SERVICE_OUTAGE\nTASK_CHANGED: TASK_CHANGED', enum_type=VerdictReason, max_length=24),
        ),
    ]
