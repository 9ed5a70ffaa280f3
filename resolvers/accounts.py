from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import strawberry

from resolvers.permissions import IsAuthenticated, Public
from schema.context import Info
from schema.deprecations import list_replaced_by, replaced_by
from schema.types.export import DataExport
from schema.types.pagination import Connection, page_request
from schema.types.payloads import WITH_CREDENTIALS, MutationInput, MutationPayload, settle
from schema.types.profile import ProfileUpdate, UnmovedTask
from schema.types.session import Session
from schema.types.task import Task
from schema.types.user import AuthPayload, User
from services import exports
from services.accounts import (
    KEEP,
    MAX_HORIZON_DAYS,
    QuietHours,
    SessionDevice,
    accounts,
    email_verification,
    password_reset,
    schedule_deletion,
    set_commitment_horizon,
    update_profile,
)
from services.kit import decode_id, global_id, keyset_page
from services.tasks import move_tasks_to_zone

DEVICE_NAME = "how the session is listed in `sessions` (at most 100 characters)"
QUIET_HOURS = (
    "when no webhook notification is sent, on your wall clock; what falls in them is sent at their end;"
    " null clears them, left out keeps them"
)


@strawberry.input(description='a daily span of your wall clock, "HH:MM" to "HH:MM" (it may pass midnight)')
class QuietHoursInput:
    start: str
    end: str


def _device(info: Info, name: str | None = None) -> SessionDevice:
    return SessionDevice.of(name, info.context.request.headers.get("user-agent"))


def _signed_in(info: Info, issued: tuple[accounts.Session, str]) -> AuthPayload:
    session, token = issued
    info.context.session = session  # the rest of this request speaks for the account
    return AuthPayload(token=token, user=User(row=session.user))


