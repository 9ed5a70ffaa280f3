"""A recurring commitment and the rule that proves each occurrence."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import QuotaPeriod, ReviewTimeoutPolicy, TaskState, VerificationMethod
from models.user import User


class Task(Model):
    id = fields.UUIDField(primary_key=True)
    owner: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="tasks", on_delete=fields.CASCADE
    )
    title = fields.CharField(max_length=200)
    description: str | None = fields.TextField(null=True)
    method = fields.CharEnumField(VerificationMethod, max_length=16)

    starts_at = fields.DatetimeField()  # DTSTART as an instant; its wall time in `timezone` is what recurs
    rrule = fields.CharField(max_length=500, null=True)
    timezone = fields.CharField(max_length=64)
    window_seconds = fields.IntField()
    grace_seconds = fields.IntField()
    # a COUNT rule's last due time, found once when the schedule is set (NULL for other rules)
    count_ends_at = fields.DatetimeField(null=True)

    gps_latitude = fields.FloatField(null=True)
    gps_longitude = fields.FloatField(null=True)
    gps_radius_meters = fields.FloatField(null=True)
    gps_max_accuracy_meters = fields.FloatField(null=True)
    # GPS avoid-a-place: stay out of the geofence for the whole window, proved by location samples no
    # further apart than gps_max_sample_gap_seconds (rules/avoid.py); settled by the row path
    gps_avoid = fields.BooleanField(default=False, db_default=False)
    gps_max_sample_gap_seconds = fields.IntField(null=True)
    video_min_duration_seconds = fields.FloatField(null=True)
    # PHOTO/VIDEO: a file without a capture time is REJECTED (NO_CAPTURE_TIME) rather than let through
    require_capture_time = fields.BooleanField(default=False, db_default=False)
    # INTEGRATION: {"activity_types": [...], "min_duration_seconds": x, "min_distance_meters": y}
    activity_rule: dict[str, object] | None = fields.JSONField(null=True)
    # INTEGRATION: the endpoint's path key and the HMAC secret its events are signed with (both replaced
    # together by connectIntegration; the secret is needed in the clear to check a signature)
    integration_key = fields.CharField(max_length=43, null=True)  # unique: migration 0018
    integration_secret = fields.CharField(max_length=64, null=True)
    # a quota goal, "quota_count proofs per quota_period" (rules/quota.py): rrule is then the rule of the
    # period ends, starts_at the first one's; window_seconds and grace_seconds are 0 (each period is its
    # instance's window); fixed when the task is created, except the count and the gap
    quota_count = fields.IntField(null=True)
    quota_period = fields.CharEnumField(QuotaPeriod, max_length=8, null=True)
    quota_week_start = fields.CharField(max_length=2, null=True)  # WEEK: "MO".."SU"
    quota_min_gap_seconds = fields.IntField(null=True)
    review_window_seconds = fields.IntField(null=True)
    review_on_timeout = fields.CharEnumField(ReviewTimeoutPolicy, max_length=16, null=True)
    # [[anchor, offset_seconds], ...] (services/reminders/reminders.py): each planned instance gets
    # these reminders; NULL (every task from before reminders) is none
    reminders: list[list[object]] | None = fields.JSONField(null=True)

    state = fields.CharEnumField(TaskState, max_length=16, default=TaskState.ACTIVE)
    # bumped by every edit of how instances are judged or scheduled (services/tasks): a verdict names the
    # revision that judged it
    rule_revision = fields.IntField(default=1, db_default=1)
    chain_version = fields.IntField(default=1)  # bumped by every edit that re-plans; stale links die on it
    last_seq = fields.IntField(default=0)  # sequence number of the latest planned instance
    deleted_at = fields.DatetimeField(null=True)
    # the end of its latest planned break (models/task_break.py), NULL when none: a task on or before a
    # break is settled by the row path, which plans around breaks (services/chain/breaks.py)
    break_until = fields.DatetimeField(null=True)
    # an easier edit waiting out the owner's commitment horizon (services/tasks/pending_changes.py), and when
    # it applies: the chain applies it at that moment, before any decision about the task
    pending_change: dict[str, object] | None = fields.JSONField(null=True)
    pending_effective_at = fields.DatetimeField(null=True)  # partial index: migration 0009
    pending_linked_for = fields.DatetimeField(null=True)  # the effective_at a message to apply it went for
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    owner_id: str

    class Meta:
        table = "tasks"
        indexes = (("owner_id", "created_at"),)
