"""Where a webhook may point, decided once for registration and for every delivery.

`parse_target` is the one URL normalizer: it refuses what could not be sent and gives the URL to store.
Every address the host resolves to must pass `is_public_address`; a delivery then connects to the very
address it checked (so a name that re-resolves to a private one meanwhile, DNS rebinding, never gets a
request)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address
from urllib.parse import quote, urlsplit

import idna

from services.kit import LookupFailed, NameLookups, is_public_address

MAX_URL = 2000
# the Fetch standard's "bad ports" (mail, shell, file, name, chat and other non-HTTP services a POST could
# be smuggled into), and 0, which no connection can use
DENIED_PORTS = frozenset(
    {0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103}
    | {104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513}
    | {514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719}
    | {1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679}
    | {6697, 10080}
)
DEFAULT_PORTS = {"https": 443, "http": 80}
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})  # http:// receivers the dev command allows
# RFC 3986 characters a path or query keeps as they are; "%" only where it starts an escape
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_SAFE = _PATH_SAFE + "?"
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# a host whose last label is a number is an IPv4 address to URL parsers (0x7f.1, 2130706433, 0177.0.0.1)
_NUMERIC_LAST_LABEL = re.compile(r"(?:^|\.)(?:[0-9]+|0x[0-9a-f]*)\.?$")


class RefusedAddress(Exception):
    """The URL or an address it resolves to is not one a webhook may reach."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # ASCII: IDNA A-labels, or an IP address without brackets
    port: int
    path: str  # path and query as sent, percent-encoded

    @property
    def literal(self) -> IPv4Address | IPv6Address | None:
        try:
            return ip_address(self.host)
        except ValueError:
            return None

    @property
    def url(self) -> str:
        """The normalized URL: what is stored, and what parses back to this target."""
        host = f"[{self.host}]" if isinstance(self.literal, IPv6Address) else self.host
        port = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}"


def parse_target(url: str, *, allow_insecure: bool) -> Target:
    """The one URL normalizer. `allow_insecure` (the dev command and tests) also takes http:// to
    localhost, 127.0.0.1 and [::1]. The fragment is dropped: it is never sent."""
    url = url.strip()
    if len(url) > MAX_URL:
        raise RefusedAddress(f"must be at most {MAX_URL} characters")
    if any(c <= " " or c == "\x7f" for c in url):
        raise RefusedAddress("must not contain spaces or control characters (CR, LF, tab)")
    try:
        url.encode()
        parts = urlsplit(url)
        port = parts.port
    except UnicodeError:
        raise RefusedAddress("contains characters that cannot be encoded") from None
    except ValueError as exc:
        raise RefusedAddress(f"is not a URL ({exc})") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise RefusedAddress("must be an https:// URL")
    if "@" in parts.netloc:
        raise RefusedAddress("must name a host without credentials (user:password@)")
    host = _normalized_host(parts.netloc, parts.hostname or "")
    if parts.scheme == "http" and not (allow_insecure and host in LOCAL_HOSTS):
        raise RefusedAddress("must be an https:// URL (http:// only to localhost under `proofloop dev`)")
    if port in DENIED_PORTS:
        raise RefusedAddress(f"port {port} is not allowed: 0 and the ports of non-HTTP services are refused")
    path = quote(_LONE_PERCENT.sub("%25", parts.path), safe=_PATH_SAFE) or "/"
    if parts.query:
        path += "?" + quote(_LONE_PERCENT.sub("%25", parts.query), safe=_QUERY_SAFE)
    target = Target(parts.scheme, host, port or DEFAULT_PORTS[parts.scheme], path)
    if len(target.url) > MAX_URL:
        raise RefusedAddress(f"must be at most {MAX_URL} characters once percent-encoded")
    return target


def _normalized_host(netloc: str, hostname: str) -> str:
    if not hostname:
        raise RefusedAddress("must name a host")
    if "\\" in netloc:
        raise RefusedAddress("must not contain a backslash in its host")
    if netloc.startswith("["):
        if "%" in hostname:
            raise RefusedAddress("must not carry an IPv6 zone id")
        try:
            return str(IPv6Address(hostname))
        except ValueError:
            raise RefusedAddress("has a bracketed host that is not an IPv6 address") from None
    if "%" in hostname:
        raise RefusedAddress("must not percent-encode its host")
    try:
        ascii_host = idna.encode(hostname, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        raise RefusedAddress("has a host name that is not a valid (IDNA) name") from None
    if _NUMERIC_LAST_LABEL.search(ascii_host):  # after mapping: fullwidth digits are digits too
        try:
            return str(IPv4Address(ascii_host))  # strict: four decimal numbers, no leading zeros
        except ValueError:
            raise RefusedAddress(
                "must write an IPv4 address as four decimal numbers (no octal, hex or single number)"
            ) from None
    return ascii_host


def _refused_unless_public(addresses: list[str], *, allow_insecure: bool) -> None:
    if not addresses or not all(is_public_address(a, allow_loopback=allow_insecure) for a in addresses):
        raise RefusedAddress(
            "resolves to a private, loopback, link-local or reserved address (or an IPv6 form of one)"
        )


async def resolve_checked(
    target: Target, lookups: NameLookups, *, allow_insecure: bool, within_seconds: float
) -> str:
    """A checked address of the target's host; refused when any address it resolves to is not public
    (a name that answers with both would otherwise pick the private one at some point)."""
    literal = target.literal
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = await lookups.addresses(target.host, target.port, within_seconds)
        except LookupFailed as exc:
            raise RefusedAddress(str(exc)) from None
    _refused_unless_public(addresses, allow_insecure=allow_insecure)
    return addresses[0]