@strawberry.type
class AccountQueries:
    @strawberry.field(permission_classes=[IsAuthenticated])
    async def me(self, info: Info) -> User:
        return User(row=await info.context.viewer())

    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="your signed-in devices, newest first",
        deprecation_reason=list_replaced_by("sessionsConnection"),
    )
    async def sessions(self, info: Info) -> list[Session]:
        session = await info.context.authenticate()
        return [
            Session(row=row, current_id=session.token_id)
            for row in await accounts.live_sessions(session.user)
        ]

    @strawberry.field(
        permission_classes=[IsAuthenticated], description="your signed-in devices, newest first"
    )
    async def sessions_connection(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Connection[Session]:
        order = accounts.SESSION_ORDER
        request = page_request(info, order, first=first, after=after, last=last, before=before, default=20)
        session = await info.context.authenticate()
        query = await accounts.live_sessions_query(session.user)
        page = await keyset_page(query, order, request)
        return Connection.of(
            page, order, lambda row: Session(row=row, current_id=session.token_id), query.count
        )


@strawberry.input
class AccountRegisterInput(MutationInput):
    email: str
    password: str
    display_name: str
    timezone: str | None = "UTC"
    device_name: str | None = strawberry.field(default=None, description=DEVICE_NAME)


@strawberry.input
class SessionCreateInput(MutationInput):
    email: str
    password: str
    device_name: str | None = strawberry.field(default=None, description=DEVICE_NAME)


@strawberry.input
class SessionRevokeInput(MutationInput):
    id: strawberry.ID | None = strawberry.field(
        default=None, description="one of your sessions; left out or null: the one making this request"
    )


@strawberry.input
class EmailVerifyInput(MutationInput):
    token: str


@strawberry.input
class PasswordResetRequestInput(MutationInput):
    email: str


@strawberry.input
class PasswordResetInput(MutationInput):
    token: str
    new_password: str


@strawberry.input
class PasswordChangeInput(MutationInput):
    current_password: str
    new_password: str


@strawberry.input
class CommitmentHorizonUpdateInput(MutationInput):
    days: int


@strawberry.input
class AccountDeletionRequestInput(MutationInput):
    password: str


@strawberry.input
class ProfileUpdateInput(MutationInput):
    display_name: str | None = None
    timezone: str | None = None
    move_tasks: bool = False
    quiet_hours: QuietHoursInput | None = strawberry.field(default=strawberry.UNSET, description=QUIET_HOURS)


@strawberry.type(description="a signed-in session: send the token as `Authorization: Bearer <token>`")
class SignInPayload(MutationPayload):
    token: str | None = strawberry.field(default=None, description="shown once; null when refused")
    user: User | None = None


@strawberry.type
class SessionRevokePayload(MutationPayload):
    revoked_session_id: strawberry.ID | None = None


@strawberry.type
class RequestPayload(MutationPayload):
    requested: bool | None = strawberry.field(default=None, description="true once the request is taken")


@strawberry.type
class UserPayload(MutationPayload):
    user: User | None = None


@strawberry.type
class ProfileUpdatePayload(MutationPayload):
    user: User | None = None
    moved_tasks: list[Task] | None = strawberry.field(
        default=None,
        description="with moveTasks: each task moved to your new zone (its edit applied or waits)",
    )
    unmoved_tasks: list[UnmovedTask] | None = strawberry.field(
        default=None, description="with moveTasks: each task whose move was refused, and why"
    )


def _as_payload(signed_in: AuthPayload) -> SignInPayload:
    return SignInPayload(token=signed_in.token, user=signed_in.user)


async def register(info: Info, input: AccountRegisterInput) -> AuthPayload:
    issued = await accounts.register(
        input.email,
        input.password,
        input.display_name,
        input.timezone or "UTC",
        rules=info.context.policies.accounts,
        address=info.context.client_address(),
        device=_device(info, input.device_name),
    )
    return _signed_in(info, issued)


async def login(info: Info, input: SessionCreateInput) -> AuthPayload:
    issued = await accounts.login(
        input.email,
        input.password,
        rules=info.context.policies.accounts,
        address=info.context.client_address(),
        device=_device(info, input.device_name),
    )
    return _signed_in(info, issued)


async def revoke_session(info: Info, id: strawberry.ID | None) -> strawberry.ID:
    """The revoked session's id; its sockets close and its media links stop working, in every API process."""
    if id is None:
        session = await info.context.authenticate()
        await accounts.logout(session)
        return strawberry.ID(global_id("Session", session.token_id))
    await accounts.revoke_session(await info.context.viewer(), str(id))
    return strawberry.ID(global_id("Session", decode_id(id, "Session")))


async def request_email_verification(info: Info) -> bool:
    await email_verification.request_email_verification(
        await info.context.viewer(),
        public_url=info.context.settings.app_url,
        mail_requests=info.context.policies.accounts.mail_requests,
    )
    return True


async def verify_email(token: str) -> User:
    return User(row=await email_verification.verify_email(token), mailbox_proven=True)


async def request_password_reset(info: Info, email: str) -> bool:
    await password_reset.request_password_reset(
        email, rules=info.context.policies.accounts, address=info.context.client_address()
    )
    return True


async def reset_password(info: Info, token: str, new_password: str) -> AuthPayload:
    issued = await password_reset.reset_password(
        token, new_password, rules=info.context.policies.accounts, address=info.context.client_address()
    )
    return _signed_in(info, issued)


async def change_password(info: Info, current_password: str, new_password: str) -> AuthPayload:
    issued = await accounts.change_password(
        await info.context.authenticate(),
        current_password,
        new_password,
        rules=info.context.policies.accounts,
        address=info.context.client_address(),
    )
    return _signed_in(info, issued)


async def update_horizon(info: Info, days: int) -> User:
    day = info.context.policies.horizon_day
    return User(row=await set_commitment_horizon(await info.context.viewer(), days, day=day))


async def request_deletion(info: Info, password: str) -> User:
    row = await schedule_deletion(
        await info.context.viewer(),
        password,
        rules=info.context.policies.accounts,
        grace_seconds=info.context.settings.account_deletion_grace_seconds,
        address=info.context.client_address(),
    )
    return User(row=row)


async def change_profile(
    info: Info,
    display_name: str | None,
    timezone: str | None,
    move_tasks: bool,
    quiet_hours: QuietHoursInput | None,
) -> ProfileUpdate:
    quiet: QuietHours | object | None = KEEP
    if quiet_hours is None or isinstance(quiet_hours, QuietHoursInput):
        quiet = QuietHours.of(quiet_hours.start, quiet_hours.end) if quiet_hours else None
    change = await update_profile(
        await info.context.viewer(), display_name=display_name, timezone=timezone, quiet_hours=quiet
    )
    user = change.user
    if info.context.session is not None:  # a later field of this document sees the new profile
        info.context.session = replace(info.context.session, user=user)
    if not (move_tasks and change.moved_zone):
        return ProfileUpdate(user=User(row=user), moved_tasks=[], unmoved_tasks=[])
    # after the profile commits: each task's move is its own edit (tasks never wait on each other)
    moves = await move_tasks_to_zone(
        user,
        change.previous_timezone,
        user.timezone,
        min_interval_seconds=info.context.settings.min_interval_seconds,
        timing=info.context.policies.chain,
        horizon_day=info.context.policies.horizon_day,
    )
    return ProfileUpdate(
        user=User(row=user),
        moved_tasks=[Task(row=row) for row in moves.moved],
        unmoved_tasks=[
            UnmovedTask(task=Task(row=r.task), code=r.error.code, message=r.error.message)
            for r in moves.refused
        ],
    )


REVOKE = "signs one of your devices out: its sockets close and its media links stop working"
VERIFICATION = "mails a new single-use verification token to your address"
VERIFY = "BAD_USER_INPUT for an unknown, used or expired token"
RESET_REQUEST = "always true: never reveals whether the account exists"
NEW_TOKEN = "revokes every other token"
HORIZON = (
    f"days (0..{MAX_HORIZON_DAYS}) an easier edit of your tasks waits;"
    " lowering it waits out the current value"
)
DELETION = (
    "deletes your account and everything of it after a grace period (User.deletionDueAt;"
    " PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS): every device is signed out now, and signing in before then"
    " cancels it; BAD_USER_INPUT for a wrong password"
)
PROFILE = (
    "changes your display name and your zone (where a new task's schedule is read when it names none); with"
    " moveTasks, each task still in your old zone moves to the new one keeping its wall times, as a schedule"
    " edit under your commitment horizon like updateTask"
)


@strawberry.type
class AccountMutations:
    @strawberry.mutation(permission_classes=[Public], description="creates your account and signs you in")
    async def account_register(self, info: Info, input: AccountRegisterInput) -> SignInPayload:
        async def work() -> SignInPayload:
            return _as_payload(await register(info, input))

        return await settle(SignInPayload, input, work)

    @strawberry.mutation(permission_classes=[Public], description="signs in: a new session")
    async def session_create(self, info: Info, input: SessionCreateInput) -> SignInPayload:
        async def work() -> SignInPayload:
            return _as_payload(await login(info, input))

        # a wrong email or password is what a sign-in form shows: a user error (UNAUTHENTICATED)
        return await settle(SignInPayload, input, work, expected=WITH_CREDENTIALS)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="signs a session out (by default the one making this request): its sockets close and"
        " its media links stop working",
    )
    async def session_revoke(
        self, info: Info, input: SessionRevokeInput | None = None
    ) -> SessionRevokePayload:
        async def work() -> SessionRevokePayload:
            return SessionRevokePayload(
                revoked_session_id=await revoke_session(info, input.id if input else None)
            )

        return await settle(SessionRevokePayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=VERIFICATION)
    async def email_verification_request(
        self, info: Info, input: MutationInput | None = None
    ) -> RequestPayload:
        async def work() -> RequestPayload:
            return RequestPayload(requested=await request_email_verification(info))

        return await settle(RequestPayload, input, work)

    @strawberry.mutation(permission_classes=[Public], description=VERIFY)
    async def email_verify(self, info: Info, input: EmailVerifyInput) -> UserPayload:
        async def work() -> UserPayload:
            return UserPayload(user=await verify_email(input.token))

        return await settle(UserPayload, input, work)

    @strawberry.mutation(permission_classes=[Public], description=RESET_REQUEST)
    async def password_reset_request(self, info: Info, input: PasswordResetRequestInput) -> RequestPayload:
        async def work() -> RequestPayload:
            return RequestPayload(requested=await request_password_reset(info, input.email))

        return await settle(RequestPayload, input, work)

    @strawberry.mutation(permission_classes=[Public], description=NEW_TOKEN)
    async def password_reset(self, info: Info, input: PasswordResetInput) -> SignInPayload:
        async def work() -> SignInPayload:
            return _as_payload(await reset_password(info, input.token, input.new_password))

        return await settle(SignInPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=NEW_TOKEN)
    async def password_change(self, info: Info, input: PasswordChangeInput) -> SignInPayload:
        async def work() -> SignInPayload:
            return _as_payload(await change_password(info, input.current_password, input.new_password))

        return await settle(SignInPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=HORIZON)
    async def commitment_horizon_update(self, info: Info, input: CommitmentHorizonUpdateInput) -> UserPayload:
        async def work() -> UserPayload:
            return UserPayload(user=await update_horizon(info, input.days))

        return await settle(UserPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=DELETION)
    async def account_deletion_request(self, info: Info, input: AccountDeletionRequestInput) -> UserPayload:
        async def work() -> UserPayload:
            return UserPayload(user=await request_deletion(info, input.password))

        return await settle(UserPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=PROFILE)
    async def profile_update(self, info: Info, input: ProfileUpdateInput) -> ProfileUpdatePayload:
        async def work() -> ProfileUpdatePayload:
            done = await change_profile(
                info, input.display_name, input.timezone, input.move_tasks, input.quiet_hours
            )
            return ProfileUpdatePayload(
                user=done.user, moved_tasks=done.moved_tasks, unmoved_tasks=done.unmoved_tasks
            )

        return await settle(ProfileUpdatePayload, input, work)


