"""One webhook POST: httpx to the very address that was checked (the URL's host kept for Host, SNI and the
certificate, so a name that re-resolves meanwhile cannot redirect it), the answer read up to a cap.

The caller bounds the whole attempt with one deadline (asyncio.timeout): httpx's own timeouts are per
read, and a receiver that trickles a byte at a time would never meet one.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import httpx

from services.webhooks.addresses import Target

MAX_ANSWER_BYTES = 64 * 1024  # a receiver's answer is not ours to buffer whole


class UnsendableUrl(Exception):
    """The stored URL cannot make a request at all (it cannot be encoded): no retry would help."""


@dataclass(frozen=True)
class Answer:
    status: int

    @property
    def delivered(self) -> bool:
        return 200 <= self.status < 300


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def pinned_request(target: Target, address: str) -> tuple[httpx.URL, str]:
    """(the URL with the checked address for host, the Host header naming the URL's own host)."""
    default_port = 443 if target.scheme == "https" else 80
    host_header = _bracketed(target.host) + ("" if target.port == default_port else f":{target.port}")
    try:
        url = httpx.URL(f"{target.scheme}://{_bracketed(address)}:{target.port}{target.path}")
        host_header.encode("ascii")
    except (httpx.InvalidURL, ValueError) as exc:  # UnicodeError is a ValueError
        raise UnsendableUrl(str(exc)[:150]) from None
    return url, host_header


async def post_pinned(
    target: Target,
    address: str,
    body: bytes,
    headers: dict[str, str],
    *,
    tls: ssl.SSLContext,
    http2: bool = False,
) -> Answer:
    """POST `body` to the target at `address`; httpx's errors (and OSError) reach the caller. `http2`:
    HTTP/2 only (APNs), negotiated over TLS, with prior knowledge over cleartext."""
    url, host_header = pinned_request(target, address)
    # trust_env off: a proxy from the environment would connect to the name, not the checked address
    async with (
        httpx.AsyncClient(
            verify=tls, trust_env=False, follow_redirects=False, http1=not http2, http2=http2
        ) as client,
        client.stream(
            "POST",
            url,
            content=body,
            headers={**headers, "Host": host_header},
            extensions={"sni_hostname": target.host},
        ) as response,
    ):
        received = 0
        async for chunk in response.aiter_raw():  # raw: a compressed answer is never inflated
            received += len(chunk)
            if received >= MAX_ANSWER_BYTES:
                break
        return Answer(response.status_code)
