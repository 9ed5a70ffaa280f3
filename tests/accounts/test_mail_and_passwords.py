"""Pure rules of the accounts: the SMTP URL, the password policy, and what a mail says."""

from __future__ import annotations

import pytest

from services.accounts.passwords import check_password_policy
from services.kit.errors import BadInput
from services.mail import messages
from services.mail.smtp import SmtpServer

pytestmark = pytest.mark.unit


def test_smtp_urls() -> None:
    plain = SmtpServer.from_url("smtp://mailer:p%40ss@mail.example.com:587")
    assert (plain.host, plain.port, plain.username, plain.password) == (
        "mail.example.com",
        587,
        "mailer",
        "p@ss",
    )
    assert (plain.use_tls, plain.start_tls) == (False, None)  # STARTTLS when offered
    assert SmtpServer.from_url("smtp://h:25?starttls=true").start_tls is True
    assert SmtpServer.from_url("smtp://mailpit:1025?starttls=false").start_tls is False
    implicit = SmtpServer.from_url("smtps://h")
    assert (implicit.port, implicit.use_tls, implicit.username) == (465, True, None)
    assert SmtpServer.from_url("smtp://h").port == 25
    for bad in ("http://h:25", "smtp://", "mail.example.com:25"):
        with pytest.raises(ValueError, match="PROOFLOOP_SMTP_URL"):
            SmtpServer.from_url(bad)


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short one", "at least 10"),
        (" " * 10, "whitespace"),
        ("\t\n  \u3000   \t\n", "whitespace"),
        ("1234567890", "common"),
        ("QWERTYUIOP", "common"),
        ("  password123  ", "common"),
        ("x" * 1025, "at most 1024"),
    ],
)
def test_weak_passwords(password: str, reason: str) -> None:
    with pytest.raises(BadInput) as refused:
        check_password_policy(password, 10, "newPassword")
    assert refused.value.field == "newPassword" and reason in refused.value.message


def test_good_passwords() -> None:
    for password in ("a long passphrase", "ten chars!", "ü" * 10, "x" * 1024):
        check_password_policy(password, 10)


def test_mail_escapes_names_and_carries_the_link_in_both_parts() -> None:
    mail = messages.verify_email("https://app.example/", "<script>alert(1)</script>", "tok-EN_1")
    assert "https://app.example/verify-email?token=tok-EN_1" in mail.text
    assert 'href="https://app.example/verify-email?token=tok-EN_1"' in mail.html
    assert "<script>" not in mail.html and "&lt;script&gt;" in mail.html
    invite = messages.partner_invite("https://app.example", 'Eve "<b>"')
    assert "<b>" not in invite.html
    assert messages.reset_without_account().subject == messages.reset_password("https://a", "t").subject
