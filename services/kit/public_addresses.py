"""Which IP addresses a webhook may reach: those routers deliver to the public internet, and no other.

An IPv6 address that carries an IPv4 one (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64, 6to4) is
judged by the IPv4 it carries, because a host with those translations delivers it there. Everything else in
IPv6 must be global unicast (2000::/3), outside the special blocks inside it: so site-local fec0::/10,
unique-local, link-local, multicast, the local-use NAT64 prefix 64:ff9b:1::/48 and Teredo are refused
(Teredo outright: its client IPv4 is XOR-obfuscated and its server IPv4 is not where the packet goes).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

IPAddress = IPv4Address | IPv6Address

# IANA's special-purpose IPv4 blocks that are not globally reachable, plus multicast and broadcast
NOT_PUBLIC_IPV4 = tuple(
    IPv4Network(block)
    for block in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, where cloud metadata services answer
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # the deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)

GLOBAL_UNICAST = IPv6Network("2000::/3")
NOT_PUBLIC_IPV6 = tuple(
    IPv6Network(block)
    for block in (
        "2001::/23",  # IETF protocol assignments, Teredo 2001::/32 among them
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
    )
)

# the IPv4 address is the last 32 bits
IPV4_IN_LOW_BITS = tuple(
    IPv6Network(block)
    for block in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
        "::/96",  # IPv4-compatible (deprecated), also :: and ::1
        "64:ff9b::/96",  # NAT64, the well-known prefix
    )
)
SIX_TO_FOUR = IPv6Network("2002::/16")  # the IPv4 address is bits 16..47


def carried_ipv4(ip: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries (and is delivered to by translating routers), if any."""
    if any(ip in block for block in IPV4_IN_LOW_BITS):
        return IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in SIX_TO_FOUR:
        return IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)
    return None


def _is_public_ipv4(ip: IPv4Address) -> bool:
    return not any(ip in block for block in NOT_PUBLIC_IPV4)


def is_public_address(address: str | IPAddress, *, allow_loopback: bool = False) -> bool:
    """Whether a webhook may connect to `address`. `allow_loopback` (the dev command's local receivers)
    lets 127.0.0.0/8 and ::1 through as written, never an IPv6 form carrying them. Not an IP: False."""
    try:
        ip = address if isinstance(address, IPv4Address | IPv6Address) else ip_address(address)
    except ValueError:
        return False
    if allow_loopback and ip.is_loopback and not (isinstance(ip, IPv6Address) and ip.scope_id):
        return True
    if isinstance(ip, IPv4Address):
        return _is_public_ipv4(ip)
    if ip.scope_id:  # a zone id names one of this host's interfaces: a local link
        return False
    carried = carried_ipv4(ip)
    if carried is not None:
        return _is_public_ipv4(carried)
    return ip in GLOBAL_UNICAST and not any(ip in block for block in NOT_PUBLIC_IPV6)
