"""Where a webhook may point: HTTPS to public addresses only, checked on every resolved address at
registration and again at each delivery, which then connects to the very address it checked (so a
name that re-resolves to a private one meanwhile, DNS rebinding, never gets a request)."""

from __future__ import annotations

import asyncio
import http.client
import ipaddress
import socket
import ssl
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_URL = 2000
# name lookups block a thread for as long as the resolver takes: they get threads of their own, a cap on
# how many may wait, and a time limit, so a slow or hostile name never holds the shared executor
_LOOKUPS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhook-dns")
MAX_WAITING_LOOKUPS = 32
_waiting = 0


class RefusedAddress(Exception):
    """The URL or an address it resolves to is not one a webhook may reach."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str


def parse_target(url: str, *, allow_insecure: bool) -> Target:
    if len(url) > MAX_URL:
        raise RefusedAddress(f"must be at most {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise RefusedAddress("is not a URL") from None
    schemes = ("https", "http") if allow_insecure else ("https",)
    if parts.scheme not in schemes:
        raise RefusedAddress("must be an https:// URL")
    if not parts.hostname or parts.username or parts.password:
        raise RefusedAddress("must name a host, without credentials")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path)


def allowed_address(address: str, *, allow_insecure: bool) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if allow_insecure and ip.is_loopback:
        return True
    return ip.is_global and not ip.is_multicast


def resolve_public(target: Target, *, allow_insecure: bool) -> str:
    """A checked address of the target's host; refused when any address it resolves to is not public
    (a name that answers with both would otherwise pick the private one at some point)."""
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise RefusedAddress("does not resolve") from None
    addresses = sorted({str(info[4][0]) for info in infos})
    if not addresses or not all(allowed_address(a, allow_insecure=allow_insecure) for a in addresses):
        raise RefusedAddress("resolves to a private, loopback, link-local or reserved address")
    return addresses[0]


async def checked_address(target: Target, *, allow_insecure: bool, within_seconds: float) -> str:
    """resolve_public off the event loop, within `within_seconds`."""
    global _waiting
    if _waiting >= MAX_WAITING_LOOKUPS:
        raise RefusedAddress("cannot be checked now: too many lookups at once, try again shortly")
    _waiting += 1
    try:
        async with asyncio.timeout(within_seconds):
            return await asyncio.get_running_loop().run_in_executor(
                _LOOKUPS, lambda: resolve_public(target, allow_insecure=allow_insecure)
            )
    except TimeoutError:
        raise RefusedAddress("does not resolve in time") from None
    finally:
        _waiting -= 1


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to one checked address, with the URL's host for SNI and certificate checks."""

    def __init__(self, target: Target, address: str, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, address: str, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


def post(target: Target, address: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST `body` to the target at `address` (blocking; run it off the event loop); the status code."""
    pinned = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    conn = pinned(target, address, timeout)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        response = conn.getresponse()
        response.read(64 * 1024)  # a receiver's answer is not ours to buffer whole
        return response.status
    finally:
        conn.close()
