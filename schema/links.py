"""The links the API hands out: absolute (a frontend on another origin or a phone needs no guess), and
signed where they carry a viewer's access (services/media/links.py)."""

from __future__ import annotations

from schema.context import Info
from services.media import LinkSigner
from settings import Settings


def absolute_url(info: Info, path: str) -> str:
    """At the API's public address (PROOFLOOP_API_URL), else at the address this request came to."""
    base = info.context.settings.api_url or str(info.context.request.base_url)
    return f"{base.rstrip('/')}{path}"


def link_signer(settings: Settings) -> LinkSigner:
    return LinkSigner(settings.resolved_secret_key, settings.media_link_period_seconds)
