"""Where a webhook may point: the address classifier over every range, and the one URL normalizer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.kit.name_lookups import NameLookups
from services.kit.public_addresses import is_public_address
from services.webhooks.addresses import DENIED_PORTS, RefusedAddress, parse_target, resolve_checked

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
        "2001:4860:4860::8888",  # just past the IETF block 2001::/23
        "2001:200::1",
        "::ffff:8.8.8.8",  # IPv4-mapped, of a public IPv4
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8
        "2002:808:808::1",  # 6to4 of 8.8.8.8
    ],
)
def test_public_addresses_pass(address: str) -> None:
    assert is_public_address(address)


@pytest.mark.parametrize(
    "address",
    [
        # IPv4
        "0.0.0.0",
        "0.1.2.3",
        "10.1.2.3",
        "100.64.0.1",  # carrier-grade NAT
        "127.0.0.1",
        "127.9.9.9",
        "169.254.169.254",  # cloud metadata
        "172.16.0.1",
        "172.31.255.254",
        "192.0.0.8",
        "192.0.2.1",
        "192.88.99.1",  # 6to4 relay anycast
        "192.168.1.1",
        "198.18.0.1",
        "198.51.100.1",
        "203.0.113.1",
        "224.0.0.1",  # multicast
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        # IPv6 proper
        "::",
        "::1",
        "fe80::1",  # link-local
        "fe80::1%eth0",  # with a zone id
        "fc00::1",  # unique-local
        "fd12:3456::1",
        "fec0::1",  # deprecated site-local
        "feff::1",
        "ff02::1",  # multicast
        "100::1",  # discard-only
        "2001:db8::1",  # documentation
        "3fff::1",
        "2001::1",  # Teredo, refused outright
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001:2::1",  # benchmarking, inside 2001::/23
        "5f00::1",  # outside global unicast
        "64:ff9b:1::a00:1",  # local-use NAT64
        "64:ff9b:1:ffff::808:808",
        # IPv6 carrying a non-public IPv4, each form
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "::ffff:0:a9fe:a9fe",  # IPv4-translated 169.254.169.254
        "::ffff:0:7f00:1",
        "::127.0.0.1",  # IPv4-compatible
        "::169.254.169.254",
        "::a00:1",
        "64:ff9b::a9fe:a9fe",  # NAT64
        "64:ff9b::7f00:1",
        "64:ff9b::a00:1",
        "64:ff9b::c0a8:1",
        "2002:a9fe:a9fe::",  # 6to4
        "2002:7f00:1::",
        "2002:a00:1::1",
        "2002:c0a8:101:1::1",
    ],
)
def test_every_non_public_range_is_refused(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", ["example.com", "", "1.2.3", "::g"])
def test_what_is_not_an_ip_address_is_not_public(address: str) -> None:
    assert not is_public_address(address)


def test_the_dev_allowance_lets_plain_loopback_through_only() -> None:
    for loopback in ("127.0.0.1", "127.0.0.53", "::1"):
        assert is_public_address(loopback, allow_loopback=True)
    for other in (
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "10.0.0.1",
        "fe80::1",
    ):
        assert not is_public_address(other, allow_loopback=True)


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("https://example.com", "https://example.com/"),
        ("  https://EXAMPLE.com:443/Hook  ", "https://example.com/Hook"),
        ("https://example.com:8443/a/b?x=1&y=2", "https://example.com:8443/a/b?x=1&y=2"),
        ("https://bücher.de/ü?q=ü", "https://xn--bcher-kva.de/%C3%BC?q=%C3%BC"),
        ('https://example.com/a<b>"c"', "https://example.com/a%3Cb%3E%22c%22"),
        ("https://example.com/100%?x=%zz&y=%41", "https://example.com/100%25?x=%25zz&y=%41"),
        ("https://example.com/hook#part", "https://example.com/hook"),
        ("https://[2606:4700:4700:0::1111]:8443/", "https://[2606:4700:4700::1111]:8443/"),
        ("https://8.8.8.8/", "https://8.8.8.8/"),
    ],
)
def test_urls_are_stored_normalized_and_normalize_to_themselves(url: str, normalized: str) -> None:
    target = parse_target(url, allow_insecure=False)
    assert target.url == normalized
    assert parse_target(target.url, allow_insecure=False) == target


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/", "https"),
        ("ftp://example.com/", "https"),
        ("https://example.com/a b", "spaces"),
        ("https://example.com/a\r\nX-Injected: 1", "control"),
        ("https://example.com/\ta", "control"),
        ("https://example.com/\x00", "control"),
        ("https://example.com/\ud800", "encoded"),
        ("https://example.com:0/", "port 0"),
        ("https://example.com:22/", "port 22"),
        ("https://example.com:25/", "port 25"),
        ("https://example.com:65536/", "not a URL"),
        ("https://example.com:-1/", "not a URL"),
        ("https://example.com:+443/", "not a URL"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://user@example.com/", "credentials"),
        ("https://@example.com/", "credentials"),
        ("https://example.com\\@evil.test/", "credentials"),
        ("https://[fe80::1%25eth0]/", "zone id"),
        ("https://[v1.fe]/", "IPv6"),
        ("https://2130706433/", "IPv4"),  # decimal
        ("https://0177.0.0.1/", "IPv4"),  # octal
        ("https://0x7f.0.0.1/", "IPv4"),  # hex
        ("https://0x7f000001/", "IPv4"),
        ("https://127.1/", "IPv4"),  # short form
        ("https://127.0.0.1./", "IPv4"),
        ("https://1.2.3.4.5/", "IPv4"),
        ("https://%31%32%37.0.0.1/", "percent"),
        ("https://exa mple.com/", "spaces"),
        ("https://-bad-.example/", "IDNA"),
        ("https:///hook", "host"),
        ("https://example.com/" + "a" * 2000, "2000"),
        ("https://example.com/" + "ü" * 600, "percent-encoded"),
    ],
)
def test_urls_that_could_not_be_sent_are_refused(url: str, why: str) -> None:
    with pytest.raises(RefusedAddress) as refused:
        parse_target(url, allow_insecure=False)
    assert why in str(refused.value)


def test_the_port_deny_list_holds_the_non_http_services() -> None:
    assert {0, 21, 22, 23, 25, 53, 110, 143, 465, 587, 993, 995} <= DENIED_PORTS
    assert not {80, 443, 8080, 8443} & DENIED_PORTS


def test_http_is_for_local_receivers_under_the_dev_allowance_only() -> None:
    for url in ("http://localhost:8080/hook", "http://127.0.0.1:9000/", "http://[::1]:9000/"):
        assert parse_target(url, allow_insecure=True).scheme == "http"
        with pytest.raises(RefusedAddress):
            parse_target(url, allow_insecure=False)
    for url in ("http://example.com/", "http://10.0.0.1/", "http://127.0.0.2/", "http://[::ffff:7f00:1]/"):
        with pytest.raises(RefusedAddress, match="https"):
            parse_target(url, allow_insecure=True)


async def test_a_name_is_checked_on_every_address_it_resolves_to() -> None:
    lookups = NameLookups(threads=1, waiting=0)
    try:
        local = parse_target("https://localhost:8443/", allow_insecure=True)
        with pytest.raises(RefusedAddress, match="private"):
            await resolve_checked(local, lookups, allow_insecure=False, within_seconds=5)
        address = await resolve_checked(local, lookups, allow_insecure=True, within_seconds=5)
        assert address in {"127.0.0.1", "::1"}
        unknown = parse_target("https://no-such-host.invalid/", allow_insecure=False)
        with pytest.raises(RefusedAddress, match="resolve"):
            await resolve_checked(unknown, lookups, allow_insecure=False, within_seconds=5)
    finally:
        lookups.close()


URL_PIECES = st.sampled_from(
    [
        "https://",
        "http://",
        "[",
        "]",
        "::",
        ":",
        "@",
        "%",
        "%2",
        "%41",
        "/",
        "?",
        "#",
        ".",
        "0x",
        "127",
        "1",
        "ü",
        "ß",
        "\ud800",
        " ",
        "\r\n",
        "\\",
        "xn--",
        "-",
        "a",
        "example",
        "com",
        ":443",
        ":0",
        ":99999",
    ]
)


@given(st.lists(st.one_of(URL_PIECES, st.text(max_size=5)), max_size=12).map("".join))
@settings(max_examples=400, deadline=None)
def test_any_text_is_refused_or_normalized_to_a_fixed_point(url: str) -> None:
    try:
        target = parse_target(url, allow_insecure=True)
    except RefusedAddress:
        return
    assert target.url.isascii() and " " not in target.url
    assert parse_target(target.url, allow_insecure=True) == target