@strawberry.type
class FirstAccountMutations:
    """The first shape, deprecated: plain arguments, the object as the result, refusals as errors."""

    @strawberry.mutation(permission_classes=[Public], deprecation_reason=replaced_by("accountRegister"))
    async def register(
        self,
        info: Info,
        email: str,
        password: str,
        display_name: str,
        timezone: str | None = "UTC",
        device_name: Annotated[str | None, strawberry.argument(description=DEVICE_NAME)] = None,
    ) -> AuthPayload:
        return await register(
            info,
            AccountRegisterInput(
                email=email,
                password=password,
                display_name=display_name,
                timezone=timezone,
                device_name=device_name,
            ),
        )

    @strawberry.mutation(permission_classes=[Public], deprecation_reason=replaced_by("sessionCreate"))
    async def login(
        self,
        info: Info,
        email: str,
        password: str,
        device_name: Annotated[str | None, strawberry.argument(description=DEVICE_NAME)] = None,
    ) -> AuthPayload:
        return await login(info, SessionCreateInput(email=email, password=password, device_name=device_name))

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="revokes the token that made this request",
        deprecation_reason=replaced_by("sessionRevoke"),
    )
    async def logout(self, info: Info) -> bool:
        await revoke_session(info, None)
        return True

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=REVOKE,
        deprecation_reason=replaced_by("sessionRevoke"),
    )
    async def revoke_session(self, info: Info, id: strawberry.ID) -> bool:
        await revoke_session(info, id)
        return True

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=VERIFICATION,
        deprecation_reason=replaced_by("emailVerificationRequest"),
    )
    async def request_email_verification(self, info: Info) -> bool:
        return await request_email_verification(info)

    @strawberry.mutation(
        permission_classes=[Public], description=VERIFY, deprecation_reason=replaced_by("emailVerify")
    )
    async def verify_email(self, info: Info, token: str) -> User:
        return await verify_email(token)

    @strawberry.mutation(
        permission_classes=[Public],
        description=RESET_REQUEST,
        deprecation_reason=replaced_by("passwordResetRequest"),
    )
    async def request_password_reset(self, info: Info, email: str) -> bool:
        return await request_password_reset(info, email)

    @strawberry.mutation(
        permission_classes=[Public], description=NEW_TOKEN, deprecation_reason=replaced_by("passwordReset")
    )
    async def reset_password(self, info: Info, token: str, new_password: str) -> AuthPayload:
        return await reset_password(info, token, new_password)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=NEW_TOKEN,
        deprecation_reason=replaced_by("passwordChange"),
    )
    async def change_password(self, info: Info, current_password: str, new_password: str) -> AuthPayload:
        return await change_password(info, current_password, new_password)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=HORIZON,
        deprecation_reason=replaced_by("commitmentHorizonUpdate"),
    )
    async def set_commitment_horizon(self, info: Info, days: int) -> User:
        return await update_horizon(info, days)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=DELETION,
        deprecation_reason=replaced_by("accountDeletionRequest"),
    )
    async def request_account_deletion(self, info: Info, password: str) -> User:
        return await request_deletion(info, password)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=PROFILE,
        deprecation_reason=replaced_by("profileUpdate"),
    )
    async def update_profile(
        self,
        info: Info,
        display_name: str | None = None,
        timezone: str | None = None,
        move_tasks: bool = False,
        quiet_hours: Annotated[
            QuietHoursInput | None, strawberry.argument(description=QUIET_HOURS)
        ] = strawberry.UNSET,
    ) -> ProfileUpdate:
        return await change_profile(info, display_name, timezone, move_tasks, quiet_hours)


