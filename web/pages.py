"""The API's own pages for the links in mail, where no app is configured (PROOFLOOP_PUBLIC_URL unset).

A mailed link must work without a frontend: under `make run`, and for a deployment whose app does not
handle these paths. GET shows a form and changes nothing (mail scanners and link previews fetch links);
only its POST, carrying the mailed token, confirms an address or sets a password, through the same
services as the emailVerify and passwordReset mutations. The token is the only credential; it never
reaches a log or a Referer, and a form body is refused past a few KiB before it is parsed.

    GET|POST /verify-email?token=…    confirm the address
    GET|POST /reset-password?token=…  choose a new password (every other session is signed out)
    GET /partnerships, /login         where the other mails point: open the app
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from schema.errors import unavailable_after
from schema.input_guards import refused_text
from services.accounts import email_verification, password_reset
from services.kit import ProofloopError, RateLimited, whole_number
from web.state import resources_of

MAX_FORM_BYTES = 4096  # a token and a password, with room: anything larger is not one of our forms
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the token is in the URL
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'",
}
_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#222}"
    "input,button{font:inherit;padding:.5rem;margin:.25rem 0;width:100%;box-sizing:border-box}"
    "button{background:#2d6a4f;color:#fff;border:0;border-radius:4px;cursor:pointer}"
)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    document = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        f'content="width=device-width,initial-scale=1"><title>{html.escape(title)} · Proofloop</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)


def _form(action: str, token: str, button: str, fields: str = "") -> str:
    return (
        f'<form method="post" action="{action}"><input type="hidden" name="token" '
        f'value="{html.escape(token, quote=True)}">{fields}'
        f'<button type="submit">{html.escape(button)}</button></form>'
    )


async def _form_fields(request: Request) -> dict[str, str] | Response:
    """The posted form's fields, each once; a page saying what is wrong with a body that is not one."""
    declared = whole_number(request.headers.get("content-length"))
    if declared is not None and declared > MAX_FORM_BYTES:
        return _page("Too large", "<p>That is not one of our forms.</p>", 413)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return _page("Too large", "<p>That is not one of our forms.</p>", 413)
    try:
        parsed = parse_qs(body.decode("utf-8"), strict_parsing=False, max_num_fields=10)
    except (UnicodeDecodeError, ValueError):
        return _page("Not a form", "<p>The form could not be read: send it again from the link.</p>", 400)
    fields = {name: values[0] for name, values in parsed.items() if values}
    for name, value in fields.items():
        if (reason := refused_text(value)) is not None:
            return _page("Not a form", f"<p>{html.escape(name)} {html.escape(reason)}.</p>", 400)
    return fields


def _refusal(error: ProofloopError) -> Response:
    if isinstance(error, RateLimited):
        return _page("Too many attempts", f"<p>{html.escape(error.message)}</p>", 429)
    return _page("That did not work", f"<p>{html.escape(error.message)}</p>", 400)


async def _attempt(work: Callable[[], Awaitable[Response]], operation: str) -> Response:
    try:
        return await work()
    except ProofloopError as error:
        return _refusal(error)
    except Exception as error:
        refused = unavailable_after(error, operation)  # the database does not answer: say so, counted
        if refused is None:
            raise
        return _page("Try again soon", f"<p>{html.escape(refused.message)}</p>", 503)


async def verify_email_page(request: Request) -> Response:
    if request.method == "GET":
        token = request.query_params.get("token", "")
        form = _form("/verify-email", token, "Confirm my address")
        return _page("Confirm your email address", f"<p>One click confirms this address.</p>{form}")
    fields = await _form_fields(request)
    if isinstance(fields, Response):
        return fields

    async def confirm() -> Response:
        user = await email_verification.verify_email(fields.get("token", ""))
        return _page("Address confirmed", f"<p>Thank you: {html.escape(user.email)} is confirmed.</p>")

    return await _attempt(confirm, "email verification")


async def reset_password_page(request: Request) -> Response:
    if request.method == "GET":
        token = request.query_params.get("token", "")
        password = (
            '<label>New password<input type="password" name="newPassword" autocomplete="new-password" '
            'required minlength="8"></label>'
        )
        form = _form("/reset-password", token, "Set my password", password)
        return _page("Choose a new password", f"{form}<p>Every device signed in is signed out.</p>")
    fields = await _form_fields(request)
    if isinstance(fields, Response):
        return fields
    resources = resources_of(request)
    address = request.client.host if request.client is not None else "unknown"

    async def reset() -> Response:
        await password_reset.reset_password(
            fields.get("token", ""),
            fields.get("newPassword", ""),
            rules=resources.policies.accounts,
            address=address,
        )
        return _page("Password changed", "<p>Sign in with your new password in the app.</p>")

    return await _attempt(reset, "password reset")


async def open_the_app_page(request: Request) -> Response:
    return _page(
        "Open Proofloop",
        "<p>Open your Proofloop app to continue. This address is the Proofloop API; its explorer is at "
        '<a href="/graphql">/graphql</a>.</p>',
    )


def mail_link_pages() -> list[Route]:
    return [
        Route("/verify-email", verify_email_page, methods=["GET", "POST"]),
        Route("/reset-password", reset_password_page, methods=["GET", "POST"]),
        Route("/partnerships", open_the_app_page),
        Route("/login", open_the_app_page),
    ]
