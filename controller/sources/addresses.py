"""Which addresses the outbound-address guard lets a connection reach.

A watch URL comes from an API caller, so a check must not become a way into the controller's
own network. The guard (`controller.sources.http`) asks `is_public_address` for every
resolved address of every connection and redirect hop. An address is public when it is not in
any range of the IANA IPv4 and IPv6 Special-Purpose Address Registries (listed below as
data, with the few entries the registry marks globally reachable refused as well: no contract
is served from an anycast relay or AS112), not multicast, and, for IPv6, inside 2000::/3,
the only global unicast space IANA has allocated. Python's `ipaddress.is_global` misses some
of these (NAT64, 6to4, Teredo, IPv4-compatible forms), so the table is ours.

Addresses that embed an IPv4 address:

- IPv4-mapped (::ffff:0:0/96) and well-known NAT64 (64:ff9b::/96, what DNS64 answers on
  IPv6-only networks) reach the embedded IPv4 address, so they are judged by it.
- Local-use NAT64 (64:ff9b:1::/48), 6to4 (2002::/16), Teredo (2001::/32) and
  IPv4-compatible (::/96) are refused outright: where the IPv4 address sits in a local-use
  NAT64 address depends on the operator's prefix length, and the others are tunnel or
  deprecated forms no vendor serves an API from.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Range(NamedTuple):
    network: Network
    name: str
    source: str


def _table(*rows: tuple[str, str, str]) -> tuple[Range, ...]:
    return tuple(Range(ipaddress.ip_network(cidr), name, source) for cidr, name, source in rows)


# IANA IPv4 Special-Purpose Address Registry, plus the multicast space.
IPV4_SPECIAL = _table(
    ("0.0.0.0/8", "this network", "RFC 791"),
    ("0.0.0.0/32", "this host on this network", "RFC 1122"),
    ("10.0.0.0/8", "private-use", "RFC 1918"),
    ("100.64.0.0/10", "shared address space (CGNAT)", "RFC 6598"),
    ("127.0.0.0/8", "loopback", "RFC 1122"),
    ("169.254.0.0/16", "link local (cloud metadata)", "RFC 3927"),
    ("172.16.0.0/12", "private-use", "RFC 1918"),
    ("192.0.0.0/24", "IETF protocol assignments", "RFC 6890"),
    ("192.0.0.0/29", "IPv4 service continuity prefix", "RFC 7335"),
    ("192.0.0.8/32", "IPv4 dummy address", "RFC 7600"),
    ("192.0.0.9/32", "Port Control Protocol anycast", "RFC 7723"),
    ("192.0.0.10/32", "TURN anycast", "RFC 8155"),
    ("192.0.0.170/32", "NAT64/DNS64 discovery", "RFC 7050"),
    ("192.0.0.171/32", "NAT64/DNS64 discovery", "RFC 7050"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737"),
    ("192.31.196.0/24", "AS112-v4", "RFC 7535"),
    ("192.52.193.0/24", "AMT", "RFC 7450"),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast", "RFC 7526"),
    ("192.168.0.0/16", "private-use", "RFC 1918"),
    ("192.175.48.0/24", "direct delegation AS112 service", "RFC 7534"),
    ("198.18.0.0/15", "benchmarking", "RFC 2544"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737"),
    ("224.0.0.0/4", "multicast", "RFC 5771"),
    ("240.0.0.0/4", "reserved", "RFC 1112"),
    ("255.255.255.255/32", "limited broadcast", "RFC 919"),
)

# IANA IPv6 Special-Purpose Address Registry, plus multicast; all but the 2000::/3 rows are
# also outside global unicast space, listed so the table names them.
IPV6_SPECIAL = _table(
    ("::1/128", "loopback", "RFC 4291"),
    ("::/128", "unspecified", "RFC 4291"),
    ("::/96", "IPv4-compatible (deprecated)", "RFC 4291"),
    ("::ffff:0:0/96", "IPv4-mapped", "RFC 4291"),
    ("64:ff9b::/96", "IPv4-IPv6 translation (NAT64)", "RFC 6052"),
    ("64:ff9b:1::/48", "local-use IPv4-IPv6 translation", "RFC 8215"),
    ("100::/64", "discard-only", "RFC 6666"),
    ("100:0:0:1::/64", "dummy IPv6 prefix", "RFC 9780"),
    ("2001::/23", "IETF protocol assignments", "RFC 2928"),
    ("2001::/32", "Teredo", "RFC 4380"),
    ("2001:1::1/128", "Port Control Protocol anycast", "RFC 7723"),
    ("2001:1::2/128", "TURN anycast", "RFC 8155"),
    ("2001:1::3/128", "DNS-SD service registration protocol anycast", "RFC 9665"),
    ("2001:2::/48", "benchmarking", "RFC 5180"),
    ("2001:3::/32", "AMT", "RFC 7450"),
    ("2001:4:112::/48", "AS112-v6", "RFC 7535"),
    ("2001:10::/28", "deprecated ORCHID", "RFC 4843"),
    ("2001:20::/28", "ORCHIDv2", "RFC 7343"),
    ("2001:30::/28", "drone remote ID (DRIP)", "RFC 9374"),
    ("2001:db8::/32", "documentation", "RFC 3849"),
    ("2002::/16", "6to4", "RFC 3056"),
    ("2620:4f:8000::/48", "direct delegation AS112 service", "RFC 7534"),
    ("3fff::/20", "documentation", "RFC 9637"),
    ("5f00::/16", "segment routing SIDs", "RFC 9602"),
    ("fc00::/7", "unique-local", "RFC 4193"),
    ("fe80::/10", "link-local unicast", "RFC 4291"),
    ("ff00::/8", "multicast", "RFC 4291"),
)

GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
# Forms whose connection reaches the embedded IPv4 address (the last 32 bits).
EMBEDDING_V4 = (ipaddress.IPv6Network("::ffff:0:0/96"), ipaddress.IPv6Network("64:ff9b::/96"))


def special_range(address: str) -> Range | None:
    """The registry range that holds `address` (zone ids ignored), or None for public ones.

    An address that embeds IPv4 as described above yields its embedded address's range."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        for network in EMBEDDING_V4:
            if ip in network:
                embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
                return _find(embedded, IPV4_SPECIAL)
        found = _find(ip, IPV6_SPECIAL)
        if found is None and ip not in GLOBAL_UNICAST_V6:
            return Range(GLOBAL_UNICAST_V6, "outside global unicast space", "IANA")
        return found
    return _find(ip, IPV4_SPECIAL)


def is_public_address(address: str) -> bool:
    """True for globally routable unicast addresses; False for everything the guard refuses."""
    return special_range(address) is None


def _find(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, table: tuple[Range, ...]
) -> Range | None:
    # The most specific row names the range best (192.0.0.9 is "PCP anycast", not "IETF").
    matches = [row for row in table if ip in row.network]
    return max(matches, key=lambda row: row.network.prefixlen, default=None)
