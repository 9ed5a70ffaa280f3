"""The media proof kinds' rules (PHOTO, VIDEO) on the API, one kind beside the other: each rule's input and
output types, and their fields on CreateTaskInput, UpdateTaskInput, Task and PendingChange, which take
them in from the classes below (`CreateTaskInput(MediaRulesOnCreate)` and so on). A new media kind adds
its rule here and nowhere else in schema/.

A one-number rule is a member of `ColumnRule` (services/tasks/drafts.py; VIDEO_MIN_DURATION): drafts,
patches and pending changes carry its value keyed by that member, so the column is named there alone.
"""

from __future__ import annotations

import strawberry

from models import Task as TaskRow
from models import VerificationMethod
from services.tasks import ColumnRule, ColumnValues
from services.tasks import PendingChange as WaitingChange

REQUIRE_CAPTURE_TIME = (
    "a file without a capture time (EXIF DateTimeOriginal; a video's creation_time) is REJECTED with "
    "NO_CAPTURE_TIME; dropping the requirement waits out the commitment horizon"
)


@strawberry.input
class VideoRuleInput:
    min_duration_seconds: float
    require_capture_time: bool | None = strawberry.field(
        default=None, description=f"{REQUIRE_CAPTURE_TIME}; left out: false on create, unchanged on update"
    )


@strawberry.input(description="a PHOTO task's rule")
class PhotoRuleInput:
    require_capture_time: bool = strawberry.field(description=REQUIRE_CAPTURE_TIME)


@strawberry.type
class VideoRule:
    min_duration_seconds: float
    require_capture_time: bool = strawberry.field(
        description="a video without a creation time is REJECTED (NO_CAPTURE_TIME)"
    )


@strawberry.type(description="a PHOTO task's rule")
class PhotoRule:
    require_capture_time: bool = strawberry.field(
        description="a photo without an EXIF capture time is REJECTED (NO_CAPTURE_TIME)"
    )


def _column_values(video: VideoRuleInput | None) -> ColumnValues:
    given: dict[ColumnRule, float | None] = {
        ColumnRule.VIDEO_MIN_DURATION: video.min_duration_seconds if video is not None else None,
    }
    return {rule: value for rule, value in given.items() if value is not None}


def _capture_requirement(photo: PhotoRuleInput | None, video: VideoRuleInput | None) -> bool | None:
    """What the input says of the capture-time requirement (None: nothing); PHOTO's and VIDEO's rules both
    set the one column, and a task has only one of them."""
    if photo is not None:
        return photo.require_capture_time
    return video.require_capture_time if video is not None else None


@strawberry.input
class MediaRulesOnCreate:
    """CreateTaskInput's media rules."""

    video: VideoRuleInput | None = strawberry.field(default=None, description="required when method = VIDEO")
    photo: PhotoRuleInput | None = strawberry.field(default=None, description="used when method = PHOTO")

    def media_column_rules(self) -> ColumnValues:
        return _column_values(self.video)

    def media_capture_required(self) -> bool:
        return bool(_capture_requirement(self.photo, self.video))


@strawberry.input
class MediaRulesOnUpdate:
    """UpdateTaskInput's media rules: left out, the task keeps its own."""

    video: VideoRuleInput | None = strawberry.UNSET
    photo: PhotoRuleInput | None = strawberry.UNSET

    def _video(self) -> VideoRuleInput | None:
        return self.video if isinstance(self.video, VideoRuleInput) else None

    def media_column_rules(self) -> ColumnValues:
        return _column_values(self._video())

    def media_capture_required(self) -> bool | None:
        """None: the requirement is left as it is."""
        photo = self.photo if isinstance(self.photo, PhotoRuleInput) else None
        return _capture_requirement(photo, self._video())


@strawberry.type
class MediaRulesOfTask:
    """Task's media rules, read from its row."""

    row: strawberry.Private[TaskRow]

    @strawberry.field
    def video(self) -> VideoRule | None:
        minimum = self.row.video_min_duration_seconds
        if minimum is None:
            return None
        return VideoRule(min_duration_seconds=minimum, require_capture_time=self.row.require_capture_time)

    @strawberry.field
    def photo(self) -> PhotoRule | None:
        if self.row.method is not VerificationMethod.PHOTO:
            return None
        return PhotoRule(require_capture_time=self.row.require_capture_time)


@strawberry.type
class MediaRulesWaiting:
    """PendingChange's media rules: the values that will apply (null: unchanged)."""

    waiting: strawberry.Private[WaitingChange]

    @strawberry.field
    def video_min_duration_seconds(self) -> float | None:
        return self.waiting.column_rules.get(ColumnRule.VIDEO_MIN_DURATION)
