"""The key a per-client limit counts under (`controller.model.clients.client_key`)."""

from __future__ import annotations

import pytest

from controller.model.clients import client_key


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        (" 192.0.2.7 ", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),  # a dual-stack socket's IPv4 client
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # the same client
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),  # another one
        ("2001:DB8:1:2:0:0:0:1", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("unknown", "unknown"),
        ("", "unknown"),
        ("x" * 100, "x" * 64),
    ],
)
def test_client_key(address: str, key: str) -> None:
    assert client_key(address) == key
