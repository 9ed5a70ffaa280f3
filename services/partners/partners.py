"""Partnerships: invite by email, accept or decline, remove from either side."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from tortoise.expressions import Q
from tortoise.queryset import QuerySet

from models import Partnership, PartnershipStatus, User
from realtime import notices
from services.accounts import horizon_of, normalize_email
from services.kit import (
    BadInput,
    Conflict,
    Forbidden,
    Keyset,
    NotFound,
    RateLimited,
    SortKey,
    db_now,
    on_commit,
    parse_id,
    parse_instant,
    parse_uuid,
    write_transaction,
)
from services.mail import messages, queue_mail
from services.partners.access import watching

_OPEN = (PartnershipStatus.INVITED, PartnershipStatus.ACTIVE)


async def invite_partner(viewer: User, email: str, public_url: str, *, max_per_day: int) -> Partnership:
    """Invite whoever owns `email` to watch the viewer, and mail that address.

    Never reveals whether an account exists: the partnership and the mail are created the same way for a
    known and an unknown address, with partner = null and the typed (lower-cased) email, and the answer is
    the same. Only a verified account of that address may accept (an account registered later with it too).
    """
    email = normalize_email(email, "email")
    if email == viewer.email.lower():
        raise BadInput("email", "you cannot be your own partner")
    async with write_transaction():
        # serializes this user's invites, so two at once cannot both pass the duplicate check
        await User.filter(id=viewer.id).select_for_update().first()
        since = await db_now() - timedelta(days=1)
        if await Partnership.filter(user_id=viewer.id, created_at__gte=since).count() >= max_per_day:
            raise RateLimited(f"at most {max_per_day} invites in 24 hours; try again later")
        duplicate = await Partnership.filter(
            Q(status=PartnershipStatus.INVITED) | watching(await db_now()),
            Q(invited_email=email) | Q(partner__email=email),
            user_id=viewer.id,
        ).exists()
        if duplicate:
            raise Conflict("an invite to this address is already open or accepted")
        row = await Partnership.create(
            user_id=viewer.id, invited_email=email, status=PartnershipStatus.INVITED
        )
        await queue_mail(email, messages.partner_invite(public_url, viewer.display_name))
        return row


async def respond_to_invite(
    viewer: User, partnership_id: str, accept: bool, *, day: timedelta
) -> Partnership:
    """The invitee (the account whose email the invite went to) accepts or declines, once.

    Accepted beside another partner while the owner's commitment horizon holds, the new partner watches at
    once but decides reviews and appeals only once the horizon has passed (a first partner at once)."""
    row = await Partnership.get_or_none(id=parse_id(partnership_id, "partnership"))
    if row is None:
        raise NotFound("no such partnership")
    if row.invited_email != viewer.email.lower():
        if str(row.user_id) == str(viewer.id):
            raise Forbidden("only the invitee may respond to an invite")
        raise NotFound("no such partnership")
    if accept and viewer.email_verified_at is None:
        # the address is what the owner trusted: only someone who proved they read its mail may accept
        raise Forbidden("verify your email address first: follow the link mailed to it, then accept")
    status = PartnershipStatus.ACTIVE if accept else PartnershipStatus.DECLINED
    async with write_transaction():
        # serializes the owner's accepts: of two at once, only the first can count as a first partner
        owner = await User.filter(id=row.user_id).select_for_update().get()
        now = await db_now()
        decides_from = await _decides_from(owner, row, now, day) if accept else None
        # a decline keeps partner null: the inviter learns the answer, not who gave it
        answered = await Partnership.filter(id=row.id, status=PartnershipStatus.INVITED).update(
            status=status,
            partner_id=viewer.id if accept else None,
            responded_at=now,
            decides_from=decides_from,
        )
    if not answered:
        raise Conflict("this invite was already answered or withdrawn")
    if accept:  # the partner's open subscriptions start carrying the user's events
        await notices.publish_control(
            "partnership_accepted", user_id=str(row.user_id), partner_id=str(viewer.id)
        )
    await row.refresh_from_db()
    return row


async def _decides_from(owner: User, row: Partnership, now: datetime, day: timedelta) -> datetime | None:
    """When a partner accepted now may decide: held back by the owner's horizon unless they are the first."""
    horizon = horizon_of(owner, now, day)
    if horizon <= timedelta(0):
        return None
    others = Partnership.filter(watching(now), user_id=owner.id).exclude(id=row.id)
    return now + horizon if await others.exists() else None


