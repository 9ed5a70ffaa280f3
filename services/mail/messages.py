"""What each mail says, as plain text and HTML; links lead to the app (PROOFLOOP_PUBLIC_URL) or, without
one, to the API's own pages (web/pages.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape
from urllib.parse import urlencode


@dataclass(frozen=True)
class MailContent:
    subject: str
    text: str
    html: str


def _link(public_url: str, path: str, token: str) -> str:
    return f"{public_url.rstrip('/')}{path}?{urlencode({'token': token})}"


def _render(subject: str, paragraphs: list[str], link: tuple[str, str] | None = None) -> MailContent:
    text = "\n\n".join(paragraphs)
    html = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    if link is not None:
        label, url = link
        text += f"\n\n{label}: {url}\n"
        html += f'<p><a href="{escape(url, quote=True)}">{escape(label)}</a></p>'
    return MailContent(subject=subject, text=text, html=f"<!doctype html><html><body>{html}</body></html>")


def verify_email(public_url: str, display_name: str, token: str) -> MailContent:
    return _render(
        "Confirm your email address",
        [
            f"Hello {display_name},",
            "Please confirm that this address is yours. The link works once, within 24 hours.",
            "If you did not sign up for Proofloop, ignore this message.",
        ],
        ("Confirm my address", _link(public_url, "/verify-email", token)),
    )


def reset_password(public_url: str, token: str) -> MailContent:
    return _render(
        "Reset your password",
        [
            "Someone (hopefully you) asked to reset the password of the Proofloop account of this address.",
            "The link works once, within one hour. If it was not you, ignore this message.",
        ],
        ("Choose a new password", _link(public_url, "/reset-password", token)),
    )


def reset_without_account() -> MailContent:
    # the same mail flow for an unknown address: the request's answer and cost never reveal accounts
    return _render(
        "Reset your password",
        [
            "Someone asked to reset the password of a Proofloop account for this address,",
            "but no account uses it. If it was not you, ignore this message.",
        ],
    )


def partner_invite(public_url: str, inviter_name: str) -> MailContent:
    return _render(
        # the subject outlives the sent mail's blanked bodies: no name in it (an account may be deleted)
        "You are invited to be an accountability partner",
        [
            f"{inviter_name} would like you to watch their progress on Proofloop and review their proofs.",
            "Sign in (or sign up) with this address and confirm it to accept; you may also decline.",
        ],
        ("Open Proofloop", public_url.rstrip("/") + "/partnerships"),
    )


def data_export_ready(link: str, expires_at: datetime, size_bytes: int) -> MailContent:
    return _render(
        "Your Proofloop data export is ready",
        [
            f"The archive of everything of your account ({size_bytes / 1_048_576:.1f} MB) is ready.",
            f"The link works until {expires_at.strftime('%Y-%m-%d %H:%M')} UTC; "
            "ask for a new export after that.",
            "If you did not ask for it, change your password: someone signed in as you.",
        ],
        ("Download my data", link),
    )


def deletion_scheduled(public_url: str, due_at: datetime) -> MailContent:
    return _render(
        "Your Proofloop account will be deleted",
        [
            f"Your account and everything of it will be deleted on {due_at.strftime('%Y-%m-%d %H:%M')} UTC.",
            "Every device was signed out. To keep the account, sign in before then: "
            "that cancels the deletion.",
        ],
        ("Open Proofloop", public_url.rstrip("/") + "/login"),
    )


def partnership_ended_by_deletion(display_name: str) -> MailContent:
    return _render(
        "A partnership has ended",
        [
            f"{display_name} deleted their Proofloop account, so your partnership with them has ended.",
            "Their tasks, proofs and events are gone from your feed.",
        ],
    )
