"""Where a webhook may point: internal addresses and their refusal (shared with the tests of `proofloop dev`,
which allows local receivers and nothing more)."""

from __future__ import annotations

from harness.proofloop import ApiClient, GraphQLFailure
from tests.support.reminders import REGISTER_WEBHOOK

# each reaches an internal IPv4 through a translating router, or is internal IPv6 itself
INTERNAL_ADDRESSES = [
    "https://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "https://[64:ff9b::7f00:1]/",
    "https://[64:ff9b::a00:1]/",
    "https://[64:ff9b:1::a00:1]/",  # local-use NAT64
    "https://[2002:a9fe:a9fe::]/",  # 6to4
    "https://[2002:7f00:1::]/",
    "https://[::127.0.0.1]/",  # IPv4-compatible
    "https://[::169.254.169.254]/",
    "https://[::ffff:0:a9fe:a9fe]/",  # IPv4-translated
    "https://[::ffff:127.0.0.1]/",  # IPv4-mapped
    "https://[fec0::1]/",  # site-local
    "https://[fc00::1]/",
    "https://[fe80::1]/",
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo
    "https://[ff02::1]/",
    "https://[::]/",
    "https://100.64.0.1/",
    "https://224.0.0.1/",
    "https://localhost/",
]


async def refusal(api: ApiClient, token: str, url: str) -> GraphQLFailure | None:
    try:
        await api.execute(REGISTER_WEBHOOK, {"url": url}, token=token)
    except GraphQLFailure as refused:
        return refused
    return None