async def remove_partner(viewer: User, partnership_id: str, *, day: timedelta) -> None:
    """Either side ends a partnership (or withdraws / refuses an open invite); open feeds stop at once.

    The owner removing an accepted partner while their commitment horizon holds is an easier edit: it
    waits out the horizon, and the partner keeps watching and deciding until then (from then on nothing
    more reaches their feed, read through services/partners/access.py)."""
    async with write_transaction():
        row = await Partnership.filter(id=parse_id(partnership_id, "partnership")).select_for_update().first()
        if row is None or not _is_party(viewer, row):
            raise NotFound("no such partnership")
        now = await db_now()
        if row.status not in _OPEN or not _removal_to_come(row, now):
            raise Conflict(f"the partnership is already {status_at(row, now).value}")
        if str(viewer.id) == str(row.user_id) and row.status is PartnershipStatus.ACTIVE:
            if row.removal_effective_at is not None:
                return  # already waiting: asking again neither hastens nor delays it
            owner = await User.get(id=row.user_id)
            horizon = horizon_of(owner, now, day)
            if horizon > timedelta(0):
                await Partnership.filter(id=row.id).update(removal_effective_at=now + horizon)
                return
        await Partnership.filter(id=row.id).update(status=PartnershipStatus.REMOVED)
        if row.partner_id is not None:
            user_id, partner_id = str(row.user_id), str(row.partner_id)

            async def announce() -> None:
                await notices.publish_control("partnership_removed", user_id=user_id, partner_id=partner_id)

            on_commit(announce)


def _removal_to_come(row: Partnership, now: datetime) -> bool:
    return row.removal_effective_at is None or row.removal_effective_at > now


def status_at(row: Partnership, now: datetime) -> PartnershipStatus:
    """The status a partnership has at `now`: a removal whose moment came counts as done."""
    if row.status is PartnershipStatus.ACTIVE and not _removal_to_come(row, now):
        return PartnershipStatus.REMOVED
    return row.status


def _is_party(viewer: User, row: Partnership) -> bool:
    if str(viewer.id) in (str(row.user_id), str(row.partner_id)):
        return True
    return row.status is PartnershipStatus.INVITED and row.invited_email == viewer.email.lower()


def _readable_by(viewer: User) -> Q:
    """Both directions: as the one watched, as the partner, and invites addressed to the viewer's email."""
    return Q(user_id=viewer.id) | Q(partner_id=viewer.id) | Q(invited_email=viewer.email.lower())


# a viewer's partnerships, newest first
PARTNERSHIP_ORDER = Keyset(
    "partnership", (SortKey("created_at", parse_instant, True), SortKey("id", parse_uuid, True))
)


def with_status(status: PartnershipStatus, now: datetime) -> Q:
    """Partnerships whose status at `now` (status_at) is `status`, as a filter."""
    if status is PartnershipStatus.ACTIVE:
        return watching(now)
    if status is PartnershipStatus.REMOVED:
        # NULL-safe: excluded (NOT …), a comparison with a NULL removal time would drop every row it meets
        return Q(status=PartnershipStatus.REMOVED) | Q(
            status=PartnershipStatus.ACTIVE, removal_effective_at__isnull=False, removal_effective_at__lte=now
        )
    return Q(status=status)


def partnerships_query(
    viewer: User, *, status: PartnershipStatus | None = None, include_removed: bool = True
) -> QuerySet[Partnership]:
    """Both directions: as the one watched, as the partner, and invites addressed to the viewer's email;
    only those of `status` when given, else without REMOVED ones unless `include_removed`."""
    query = Partnership.filter(_readable_by(viewer))
    now = datetime.now(UTC)  # the clock status_at is read with (schema/types/partnership.py)
    if status is not None:
        return query.filter(with_status(status, now))
    if not include_removed:
        return query.exclude(with_status(PartnershipStatus.REMOVED, now))
    return query


async def partnerships_of(viewer: User) -> list[Partnership]:
    return await partnerships_query(viewer).order_by(*PARTNERSHIP_ORDER.order())


async def readable_partnerships(viewer: User, ids: Collection[str]) -> list[Partnership]:
    """Of the partnerships `ids`, those `partnerships_of` lists."""
    return await Partnership.filter(_readable_by(viewer), id__in=list(ids))


async def counterpart_ids(viewer: User, user_ids: Collection[str]) -> set[str]:
    """Of `user_ids`, the users the viewer's partnerships show (Partnership.user, and .partner once the
    invite is answered): the people on the other side of them."""
    rows = await Partnership.filter(
        _readable_by(viewer), Q(user_id__in=list(user_ids)) | Q(partner_id__in=list(user_ids))
    ).values_list("user_id", "partner_id", "status")
    shown = {str(u) for u, _, _ in rows} | {
        str(p) for _, p, status in rows if p is not None and status != PartnershipStatus.INVITED
    }
    return shown & set(user_ids)
