from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import strawberry

from resolvers.permissions import IsAuthenticated, Public
from schema.context import Info
from schema.types.export import DataExport
from schema.types.pagination import Connection, page_request
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
from services.kit import keyset_page
from services.tasks import move_tasks_to_zone

DEVICE_NAME = "how the session is listed in `sessions` (at most 100 characters)"


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
        permission_classes=[IsAuthenticated], description="your signed-in devices, newest first"
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
        page = await keyset_page(await accounts.live_sessions_query(session.user), order, request)
        return Connection.of(page, order, lambda row: Session(row=row, current_id=session.token_id))


@strawberry.type
class AccountMutations:
    @strawberry.mutation(permission_classes=[Public])
    async def register(
        self,
        info: Info,
        email: str,
        password: str,
        display_name: str,
        timezone: str | None = "UTC",
        device_name: Annotated[str | None, strawberry.argument(description=DEVICE_NAME)] = None,
    ) -> AuthPayload:
        issued = await accounts.register(
            email,
            password,
            display_name,
            timezone or "UTC",
            rules=info.context.policies.accounts,
            address=info.context.client_address(),
            device=_device(info, device_name),
        )
        return _signed_in(info, issued)

    @strawberry.mutation(permission_classes=[Public])
    async def login(
        self,
        info: Info,
        email: str,
        password: str,
        device_name: Annotated[str | None, strawberry.argument(description=DEVICE_NAME)] = None,
    ) -> AuthPayload:
        issued = await accounts.login(
            email,
            password,
            rules=info.context.policies.accounts,
            address=info.context.client_address(),
            device=_device(info, device_name),
        )
        return _signed_in(info, issued)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description="revokes the token that made this request"
    )
    async def logout(self, info: Info) -> bool:
        # its sockets close and its media links stop working, in every API process
        await accounts.logout(await info.context.authenticate())
        return True

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="signs one of your devices out: its sockets close and its media links stop working",
    )
    async def revoke_session(self, info: Info, id: strawberry.ID) -> bool:
        await accounts.revoke_session(await info.context.viewer(), str(id))
        return True

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="mails a new single-use verification token to your address",
    )
    async def request_email_verification(self, info: Info) -> bool:
        settings = info.context.settings
        await email_verification.request_email_verification(
            await info.context.viewer(),
            public_url=settings.public_url,
            mail_requests=info.context.policies.accounts.mail_requests,
        )
        return True

    @strawberry.mutation(
        permission_classes=[Public], description="BAD_USER_INPUT for an unknown, used or expired token"
    )
    async def verify_email(self, info: Info, token: str) -> User:
        return User(row=await email_verification.verify_email(token), mailbox_proven=True)

    @strawberry.mutation(
        permission_classes=[Public], description="always true: never reveals whether the account exists"
    )
    async def request_password_reset(self, info: Info, email: str) -> bool:
        await password_reset.request_password_reset(
            email, rules=info.context.policies.accounts, address=info.context.client_address()
        )
        return True

    @strawberry.mutation(permission_classes=[Public], description="revokes every other token")
    async def reset_password(self, info: Info, token: str, new_password: str) -> AuthPayload:
        issued = await password_reset.reset_password(
            token, new_password, rules=info.context.policies.accounts, address=info.context.client_address()
        )
        return _signed_in(info, issued)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description="revokes every other token")
    async def change_password(self, info: Info, current_password: str, new_password: str) -> AuthPayload:
        issued = await accounts.change_password(
            await info.context.authenticate(),
            current_password,
            new_password,
            rules=info.context.policies.accounts,
            address=info.context.client_address(),
        )
        return _signed_in(info, issued)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=f"days (0..{MAX_HORIZON_DAYS}) an easier edit of your tasks waits;"
        " lowering it waits out the current value",
    )
    async def set_commitment_horizon(self, info: Info, days: int) -> User:
        day = info.context.policies.horizon_day
        return User(row=await set_commitment_horizon(await info.context.viewer(), days, day=day))

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="deletes your account and everything of it after a grace period"
        " (User.deletionDueAt; PROOFLOOP_ACCOUNT_DELETION_GRACE_SECONDS): every device is signed out now,"
        " and signing in before then cancels it; BAD_USER_INPUT for a wrong password",
    )
    async def request_account_deletion(self, info: Info, password: str) -> User:
        settings = info.context.settings
        row = await schedule_deletion(
            await info.context.viewer(),
            password,
            rules=info.context.policies.accounts,
            grace_seconds=settings.account_deletion_grace_seconds,
            address=info.context.client_address(),
        )
        return User(row=row)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="changes your display name and your zone (where a new task's schedule is read when it"
        " names none); with moveTasks, each task still in your old zone moves to the new one keeping its wall"
        " times, as a schedule edit under your commitment horizon like updateTask",
    )
    async def update_profile(
        self,
        info: Info,
        display_name: str | None = None,
        timezone: str | None = None,
        move_tasks: bool = False,
        quiet_hours: Annotated[
            QuietHoursInput | None,
            strawberry.argument(
                description="when no webhook notification is sent, on your wall clock; what falls in"
                " them is sent at their end; null clears them, left out keeps them"
            ),
        ] = strawberry.UNSET,
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


@strawberry.type
class ExportQueries:
    @strawberry.field(permission_classes=[IsAuthenticated], description="your data exports, newest first")
    async def data_exports(self, info: Info) -> list[DataExport]:
        rows = await exports.exports_of(await info.context.viewer()).limit(20)
        return [DataExport(row=row) for row in rows]


@strawberry.type
class ExportMutations:
    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="asks for an archive of everything of yours (JSON and your proofs' media); a worker"
        " builds it and mails a download link that expires; at most PROOFLOOP_EXPORTS_PER_DAY a day",
    )
    async def request_data_export(self, info: Info) -> DataExport:
        row = await exports.request_export(await info.context.viewer(), info.context.policies.exports)
        return DataExport(row=row)