@strawberry.type
class ExportQueries:
    @strawberry.field(permission_classes=[IsAuthenticated], description="your data exports, newest first")
    async def data_exports(self, info: Info) -> list[DataExport]:
        rows = await exports.exports_of(await info.context.viewer()).limit(20)
        return [DataExport(row=row) for row in rows]


EXPORT = (
    "asks for an archive of everything of yours (JSON and your proofs' media); a worker builds it and mails"
    " a download link that expires; at most PROOFLOOP_EXPORTS_PER_DAY a day"
)


@strawberry.type
class DataExportPayload(MutationPayload):
    data_export: DataExport | None = None


async def request_data_export(info: Info) -> DataExport:
    row = await exports.request_export(await info.context.viewer(), info.context.policies.exports)
    return DataExport(row=row)


@strawberry.type
class ExportMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated], description=EXPORT)
    async def data_export_request(self, info: Info, input: MutationInput | None = None) -> DataExportPayload:
        async def work() -> DataExportPayload:
            return DataExportPayload(data_export=await request_data_export(info))

        return await settle(DataExportPayload, input, work)


@strawberry.type
class FirstExportMutations:
    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=EXPORT,
        deprecation_reason=replaced_by("dataExportRequest"),
    )
    async def request_data_export(self, info: Info) -> DataExport:
        return await request_data_export(info)
