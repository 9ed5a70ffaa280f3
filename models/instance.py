"""One occurrence of a task: its proof window, its outcome, and what the chain still owes it."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import InstanceStatus, VerdictReason
from models.task import Task


class TaskInstance(Model):
    id = fields.UUIDField(primary_key=True)
    task: fields.ForeignKeyRelation[Task] = fields.ForeignKeyField(
        "models.Task", related_name="instances", on_delete=fields.CASCADE
    )
    seq = fields.IntField()
    chain_version = fields.IntField()
    opens_at = fields.DatetimeField()
    due_at = fields.DatetimeField()
    closes_at = fields.DatetimeField()
    # the occurrence it stands for, when the dev clock brought it forward (services/tasks/dev_clock.py):
    # the next instance is planned after this, not after its moved due time
    scheduled_due_at = fields.DatetimeField(null=True)
    status = fields.CharEnumField(InstanceStatus, max_length=16, default=InstanceStatus.PENDING)
    review_deadline = fields.DatetimeField(null=True)
    settled_at = fields.DatetimeField(null=True)
    # the verdict record, written with the settlement: why it has its status, and the revision of the
    # task's rule that judged it (NULL when no rule did: CANCELED, EXCUSED); the proofs, reviewer and
    # appeal it used are its verifications (schema/types/verdict.py)
    verdict_reason = fields.CharEnumField(VerdictReason, max_length=24, null=True)
    rule_revision = fields.IntField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    # a quota goal's period: the accepted proofs counted so far (VERIFIED once the task's quota_count)
    proofs_counted = fields.IntField(default=0, db_default=0)  # rows planned by plain SQL too

    # The durable timer: when the chain next owes work on this row (NULL once nothing is owed).
    fire_at = fields.DatetimeField(null=True)
    # The last link sent for this row: its number (compare-and-set guard), the fire_at it targets, and
    # when it was sent (services/timers/claims.py decides from these when a link counts as lost).
    link_no = fields.IntField(default=0)
    link_for = fields.DatetimeField(null=True)
    linked_at = fields.DatetimeField(null=True)

    task_id: str

    class Meta:
        table = "task_instances"
        unique_together = (("task_id", "seq"),)
        indexes = (("task_id", "status"),)
