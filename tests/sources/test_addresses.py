"""The address guard's rule: every range of the IANA special-purpose registries is refused."""

from __future__ import annotations

import ipaddress

import pytest

from controller.sources.addresses import (
    IPV4_SPECIAL,
    IPV6_SPECIAL,
    is_public_address,
    special_range,
)

REFUSED = [
    # IPv4 special-purpose registry, one address per range, and multicast
    ("0.1.2.3", "this network"),
    ("0.0.0.0", "this host on this network"),
    ("10.1.2.3", "private-use"),
    ("100.64.0.1", "shared address space (CGNAT)"),
    ("100.127.255.254", "shared address space (CGNAT)"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.255", "loopback"),
    ("169.254.169.254", "link local (cloud metadata)"),
    ("172.16.0.1", "private-use"),
    ("172.31.255.255", "private-use"),
    ("192.0.0.1", "IPv4 service continuity prefix"),
    ("192.0.0.8", "IPv4 dummy address"),
    ("192.0.0.9", "Port Control Protocol anycast"),
    ("192.0.0.10", "TURN anycast"),
    ("192.0.0.100", "IETF protocol assignments"),
    ("192.0.0.170", "NAT64/DNS64 discovery"),
    ("192.0.0.171", "NAT64/DNS64 discovery"),
    ("192.0.2.1", "documentation (TEST-NET-1)"),
    ("192.31.196.1", "AS112-v4"),
    ("192.52.193.1", "AMT"),
    ("192.88.99.1", "deprecated 6to4 relay anycast"),
    ("192.168.1.1", "private-use"),
    ("192.175.48.1", "direct delegation AS112 service"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("198.51.100.1", "documentation (TEST-NET-2)"),
    ("203.0.113.1", "documentation (TEST-NET-3)"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "limited broadcast"),
    # IPv6 special-purpose registry
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("::7f00:1", "IPv4-compatible (deprecated)"),
    ("::808:808", "IPv4-compatible (deprecated)"),  # refused outright, even for 8.8.8.8
    ("64:ff9b:1::808:808", "local-use IPv4-IPv6 translation"),  # refused outright
    ("64:ff9b:1:ffff::a9fe:a9fe", "local-use IPv4-IPv6 translation"),
    ("100::1", "discard-only"),
    ("100:0:0:1::1", "dummy IPv6 prefix"),
    ("2001:1ff::1", "IETF protocol assignments"),
    ("2001::1", "Teredo"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),  # refused outright
    ("2001:1::1", "Port Control Protocol anycast"),
    ("2001:1::2", "TURN anycast"),
    ("2001:1::3", "DNS-SD service registration protocol anycast"),
    ("2001:2::1", "benchmarking"),
    ("2001:3::1", "AMT"),
    ("2001:4:112::1", "AS112-v6"),
    ("2001:10::1", "deprecated ORCHID"),
    ("2001:20::1", "ORCHIDv2"),
    ("2001:30::1", "drone remote ID (DRIP)"),
    ("2001:db8::1", "documentation"),
    ("2002:7f00:1::1", "6to4"),
    ("2002:808:808::1", "6to4"),  # refused outright, even for 8.8.8.8
    ("2620:4f:8000::1", "direct delegation AS112 service"),
    ("3fff::1", "documentation"),
    ("5f00::1", "segment routing SIDs"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fe80::1", "link-local unicast"),
    ("fe80::1%eth0", "link-local unicast"),
    ("ff02::1", "multicast"),
    ("4000::1", "outside global unicast space"),
    ("1::1", "outside global unicast space"),
    # Embedded IPv4 judged by the embedded address: IPv4-mapped and well-known NAT64
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "link local (cloud metadata)"),
    ("64:ff9b::a9fe:a9fe", "link local (cloud metadata)"),
    ("64:ff9b::7f00:1", "loopback"),
    ("64:ff9b::a00:1", "private-use"),
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "9.9.9.9",
    "100.128.0.1",  # just above CGNAT
    "172.32.0.1",  # just above 172.16.0.0/12
    "192.0.1.1",
    "198.20.0.1",
    "223.255.255.254",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2001:200::1",  # just above 2001::/23
    "2a00:1450:4001::1",
    "::ffff:8.8.8.8",  # IPv4-mapped: the connection goes to 8.8.8.8
    "64:ff9b::808:808",  # DNS64 on an IPv6-only network answers this for 8.8.8.8
]


@pytest.mark.parametrize(("address", "name"), REFUSED, ids=[a for a, _ in REFUSED])
def test_special_purpose_addresses_are_refused(address: str, name: str) -> None:
    assert not is_public_address(address)
    found = special_range(address)
    assert found is not None and found.name == name


@pytest.mark.parametrize("address", PUBLIC)
def test_public_controls(address: str) -> None:
    assert is_public_address(address)
    assert special_range(address) is None


@pytest.mark.parametrize(
    "row", [*IPV4_SPECIAL, *IPV6_SPECIAL], ids=[str(r.network) for r in IPV4_SPECIAL + IPV6_SPECIAL]
)
def test_every_row_of_the_table_is_refused_at_both_ends(row: object) -> None:
    network = row.network  # type: ignore[attr-defined]
    assert not is_public_address(str(network.network_address))
    assert not is_public_address(str(network.broadcast_address))


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "2002:7f00:1::1", "::7f00:1", "3fff::1"],
)
def test_what_is_global_alone_would_let_through(address: str) -> None:
    # The reason for the table: Python's ipaddress calls these global.
    assert ipaddress.ip_address(address).is_global
    assert not is_public_address(address)
