"""The client a per-client limit counts under: its IPv4 address, or its IPv6 /64.

An IPv6 host is usually given a whole /64 and may pick any address in it, so one client keyed
by its full address would escape every limit (and fill the limiter's table) by changing
address; a /64 is one client, as a NAT's IPv4 address is. IPv4-mapped IPv6 addresses count
as their IPv4 address. Anything that is not an IP address (a Unix socket, a proxy that sent
text) counts as itself, cut to the 64 characters the store keeps.
"""

from __future__ import annotations

import ipaddress

KEY_LENGTH = 64


def client_key(address: str) -> str:
    """The key of the client at `address` for rate limits (`2001:db8::/64`, `192.0.2.7`)."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return address.strip()[:KEY_LENGTH] or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)
